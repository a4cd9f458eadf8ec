// The proof: unsat(OR_i expected_i != actual_i) over the reals, with non-polynomial functions uninterpreted.
// A sat model is minimised (small integers first, as Alive2 does) and then judged by concrete re-evaluation.
// Runs synchronously on the calling thread with the context it is given.
#pragma once

#include <z3++.h>

#include <atomic>
#include <chrono>
#include <unordered_map>

#include "core/solver/problem_scope.h"
#include "core/solver/z3_encoding.h"
#include "core/solver/z3_engine.h"

namespace paraproof::solver {

class Z3Proof {
 public:
  using Clock = std::chrono::steady_clock;
  struct Run {
    const Problem& problem;
    const ProblemScope& scope;
    const Budget& budget;
    Clock::time_point deadline;
    // Where the proof asks its engine for an interrupt at a given time (the minimisation budget); may be
    // null.
    std::atomic<Clock::rep>* interruptAt = nullptr;
    bool stop() const { return budget.cancelled() || Clock::now() >= deadline; }
  };

  Z3Proof(z3::context& ctx, const Z3Options& options);
  // Inconclusive with an empty reason when stopped by the budget: the caller names the cause.
  Result decide(const Run& run);
  // Whether the premises (integer input ranges) together with each guarded obligation's definedness guard can
  // hold; `run.scope` is guardScopeOf(problem). Verified if every guard can; Inconclusive otherwise, the
  // reason naming a vacuous obligation (empty reason when stopped by the budget).
  Result premises(const Run& run);

 private:
  std::vector<size_t> presimplify(const Run& run, const Z3Encoding& enc, std::vector<size_t> pending);
  bool isZero(const z3::expr& d) const;
  bool splitsToZero(const Run& run, const std::unordered_map<uint32_t, z3::expr>& bounded,
                    const Obligation& ob, const z3::expr& d, const z3::params& p);
  bool separableToZero(const Run& run, const std::vector<uint32_t>& ints, const z3::expr_vector& src,
                       const z3::expr& d, const z3::params& p);
  z3::solver makeSolver();
  Result counterexample(const Run& run, z3::solver& s, const Z3Encoding& enc);
  std::vector<double> readModel(const Run& run, const z3::model& m, const Z3Encoding& enc);
  void minimise(const Run& run, z3::solver& s, const Z3Encoding& enc, std::vector<double>& values);

  z3::context* ctx_;
  Z3Options options_;
};

}  // namespace paraproof::solver
