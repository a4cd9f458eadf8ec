// How a stage depends on a fold count (docs/soundness.md, "Size points", condition D). A folded plan is
// checked at two counts; that proves every count only when each obligation's dependence on the count t is
// a Laurent polynomial of width <= 1 (two exponents of t at most: a count times a constant, a mean's 1/t), as
// two distinct roots then force it to vanish. This bounds the width from the ops, per stage.
#pragma once

#include <cstddef>
#include <set>
#include <utility>

#include "core/plan/plan.h"
#include "core/stage/stage.h"

namespace paraproof::stage {

// What scales with the count t in a folded plan (device indices and ids of the folded plan; shape
// reduction keeps both).
struct FoldParameter {
  std::set<std::pair<ValueId, int>> logicalAxes;  // logical (value, dim) whose extent is linear in t
  std::set<std::pair<size_t, OpId>> sums;         // device ops that sum over the t members or copies
  std::set<std::pair<size_t, OpId>> averages;     // ... and divide by their number
  std::set<std::pair<size_t, ValueId>> varying;   // device values that are the member's or copy's own
  bool empty() const { return logicalAxes.empty() && sums.empty() && averages.empty(); }
};

// The number of distinct counts at which the stage must verify for it to verify at every count: 1 + the
// largest width, over its obligations, of the exponents of t that one monomial of the stage's inputs can
// carry on either side (an over-approximation from the ops).
int countsNeeded(const Plan& plan, const Stage& stage, const FoldParameter& t);

}  // namespace paraproof::stage
