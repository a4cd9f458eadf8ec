// The values each integer tensor of the logical graph can hold, which is what a stage's free integer
// variables range over. A free integer input (token ids, labels, positions) holds indices along the axis
// its values index (axis_graph.h): [0, largest extent of that class) at the size being checked, the class
// formed by the logical graph's ops alone (device ops never narrow it). An integer
// computed in the graph holds what its op can produce from its inputs' ranges (iota: [start, start + n)).
// Integers that index nothing may hold any integer. See docs/soundness.md, "Integer values".
#pragma once

#include <vector>

#include "core/ops/registry.h"
#include "core/plan/plan.h"

namespace paraproof::stage {

struct IntDomains {
  std::vector<ops::IntRange> logical;  // by logical ValueId; unbounded for non-integer values
};

IntDomains intDomains(const Plan& plan);

}  // namespace paraproof::stage
