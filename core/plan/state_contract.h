// The state contract of a training step: the logical graph declares which inputs are state (weights,
// optimizer moments, step counters) and which outputs succeed them (Plan::state). After the step every device
// that held a piece of a state input - a device input with lineage (x, box, k of n) - must output the same
// piece of its successor, (x', box, k of n), and no device output may carry the lineage of a state input
// instead of its successor's. Replicas, ZeRO shards, tp shards, pipeline stages and experts all follow.
// Coverage of the logical outputs by *some* device is not enough: a replica that drops its update leaves the
// outputs covered by the other replicas while its own state diverges. Checked on a valid plan; a violation
// makes the plan not equivalent (the devices' state after the step is not the logical one).
#pragma once

#include <string>
#include <vector>

#include "core/plan/plan.h"

namespace paraproof {

struct StateViolation {
  int rank = 0;
  std::string state, successor;     // logical tensors of the state pair
  std::string held;                 // the device input holding the piece; empty when only stale outputs
  Lineage piece;                    // its lineage (a piece of `state`)
  std::vector<Box> missing;         // parts of piece.box for which the device outputs no successor piece
  std::vector<std::string> stale;   // device outputs whose lineage names `state` instead of `successor`
  std::vector<std::string> ops;     // ids of this device's ops producing the stale outputs or using the piece
  std::vector<std::string> scopes;  // their scopes
  std::string message;              // "rank 1: ..." naming the device, the state tensor and the piece
};

// Empty when the plan declares no state (an inference-style plan) or every device honours the contract.
// Expects a plan that validatePlan accepted.
std::vector<StateViolation> checkStateContract(const Plan& plan);

}  // namespace paraproof
