// A stage as a plan of its own (docs/soundness.md, "A stage as a plan of its own"): shape reduction chooses
// one factor per axis class of the whole plan, so a class that one stage must keep whole (the experts a
// router's top-k picks from) stays whole in every stage it reaches. The same stage stated as a plan has
// only its own classes, and the verifier reduces them on their own.
#pragma once

#include <optional>

#include "core/plan/plan.h"
#include "core/stage/stage.h"

namespace paraproof::stage {

// The plan whose obligations are exactly the stage's: its logical ops over the logical tensors they read
// (and the tensors its device values' lineage names) as inputs, no logical outputs; on each of its devices
// (a mesh of one axis, ranks 0..k-1 in device order) its ops over the values they read as inputs, with the
// lineage `plan` gives every value. Empty when the stage communicates or reads an integer tensor: the
// integer inputs of a plan range over their value class's extent (docs/soundness.md, "Integer values"),
// which need not cover the values the plan computes for them.
std::optional<Plan> stageAsPlan(const Plan& plan, const Stage& s);

}  // namespace paraproof::stage
