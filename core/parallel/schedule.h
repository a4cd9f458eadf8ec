// Pipeline orders: the sequence of forward/backward micro-batch steps one stage executes.
#pragma once

#include <string>
#include <vector>

namespace paraproof::parallel {

struct PipelineStep {
  bool forward = true;
  int microBatch = 0;
};

// "gpipe": all forwards, then all backwards. "1f1b": (stages - stage - 1) warm-up forwards, then alternate
// one forward and one backward, then the remaining backwards. Backwards always run in micro-batch order.
std::vector<PipelineStep> pipelineOrder(const std::string& schedule, int stage, int stages, int microBatches);

}  // namespace paraproof::parallel
