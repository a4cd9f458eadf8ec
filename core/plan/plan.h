// A parallel training plan: the logical single-device graph, one graph per device, and lineage
// linking device tensors to the logical tensors they are slices or partial sums of.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/ir/ir.h"
#include "core/plan/value_names.h"

namespace paraproof {

// Half-open index range [start, end) per dimension of the logical tensor.
struct Box {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  Shape extent() const;
  bool operator==(const Box&) const = default;
  bool operator<(const Box& o) const { return ranges < o.ranges; }
};

// The device tensor equals part `part` of `parts` value parts of logical[box]: the `parts` tensors with the
// same (tensor, box, parts) sum to logical[box]; parts == 1 means equality (replicas each satisfy it).
struct Lineage {
  Name tensor;  // the logical tensor
  Box box;
  int part = 0;
  int parts = 1;
  // A hint, not part of the lineage: the id `tensor` had in the plan's logical graph when the lineage was
  // made (hintLineage). `lineageValue` trusts it only where that id still has the name: the passes look the
  // tensor up for every device value, and a name lookup per value was 7% of a frontier verification.
  ValueId logical = kNone;
  bool operator==(const Lineage& o) const {
    return tensor == o.tensor && box == o.box && part == o.part && parts == o.parts;
  }
};

struct Device {
  int rank = 0;
  std::vector<int64_t> coord;  // mesh coordinate, one entry per mesh axis
  Graph graph;
  std::map<ValueId, Lineage> lineage;  // device value -> lineage
};

struct Mesh {
  std::vector<std::string> axes;  // e.g. {"dp","pp","tp"}
  std::vector<int64_t> shape;
};

// A training step's state: a logical input (weight, optimizer moment, step counter) and the logical output
// that succeeds it. Every device holding a piece of `input` must output the same piece of `output`.
struct StatePair {
  std::string input, output;  // logical tensor names
  bool operator==(const StatePair&) const = default;
};

// A compact plan states only some replicas along one mesh axis (docs/plan-format.md, "Replicas"): a device
// at a coordinate of `axis` that is not stated is the translate of the replicas stated at `from` and `to`
// (the same program; lineage offsets, value-part indices and the ranks of its partners within its replica
// advance by the step between them; groups over whole lines of the axis stay as written). Ranks are the
// row-major index of the mesh coordinate.
struct Replicas {
  std::string axis;
  int64_t from = 0, to = 1;
  bool operator==(const Replicas&) const = default;
};

// Compact micro-batches (docs/plan-format.md, "Micro-batches"): every device states the copies "#j" of some
// of its `count` micro-batches, the copies `from` and `from`+1 among them; copy j not stated is the translate
// of copy `from` by j - `from` steps (lineage advances by the step between the two; names and instances
// get "#j"), and each accumulation chain sums the stated copies in order.
struct MicroBatches {
  int count = 0;
  int from = 0;
  bool operator==(const MicroBatches&) const = default;
};

struct Plan {
  std::string name;
  Mesh mesh;
  std::optional<Replicas> replicas;          // set: a compact plan (devices of other replicas are implied)
  std::optional<MicroBatches> microbatches;  // set: micro-batch copies implied (see above)
  Graph logical;
  std::vector<StatePair> state;  // declared in the logical graph; empty: an inference-style plan
  std::vector<Device> devices;
  Json metadata = Json::object();  // free-form: generator options, injected bug, ...

  size_t deviceOps() const;     // the ops of all stated device graphs
  int64_t meshDevices() const;  // the positions of the mesh (a compact plan states fewer devices)
  const Device* deviceByRank(int rank) const;
  int deviceIndex(int rank) const;  // kNone if absent
};

// The logical value a lineage names in `logical`, kNone when it has none: the lineage's hint where the value
// at that id has the name, else a lookup by name. Names are unique in a graph (the loader and the builder
// refuse a second definition), so the answer is the lookup's; a stale or missing hint only costs the lookup.
ValueId lineageValue(const Graph& logical, const Lineage& l);
// Sets every device lineage's hint from the plan's logical graph (once built or loaded; copies keep them).
void hintLineage(Plan& plan);

// A copy of `plan` (as Plan(plan)), its devices copied on two threads when it is large: verification copies
// a frontier plan at each fold and reduction, and the copy is allocation and page faults, not computation.
Plan copyPlan(const Plan& plan);
// Whether `plan` is large enough for work split between two threads to pay for the thread.
bool largePlan(const Plan& plan);

// Collective and point-to-point op kinds, whose semantics span several devices.
bool isCollective(const std::string& kind);  // all_reduce, all_gather, reduce_scatter, all_to_all, broadcast
bool isP2P(const std::string& kind);         // send, recv
inline bool isCommunication(const std::string& kind) {
  return isCollective(kind) || isP2P(kind);
}
// For an op: a `broadcast` without an `instance` is the shape op broadcast_to, not the collective.
bool isCommunication(const Op& op);
bool isCollective(const Op& op);

}  // namespace paraproof
