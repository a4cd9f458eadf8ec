// Builds a stage's verification condition: logical ops on free inputs, device ops on inputs
// parametrised by their lineage, and one obligation per element of every device value with lineage.
#pragma once

#include <atomic>
#include <stdexcept>

#include "core/plan/plan.h"
#include "core/solver/problem.h"
#include "core/stage/int_domains.h"
#include "core/stage/stage.h"

namespace paraproof::stage {

// The stage cannot be encoded (op without semantics, value-part group split across stages, ...).
struct UnsupportedStage : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Thrown when `cancel` was set while lowering (checked before every op: a huge stage can take minutes).
struct LoweringCancelled : std::runtime_error {
  LoweringCancelled() : std::runtime_error("cancelled while lowering") {}
};

// `domains`: intDomains(plan), computed once per plan (the overload without computes it).
solver::Problem lowerStage(const Plan& plan, const Stage& stage, const IntDomains& domains,
                           const std::atomic<bool>* cancel = nullptr);
solver::Problem lowerStage(const Plan& plan, const Stage& stage, const std::atomic<bool>* cancel = nullptr);

}  // namespace paraproof::stage
