// Proof by normalisation: both sides of an obligation are rewritten to a canonical polynomial over atoms
// (variables, uninterpreted function applications of canonical arguments, inverses of non-constant divisors,
// 0/1 indicators of comparisons). Equal normal forms are equal for every value of every atom, hence for the
// real functions too: a sound, cheap proof of the obligations that are ring identities modulo congruence.
// What it cannot prove (or that exceeds the size budget) is left to Z3.
#pragma once

#include <vector>

#include "core/solver/problem.h"

namespace paraproof::solver {

struct NormalisationResult {
  std::vector<bool> proved;  // per obligation
  size_t provedCount = 0;
};

NormalisationResult proveByNormalisation(const Problem& problem, const Budget& budget,
                                         size_t maxTermsPerPolynomial = 4096);

}  // namespace paraproof::solver
