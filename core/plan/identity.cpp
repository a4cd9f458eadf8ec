#include "core/plan/identity.h"

namespace paraproof {

namespace {

Box wholeBox(const Shape& shape) {
  Box box;
  for (int64_t extent : shape)
    box.ranges.emplace_back(0, extent);
  return box;
}

}  // namespace

Plan identityPlan(const Plan& plan) {
  Plan identity;
  identity.name = plan.name + ".identity";
  identity.metadata = Json{{"identity_of", plan.name}};
  identity.logical = plan.logical;
  identity.state = plan.state;
  identity.mesh.axes = plan.mesh.axes.empty() ? std::vector<std::string>{"single"} : plan.mesh.axes;
  identity.mesh.shape.assign(identity.mesh.axes.size(), 1);

  Device device;
  device.rank = 0;
  device.coord.assign(identity.mesh.axes.size(), 0);
  device.graph = plan.logical;
  device.graph.name = "rank 0";
  for (Op& op : device.graph.ops)
    op.origin = op.id;
  device.graph.reindex();
  for (ValueId v = 0; v < static_cast<ValueId>(device.graph.values.size()); ++v) {
    const Value& value = device.graph.values[v];
    device.lineage[v] = Lineage{value.name, wholeBox(value.type.shape), 0, 1, v};  // the logical graph's copy
  }
  identity.devices.push_back(std::move(device));
  return identity;
}

}  // namespace paraproof
