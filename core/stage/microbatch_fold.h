// The micro-batch fold: the n micro-batches of every device program checked as m < n of them. Inside a device
// graph, micro-batch j's copy of the program is marked by "#j" in its op ids and value names
// (docs/plan-format.md, "Micro-batches"). Copies that are translates of each other (lineage offsets along the
// batch and part indices advance with j, collective instances renamed one to one) add no new stage: the plan
// is checked with micro-batches 0 and 1, every copy that deviates, and the next ones up to a count no
// constant of the plan could stand for; each gradient-accumulation chain (a left fold of adds over the copies
// of one value) sums the kept copies, and the logical batch is scaled by n/m. The soundness argument and its
// conditions are in docs/soundness.md, "Micro-batch fold".
#pragma once

#include "core/stage/fold.h"

namespace paraproof::stage {

// Kept copies keep their names ("#13" stays "#13"), so stages and counterexamples name the micro-batch of the
// plan as given; devices and ranks are unchanged (`originalRank` is left empty).
// A compact plan (Plan::microbatches) is folded with its stated copies kept; when it cannot be folded, the
// result is the plan it stands for (`folded` set, every copy written out) with the reason in `notes`.
// `point`: the size point (fold.h, kFoldPoints). `carry`: the replica fold's parameter in `plan`'s terms,
// returned in the folded plan's as FoldedPlan::carried.
FoldedPlan foldMicroBatches(const Plan& plan, int point = 0, const FoldParameter* carry = nullptr);
// The same, taking `plan`'s device graphs and lineage instead of copying them (a plan the caller has no
// further use for, such as a replica fold's): `plan` is left valid but unspecified, whatever the outcome.
FoldedPlan foldMicroBatches(Plan&& plan, int point = 0, const FoldParameter* carry = nullptr);

// The plan a compact one stands for, every implied copy written out; the plan itself when it states every
// copy. Throws std::invalid_argument when the stated copies do not define their translates.
Plan expandMicroBatches(const Plan& plan);

}  // namespace paraproof::stage
