// Shape reduction: shrink every dimension to the smallest size that keeps the plan's partition structure
// (divisible by every lineage cut and index attribute, >= 2 along contracted and reduced dims, consistent
// across reshapes). The argument for why this preserves the verdict is in docs/soundness.md.
#pragma once

#include <string>
#include <vector>

#include "core/plan/plan.h"

namespace paraproof::stage {

struct ReducedPlan {
  Plan plan;  // the plan at reduced shapes (or the original when not applicable)
  bool reduced = false;
  int64_t elementsBefore = 0, elementsAfter = 0;  // summed over all values of all graphs
  std::vector<std::string> notes;                 // what was done, or why it was not
};

ReducedPlan reducePlan(const Plan& plan);

}  // namespace paraproof::stage
