// Many-to-many links between logical elements and the parallel elements that implement them: ops by their
// `origin`, tensors by their lineage. Used to highlight counterparts across the two views.
#pragma once

#include <utility>
#include <vector>

#include "ui/model/graph_model.h"

namespace paraproof::ui {

class LineageIndex {
 public:
  LineageIndex() = default;
  // Both models must be built from the same plan.
  LineageIndex(const GraphModel& logical, const GraphModel& parallel);

  std::vector<int> parallelFor(const std::vector<int>& logicalElements) const;
  std::vector<int> logicalFor(const std::vector<int>& parallelElements) const;
  // The links to draw: (logical element, parallel element) for each selected element and counterpart.
  std::vector<std::pair<int, int>> linksFromLogical(const std::vector<int>& logicalElements) const;
  std::vector<std::pair<int, int>> linksFromParallel(const std::vector<int>& parallelElements) const;

 private:
  std::vector<std::vector<int>> toParallel_, toLogical_;
};

}  // namespace paraproof::ui
