// "broadcast" names two ops in docs/operators.md: the numpy shape op (attr `shape`) and the collective
// (attrs `group`, `instance`, `src`). The validator tells them apart by `instance`; the registry does the
// same with one dispatching definition. `broadcast_to` is the unambiguous name of the shape op.
#pragma once

#include "core/ops/registry.h"

namespace paraproof::ops {

OpDef broadcastToDef();          // shape_ops.cpp
OpDef broadcastCollectiveDef();  // communication.cpp
// Dispatches on the presence of attrs["instance"]: collective when present, shape op otherwise.
OpDef broadcastDispatchDef(OpDef shapeOp, OpDef collective);

inline bool isCollectiveBroadcast(const Json& attrs) {
  return attrs.is_object() && attrs.contains("instance");
}

}  // namespace paraproof::ops
