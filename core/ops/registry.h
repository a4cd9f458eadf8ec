// The operator registry: for every op kind, in one place, its arity, shape rule, axis structure (for
// shape reduction) and symbolic semantics over the scalar expression DAG. Composite ops (rmsnorm,
// attention, cross_entropy, adamw, ...) lower by decomposition into the same scalar primitives, so
// engines only know the primitives of core/sym/expr.h.
#pragma once

#include <functional>
#include <optional>
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
// A ShapeError about one attribute (missing, ill-typed, out of range): reported at the attribute.
struct AttrError : ShapeError {
  AttrError(std::string k, const std::string& message) : ShapeError(message), key(std::move(k)) {}
  std::string key;
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
  // Counts: groups of axes whose extents' product enters the arithmetic as a number (mean's divisor, a
  // norm's width) or along which the values are constant, so that a sum over them multiplies by the
  // extent (constant and broadcast_to outputs, iota). Shape reduction keeps these numbers apart from
  // the plan's numeric constants and from each other (docs/soundness.md).
  std::vector<std::vector<AxisRef>> counts;
  // Axes whose values are positions along them (iota): kept apart from the constants, not from counts.
  std::vector<AxisRef> positions;
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

// One attribute of an op (core/ops/op_schema.cpp): checked at load (core/ops/attr_schema.h), listed by
// `paraproof ops` and docs/operators.md. Cross-attribute and shape-dependent rules stay in `infer`.
enum class AttrType {
  Int,       // an integer (magnitude <= limits::kMaxAttrInteger), >= `min` when `min` is set
  Number,    // any finite number
  Bool,      // true or false
  String,    // any string
  Choice,    // one of `choices`
  IntList,   // a list of integers
  Shape,     // a list of non-negative extents
  DType,     // a dtype name
  Dim,       // an axis: an integer, negative counts from the end (checked against the rank by infer)
  RankList,  // a non-empty list of distinct device ranks
};
struct AttrSpec {
  std::string name;
  AttrType type = AttrType::Int;
  bool required = false;
  std::string dflt;  // when optional: what absence means, as documented ("0", "f32", "all dims")
  std::string doc;
  std::vector<std::string> choices;  // Choice
  std::optional<int64_t> min;        // Int
};

struct OpDef {
  std::string name;
  int minInputs = 0;
  int maxInputs = 0;  // -1: variadic
  std::string summary;
  // The contract for plan authors (core/ops/op_schema.cpp): the family (docs/operators.md section), the
  // input and output ports, and the attributes. Only attributes listed here may appear in a plan.
  std::string family;
  std::string inputsDoc, outputsDoc;
  std::vector<AttrSpec> attrs;
  const AttrSpec* findAttr(const std::string& key) const;
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

// While alive, an attribute read by the op's rules (util::hasAttr and every accessor built on it) must
// name an attribute `def` declares: a rule reading an undeclared key is a schema gap, reported loudly.
class AttrReadScope {
 public:
  explicit AttrReadScope(const OpDef& def);
  ~AttrReadScope();
  AttrReadScope(const AttrReadScope&) = delete;
  AttrReadScope& operator=(const AttrReadScope&) = delete;

 private:
  const OpDef* saved_;
};
void checkAttrRead(const char* key);  // throws std::logic_error for an undeclared key in scope

// Runs the shape rule (in an AttrReadScope) and rethrows errors as ShapeError (AttrError) with the op
// kind in the message.
std::vector<TensorType> inferTypes(const OpDef& def, const std::vector<TensorType>& in, const Json& attrs);

// Helpers shared by op definitions and engines.
int64_t flatIndex(const Shape& shape, const std::vector<int64_t>& index);
std::vector<int64_t> unflatIndex(const Shape& shape, int64_t flat);

}  // namespace paraproof::ops
