#include "core/parallel/schedule.h"

#include <algorithm>

namespace paraproof::parallel {

std::vector<PipelineStep> pipelineOrder(const std::string& schedule, int stage, int stages,
                                        int microBatches) {
  std::vector<PipelineStep> order;
  if (schedule == "gpipe") {
    for (int m = 0; m < microBatches; ++m)
      order.push_back({true, m});
    for (int m = 0; m < microBatches; ++m)
      order.push_back({false, m});
    return order;
  }
  const int warmup = std::min(stages - stage - 1, microBatches);
  int f = 0, b = 0;
  for (; f < warmup; ++f)
    order.push_back({true, f});
  for (; f < microBatches; ++f, ++b) {
    order.push_back({true, f});
    order.push_back({false, b});
  }
  for (; b < microBatches; ++b)
    order.push_back({false, b});
  return order;
}

}  // namespace paraproof::parallel
