#include "ui/model/graph_model.h"

#include <algorithm>
#include <cctype>
#include <deque>
#include <functional>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "core/stage/fold.h"

namespace paraproof::ui {
namespace {

// "layers.3.attention.wq" -> {"layers.3", "attention", "wq"}: an index belongs to the name before it. Text
// after a space is a note, not a level ("model.fc1 mlp.py:20": the importer's SCRIPT.py line).
std::vector<std::string> scopeParts(const std::string& fullScope) {
  const std::string scope = fullScope.substr(0, fullScope.find(' '));
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= scope.size() && !scope.empty()) {
    size_t dot = scope.find('.', start);
    std::string part = scope.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    if (numeric && !parts.empty())
      parts.back() += "." + part;
    else if (!part.empty())
      parts.push_back(part);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return parts;
}

int axisIndex(const Mesh& mesh, const char* name) {
  for (size_t i = 0; i < mesh.axes.size(); ++i)
    if (mesh.axes[i] == name) return static_cast<int>(i);
  return -1;
}

bool coordValid(const Plan& plan, const Device& d) {
  return d.coord.size() == plan.mesh.axes.size();
}

// What must agree for two micro-batch copies of an op to be shown as one node: kind, attributes (names
// inside them without their "#m") and the types of its values. Copies that differ (an eps changed in one
// micro-batch) are shown apart, never folded into "the same op".
std::string copySignature(const Graph& g, const Op& op) {
  Json attrs = op.attrs;
  for (auto& [key, value] : attrs.items())
    if (value.is_string()) value = names::withoutCopyMarker(value.get<std::string>());
  std::string sig = op.kind + '\x1f' + attrs.dump();
  for (const auto* values : {&op.inputs, &op.outputs})
    for (ValueId v : *values)
      if (v >= 0 && v < static_cast<ValueId>(g.values.size()))
        sig += '\x1f' + shapeString(g.values[v].type.shape) + dtypeName(g.values[v].type.dtype);
  return sig;
}

}  // namespace

int GraphModel::addNode(HierarchyNode n) {
  nodes_.push_back(std::move(n));
  int id = static_cast<int>(nodes_.size()) - 1;
  if (nodes_[id].parent >= 0) nodes_[nodes_[id].parent].children.push_back(id);
  return id;
}

int GraphModel::scopeGroup(int parent, const std::string& scope,
                           std::unordered_map<std::string, int>& cache) {
  int group = parent;
  std::string path;
  for (const std::string& part : scopeParts(scope)) {
    path += (path.empty() ? "" : ".") + part;
    auto it = cache.find(path);
    if (it != cache.end()) {
      group = it->second;
      continue;
    }
    HierarchyNode n;
    n.kind = HierarchyNode::Kind::Scope;
    n.label = part;
    n.parent = group;
    group = addNode(std::move(n));
    cache.emplace(path, group);
  }
  return group;
}

void GraphModel::addGraph(int parent, int device, const Graph& g, bool foldMicroBatches) {
  auto& opEl = opElements_[device + 1];
  auto& inEl = inputElements_[device + 1];
  opEl.assign(g.ops.size(), -1);
  inEl.assign(g.values.size(), -1);
  // Scope lookups are linear in the number of groups of this graph; a map keeps big graphs fast.
  std::unordered_map<std::string, int> groupOfScope;
  std::unordered_map<std::string, int> cache;
  auto groupFor = [&](const std::string& scope) {
    auto it = groupOfScope.find(scope);
    if (it != groupOfScope.end()) return it->second;
    int grp = scopeGroup(parent, scope, cache);
    groupOfScope.emplace(scope, grp);
    return grp;
  };
  // Micro-batch copies of an op or input share the element of the first copy (same name without "#m").
  std::unordered_map<std::string, int> elementOfBase;
  std::vector<int> folded;  // leaves standing for more than one micro-batch
  auto foldKey = [&](const std::string& name, const Op* op, int* mb) {
    std::string key = names::withoutCopyMarker(name, mb);
    return op ? key + '\x1e' + copySignature(g, *op) : key;
  };
  auto foldedInto = [&](const std::string& name, const Op* op = nullptr) {
    if (!foldMicroBatches) return -1;
    int mb = -1;
    std::string base = foldKey(name, op, &mb);
    if (mb < 0) return -1;
    auto [it, fresh] = elementOfBase.emplace(std::move(base), -1);
    if (fresh) return -1;
    HierarchyNode& leaf = nodes_[leafOfElement_[it->second]];
    if (leaf.microBatches++ == 1) folded.push_back(leafOfElement_[it->second]);
    return it->second;
  };
  auto remember = [&](const std::string& name, int element, const Op* op = nullptr) {
    if (!foldMicroBatches) return;
    auto it = elementOfBase.find(foldKey(name, op, nullptr));
    if (it != elementOfBase.end() && it->second < 0) it->second = element;
  };
  auto addLeaf = [&](int group, Element e, std::string label, std::string detail) {
    elements_.push_back(e);
    int el = static_cast<int>(elements_.size()) - 1;
    HierarchyNode n;
    n.kind = HierarchyNode::Kind::Leaf;
    n.label = std::move(label);
    n.detail = std::move(detail);
    n.parent = group;
    n.element = el;
    leafOfElement_.push_back(addNode(std::move(n)));
    return el;
  };
  // An input is shown next to its first consumer, so weights sit inside the layer that uses them.
  for (size_t o = 0; o < g.ops.size(); ++o) {
    const Op& op = g.ops[o];
    int group = groupFor(op.scope);
    for (ValueId v : op.inputs) {
      if (v < 0 || v >= static_cast<int>(g.values.size())) continue;
      if (g.values[v].producer != kNone || inEl[v] >= 0) continue;
      const std::string& name = g.values[v].name;
      inEl[v] = foldedInto(name);
      if (inEl[v] < 0) {
        inEl[v] =
            addLeaf(group, {Element::Kind::Input, device, v}, name, shapeString(g.values[v].type.shape));
        remember(name, inEl[v]);
      }
    }
    opEl[o] = foldedInto(op.id, &op);
    if (opEl[o] < 0) {
      opEl[o] = addLeaf(group, {Element::Kind::Op, device, static_cast<int>(o)}, op.id, op.kind);
      remember(op.id, opEl[o], &op);
    }
    for (ValueId v : op.inputs) {
      if (v < 0 || v >= static_cast<int>(g.values.size())) continue;
      int producer = g.values[v].producer;
      int src = producer == kNone ? inEl[v] : opEl[producer];
      if (src >= 0) elementEdges_.emplace_back(src, opEl[o]);
    }
  }
  for (ValueId v : g.inputs)
    if (inEl[v] < 0) {
      inEl[v] = foldedInto(g.values[v].name);
      if (inEl[v] < 0) {
        inEl[v] = addLeaf(parent, {Element::Kind::Input, device, v}, g.values[v].name,
                          shapeString(g.values[v].type.shape));
        remember(g.values[v].name, inEl[v]);
      }
    }
  for (int leaf : folded) {
    HierarchyNode& n = nodes_[leaf];
    n.label = names::withoutCopyMarker(n.label) + "  \u00d7" + std::to_string(n.microBatches) + " mb";
  }
}

GraphModel GraphModel::logical(const Plan& plan) {
  GraphModel m;
  m.plan_ = &plan;
  m.opElements_.resize(plan.devices.size() + 1);
  m.inputElements_.resize(plan.devices.size() + 1);
  m.representative_.assign(plan.devices.size(), kNone);
  HierarchyNode root;
  root.kind = HierarchyNode::Kind::Root;
  root.label = plan.name.empty() ? "model" : plan.name;
  root.expanded = true;
  m.addNode(std::move(root));
  m.addGraph(0, kNone, plan.logical, false);
  m.finish();
  return m;
}

GraphModel GraphModel::parallel(const Plan& plan, ParallelSelection sel) {
  GraphModel m;
  m.plan_ = &plan;
  m.parallel_ = true;
  m.opElements_.resize(plan.devices.size() + 1);
  m.inputElements_.resize(plan.devices.size() + 1);
  m.representative_.assign(plan.devices.size(), kNone);
  HierarchyNode root;
  root.kind = HierarchyNode::Kind::Root;
  root.label = "devices";
  root.expanded = true;
  m.addNode(std::move(root));

  const int dpAxis = axisIndex(plan.mesh, "dp");
  const int ppAxis = axisIndex(plan.mesh, "pp");
  // Which devices are shown, and which shown device stands for each folded data-parallel replica: only a
  // translate of its line's template folds into it (stage/fold.h reads them as the replica fold does); a
  // deviant replica (an injected bug on rank 2) is shown apart, and replicas that are no translates at all
  // (ZeRO shards) are each shown.
  const stage::ReplicaTranslates translates = dpAxis >= 0 && sel.mode != ParallelSelection::Mode::Device
                                                  ? stage::replicaTranslates(plan)
                                                  : stage::ReplicaTranslates{};
  std::vector<bool> deviant(plan.devices.size(), false);
  std::map<std::vector<int64_t>, int> repOfKey;
  std::vector<int> reps;
  for (size_t i = 0; i < plan.devices.size(); ++i) {
    const Device& d = plan.devices[i];
    bool valid = coordValid(plan, d);
    if (sel.mode == ParallelSelection::Mode::Device) {
      if (d.rank != sel.value) continue;
      m.representative_[i] = static_cast<int>(i);
      reps.push_back(static_cast<int>(i));
      continue;
    }
    if (sel.mode == ParallelSelection::Mode::PipelineStage && ppAxis >= 0 && valid &&
        d.coord[ppAxis] != sel.value)
      continue;
    const int stands = translates.templateOf.empty() ? static_cast<int>(i) : translates.templateOf[i];
    std::vector<int64_t> key =
        valid ? plan.devices[static_cast<size_t>(stands)].coord : std::vector<int64_t>{d.rank};
    if (!valid) key.push_back(-1);  // never folds with a valid coordinate
    auto [it, fresh] = repOfKey.emplace(key, stands);
    if (fresh) reps.push_back(stands);
    m.representative_[i] = it->second;
  }
  std::sort(reps.begin(), reps.end(), [&](int a, int b) {  // devices in coordinate order
    return plan.devices[static_cast<size_t>(a)].rank < plan.devices[static_cast<size_t>(b)].rank;
  });
  std::map<int, int> replicas;
  for (size_t i = 0; i < plan.devices.size(); ++i)
    if (m.representative_[i] != kNone) ++replicas[m.representative_[i]];
  // A compact plan states a few replicas along dp and implies the others (their translates): the template's
  // group also stands for every implied replica of its line.
  if (!translates.templateOf.empty()) {
    struct Line {
      int tmpl = -1;  // the device its translates fold into; -1: the line has none
      std::vector<size_t> devices;
    };
    std::map<std::vector<int64_t>, Line> lines;  // by coordinate without dp
    for (size_t i = 0; i < plan.devices.size(); ++i) {
      if (m.representative_[i] == kNone || !coordValid(plan, plan.devices[i])) continue;
      std::vector<int64_t> coord = plan.devices[i].coord;
      coord[static_cast<size_t>(dpAxis)] = 0;
      Line& line = lines[coord];
      line.devices.push_back(i);
      if (translates.templateOf[i] != static_cast<int>(i)) line.tmpl = translates.templateOf[i];
    }
    const int64_t extent = plan.mesh.shape[static_cast<size_t>(dpAxis)];
    for (const auto& [coord, line] : lines) {
      if (line.tmpl < 0) continue;
      for (size_t i : line.devices)
        deviant[i] = translates.templateOf[i] == static_cast<int>(i) && static_cast<int>(i) != line.tmpl;
      if (plan.replicas)
        replicas[line.tmpl] += static_cast<int>(extent - static_cast<int64_t>(line.devices.size()));
    }
  }
  for (const auto& [rep, count] : replicas)
    m.devicesCovered_ += count;

  // Mesh groups: one level per non-data-parallel axis with more than one coordinate.
  std::vector<int> levels;
  if (sel.mode != ParallelSelection::Mode::Device)
    for (size_t a = 0; a < plan.mesh.axes.size(); ++a) {
      if (static_cast<int>(a) == dpAxis || plan.mesh.shape.size() <= a || plan.mesh.shape[a] <= 1) continue;
      if (sel.mode == ParallelSelection::Mode::PipelineStage && static_cast<int>(a) == ppAxis) continue;
      levels.push_back(static_cast<int>(a));
    }
  if (levels.size() > 0 && reps.size() <= kMaxChildren)
    levels.clear();  // few devices: a flat list reads best
  std::map<std::vector<int64_t>, int> meshGroups;
  for (int di : reps) {
    const Device& d = plan.devices[di];
    int parent = 0;
    std::vector<int64_t> prefix;
    if (coordValid(plan, d))
      for (int a : levels) {
        prefix.push_back(d.coord[a]);
        auto it = meshGroups.find(prefix);
        if (it == meshGroups.end()) {
          HierarchyNode n;
          n.kind = HierarchyNode::Kind::Mesh;
          n.label = plan.mesh.axes[a] + " " + std::to_string(d.coord[a]);
          n.parent = parent;
          it = meshGroups.emplace(prefix, m.addNode(std::move(n))).first;
        }
        parent = it->second;
      }
    HierarchyNode n;
    n.kind = HierarchyNode::Kind::Device;
    n.label = "rank " + std::to_string(d.rank);
    if (coordValid(plan, d))
      for (size_t a = 0; a < d.coord.size(); ++a)
        n.detail += (a ? " " : "") + plan.mesh.axes[a] + "=" + std::to_string(d.coord[a]);
    n.replicas = replicas[di];
    if (n.replicas > 1) n.label += "  \u00d7" + std::to_string(n.replicas) + " dp";
    if (deviant[static_cast<size_t>(di)]) {
      n.label += "  (deviant)";
      n.detail += " \u00b7 not the translate of its replicas";
    }
    n.parent = parent;
    m.shownDevices_.push_back(di);
    m.addGraph(m.addNode(std::move(n)), di, d.graph, sel.foldMicroBatches);
  }

  // Point-to-point transfers between shown devices are drawn as edges.
  std::map<std::string, std::pair<int, int>> p2p;  // instance -> (send element, recv element)
  for (int di : reps) {
    const Graph& g = plan.devices[di].graph;
    for (size_t o = 0; o < g.ops.size(); ++o) {
      const Op& op = g.ops[o];
      if (!isP2P(op.kind) || !op.attrs.contains("instance") || !op.attrs["instance"].is_string()) continue;
      auto& pair = p2p[op.attrs["instance"].get<std::string>()];
      (op.kind == "send" ? pair.first : pair.second) = m.opElements_[di + 1][o] + 1;
    }
  }
  for (auto& [inst, pair] : p2p)
    if (pair.first > 0 && pair.second > 0) m.elementEdges_.emplace_back(pair.first - 1, pair.second - 1);
  m.finish();
  return m;
}

void GraphModel::finish() {
  // A scope group holding a single leaf adds nothing: put the leaf in the group's place.
  for (int g = static_cast<int>(nodes_.size()) - 1; g > 0; --g) {
    HierarchyNode& n = nodes_[g];
    if (n.kind != HierarchyNode::Kind::Scope || n.children.size() != 1) continue;
    int child = n.children[0];
    if (nodes_[child].isGroup()) continue;
    auto& siblings = nodes_[n.parent].children;
    *std::find(siblings.begin(), siblings.end(), g) = child;
    nodes_[child].parent = n.parent;
    n.children.clear();
    n.parent = -2;  // detached
  }
  for (int g = 0, count = size(); g < count; ++g)
    if (nodes_[g].isGroup() && nodes_[g].parent != -2) split(g);
  countLeaves(0);
  identities_ = identifyGroups(*this);
  for (int g = 1; g < size(); ++g) {
    HierarchyNode& n = nodes_[g];
    const GroupIdentity& id = identities_[g];
    if (n.isGroup() && id.count > 1 && n.leafCount >= kMinIdenticalBadge &&
        n.kind != HierarchyNode::Kind::Device)
      n.detail += "  \u2261 \u00d7" + std::to_string(id.count);
  }
}

void GraphModel::split(int group) {
  while (nodes_[group].children.size() > static_cast<size_t>(kMaxChildren)) {
    std::vector<int> children = std::move(nodes_[group].children);
    nodes_[group].children.clear();
    for (size_t start = 0; start < children.size(); start += kMaxChildren) {
      size_t end = std::min(children.size(), start + kMaxChildren);
      HierarchyNode n;
      n.kind = HierarchyNode::Kind::Split;
      n.label = nodes_[children[start]].label + " \u2026 " + nodes_[children[end - 1]].label;
      n.parent = group;
      int chunk = addNode(std::move(n));
      for (size_t c = start; c < end; ++c) {
        nodes_[chunk].children.push_back(children[c]);
        nodes_[children[c]].parent = chunk;
      }
    }
  }
}

int GraphModel::countLeaves(int node) {
  HierarchyNode& n = nodes_[node];
  if (!n.isGroup()) return n.leafCount = 1;
  int total = 0;
  for (int c : n.children)
    total += countLeaves(c);
  nodes_[node].leafCount = total;
  if (nodes_[node].kind != HierarchyNode::Kind::Leaf && nodes_[node].kind != HierarchyNode::Kind::Device)
    nodes_[node].detail = std::to_string(total) + " nodes";
  return total;
}

int GraphModel::elementOfOp(int device, const std::string& opId) const {
  if (device == kNone) {
    OpId op = plan_->logical.findOp(opId);
    return op == kNone ? -1 : elementOfOp(device, op);
  }
  if (device < 0 || device >= static_cast<int>(representative_.size())) return -1;
  int rep = representative_[device];
  if (rep == kNone) return -1;
  OpId op = plan_->devices[rep].graph.findOp(opId);
  return op == kNone ? -1 : elementOfOp(rep, op);
}

int GraphModel::elementOfOp(int device, OpId op) const {
  if (device != kNone) {
    if (device < 0 || device >= static_cast<int>(representative_.size())) return -1;
    device = representative_[device];
    if (device == kNone) return -1;
  }
  const auto& v = opElements_[device + 1];
  return op >= 0 && op < static_cast<int>(v.size()) ? v[op] : -1;
}

int GraphModel::elementOfInput(int device, ValueId value) const {
  if (device != kNone) {
    if (device < 0 || device >= static_cast<int>(representative_.size())) return -1;
    device = representative_[device];
    if (device == kNone) return -1;
  }
  const auto& v = inputElements_[device + 1];
  return value >= 0 && value < static_cast<int>(v.size()) ? v[value] : -1;
}

int GraphModel::representative(int device) const {
  return device >= 0 && device < static_cast<int>(representative_.size()) ? representative_[device] : kNone;
}

void GraphModel::setExpanded(int node, bool expanded) {
  if (node <= 0 || node >= size() || !nodes_[node].isGroup()) return;
  nodes_[node].expanded = expanded;
}

void GraphModel::expandAll() {
  for (auto& n : nodes_)
    if (n.isGroup()) n.expanded = true;
}

int GraphModel::expandLevel(int budget, int64_t costBound, const std::vector<int>& first, int* left) {
  const std::unordered_set<int> preferred(first.begin(), first.end());
  std::vector<int> groups;  // visible collapsed groups, in drawing order
  std::vector<int> stack(nodes_[0].children.rbegin(), nodes_[0].children.rend());
  while (!stack.empty()) {
    const HierarchyNode& n = nodes_[stack.back()];
    const int id = stack.back();
    stack.pop_back();
    if (!n.isGroup()) continue;
    if (!n.expanded)
      groups.push_back(id);
    else
      stack.insert(stack.end(), n.children.rbegin(), n.children.rend());
  }
  std::stable_partition(groups.begin(), groups.end(), [&](int g) { return preferred.count(g) > 0; });
  // The groups that fit the node budget, in that order; then the longest prefix of them within the cost
  // bound (binary search: each probe builds the visible graph once).
  std::vector<int> fit;
  for (int count = visibleNodeCount(); int g : groups) {
    const int grow = static_cast<int>(nodes_[g].children.size()) - 1;
    if (count + grow > budget) continue;
    fit.push_back(g);
    count += grow;
  }
  auto setPrefix = [&](size_t k, bool expanded) {
    for (size_t i = 0; i < k; ++i)
      nodes_[fit[i]].expanded = expanded;
  };
  size_t lo = 0, hi = fit.size();
  while (lo < hi) {
    const size_t mid = (lo + hi + 1) / 2;
    setPrefix(mid, true);
    const bool within = layoutCost(visible()) <= costBound;
    setPrefix(mid, false);
    if (within)
      lo = mid;
    else
      hi = mid - 1;
  }
  setPrefix(lo, true);
  if (left) *left = static_cast<int>(groups.size() - lo);
  return static_cast<int>(lo);
}

int64_t GraphModel::layoutCost(const VisibleGraph& g) {
  std::unordered_map<int, int> index;
  for (int n : g.nodes)
    index.emplace(n, static_cast<int>(index.size()));
  const int n = static_cast<int>(index.size());
  std::vector<std::vector<int>> out(n);
  std::vector<std::pair<int, int>> edges;
  for (const VisibleGraph::Edge& e : g.edges) {
    auto a = index.find(e.from), b = index.find(e.to);
    if (a == index.end() || b == index.end()) continue;
    out[a->second].push_back(b->second);
    edges.emplace_back(a->second, b->second);
  }
  // Depth-first post-order without back edges (iterative), then longest-path ranks in reverse post-order.
  std::vector<int> state(n, 0), order;  // 0 new, 1 on the stack, 2 done
  for (int root = 0; root < n; ++root) {
    if (state[root]) continue;
    std::vector<std::pair<int, size_t>> dfs{{root, 0}};
    state[root] = 1;
    while (!dfs.empty()) {
      auto& [v, next] = dfs.back();
      if (next < out[v].size()) {
        const int w = out[v][next++];
        if (state[w] == 0) {
          state[w] = 1;
          dfs.emplace_back(w, 0);
        }
      } else {
        state[v] = 2;
        order.push_back(v);
        dfs.pop_back();
      }
    }
  }
  std::vector<int> position(n), rank(n, 0);
  for (int i = 0; i < n; ++i)
    position[order[i]] = n - 1 - i;  // reverse post-order: a forward edge goes to a later position
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    for (int w : out[*it])
      if (position[w] > position[*it]) rank[w] = std::max(rank[w], rank[*it] + 1);
  int64_t cost = n;
  for (auto [a, b] : edges)
    cost += std::max(0, std::abs(rank[b] - rank[a]) - 1);
  return cost;
}

void GraphModel::collapseAll() {
  for (size_t i = 1; i < nodes_.size(); ++i)
    nodes_[i].expanded = false;
}

void GraphModel::reveal(int node) {
  for (int p = nodes_[node].parent; p > 0; p = nodes_[p].parent)
    nodes_[p].expanded = true;
}

void GraphModel::autoExpand(int budget) {
  int count = visibleNodeCount();
  std::deque<int> queue(nodes_[0].children.begin(), nodes_[0].children.end());
  while (!queue.empty()) {
    int g = queue.front();
    queue.pop_front();
    const HierarchyNode& n = nodes_[g];
    if (!n.isGroup()) continue;
    int grow = static_cast<int>(n.children.size()) - 1;
    if (count + grow > budget) continue;
    nodes_[g].expanded = true;
    count += grow;
    queue.insert(queue.end(), n.children.begin(), n.children.end());
  }
}

int GraphModel::visibleNodeOf(int node) const {
  int shown = node;
  for (int p = nodes_[node].parent; p > 0; p = nodes_[p].parent)
    if (!nodes_[p].expanded) shown = p;
  return shown;
}

VisibleGraph GraphModel::visible() const {
  VisibleGraph vg;
  std::vector<int> rep(nodes_.size(), -1);
  std::vector<std::pair<int, int>> stack{{0, -1}};  // node, collapsed ancestor standing for it
  while (!stack.empty()) {
    auto [n, shownAs] = stack.back();
    stack.pop_back();
    const HierarchyNode& hn = nodes_[n];
    if (shownAs < 0) {
      if (n != 0 && (!hn.isGroup() || !hn.expanded)) {
        vg.nodes.push_back(n);
        shownAs = n;
      } else if (n != 0) {
        vg.clusters.push_back(n);
      }
    }
    rep[n] = shownAs;
    for (auto it = hn.children.rbegin(); it != hn.children.rend(); ++it)
      stack.emplace_back(*it, shownAs);
  }
  std::unordered_map<uint64_t, size_t> edgeIndex;
  for (auto [a, b] : elementEdges_) {
    int ra = rep[leafOfElement_[a]], rb = rep[leafOfElement_[b]];
    if (ra == rb || ra < 0 || rb < 0) continue;
    uint64_t key = (uint64_t(uint32_t(ra)) << 32) | uint32_t(rb);
    auto [it, fresh] = edgeIndex.emplace(key, vg.edges.size());
    if (fresh)
      vg.edges.push_back({ra, rb, 1});
    else
      ++vg.edges[it->second].count;
  }
  return vg;
}

int GraphModel::visibleNodeCount() const {
  int count = 0;
  std::vector<int> stack(nodes_[0].children.begin(), nodes_[0].children.end());
  while (!stack.empty()) {
    int n = stack.back();
    stack.pop_back();
    if (nodes_[n].isGroup() && nodes_[n].expanded)
      stack.insert(stack.end(), nodes_[n].children.begin(), nodes_[n].children.end());
    else
      ++count;
  }
  return count;
}

std::vector<int> GraphModel::elementsUnder(int node) const {
  std::vector<int> out;
  std::vector<int> stack{node};
  while (!stack.empty()) {
    int n = stack.back();
    stack.pop_back();
    if (nodes_[n].element >= 0) out.push_back(nodes_[n].element);
    stack.insert(stack.end(), nodes_[n].children.begin(), nodes_[n].children.end());
  }
  return out;
}

const Graph& GraphModel::graphOf(const Element& e) const {
  return e.device == kNone ? plan_->logical : plan_->devices[e.device].graph;
}

const std::string& GraphModel::elementName(int element) const {
  const Element& e = elements_[element];
  const Graph& g = graphOf(e);
  return e.kind == Element::Kind::Op ? g.ops[e.index].id.str() : g.values[e.index].name.str();
}

std::vector<int> GraphModel::find(const std::string& text) const {
  auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
  };
  const size_t first = text.find_first_not_of(" \t\n"), last = text.find_last_not_of(" \t\n");
  if (first == std::string::npos) return {};
  const std::string needle = lower(text.substr(first, last - first + 1));
  std::vector<std::pair<int, int>> scored;  // (rank, leaf)
  for (size_t el = 0; el < elements_.size(); ++el) {
    const Element& e = elements_[el];
    const Graph& g = graphOf(e);
    std::vector<std::string> names;
    if (e.kind == Element::Kind::Op) {
      const Op& op = g.ops[e.index];
      names = {op.id, op.kind, op.scope};
      for (ValueId v : op.outputs)
        names.push_back(g.values[v].name);
    } else {
      names = {g.values[e.index].name};
    }
    int best = 3;
    for (size_t i = 0; i < names.size(); ++i) {
      std::string name = lower(names[i]);
      if (name == needle)
        best = std::min(best, i == 0 ? 0 : 1);
      else if (name.find(needle) != std::string::npos)
        best = std::min(best, 2);
    }
    if (best < 3) scored.emplace_back(best, leafOfElement_[el]);
  }
  std::stable_sort(scored.begin(), scored.end(), [](auto& a, auto& b) { return a.first < b.first; });
  std::vector<int> out;
  for (auto& s : scored)
    out.push_back(s.second);
  return out;
}

}  // namespace paraproof::ui
