#include "ui/model/lineage_index.h"

#include <algorithm>
#include <set>

namespace paraproof::ui {
namespace {

// The logical element that defines a logical tensor: its producer op, or the input itself.
int definingElement(const GraphModel& logical, const std::string& tensor) {
  const Graph& g = logical.plan()->logical;
  ValueId v = g.findValue(tensor);
  if (v == kNone) return -1;
  OpId producer = g.values[v].producer;
  return producer == kNone ? logical.elementOfInput(kNone, v) : logical.elementOfOp(kNone, producer);
}

std::vector<int> gather(const std::vector<std::vector<int>>& links, const std::vector<int>& from) {
  std::set<int> out;
  for (int e : from)
    if (e >= 0 && e < static_cast<int>(links.size())) out.insert(links[e].begin(), links[e].end());
  return {out.begin(), out.end()};
}

}  // namespace

LineageIndex::LineageIndex(const GraphModel& logical, const GraphModel& parallel) {
  toParallel_.resize(logical.elements().size());
  toLogical_.resize(parallel.elements().size());
  const Plan& plan = *parallel.plan();
  for (size_t pe = 0; pe < parallel.elements().size(); ++pe) {
    const Element& e = parallel.element(static_cast<int>(pe));
    const Device& dev = plan.devices[e.device];
    const Graph& g = dev.graph;
    std::set<int> targets;
    auto addLineageOf = [&](ValueId v) {
      auto it = dev.lineage.find(v);
      if (it == dev.lineage.end()) return;
      int le = definingElement(logical, it->second.tensor);
      if (le >= 0) targets.insert(le);
    };
    if (e.kind == Element::Kind::Input) {
      addLineageOf(e.index);
    } else {
      const Op& op = g.ops[e.index];
      int origin = op.origin.empty() ? -1 : logical.elementOfOp(kNone, op.origin);
      if (origin >= 0)
        targets.insert(origin);
      else
        for (ValueId v : op.outputs)
          addLineageOf(v);
    }
    for (int le : targets) {
      toLogical_[pe].push_back(le);
      toParallel_[le].push_back(static_cast<int>(pe));
    }
  }
}

std::vector<int> LineageIndex::parallelFor(const std::vector<int>& logicalElements) const {
  return gather(toParallel_, logicalElements);
}

std::vector<int> LineageIndex::logicalFor(const std::vector<int>& parallelElements) const {
  return gather(toLogical_, parallelElements);
}

std::vector<std::pair<int, int>> LineageIndex::linksFromLogical(
    const std::vector<int>& logicalElements) const {
  std::vector<std::pair<int, int>> out;
  for (int le : logicalElements)
    if (le >= 0 && le < static_cast<int>(toParallel_.size()))
      for (int pe : toParallel_[le])
        out.emplace_back(le, pe);
  return out;
}

std::vector<std::pair<int, int>> LineageIndex::linksFromParallel(
    const std::vector<int>& parallelElements) const {
  std::vector<std::pair<int, int>> out;
  for (int pe : parallelElements)
    if (pe >= 0 && pe < static_cast<int>(toLogical_.size()))
      for (int le : toLogical_[pe])
        out.emplace_back(le, pe);
  return out;
}

}  // namespace paraproof::ui
