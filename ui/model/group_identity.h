// Structurally identical groups (in the manner of Model Explorer's identical-layer detection): a hash per
// hierarchy group over its leaves (op kinds, output shapes, folded counts), its nested groups in order and
// the dataflow edges between its children, but not over any name, so layers.0 ... layers.31 of a model hash
// equal while a layer with one different op does not.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace paraproof::ui {

class GraphModel;

struct GroupIdentity {
  uint64_t hash = 0;
  int first = -1;  // the first group (in hierarchy order) with this hash; -1 for leaves and the root
  int count = 1;   // groups with this hash
};

// One entry per hierarchy node. Linear in nodes plus edges times depth.
std::vector<GroupIdentity> identifyGroups(const GraphModel& model);

}  // namespace paraproof::ui
