// Stage cutting. Logical ops are grouped through tensors that carry no lineage; device ops likewise, plus
// the members of one collective or send/recv pair. A device group that computes new logical values joins the
// logical group producing them; one that only moves values (its outputs' logical tensors all appear among its
// inputs' lineage) stays a communication stage. Cycles between groups are merged (Tarjan SCC).
#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <string_view>
#include <unordered_map>

#include "core/stage/stage.h"
#include "core/stage/union_find.h"

namespace paraproof::stage {

namespace {

std::string attrKey(const Json& a) {
  return a.is_string() ? a.get<std::string>() : a.dump();
}

// Key shared by the matching communication calls of all members.
std::string commKey(const Op& op, int rank) {
  std::string inst = op.attrs.contains("instance") ? attrKey(op.attrs["instance"]) : "";
  if (op.kind == "send" || op.kind == "recv") {
    int peer = op.attrs.value("peer", -1);
    int from = op.kind == "send" ? rank : peer, to = op.kind == "send" ? peer : rank;
    return "p2p/" + std::to_string(from) + ">" + std::to_string(to) + "/" + inst;
  }
  return "coll/" + inst;
}

// Tarjan's strongly connected components over a small dependency graph.
std::vector<int> sccOf(const std::vector<std::set<int>>& succ) {
  int n = static_cast<int>(succ.size()), counter = 0, comps = 0;
  std::vector<int> index(n, -1), low(n, 0), comp(n, -1);
  std::vector<bool> onStack(n, false);
  std::vector<int> stack;
  // Iterative DFS: plans can have long chains.
  for (int root = 0; root < n; ++root) {
    if (index[root] != -1) continue;
    std::vector<std::pair<int, std::set<int>::const_iterator>> work{{root, succ[root].begin()}};
    index[root] = low[root] = counter++;
    stack.push_back(root);
    onStack[root] = true;
    while (!work.empty()) {
      auto& [v, it] = work.back();
      if (it != succ[v].end()) {
        int w = *it++;
        if (index[w] == -1) {
          index[w] = low[w] = counter++;
          stack.push_back(w);
          onStack[w] = true;
          work.push_back({w, succ[w].begin()});
        } else if (onStack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      if (low[v] == index[v]) {
        int w;
        do {
          w = stack.back();
          stack.pop_back();
          onStack[w] = false;
          comp[w] = comps;
        } while (w != v);
        ++comps;
      }
      int done = v;
      work.pop_back();
      if (!work.empty()) low[work.back().first] = std::min(low[work.back().first], low[done]);
    }
  }
  return comp;
}

}  // namespace

std::vector<Stage> cutStages(const Plan& plan) {
  const Graph& lg = plan.logical;
  const int numLogical = static_cast<int>(lg.ops.size());
  std::vector<int> base(plan.devices.size());
  int numNodes = numLogical;
  for (size_t d = 0; d < plan.devices.size(); ++d) {
    base[d] = numNodes;
    numNodes += static_cast<int>(plan.devices[d].graph.ops.size());
  }
  auto deviceOf = [&](int node) {
    return static_cast<int>(std::upper_bound(base.begin(), base.end(), node) - base.begin()) - 1;
  };

  // Each device's lineage by value id, read once in map order: the passes below ask it for every input and
  // output of every op, and a tree look-up per ask was most of this function's time (L3). Its logical
  // tensor by value id too (kNone: none, or a name the logical graph lacks), so that the groups below
  // compare ids, not names.
  std::vector<std::vector<const Lineage*>> lineageOf(plan.devices.size());
  std::vector<std::vector<ValueId>> tensorOf(plan.devices.size());
  std::vector<bool> cut(lg.values.size(), false);  // logical values some device holds a piece of
  std::unordered_map<std::string_view, ValueId> logicalByName;
  for (ValueId v = 0; v < static_cast<ValueId>(lg.values.size()); ++v)
    logicalByName.emplace(lg.values[v].name, v);
  for (size_t d = 0; d < plan.devices.size(); ++d) {
    const Device& dev = plan.devices[d];
    lineageOf[d].assign(dev.graph.values.size(), nullptr);
    tensorOf[d].assign(dev.graph.values.size(), kNone);
    const Name* last = nullptr;  // consecutive values often hold pieces of one tensor
    ValueId lastId = kNone;
    for (const auto& [v, lin] : dev.lineage) {
      lineageOf[d].at(static_cast<size_t>(v)) = &lin;
      if (!last || *last != lin.tensor) {
        const auto it = logicalByName.find(lin.tensor);
        last = &lin.tensor;
        lastId = it == logicalByName.end() ? kNone : it->second;
      }
      tensorOf[d][static_cast<size_t>(v)] = lastId;
      if (lastId != kNone) cut[static_cast<size_t>(lastId)] = true;
    }
  }

  UnionFind uf(numNodes);
  for (OpId o = 0; o < numLogical; ++o)
    for (ValueId v : lg.ops[o].inputs) {
      OpId p = lg.values[v].producer;
      if (p != kNone && !cut[static_cast<size_t>(v)]) uf.unite(o, p);
    }

  std::unordered_map<std::string, int> commFirst;
  for (size_t d = 0; d < plan.devices.size(); ++d) {
    const Device& dev = plan.devices[d];
    const Graph& g = dev.graph;
    for (OpId o = 0; o < static_cast<OpId>(g.ops.size()); ++o) {
      const Op& op = g.ops[o];
      for (ValueId v : op.inputs) {
        OpId p = g.values[v].producer;
        if (p != kNone && !lineageOf[d][v]) uf.unite(base[d] + o, base[d] + p);
      }
      if (isCommunication(op)) {
        auto [it, fresh] = commFirst.emplace(commKey(op, dev.rank), base[d] + o);
        if (!fresh) uf.unite(it->second, base[d] + o);
      }
    }
  }

  // Producers of the value parts of one (tensor, box, parts) group are checked together (their sum).
  std::map<std::tuple<std::string, Box, int>, int> partProducer;
  for (size_t d = 0; d < plan.devices.size(); ++d) {
    const Device& dev = plan.devices[d];
    for (const auto& [v, lin] : dev.lineage) {
      OpId p = dev.graph.values[v].producer;
      if (lin.parts <= 1 || p == kNone) continue;
      auto [it, fresh] = partProducer.emplace(std::make_tuple(lin.tensor, lin.box, lin.parts), base[d] + p);
      if (!fresh) uf.unite(it->second, base[d] + p);
    }
  }

  // Device groups that compute new logical values join the logical ops producing them. (Lineage to a name
  // the logical graph lacks joins nothing: validation rejects it.)
  std::vector<std::vector<ValueId>> groupIn(numNodes), groupOut(numNodes);  // by root: logical tensors
  for (size_t d = 0; d < plan.devices.size(); ++d) {
    const Graph& g = plan.devices[d].graph;
    for (OpId o = 0; o < static_cast<OpId>(g.ops.size()); ++o) {
      const size_t root = uf.find(base[d] + o);
      for (ValueId v : g.ops[o].inputs) {
        const ValueId t = tensorOf[d][v];
        OpId p = g.values[v].producer;
        bool external = p == kNone || uf.find(base[d] + p) != root;
        if (external && t != kNone) groupIn[root].push_back(t);
      }
      for (ValueId v : g.ops[o].outputs)
        if (const ValueId t = tensorOf[d][v]; t != kNone) groupOut[root].push_back(t);
    }
  }
  for (size_t root = 0; root < groupOut.size(); ++root) {
    std::vector<ValueId>& ins = groupIn[root];
    std::sort(ins.begin(), ins.end());
    for (ValueId t : groupOut[root]) {
      if (std::binary_search(ins.begin(), ins.end(), t)) continue;
      if (lg.values[t].producer != kNone) uf.unite(root, lg.values[t].producer);
    }
  }

  // Components -> dependency graph -> merge cycles.
  std::unordered_map<int, int> compIndex;
  std::vector<int> compOf(numNodes);
  for (int n = 0; n < numNodes; ++n) {
    int r = static_cast<int>(uf.find(n));
    auto [it, fresh] = compIndex.emplace(r, static_cast<int>(compIndex.size()));
    compOf[n] = it->second;
  }
  const int numComps = static_cast<int>(compIndex.size());
  std::vector<std::set<int>> succ(numComps);
  auto addEdge = [&](int fromNode, int toNode) {
    if (compOf[fromNode] != compOf[toNode]) succ[compOf[fromNode]].insert(compOf[toNode]);
  };
  for (OpId o = 0; o < numLogical; ++o)
    for (ValueId v : lg.ops[o].inputs)
      if (lg.values[v].producer != kNone) addEdge(lg.values[v].producer, o);
  for (size_t d = 0; d < plan.devices.size(); ++d) {
    const Graph& g = plan.devices[d].graph;
    for (OpId o = 0; o < static_cast<OpId>(g.ops.size()); ++o)
      for (ValueId v : g.ops[o].inputs)
        if (g.values[v].producer != kNone) addEdge(base[d] + g.values[v].producer, base[d] + o);
  }
  // Communication partners depend on each other's inputs: recv after send, collective members together
  // (already one component), so the edges above suffice for send -> recv via the shared component.
  std::vector<int> scc = sccOf(succ);
  const int numStages = scc.empty() ? 0 : *std::max_element(scc.begin(), scc.end()) + 1;

  // Topological order of the condensed graph (Tarjan numbers SCCs in reverse topological order).
  std::vector<Stage> stages(numStages);
  for (int n = 0; n < numNodes; ++n) {
    Stage& s = stages[numStages - 1 - scc[compOf[n]]];
    if (n < numLogical) {
      s.logicalOps.push_back(n);
    } else {
      int d = deviceOf(n);
      s.deviceOps.push_back({d, n - base[d]});
    }
  }
  std::vector<Stage> out;
  for (Stage& s : stages) {
    if (s.deviceOps.empty()) continue;  // logical ops no device mirrors: nothing to prove
    s.communication = s.logicalOps.empty();
    for (const DeviceOp& dop : s.deviceOps) {
      const Device& dev = plan.devices[dop.device];
      for (ValueId v : dev.graph.ops[dop.op].outputs)
        if (lineageOf[dop.device][v]) s.checked.push_back({dop.device, v});
    }
    s.id = static_cast<int>(out.size());
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace paraproof::stage
