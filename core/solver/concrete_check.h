// The arbiter of every counterexample: re-evaluate both sides with the real functions in double precision.
#pragma once

#include <vector>

#include "core/solver/problem.h"

namespace paraproof::solver {

// Obligations whose sides differ at `vars`. An obligation whose expected (logical) value is not finite is
// never a mismatch: there the single-device model itself is undefined, so nothing is proven wrong.
std::vector<Mismatch> concreteMismatches(const Problem& problem, const std::vector<double>& vars);

}  // namespace paraproof::solver
