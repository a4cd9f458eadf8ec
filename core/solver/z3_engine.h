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
};

std::unique_ptr<Engine> makeZ3Engine(const Z3Options& options);

}  // namespace paraproof::solver
