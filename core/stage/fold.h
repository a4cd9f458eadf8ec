// The replica fold: a data-parallel axis of n replicas checked as m < n of them. Replicas that are exact
// translates of each other (same program; only lineage offsets along the batch, value-part indices and the
// ranks of their communication partners advance with the coordinate) add no new stage: the plan is checked
// with the replicas at coordinates 0 and 1, every replica that deviates from its translate (one rank's
// constant, one group member) at its own place, and the logical batch scaled by n/m as shape reduction
// scales any axis. The soundness argument and its conditions are in docs/soundness.md, "Replica fold".
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/plan/plan.h"

namespace paraproof::stage {

struct FoldedPlan {
  bool folded = false;
  Plan plan;                       // the folded plan (empty when not folded: check the input as it is)
  std::vector<int> originalRank;   // by device index of `plan`: the rank it stands for in the input
  std::vector<std::string> notes;  // what was folded, or why not
  // Full-size counts (a group size over the replicas, micro-batches times a group) that a constant of the
  // plan could stand for. Folded, such a plan is still proved when it verifies (the folded count is kept
  // apart from every constant), but a stage that fails folded and holds such a constant may be a correct
  // hard-coded count (1/dp): the verifier then checks the plan unfolded (docs/soundness.md).
  std::set<int64_t> countsMet;
};

// `axis`: the mesh axis to fold (the generator's data-parallel axis is "dp"). A compact plan (Plan::replicas)
// is folded along its replica axis.
FoldedPlan foldReplicas(const Plan& plan, const std::string& axis = "dp");

// The explicit plan a compact plan stands for (every implied replica written out); the plan itself when it
// is explicit. Throws std::invalid_argument when the stated replicas do not define their translates (the
// template replicas differ in more than offsets and partners, a partial replica, ranks not row-major).
Plan expandReplicas(const Plan& plan);

}  // namespace paraproof::stage
