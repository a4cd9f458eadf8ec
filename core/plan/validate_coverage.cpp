// Coverage: every element of every logical output is produced by some device output, either as a full
// value (parts == 1) or as a complete group of value parts.
#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "core/plan/coverage_grid.h"
#include "core/plan/validate_checks.h"

namespace paraproof::validation {

namespace {

// Device outputs' lineage for one logical tensor.
struct Contributions {
  std::set<Box> whole;                                 // parts == 1
  std::map<std::pair<Box, int>, std::set<int>> parts;  // (box, parts) -> parts present among device outputs
};

}  // namespace

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
