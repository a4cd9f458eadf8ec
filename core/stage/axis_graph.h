// The plan's axis classes: every dimension of every value (logical and device) is a node, and so are the
// *values* of every integer tensor (ids, labels, positions index positions along some axis). Op axis rules,
// lineage, collective members and send/recv pairs tie nodes that index the same dimension. Shape reduction
// (reduce.cpp) gives each class one factor; integer input domains (int_domains.cpp) are the extent of the
// class their values index.
#pragma once

#include <cstdint>
#include <vector>

#include "core/plan/plan.h"
#include "core/stage/union_find.h"

namespace paraproof::stage {

inline constexpr size_t kNoNode = static_cast<size_t>(-1);

class AxisGraph {
 public:
  // `logicalOnly`: the logical graph's nodes and its ops' ties alone (no device graph, lineage or
  // communication). Integer domains are read from it: a device op must never narrow what the model accepts.
  explicit AxisGraph(const Plan& plan, bool logicalOnly = false);

  // Graph 0 is the logical graph, graph d+1 is device d.
  const std::vector<const Graph*>& graphs() const { return graphs_; }
  size_t size() const { return extent_.size(); }
  size_t axis(size_t g, ValueId v, int a) const { return axisBase_[g][v] + static_cast<size_t>(a); }
  size_t values(size_t g, ValueId v) const { return valueNode_[g][v]; }  // kNoNode: not an integer
  size_t find(size_t n) { return uf_.find(n); }
  int64_t extent(size_t n) const { return extent_[n]; }  // 0 for value nodes
  bool pinned(size_t n) const { return pinned_[n]; }
  const std::vector<std::pair<size_t, int64_t>>& boundaries() const { return boundaries_; }
  struct Product {
    std::vector<size_t> from, to;
  };
  const std::vector<Product>& products() const { return products_; }
  // Declared counts (AxisInfo::counts: each group's extents multiply into one number) and positions.
  const std::vector<std::vector<size_t>>& counts() const { return counts_; }
  const std::vector<size_t>& positions() const { return positions_; }

  // Largest extent of an axis in each class, indexed by class root (0: the class holds no axis).
  std::vector<int64_t> classExtents();

 private:
  void pinValue(size_t g, ValueId v);
  void tieValue(size_t g, ValueId v, size_t h, ValueId w);  // every axis and the values
  void collectOps(size_t g);
  void collectLineage();
  void collectCommunication();

  const Plan& plan_;
  std::vector<const Graph*> graphs_;
  std::vector<std::vector<size_t>> axisBase_, valueNode_;
  UnionFind uf_{0};
  std::vector<int64_t> extent_;
  std::vector<bool> pinned_;
  std::vector<std::pair<size_t, int64_t>> boundaries_;
  std::vector<Product> products_;
  std::vector<std::vector<size_t>> counts_;
  std::vector<size_t> positions_;
};

}  // namespace paraproof::stage
