// Engines decide a Problem. One engine instance per worker thread (the Z3 engine owns a z3::context,
// which must never be shared between threads).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/solver/problem.h"

namespace paraproof::solver {

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string name() const = 0;
  virtual Result check(const Problem& problem, const Budget& budget) = 0;
};

// The proof: reals, uninterpreted non-polynomial functions, exact integers; a sat model is re-evaluated
// concretely and minimised.
std::unique_ptr<Engine> makeZ3Engine();
// The fast path: exact arithmetic modulo 2^61-1 on random inputs, functions as keyed hashes;
// `trials` independent runs (Schwartz-Zippel).
// `proveDivisors` false: testing only (the mutation oracle), agreement is not withheld when the plan divides
// by something the model does not (random points never hit its zeros, so only a proof could tell).
std::unique_ptr<Engine> makeFieldEngine(int trials = 2, uint64_t seed = 0x5eed, bool proveDivisors = true);

// A random trial (integer inputs in their ranges; functions as keyed hashes, as in the proof) where every
// obligation's logical side is defined: a witness that the premises and all definedness guards hold
// together. False says nothing (ask Z3: checkPremises).
bool guardsHoldSomewhere(const Problem& problem, int attempts = 16);

// Concrete evaluation of every node with the real functions, in double precision.
std::vector<double> evaluateReal(const sym::ExprPool& pool, const std::vector<double>& vars);
// The real function `f` at `args` (exp, log, ...), in double precision.
double applyFunction(sym::Fn f, const std::vector<double>& args);
// True when two doubles agree up to rounding noise (relative and absolute tolerance).
bool nearlyEqual(double a, double b);

}  // namespace paraproof::solver
