// A stage's structural signature, computed from the plan without lowering it: its ops, attributes, types,
// wiring, lineage and integer domains, with every name replaced by its order of appearance and every rank by
// the stage-local index of its device. Lowering is a deterministic function of exactly these, so two stages
// with equal signatures lower to the same problem up to names (the same canonical hash) and one check serves
// both. This is what makes verification cost follow the number of distinct stages: the 126 layers of a
// llama3-405b plan, its data-parallel replicas and micro-batches are signed in microseconds each, and only
// the distinct ones are lowered. See docs/soundness.md, "Stage deduplication".
#pragma once

#include <string>

#include "core/plan/plan.h"
#include "core/stage/int_domains.h"
#include "core/stage/stage.h"

namespace paraproof::stage {

// A 128-bit digest (32 hex characters).
std::string stageSignature(const Plan& plan, const Stage& stage, const IntDomains& domains);

}  // namespace paraproof::stage
