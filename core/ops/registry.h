// The operator registry: for every op kind, in one place, its arity, shape rule, axis structure (for
// shape reduction) and symbolic semantics over the scalar expression DAG. Composite ops (rmsnorm,
// attention, cross_entropy, adamw, ...) lower by decomposition into the same scalar primitives, so
// engines only know the primitives of core/sym/expr.h.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/ir/ir.h"
#include "core/sym/expr.h"

namespace paraproof::ops {

// A tensor of scalar expressions, row-major.
struct SymTensor {
  TensorType type;
  std::vector<sym::ExprId> elems;
  const Shape& shape() const { return type.shape; }
};

// Thrown by shape rules; the message says what is wrong without naming the op (the caller adds that).
struct ShapeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Axis structure for shape reduction. Ports number the inputs 0..n-1 then the outputs n..n+m-1.
// `axis == kValues` names the *values* of an integer port rather than one of its dimensions: integer
// tensors (token ids, labels, positions, expert ids) index positions along some axis, and their values
// must scale with that axis (docs/soundness.md, "Integer values").
inline constexpr int kValues = -1;
struct AxisRef {
  int port = 0;
  int axis = 0;
};
struct AxisInfo {
  // Pairs of axes that index the same dimension (equal, or one a sub-range of the other as in
  // slice/concat/all_gather). Both get the same scale factor. A pair (values of p, axis (q, a)) says "the
  // values of port p index axis (q, a)"; a pair of two value refs says "the same kind of index" (data
  // movement, comparisons of positions). An integer port whose values appear in no tie and no `fixed`
  // entry has no declared rule: the reducer pins its values' class (they keep their full-size meaning).
  std::vector<std::pair<AxisRef, AxisRef>> ties;
  // Axes that are contracted or reduced over: their reduced extent stays >= 2.
  std::vector<AxisRef> reduced;
  // Index values (offsets, split points, an id offset `start`) along an axis, in full-size units: they
  // must stay divisible.
  std::vector<std::pair<AxisRef, int64_t>> boundaries;
  // Reshape: the product of axes `from` (contiguous, one port) equals the product of axes `to` (another).
  struct Product {
    std::vector<AxisRef> from, to;
  };
  std::vector<Product> products;
  // Axes that must keep their full extent: data values index along them (gather's source axis, the
  // expert axis of topk whose `k` is a count), so scaling the axis would change the meaning.
  std::vector<AxisRef> fixed;
};

using AxisFactor = std::function<int64_t(AxisRef)>;  // scale factor chosen for an axis

// The values an integer tensor can hold: [lo, hi), or any integer when unbounded.
struct IntRange {
  bool bounded = false;
  int64_t lo = 0, hi = 0;
  static IntRange any() { return {}; }
  static IntRange of(int64_t lo, int64_t hi) { return {true, lo, hi}; }
  bool operator==(const IntRange&) const = default;
};

struct OpDef {
  std::string name;
  int minInputs = 0;
  int maxInputs = 0;  // -1: variadic
  std::string summary;
  bool communication = false;  // collectives and send/recv: semantics span devices
  // Output types from input types and attributes. Throws ShapeError (or Json errors for bad attributes).
  std::function<std::vector<TensorType>(const std::vector<TensorType>& in, const Json& attrs)> infer;
  // Axis structure; null means "do not reduce any axis this op touches" (always sound).
  std::function<AxisInfo(const std::vector<TensorType>& in, const std::vector<TensorType>& out,
                         const Json& attrs)>
      axes;
  // Rewrites index-valued attributes (offsets, sizes, shapes) for reduced shapes; null if none.
  std::function<Json(const Json& attrs, const std::vector<TensorType>& reducedIn,
                     const std::vector<TensorType>& reducedOut, const AxisFactor& factor)>
      rescale;
  // Ranges of the integer outputs given the ranges of the integer inputs (entries for float ports are
  // unbounded and ignored); null: every integer output may hold any integer.
  std::function<std::vector<IntRange>(const std::vector<IntRange>& in, const std::vector<TensorType>& inT,
                                      const std::vector<TensorType>& outT, const Json& attrs)>
      valueRange;
  // Semantics of a single-device op.
  std::function<std::vector<SymTensor>(sym::ExprPool& pool, const std::vector<SymTensor>& in,
                                       const Json& attrs)>
      lower;
  // Semantics of a collective over its group: memberInputs[i] is the input of the i-th rank listed in
  // attrs["group"]; returns each member's output in the same order.
  std::function<std::vector<SymTensor>(sym::ExprPool& pool, const std::vector<SymTensor>& memberInputs,
                                       const Json& attrs)>
      lowerGroup;
};

const OpDef* findOp(const std::string& name);
std::vector<const OpDef*> allOps();

// Runs the shape rule and rethrows errors as ShapeError with the op kind in the message.
std::vector<TensorType> inferTypes(const OpDef& def, const std::vector<TensorType>& in, const Json& attrs);

// Helpers shared by op definitions and engines.
int64_t flatIndex(const Shape& shape, const std::vector<int64_t>& index);
std::vector<int64_t> unflatIndex(const Shape& shape, int64_t flat);

}  // namespace paraproof::ops
