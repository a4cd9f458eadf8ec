// Layout helpers the block files share under Megatron tensor parallelism: this tp rank's shard of a
// dimension, its value part of a row-parallel partial sum, and the attrs of a reshape to a layout's shape.
#pragma once

#include "core/models/sharding.h"

namespace paraproof::models::tp {

inline Layout sharded(Layout l, int dim, const ShardContext& c) {
  return l.shard(dim, c.at().tp, c.deg().tp);
}
inline Layout partial(Layout l, const ShardContext& c) {
  return l.partial(c.at().tp, c.deg().tp);
}
inline Json reshapeTo(const Layout& l) {
  return {{"shape", l.localShape()}};
}

}  // namespace paraproof::models::tp
