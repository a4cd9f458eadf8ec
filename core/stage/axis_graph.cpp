#include "core/stage/axis_graph.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "core/ops/registry.h"

namespace paraproof::stage {

namespace {

ValueId portValue(const Op& op, int port) {
  int nIn = static_cast<int>(op.inputs.size());
  return port < nIn ? op.inputs.at(port) : op.outputs.at(port - nIn);
}

std::vector<TensorType> types(const Graph& g, const std::vector<ValueId>& vs) {
  std::vector<TensorType> t;
  for (ValueId v : vs)
    t.push_back(g.values[v].type);
  return t;
}

}  // namespace

AxisGraph::AxisGraph(const Plan& plan, bool logicalOnly) : plan_(plan) {
  graphs_.push_back(&plan.logical);
  if (!logicalOnly)
    for (const Device& d : plan.devices)
      graphs_.push_back(&d.graph);
  size_t n = 0;
  for (const Graph* g : graphs_) {
    std::vector<size_t> offs, vals;
    for (const Value& v : g->values) {
      offs.push_back(n);
      n += v.type.shape.size();
      vals.push_back(isInteger(v.type.dtype) ? n++ : kNoNode);
    }
    axisBase_.push_back(std::move(offs));
    valueNode_.push_back(std::move(vals));
  }
  uf_ = UnionFind(n);
  extent_.assign(n, 0);
  pinned_.assign(n, false);
  for (size_t g = 0; g < graphs_.size(); ++g)
    for (size_t v = 0; v < graphs_[g]->values.size(); ++v)
      for (size_t a = 0; a < graphs_[g]->values[v].type.shape.size(); ++a)
        extent_[axisBase_[g][v] + a] = graphs_[g]->values[v].type.shape[a];
  for (size_t g = 0; g < graphs_.size(); ++g)
    collectOps(g);
  if (logicalOnly) return;
  collectLineage();
  collectCommunication();
}

void AxisGraph::pinValue(size_t g, ValueId v) {
  for (size_t a = 0; a < graphs_[g]->values[v].type.shape.size(); ++a)
    pinned_[axis(g, v, static_cast<int>(a))] = true;
  if (values(g, v) != kNoNode) pinned_[values(g, v)] = true;
}

void AxisGraph::tieValue(size_t g, ValueId v, size_t h, ValueId w) {
  const Shape &a = graphs_[g]->values[v].type.shape, &b = graphs_[h]->values[w].type.shape;
  if (a.size() != b.size()) {
    pinValue(g, v);
    pinValue(h, w);
    return;
  }
  for (size_t i = 0; i < a.size(); ++i)
    uf_.unite(axis(g, v, static_cast<int>(i)), axis(h, w, static_cast<int>(i)));
  size_t x = values(g, v), y = values(h, w);
  if (x != kNoNode && y != kNoNode)
    uf_.unite(x, y);
  else if (x != kNoNode || y != kNoNode)
    pinned_[x != kNoNode ? x : y] = true;
}

void AxisGraph::collectOps(size_t g) {
  const Graph& graph = *graphs_[g];
  for (const Op& op : graph.ops) {
    const ops::OpDef* def = ops::findOp(op.kind);
    ops::AxisInfo info;
    bool ok = def && def->axes;
    if (ok) {
      try {
        info = def->axes(types(graph, op.inputs), types(graph, op.outputs), op.attrs);
      } catch (const std::exception&) {
        ok = false;
      }
    }
    if (!ok) {
      for (ValueId v : op.inputs)
        pinValue(g, v);
      for (ValueId v : op.outputs)
        pinValue(g, v);
      continue;
    }
    const int ports = static_cast<int>(op.inputs.size() + op.outputs.size());
    // A node for an AxisRef; kNoNode for the values of a float port (they index nothing).
    auto node = [&](ops::AxisRef r) {
      if (r.port < 0 || r.port >= ports) return kNoNode;
      ValueId v = portValue(op, r.port);
      if (r.axis == ops::kValues) return values(g, v);
      if (r.axis < 0 || r.axis >= static_cast<int>(graph.values[v].type.shape.size())) return kNoNode;
      return axis(g, v, r.axis);
    };
    std::vector<bool> ruled(static_cast<size_t>(ports), false);  // integer values with a declared rule
    auto mark = [&](ops::AxisRef r) {
      if (r.axis == ops::kValues && r.port >= 0 && r.port < ports) ruled[r.port] = true;
    };
    for (const auto& [a, b] : info.ties) {
      size_t x = node(a), y = node(b);
      if (x == kNoNode || y == kNoNode) continue;
      uf_.unite(x, y);
      mark(a);
      mark(b);
    }
    // Axes that data indexes along (gather sources, top-k candidates) keep their full size.
    for (auto r : info.fixed)
      if (size_t x = node(r); x != kNoNode) {
        pinned_[x] = true;
        mark(r);
      }
    for (const auto& [r, value] : info.boundaries)
      if (size_t x = node(r); x != kNoNode) boundaries_.push_back({x, value});
    for (const auto& c : info.counts) {
      std::vector<size_t> group;
      for (auto r : c)
        if (size_t x = node(r); x != kNoNode && r.axis != ops::kValues) group.push_back(x);
      if (group.size() == c.size()) counts_.push_back(std::move(group));
    }
    for (auto r : info.positions)
      if (size_t x = node(r); x != kNoNode && r.axis != ops::kValues) positions_.push_back(x);
    for (const auto& p : info.products) {
      Product prod;
      for (auto r : p.from)
        prod.from.push_back(node(r));
      for (auto r : p.to)
        prod.to.push_back(node(r));
      if (std::count(prod.from.begin(), prod.from.end(), kNoNode) ||
          std::count(prod.to.begin(), prod.to.end(), kNoNode)) {
        for (auto* side : {&prod.from, &prod.to})
          for (size_t x : *side)
            if (x != kNoNode) pinned_[x] = true;
        continue;
      }
      products_.push_back(std::move(prod));
    }
    // Integer values the op consumes or produces without a declared rule keep their full-size meaning
    // (send/recv carry theirs to the peer: collectCommunication ties the pair).
    if (isP2P(op.kind)) continue;
    for (int p = 0; p < ports; ++p)
      if (!ruled[p])
        if (size_t x = values(g, portValue(op, p)); x != kNoNode) pinned_[x] = true;
  }
}

void AxisGraph::collectLineage() {
  for (size_t d = 0; d < plan_.devices.size(); ++d) {
    const Device& dev = plan_.devices[d];
    for (const auto& [v, lin] : dev.lineage) {
      ValueId lv = lineageValue(plan_.logical, lin);
      if (lv == kNone) continue;
      tieValue(d + 1, v, 0, lv);
      // A value part of an id is no id (parts sum to it).
      if (lin.parts > 1) {
        if (size_t x = values(d + 1, v); x != kNoNode) pinned_[x] = true;
        if (size_t x = values(0, lv); x != kNoNode) pinned_[x] = true;
      }
      const Shape& ls = plan_.logical.values[lv].type.shape;
      if (ls.size() != dev.graph.values[v].type.shape.size()) continue;
      for (size_t a = 0; a < ls.size() && a < lin.box.ranges.size(); ++a) {
        boundaries_.push_back({axis(0, lv, static_cast<int>(a)), lin.box.ranges[a].first});
        boundaries_.push_back({axis(0, lv, static_cast<int>(a)), lin.box.ranges[a].second});
      }
    }
  }
}

// Members of one collective instance exchange their operands, a recv holds what its send sent: their
// axes (and integer values) index the same dimensions, so they share factors. Otherwise two members could
// be reduced differently and the collective would combine pieces of different shapes.
void AxisGraph::collectCommunication() {
  std::map<std::string, std::vector<std::pair<size_t, const Op*>>> collectives;
  std::map<std::tuple<int, int, std::string>, std::pair<size_t, const Op*>> sends;
  for (size_t d = 0; d < plan_.devices.size(); ++d)
    for (const Op& op : plan_.devices[d].graph.ops) {
      const std::string inst = op.attrs.contains("instance") ? op.attrs["instance"].dump() : "";
      if (isCollective(op)) collectives[inst].push_back({d + 1, &op});
      if (op.kind == "send" && !op.inputs.empty())
        sends[{plan_.devices[d].rank, op.attrs.value("peer", -1), inst}] = {d + 1, &op};
    }
  for (const auto& [inst, members] : collectives)
    for (size_t m = 1; m < members.size(); ++m) {
      const auto& [g0, op0] = members[0];
      const auto& [g, op] = members[m];
      for (size_t i = 0; i < op->inputs.size() && i < op0->inputs.size(); ++i)
        tieValue(g, op->inputs[i], g0, op0->inputs[i]);
      for (size_t i = 0; i < op->outputs.size() && i < op0->outputs.size(); ++i)
        tieValue(g, op->outputs[i], g0, op0->outputs[i]);
    }
  for (size_t d = 0; d < plan_.devices.size(); ++d)
    for (const Op& op : plan_.devices[d].graph.ops) {
      if (op.kind != "recv" || op.outputs.empty()) continue;
      const std::string inst = op.attrs.contains("instance") ? op.attrs["instance"].dump() : "";
      auto it = sends.find({op.attrs.value("peer", -1), plan_.devices[d].rank, inst});
      if (it == sends.end()) continue;
      tieValue(d + 1, op.outputs[0], it->second.first, it->second.second->inputs[0]);
    }
}

std::vector<int64_t> AxisGraph::classExtents() {
  std::vector<int64_t> ext(size(), 0);
  for (size_t n = 0; n < size(); ++n)
    ext[find(n)] = std::max(ext[find(n)], extent_[n]);
  return ext;
}

}  // namespace paraproof::stage
