// Where a stage takes the views: the ops its counterexample names first, on both sides.
#pragma once

#include <optional>
#include <string>

#include "core/plan/plan.h"
#include "core/verify/report.h"

namespace paraproof::ui {

struct StageFocus {
  int device = kNone;      // device index of parallelOp
  std::string parallelOp;  // the op whose value the counterexample names first, else the stage's first op
  std::string logicalOp;   // the op producing the logical tensor it names, else the stage's first logical op
  // parallelOp / logicalOp are the ops whose values the counterexample names first (not a fallback)
  bool parallelDiffers = false, logicalDiffers = false;
};

StageFocus stageFocus(const Plan& plan, const verify::StageInfo& stage,
                      const std::optional<verify::StageResult>& result);

}  // namespace paraproof::ui
