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
#include "core/stage/count_degree.h"

namespace paraproof::stage {

struct FoldedPlan {
  bool folded = false;
  bool validated = false;          // `plan` passed validatePlan in the fold (it was whole)
  Plan plan;                       // the folded plan (empty when not folded: check the input as it is)
  std::vector<int> originalRank;   // by device index of `plan`: the rank it stands for in the input
  std::vector<std::string> notes;  // what was folded, or why not
  // Full-size counts (a group size over the replicas, micro-batches times a group) that a constant of the
  // plan could stand for. Folded, such a plan is still proved when it verifies (the folded count is kept
  // apart from every constant), but a stage that fails folded and holds such a constant may be a correct
  // hard-coded count (1/dp): the verifier then checks the plan unfolded (docs/soundness.md).
  std::set<int64_t> countsMet;
  int64_t count = 0;  // the folded count m (replicas or micro-batches per device)
  // The logical axes (value, dim) the fold scaled: shape reduction keeps them as the fold left them, so that
  // the two fold points differ on them (docs/soundness.md, "Size points").
  std::vector<std::pair<ValueId, int>> scaled;
  FoldParameter parameter;  // what scales with the count in the folded plan (count_degree.h)
  FoldParameter carried;    // the micro-batch fold: the replica fold's parameter, moved to this plan
};

// A fold is checked at up to two size points (docs/soundness.md, "Size points"): point 0 folds to the
// smallest count m1 that folds, point 1 to the next count m2 > m1 that folds (not folded when there is none:
// the full count is then the second point). The second point is checked only where condition D needs it.
inline constexpr int kFoldPoints = 2;

// `axis`: the mesh axis to fold (the generator's data-parallel axis is "dp"). A compact plan (Plan::replicas)
// is folded along its replica axis.
FoldedPlan foldReplicas(const Plan& plan, const std::string& axis = "dp", int point = 0);

// The explicit plan a compact plan stands for (every implied replica written out); the plan itself when it
// is explicit. Throws std::invalid_argument when the stated replicas do not define their translates (the
// template replicas differ in more than offsets and partners, a partial replica, ranks not row-major).
Plan expandReplicas(const Plan& plan);

// Which stated replicas are translates of their line's template, as the fold reads them: a view may show a
// translate as its template ("rank 0 x64 dp") and must show a deviant apart. `templateOf[d]` is the device
// index d stands for (d itself for a template, a deviant, or any replica of a line that has no translates:
// ZeRO shards, a bug on one of two replicas); empty when the devices have no mesh lines at all. `why` says
// why the first line without translates has none.
struct ReplicaTranslates {
  std::vector<int> templateOf;  // by device index of the plan
  std::string why;
};
ReplicaTranslates replicaTranslates(const Plan& plan, const std::string& axis = "dp");

}  // namespace paraproof::stage
