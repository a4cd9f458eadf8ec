// Stages: the units of proof. A stage pairs logical ops with the device ops that implement them,
// between tensors that carry lineage (cut points). See docs/soundness.md.
#pragma once

#include <string>
#include <vector>

#include "core/plan/plan.h"

namespace paraproof::stage {

struct DeviceOp {
  int device = 0;  // index into Plan::devices (not the rank)
  OpId op = 0;
  auto operator<=>(const DeviceOp&) const = default;
};

struct DeviceValue {
  int device = 0;  // index into Plan::devices
  ValueId value = 0;
  auto operator<=>(const DeviceValue&) const = default;
};

struct Stage {
  int id = 0;
  bool communication = false;        // no logical ops: its proof is about data movement only
  std::vector<OpId> logicalOps;      // in graph order
  std::vector<DeviceOp> deviceOps;   // in (device, graph) order
  std::vector<DeviceValue> checked;  // device values with lineage produced here: the proof obligations
};

// Cuts a validated plan into stages, in a topological order of their dependencies. Stages whose
// dependencies would form a cycle are merged, so checking them independently stays sound.
std::vector<Stage> cutStages(const Plan& plan);

}  // namespace paraproof::stage
