// Bounds on what a plan file may ask for. Generous for real plans (the full-depth llama3-405b step has
// 289,759 ops on 128 devices, vocab 128,256, hidden 16,384; 8,192-device meshes load), but each one bounds
// the work and memory a hostile file can cause before it is rejected with a clear error (docs/hardening.md).
// Element counts are also what keeps every shape product, flat index and sum of sizes inside int64.
#pragma once

#include <cstdint>
#include <string>

#include "core/ir/ir.h"

namespace paraproof::limits {

inline constexpr int64_t kMaxPlanFileBytes = int64_t{1} << 30;   // 1 GiB of JSON text (bounds all counts)
inline constexpr int kMaxJsonDepth = 64;                         // nesting of arrays and objects
inline constexpr int64_t kMaxStringBytes = int64_t{1} << 16;     // any JSON string or object key
inline constexpr int64_t kMaxRank = 16;                          // dimensions of a tensor (and of a mesh)
inline constexpr int64_t kMaxExtent = int64_t{1} << 32;          // size of one dimension
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 48;  // elements of one tensor
inline constexpr int64_t kMaxPlanElements = int64_t{1} << 60;    // elements summed over every tensor
inline constexpr int64_t kMaxGraphOps = int64_t{1} << 22;        // ops of one graph (4,194,304)
inline constexpr int64_t kMaxOpArity = int64_t{1} << 16;         // inputs or outputs of one op
inline constexpr int64_t kMaxDevices = int64_t{1} << 16;         // devices, and positions of the mesh
inline constexpr int64_t kMaxAttrValues = int64_t{1} << 17;      // JSON values in one op's attrs
inline constexpr int64_t kMaxAttrInteger = int64_t{1} << 40;     // magnitude of an integer attribute
inline constexpr int64_t kMaxMicroBatches = int64_t{1} << 16;    // micro-batches a compact plan implies
// Lowering: a stage whose tensors hold more scalar elements, or whose expression DAG grows past this many
// nodes, ends inconclusive ("stage too large") instead of exhausting memory.
inline constexpr int64_t kMaxStageElements = int64_t{1} << 24;
inline constexpr int64_t kMaxStageExprNodes = int64_t{1} << 24;

// a * b, or -1 when a > 0 and b > 0 and the product exceeds `cap` (no overflow on the way).
inline int64_t cappedProduct(int64_t a, int64_t b, int64_t cap) {
  if (a == 0 || b == 0) return 0;
  return a > cap / b ? -1 : a * b;
}

// Why `s` exceeds the rank, extent or element limit, or "" when it does not.
std::string shapeLimitError(const Shape& s);

}  // namespace paraproof::limits
