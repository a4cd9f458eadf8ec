// A stage's structural signature, computed from the plan without lowering it: its ops, attributes, types,
// wiring, lineage and integer domains, with every name replaced by its order of appearance and every rank by
// the stage-local index of its device. Lowering is a deterministic function of exactly these, so two stages
// with equal signatures lower to the same problem up to names (the same canonical hash) and one check serves
// both. This is what makes verification cost follow the number of distinct stages: the 126 layers of a
// llama3-405b plan, its data-parallel replicas and micro-batches are signed in microseconds each, and only
// the distinct ones are lowered. See docs/soundness.md, "Stage deduplication".
#pragma once

#include <string>
#include <vector>

#include "core/plan/plan.h"
#include "core/stage/count_degree.h"
#include "core/stage/int_domains.h"
#include "core/stage/stage.h"

namespace paraproof::stage {

// A 128-bit digest (32 hex characters).
std::string stageSignature(const Plan& plan, const Stage& stage, const IntDomains& domains);

// The signature with, for each fold parameter, a digest of its marks (scaled logical axes, varying device
// values, summing and averaging collectives) on everything the signature visits, in its order. Condition D
// (count_degree.h) reads exactly the signed structure and those marks, so stages with equal `plain` and equal
// `marks[k]` need the same number of counts of parameter k, and one `countsNeeded` serves them all
// (docs/soundness.md, "Size points").
struct MarkedSignature {
  std::string plain;               // stageSignature
  std::vector<std::string> marks;  // by fold parameter
};
MarkedSignature markedSignature(const Plan& plan, const Stage& stage, const IntDomains& domains,
                                const std::vector<const FoldIndex*>& folds);

}  // namespace paraproof::stage
