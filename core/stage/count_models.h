// Count models of the fused ops (docs/soundness.md, "Size points", condition D): how an op's outputs depend
// on the extent t of the axes that scale, written from the op's lowering (core/ops) with its non-polynomial
// parts (roots, exponentials, comparisons, extrema) as applications of uninterpreted functions whose
// arguments are recorded. An op without a model is widened (counts::widened).
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "core/ir/ir.h"
#include "core/stage/count_tracks.h"

namespace paraproof::stage::counts {

// One op as the dataflow sees it: its inputs' tracks and which axes of its ports (inputs, then outputs)
// scale with t.
struct OpUse {
  const Op& op;
  std::vector<TensorType> types;  // the inputs' types
  std::vector<Tracks> in;
  std::function<bool(int port, int axis)> scaled;
};

// The tracks of each output of a fused op, or nullopt when the op has no count model.
std::optional<std::vector<Tracks>> fusedOutputs(const OpUse& use, Atoms& atoms);

}  // namespace paraproof::stage::counts
