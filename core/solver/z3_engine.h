// Tuning knobs of the Z3 engine, exposed for the benchmark; makeZ3Engine() uses the measured defaults.
#pragma once

#include <cstddef>
#include <memory>

#include "core/solver/engine.h"

namespace paraproof::solver {

struct Z3Options {
  enum class Strategy {
    Solver,           // the default incremental SMT solver on the raw disjunction
    SimplifyThenSmt,  // tactic simplify(som) then smt
    Presimplify,      // discharge each obligation whose difference simplifies (som) to 0, solve the rest
  };
  Strategy strategy = Strategy::Presimplify;
  size_t chunk = 512;          // obligations per disjunctive query
  int minimiseChecks = 64;     // solver calls spent making a counterexample small
  double minimiseSeconds = 2;  // and their wall-clock budget
  // Z3's soft memory cap in MB (solver parameter max_memory; 0: none). Z3 accounts its allocations
  // process-wide, so concurrent proofs share it. Exceeding it gives Inconclusive "memory limit".
  size_t maxMemoryMb = 0;
};

// Proofs that did not stop within the grace period after an interrupt are abandoned to a helper thread;
// at most this many run at once (a new check waits for one to end, within its own budget).
inline constexpr int kMaxAbandonedProofs = 4;

// Interrupts every Z3 helper thread still running and joins those that end within `grace`. Returns how
// many still run: the caller must then end the process without running static destructors (std::_Exit),
// since they would free state such a thread still uses. Called by the CLI before it returns from main.
int stopZ3Helpers(double graceSeconds);

std::unique_ptr<Engine> makeZ3Engine(const Z3Options& options);

// Whether a proof of `problem` says anything (docs/soundness.md, "Engines"): its premises (the integer input
// ranges) can hold together with each obligation's definedness guard. Verified if so; otherwise Inconclusive,
// the reason naming a vacuous obligation (its logical value is undefined for every allowed input) or why it
// could not be decided. Only obligations whose logical side divides by a non-constant cost a Z3 query.
Result checkPremises(const Problem& problem, const Budget& budget, const Z3Options& options = {});

}  // namespace paraproof::solver
