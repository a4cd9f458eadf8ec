#include "ui/model/group_identity.h"

#include <algorithm>
#include <functional>
#include <string_view>
#include <unordered_map>

#include "ui/model/graph_model.h"

namespace paraproof::ui {
namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  // boost::hash_combine widened to 64 bits: order-sensitive, cheap.
  return h ^ (v + 0x9E3779B97F4A7C15ull + (h << 12) + (h >> 4));
}

uint64_t hashText(std::string_view s) {
  return std::hash<std::string_view>{}(s);
}

uint64_t leafHash(const GraphModel& m, const HierarchyNode& n) {
  const Element& e = m.element(n.element);
  const Graph& g = m.graphOf(e);
  auto typeHash = [](uint64_t h, const Value& v) {
    for (int64_t d : v.type.shape)
      h = mix(h, static_cast<uint64_t>(d));
    return mix(h, static_cast<uint64_t>(v.type.dtype));
  };
  uint64_t h = mix(static_cast<uint64_t>(e.kind), static_cast<uint64_t>(n.microBatches));
  if (e.kind == Element::Kind::Input) return typeHash(h, g.values[e.index]);
  const Op& op = g.ops[e.index];
  h = mix(mix(h, hashText(op.kind)), op.inputs.size());
  for (ValueId v : op.outputs)
    h = typeHash(h, g.values[v]);
  return h;
}

}  // namespace

std::vector<GroupIdentity> identifyGroups(const GraphModel& m) {
  const int count = m.size();
  std::vector<GroupIdentity> ids(count);
  // Depth and position among siblings, from the root down (detached nodes keep depth -1).
  std::vector<int> depth(count, -1), position(count, 0), order;
  order.reserve(count);
  std::vector<int> stack{m.root()};
  depth[m.root()] = 0;
  while (!stack.empty()) {
    int n = stack.back();
    stack.pop_back();
    order.push_back(n);
    const auto& children = m.node(n).children;
    for (size_t i = 0; i < children.size(); ++i) {
      depth[children[i]] = depth[n] + 1;
      position[children[i]] = static_cast<int>(i);
    }
    stack.insert(stack.end(), children.rbegin(), children.rend());
  }
  // Each dataflow edge belongs to the lowest group holding both ends, recorded by the paths (positions among
  // siblings) from that group down to the two leaves, so rewiring inside a child changes the hash too.
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> inner(count);
  for (auto [from, to] : m.elementEdges()) {
    int a = m.leafOf(from), b = m.leafOf(to);
    if (depth[a] < 0 || depth[b] < 0 || a == b) continue;
    uint64_t pathA = 1, pathB = 2;
    auto up = [&](int& n, uint64_t& path) {
      path = mix(path, static_cast<uint64_t>(position[n]));
      n = m.node(n).parent;
    };
    while (depth[a] > depth[b])
      up(a, pathA);
    while (depth[b] > depth[a])
      up(b, pathB);
    if (a == b) continue;  // one end is a group holding the other: not a leaf-to-leaf edge
    while (m.node(a).parent != m.node(b).parent) {
      up(a, pathA);
      up(b, pathB);
    }
    const int group = m.node(a).parent;
    up(a, pathA);
    up(b, pathB);
    inner[group].emplace_back(pathA, pathB);
  }
  // Children before parents: reverse pre-order.
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const HierarchyNode& n = m.node(*it);
    if (!n.isGroup()) {
      ids[*it].hash = leafHash(m, n);
      continue;
    }
    uint64_t h = mix(0x6A09E667F3BCC908ull, n.children.size());
    for (int c : n.children)
      h = mix(h, ids[c].hash);
    auto& edges = inner[*it];
    std::sort(edges.begin(), edges.end());
    for (auto [a, b] : edges)
      h = mix(mix(h, a), b);
    ids[*it].hash = h;
  }
  // Classes in hierarchy order, so the first member is the one a reader meets first (layers.0).
  std::unordered_map<uint64_t, std::pair<int, int>> classes;  // hash -> (first, count)
  for (int n : order)
    if (n != m.root() && m.node(n).isGroup()) {
      ++classes.emplace(ids[n].hash, std::pair{n, 0}).first->second.second;
    }
  for (int n : order)
    if (n != m.root() && m.node(n).isGroup()) {
      const auto& [first, members] = classes[ids[n].hash];
      ids[n].first = first;
      ids[n].count = members;
    }
  return ids;
}

}  // namespace paraproof::ui
