// Coverage: every element of every logical output is produced by some device output, either as a full
// value (parts == 1) or as a complete group of value parts.
#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "core/plan/validate_checks.h"

namespace paraproof::validation {

namespace {

constexpr int64_t kMaxCells = int64_t{1} << 28;

// Device outputs' lineage for one logical tensor.
struct Contributions {
  std::set<Box> whole;                                 // parts == 1
  std::map<std::pair<Box, int>, std::set<int>> parts;  // (box, parts) -> parts present among device outputs
};

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

  const std::set<Box>& boxes_;
  std::vector<std::vector<int64_t>> cuts_;
};

std::string describeMissing(const std::vector<Box>& cells, int64_t elements, int64_t total) {
  if (cells.size() == 1 && cells.front().ranges.empty()) return "the scalar is missing";
  // One box when the missing cells form one; otherwise the first few.
  Box hull = cells.front();
  for (const Box& c : cells)
    for (size_t k = 0; k < c.ranges.size(); ++k) {
      hull.ranges[k].first = std::min(hull.ranges[k].first, c.ranges[k].first);
      hull.ranges[k].second = std::max(hull.ranges[k].second, c.ranges[k].second);
    }
  if (numElements(hull.extent()) == elements) return "elements " + boxString(hull) + " missing";
  std::string s = "elements ";
  for (size_t k = 0; k < cells.size() && k < 3; ++k)
    s += (k ? ", " : "") + boxString(cells[k]);
  if (cells.size() > 3) s += ", ...";
  return s + " missing; " + std::to_string(elements) + " of " + std::to_string(total) + " elements";
}

}  // namespace

void checkCoverage(const Plan& plan, Report& r) {
  std::unordered_map<std::string, Contributions> byTensor;
  for (const Device& d : plan.devices)
    for (ValueId v : d.graph.outputs) {
      auto it = d.lineage.find(v);
      if (it == d.lineage.end() || !lineageWellFormed(plan, it->second)) continue;
      const Lineage& l = it->second;
      Contributions& c = byTensor[l.tensor];
      if (l.parts == 1)
        c.whole.insert(l.box);
      else
        c.parts[{l.box, l.parts}].insert(l.part);
    }
  std::set<ValueId> done;
  for (size_t k = 0; k < plan.logical.outputs.size(); ++k) {
    ValueId out = plan.logical.outputs[k];
    if (!done.insert(out).second) continue;
    const Value& t = plan.logical.values[out];
    Contributions& c = byTensor[t.name];
    std::set<Box> boxes = c.whole;
    std::string incomplete;
    for (const auto& [key, present] : c.parts) {
      if (static_cast<int>(present.size()) == key.second) {
        boxes.insert(key.first);
      } else if (incomplete.empty()) {
        incomplete = "; the value parts of " + boxString(key.first) +
                     " are incomplete among device outputs (" + std::to_string(present.size()) + " of " +
                     std::to_string(key.second) + " parts)";
      }
    }
    CoverageGrid grid(t.type.shape, boxes);
    if (grid.cellCount() > kMaxCells) {  // never silently accept: coverage is part of the theorem
      r.add("/logical/outputs/" + std::to_string(k),
            "coverage of logical output '" + t.name +
                "' cannot be checked: its device lineage boxes cut it into " +
                std::to_string(grid.cellCount()) + " cells (limit " + std::to_string(kMaxCells) + ")");
      continue;
    }
    auto [cells, elements] = grid.missing(16);
    if (cells.empty()) continue;
    r.add("/logical/outputs/" + std::to_string(k),
          "logical output '" + t.name + "' is not covered by any device output's lineage (" +
              describeMissing(cells, elements, numElements(t.type.shape)) + ")" + incomplete);
  }
}

}  // namespace paraproof::validation
