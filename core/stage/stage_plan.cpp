#include "core/stage/stage_plan.h"

#include <vector>

namespace paraproof::stage {

namespace {

// Copies values of `from` into `to` on demand: a value not produced by an op copied into `to` becomes one of
// its inputs.
class Subgraph {
 public:
  Subgraph(const Graph& from, Graph& to) : from_(from), to_(to), id_(from.values.size(), kNone) {
    to_.name = from.name;
  }

  ValueId value(ValueId v) {
    if (id_[static_cast<size_t>(v)] == kNone) {
      const Value& src = from_.values[static_cast<size_t>(v)];
      id_[static_cast<size_t>(v)] = static_cast<ValueId>(to_.values.size());
      to_.values.push_back(Value{src.name, src.type, kNone, 0});
      to_.inputs.push_back(id_[static_cast<size_t>(v)]);
    }
    return id_[static_cast<size_t>(v)];
  }

  // Copies op `o` (its inputs first, then its outputs as its own).
  void op(OpId o) {
    Op op = from_.ops[static_cast<size_t>(o)];
    for (ValueId& v : op.inputs)
      v = value(v);
    const OpId id = static_cast<OpId>(to_.ops.size());
    for (size_t k = 0; k < op.outputs.size(); ++k) {
      const ValueId v = op.outputs[k];
      const Value& src = from_.values[static_cast<size_t>(v)];
      id_[static_cast<size_t>(v)] = static_cast<ValueId>(to_.values.size());
      to_.values.push_back(Value{src.name, src.type, id, static_cast<int>(k)});
      op.outputs[k] = id_[static_cast<size_t>(v)];
    }
    to_.ops.push_back(std::move(op));
  }

  bool readsInteger() const {
    for (ValueId v : to_.inputs)
      if (isInteger(to_.values[static_cast<size_t>(v)].type.dtype)) return true;
    return false;
  }
  const std::vector<ValueId>& ids() const { return id_; }

 private:
  const Graph& from_;
  Graph& to_;
  std::vector<ValueId> id_;  // by value of `from_`: its id in `to_` (kNone: not copied)
};

}  // namespace

std::optional<Plan> stageAsPlan(const Plan& plan, const Stage& s) {
  if (s.communication) return std::nullopt;
  Plan out;
  out.name = plan.name + " (stage " + std::to_string(s.id) + ")";
  Subgraph logical(plan.logical, out.logical);
  for (OpId o : s.logicalOps)
    logical.op(o);

  // The stage's devices in plan order, each with its ops in program order (deviceOps is so ordered).
  std::vector<int> devices;
  for (const DeviceOp& d : s.deviceOps)
    if (devices.empty() || devices.back() != d.device) devices.push_back(d.device);
  out.mesh = Mesh{{"stage"}, {static_cast<int64_t>(devices.size())}};
  size_t next = 0;
  for (size_t k = 0; k < devices.size(); ++k) {
    const Device& src = plan.devices[static_cast<size_t>(devices[k])];
    Device dev;
    dev.rank = static_cast<int>(k);
    dev.coord = {static_cast<int64_t>(k)};
    Subgraph graph(src.graph, dev.graph);
    for (; next < s.deviceOps.size() && s.deviceOps[next].device == devices[k]; ++next) {
      if (isCommunication(src.graph.ops[static_cast<size_t>(s.deviceOps[next].op)])) return std::nullopt;
      graph.op(s.deviceOps[next].op);
    }
    if (graph.readsInteger()) return std::nullopt;
    // Every value keeps its lineage: inputs are assumed to be their pieces, produced values are the
    // obligations (the stage's `checked`); the logical tensors named are there, as inputs where no op of
    // the stage makes them.
    for (size_t v = 0; v < graph.ids().size(); ++v) {
      const ValueId to = graph.ids()[v];
      if (to == kNone) continue;
      auto l = src.lineage.find(static_cast<ValueId>(v));
      if (l == src.lineage.end()) continue;
      const ValueId lv = lineageValue(plan.logical, l->second);
      if (lv == kNone) return std::nullopt;  // a plan that validated names known tensors only
      logical.value(lv);
      dev.lineage.emplace(to, l->second);
    }
    dev.graph.reindex();
    out.devices.push_back(std::move(dev));
  }
  if (logical.readsInteger()) return std::nullopt;
  out.logical.reindex();
  hintLineage(out);
  return out;
}

}  // namespace paraproof::stage
