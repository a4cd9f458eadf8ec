// Which elements of a tensor a set of boxes covers, on the grid cut by every box edge (internal: coverage of
// logical outputs, the state contract).
#pragma once

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/plan/plan.h"

namespace paraproof::validation {

constexpr int64_t kMaxCells = int64_t{1} << 28;

// Cells of the grid cut by every box edge; covered cells are marked. Boxes are deduplicated first, so
// replicas cost nothing; in practice boxes tile the tensor and the work is linear in the grid size.
class CoverageGrid {
 public:
  CoverageGrid(const Shape& shape, const std::set<Box>& boxes) : boxes_(boxes) {
    cuts_.resize(shape.size());
    for (size_t k = 0; k < shape.size(); ++k) {
      std::set<int64_t> c{0, shape[k]};
      for (const Box& b : boxes)
        c.insert({b.ranges[k].first, b.ranges[k].second});
      cuts_[k].assign(c.begin(), c.end());
    }
  }

  int64_t cellCount() const {
    int64_t cells = 1;
    for (const auto& c : cuts_) {
      cells *= static_cast<int64_t>(c.size()) - 1;
      if (cells > kMaxCells) break;  // no overflow: each factor is small
    }
    return cells;
  }

  // The uncovered cells as boxes (empty when fully covered); at most `limit`, plus the number of uncovered
  // elements.
  std::pair<std::vector<Box>, int64_t> missing(size_t limit) const {
    std::vector<int64_t> dims;
    int64_t cells = 1;
    for (const auto& c : cuts_) {
      dims.push_back(static_cast<int64_t>(c.size()) - 1);
      cells *= dims.back();
    }
    if (cells == 0) return {{}, 0};
    std::vector<bool> covered(static_cast<size_t>(cells), false);
    for (const Box& b : boxes_)
      mark(b, dims, covered);
    std::vector<Box> out;
    int64_t elements = 0;
    for (int64_t f = 0; f < cells; ++f) {
      if (covered[f]) continue;
      Box cell = cellBox(f, dims);
      elements += numElements(cell.extent());
      if (out.size() < limit) out.push_back(std::move(cell));
    }
    return {out, elements};
  }

 private:
  size_t cutIndex(size_t k, int64_t x) const {
    return static_cast<size_t>(std::lower_bound(cuts_[k].begin(), cuts_[k].end(), x) - cuts_[k].begin());
  }

  void mark(const Box& b, const std::vector<int64_t>& dims, std::vector<bool>& covered) const {
    size_t rank = dims.size();
    std::vector<int64_t> lo(rank), hi(rank), idx(rank);
    for (size_t k = 0; k < rank; ++k) {
      lo[k] = static_cast<int64_t>(cutIndex(k, b.ranges[k].first));
      hi[k] = static_cast<int64_t>(cutIndex(k, b.ranges[k].second));
      if (lo[k] >= hi[k]) return;
    }
    idx = lo;
    while (true) {
      int64_t f = 0;
      for (size_t k = 0; k < rank; ++k)
        f = f * dims[k] + idx[k];
      covered[static_cast<size_t>(f)] = true;
      size_t k = rank;
      while (k > 0 && ++idx[k - 1] == hi[k - 1]) {
        idx[k - 1] = lo[k - 1];
        --k;
      }
      if (k == 0) return;
    }
  }

  Box cellBox(int64_t f, const std::vector<int64_t>& dims) const {
    Box b;
    b.ranges.resize(dims.size());
    for (size_t k = dims.size(); k-- > 0;) {
      int64_t i = f % dims[k];
      f /= dims[k];
      b.ranges[k] = {cuts_[k][i], cuts_[k][i + 1]};
    }
    return b;
  }

  std::set<Box> boxes_;
  std::vector<std::vector<int64_t>> cuts_;
};

// "elements [2,4)x[0,2) missing" (or the first few cells and a count) for the result of missing().
std::string describeMissing(const std::vector<Box>& cells, int64_t elements, int64_t total);

}  // namespace paraproof::validation
