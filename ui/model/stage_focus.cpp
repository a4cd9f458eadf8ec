#include "ui/model/stage_focus.h"

namespace paraproof::ui {

// The stage's first difference (the op where it goes wrong), else the device op whose value the
// counterexample names first (on its rank), else the stage's first op; the logical op producing the logical
// tensor it names, else the stage's first logical op.
StageFocus stageFocus(const Plan& plan, const verify::StageInfo& stage,
                      const std::optional<verify::StageResult>& result) {
  StageFocus f;
  auto producerOf = [](const Graph& g, const std::string& tensor) -> std::string {
    const ValueId v = g.findValue(tensor);
    const OpId op = v == kNone ? kNone : g.values[static_cast<size_t>(v)].producer;
    return op == kNone ? std::string() : g.ops[static_cast<size_t>(op)].id.str();
  };
  if (result && result->counterexample)
    for (const verify::ElementDiff& d : result->counterexample->diffs) {
      if (f.logicalOp.empty() && !d.logicalTensor.empty()) {
        f.logicalOp = producerOf(plan.logical, d.logicalTensor);
        f.logicalDiffers = !f.logicalOp.empty();
      }
      if (!f.parallelOp.empty() || d.device == kNone) continue;
      const int index = plan.deviceIndex(d.device);
      if (index == kNone) continue;
      f.parallelOp = producerOf(plan.devices[static_cast<size_t>(index)].graph, d.tensor);
      f.device = f.parallelOp.empty() ? kNone : index;
      f.parallelDiffers = !f.parallelOp.empty();
    }
  // Where the values inside the stage stop agreeing (report_annotate), before the differing output.
  if (stage.firstDifference)
    if (const int index = plan.deviceIndex(stage.firstDifference->rank); index != kNone) {
      f.parallelOp = stage.firstDifference->op;
      f.device = index;
      f.parallelDiffers = true;
    }
  if (f.parallelOp.empty() && !stage.parallelOps.empty()) {
    f.parallelOp = stage.parallelOps.front().op;
    f.device = plan.deviceIndex(stage.parallelOps.front().rank);
  }
  if (f.logicalOp.empty() && !stage.logicalOps.empty()) f.logicalOp = stage.logicalOps.front();
  return f;
}

}  // namespace paraproof::ui
