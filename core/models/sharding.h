// The sharding context a model is built under: parallel degrees, this device's mesh coordinate, and
// the lineage layout of a device tensor relative to its logical tensor. Degrees all 1 = the logical graph.
#pragma once

#include <set>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/ir/ir.h"

namespace paraproof::models {

struct Degrees {
  int dp = 1, tp = 1, pp = 1, cp = 1, ep = 1;
  int mb = 1;  // micro-batches per step
  // The micro-batches whose copies are built (empty: all); the others are implied (Plan::microbatches).
  std::set<int> builtMb;
  bool builds(int m) const { return builtMb.empty() || builtMb.count(m); }
  int zero = 0;  // ZeRO stage 0..3
  bool sp = false;
  int devices() const { return dp * tp * pp * cp; }
};

// Mesh coordinate; rank order is pp (outermost), dp, cp, tp (innermost), as in Megatron.
struct MeshCoord {
  int pp = 0, dp = 0, cp = 0, tp = 0;
};

// EP: the expert-parallel group, `ep` ranks with consecutive dp coordinates (equal pp/cp/tp); EDP: the
// expert-data-parallel group, the dp x cp ranks with this rank's ep index (where expert gradients are
// reduced); ExpertModelParallel: pp x ep x tp (every distinct expert and model shard once).
enum class Axis { TP, DP, CP, PP, DPCP, ModelParallel /* pp x tp */, All, EP, EDP, ExpertModelParallel };

struct Group {
  std::string name;  // e.g. "tp0": axis and first rank; part of collective instance ids
  std::vector<int> ranks;
  int size() const { return static_cast<int>(ranks.size()); }
  int indexOf(int rank) const;
};

class ShardContext {
 public:
  ShardContext() = default;  // the logical graph: every degree 1
  ShardContext(Degrees d, MeshCoord c) : deg_(d), at_(c), logical_(false) {}

  bool logical() const { return logical_; }
  const Degrees& deg() const { return deg_; }
  const MeshCoord& at() const { return at_; }
  int rank() const { return rankOf(at_); }
  int rankOf(const MeshCoord& c) const { return ((c.pp * deg_.dp + c.dp) * deg_.cp + c.cp) * deg_.tp + c.tp; }
  static MeshCoord coordOf(const Degrees& d, int rank);
  int epIndex() const { return at_.dp % deg_.ep; }   // position in the expert-parallel group
  int edpIndex() const { return at_.dp / deg_.ep; }  // which expert-parallel group along dp
  Group group(Axis a) const;

 private:
  Degrees deg_;
  MeshCoord at_;
  bool logical_ = true;
};

// Where a device tensor sits in its logical tensor: a box and a value part (lineage), or nothing.
struct Layout {
  std::string name;  // logical tensor name; for device-only values just the base of the value name
  Shape shape;       // logical shape
  std::vector<std::pair<int64_t, int64_t>> box;
  int part = 0, parts = 1;
  bool lineage = true;
  std::string as;  // device value base name when it must differ from `name` (accumulators)

  static Layout full(std::string name, Shape shape);
  static Layout local(std::string name, Shape shape);  // device-only, no lineage
  Layout& slice(int dim, int64_t start, int64_t count);
  Layout& shard(int dim, int index, int count);  // the index-th of `count` equal contiguous pieces
  Layout& partial(int k, int n);
  Layout& whole();  // parts 1
  Layout renamed(std::string n) const;
  Layout named(std::string valueName) const;  // same lineage, another device value name
  Shape localShape() const;
  // A whole value's box as (index, count) of the grid of equal boxes it is a cell of (row-major), e.g. a tp
  // shard of a gradient: (tp index, tp). None for a value part or a box that is no grid cell.
  std::optional<std::pair<int, int>> gridCell() const;
};

}  // namespace paraproof::models
