// Where each verification stage lives in the two graph views, and the state every element shows.
#pragma once

#include <vector>

#include "core/verify/report.h"
#include "ui/model/graph_model.h"
#include "ui/model/stage_state.h"

namespace paraproof::ui {

class StageMap {
 public:
  StageMap() = default;
  StageMap(const std::vector<verify::StageInfo>& stages, const GraphModel& logical,
           const GraphModel& parallel);

  int stageCount() const { return static_cast<int>(logical_.size()); }
  const std::vector<int>& logicalElements(int stage) const { return logical_[stage]; }
  const std::vector<int>& parallelElements(int stage) const { return parallel_[stage]; }
  // Per element of each model: the loudest state of the stages covering it (None when no stage does).
  std::vector<StageState> logicalStates(const std::vector<StageState>& stageStates) const;
  std::vector<StageState> parallelStates(const std::vector<StageState>& stageStates) const;
  // Stages covering an element, in stage order.
  std::vector<int> stagesOfLogical(int element) const;
  std::vector<int> stagesOfParallel(int element) const;

 private:
  std::vector<std::vector<int>> logical_, parallel_;  // per stage: elements
  size_t logicalCount_ = 0, parallelCount_ = 0;
};

}  // namespace paraproof::ui
