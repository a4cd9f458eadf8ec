// The identity plan: the logical graph run unchanged on one device. Verifying it must always succeed; a
// verifier that fails it (or proves a perturbed copy) has a broken encoder (Alive2's self-check).
#pragma once

#include "core/plan/plan.h"

namespace paraproof {

// A one-device plan whose device graph is `plan.logical` itself (same value and op names, ops carrying
// their own id as origin), with whole-tensor lineage on every value, so every op is its own stage.
// The mesh becomes all ones; metadata only names the source plan.
Plan identityPlan(const Plan& plan);

}  // namespace paraproof
