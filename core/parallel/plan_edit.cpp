#include "core/parallel/plan_edit.h"

#include <stdexcept>

#include "core/models/graph_builder.h"

namespace paraproof::parallel {

Device& deviceByRank(Plan& plan, int rank) {
  const int i = plan.deviceIndex(rank);
  if (i == kNone)
    throw std::invalid_argument("rank " + std::to_string(rank) + " is not a device of the plan");
  return plan.devices[i];
}

Op& opById(Device& dev, const std::string& opId) {
  const OpId o = dev.graph.findOp(opId);
  if (o == kNone)
    throw std::invalid_argument("rank " + std::to_string(dev.rank) + " has no op '" + opId + "'");
  return dev.graph.ops[o];
}

ValueId valueByName(const Device& dev, const std::string& name) {
  const ValueId v = dev.graph.findValue(name);
  if (v == kNone)
    throw std::invalid_argument("rank " + std::to_string(dev.rank) + " has no value '" + name + "'");
  return v;
}

NewOp asNewOp(const Device& dev, const Op& op) {
  NewOp n{op.id, op.kind, {}, op.attrs, {}, op.scope, op.origin};
  for (ValueId v : op.inputs)
    n.inputs.push_back(dev.graph.values[v].name);
  for (ValueId v : op.outputs)
    n.outputs.push_back(dev.graph.values[v].name);
  return n;
}

void replaceOp(Device& dev, const std::string& opId, const std::vector<NewOp>& replacement) {
  const Graph& old = dev.graph;
  std::map<std::string, Lineage> lineageByName;
  for (const auto& [v, lin] : dev.lineage)
    lineageByName[old.values[v].name] = lin;
  Graph g;
  g.name = old.name;
  models::GraphBuilder b(g);
  auto byName = [&](const std::string& n) {
    const ValueId v = g.findValue(n);
    if (v == kNone) throw std::logic_error("bug injection: value '" + n + "' is not defined before its use");
    return v;
  };
  for (ValueId v : old.inputs)
    b.input(old.values[v].name, old.values[v].type);
  for (const Op& o : old.ops) {
    if (o.id != opId) {
      Op copy = o;
      copy.inputs.clear();
      for (ValueId v : o.inputs)
        copy.inputs.push_back(byName(old.values[v].name));
      std::vector<std::pair<std::string, TensorType>> outs;
      for (ValueId v : o.outputs)
        outs.emplace_back(old.values[v].name, old.values[v].type);
      g.addOp(std::move(copy), outs);
      continue;
    }
    for (const NewOp& n : replacement) {
      models::OpSpec s;
      s.id = n.id;
      s.kind = n.kind;
      for (const std::string& in : n.inputs)
        s.inputs.push_back(byName(in));
      s.attrs = n.attrs;
      s.outputs = n.outputs;
      s.scope = n.scope;
      s.origin = n.origin;
      b.op(s);
    }
  }
  for (ValueId v : old.outputs)
    g.outputs.push_back(byName(old.values[v].name));
  std::map<ValueId, Lineage> lineage;
  for (ValueId v = 0; v < static_cast<ValueId>(g.values.size()); ++v)
    if (auto it = lineageByName.find(g.values[v].name); it != lineageByName.end()) lineage[v] = it->second;
  dev.graph = std::move(g);
  dev.lineage = std::move(lineage);
}

}  // namespace paraproof::parallel
