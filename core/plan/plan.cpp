#include "core/plan/plan.h"

#include "core/ir/halves.h"

namespace paraproof {

Shape Box::extent() const {
  Shape s;
  s.reserve(ranges.size());
  for (auto [a, b] : ranges)
    s.push_back(b - a);
  return s;
}

const Device* Plan::deviceByRank(int rank) const {
  int i = deviceIndex(rank);
  return i == kNone ? nullptr : &devices[i];
}

int Plan::deviceIndex(int rank) const {
  for (size_t i = 0; i < devices.size(); ++i)
    if (devices[i].rank == rank) return static_cast<int>(i);
  return kNone;
}

bool isCollective(const std::string& k) {
  return k == "all_reduce" || k == "all_gather" || k == "reduce_scatter" || k == "all_to_all" ||
         k == "broadcast";
}

bool isCollective(const Op& op) {
  return isCollective(op.kind) && (op.kind != "broadcast" || op.attrs.contains("instance"));
}

bool isCommunication(const Op& op) {
  return isCollective(op) || isP2P(op.kind);
}

size_t Plan::deviceOps() const {
  size_t n = 0;
  for (const Device& d : devices)
    n += d.graph.ops.size();
  return n;
}

ValueId lineageValue(const Graph& logical, const Lineage& l) {
  if (l.logical >= 0 && static_cast<size_t>(l.logical) < logical.values.size() &&
      logical.values[static_cast<size_t>(l.logical)].name == l.tensor)
    return l.logical;
  return logical.findValue(l.tensor);
}

void hintLineage(Plan& plan) {
  for (Device& d : plan.devices)
    for (auto& [v, l] : d.lineage)
      l.logical = plan.logical.findValue(l.tensor);
}

bool largePlan(const Plan& plan) {
  constexpr size_t kLargeOps = 20000;
  return plan.logical.ops.size() + plan.deviceOps() >= kLargeOps;
}

Plan copyPlan(const Plan& plan) {
  Plan out;
  out.name = plan.name;
  out.mesh = plan.mesh;
  out.replicas = plan.replicas;
  out.microbatches = plan.microbatches;
  out.logical = plan.logical;
  out.state = plan.state;
  out.metadata = plan.metadata;
  out.devices.resize(plan.devices.size());
  inTwoHalves(plan.devices.size(), largePlan(plan), [&](size_t begin, size_t end) {
    for (size_t d = begin; d < end; ++d)
      out.devices[d] = plan.devices[d];
  });
  return out;
}

int64_t Plan::meshDevices() const {
  int64_t n = 1;
  for (int64_t e : mesh.shape)
    n *= e;
  return n;
}

bool isP2P(const std::string& k) {
  return k == "send" || k == "recv";
}

}  // namespace paraproof
