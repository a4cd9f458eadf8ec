#include "core/ops/op_util.h"

#include <algorithm>

#include "core/ir/limits.h"

namespace paraproof::ops::util {

std::string typeString(const TensorType& t) {
  return std::string(dtypeName(t.dtype)) + shapeString(t.shape);
}

bool hasAttr(const Json& attrs, const char* key) {
  checkAttrRead(key);
  return attrs.is_object() && attrs.contains(key) && !attrs[key].is_null();
}

namespace {
const Json& need(const Json& attrs, const char* key) {
  if (!hasAttr(attrs, key)) throw AttrError(key, std::string("missing attribute `") + key + "`");
  return attrs[key];
}
[[noreturn]] void badAttr(const char* key, const char* what, const Json& v) {
  throw AttrError(key, std::string("attribute `") + key + "` must be " + what + ", got " + v.dump());
}
// Integer attributes are extents, offsets, dims, ranks and counts: bounding their magnitude keeps every sum
// and product the shape rules form inside int64.
int64_t asInt(const Json& v, const char* key) {
  int64_t x = 0;
  if (v.is_number_unsigned()) {
    // Above the bound, keep it above: the magnitude check below reports it.
    x = static_cast<int64_t>(std::min<uint64_t>(v.get<uint64_t>(), uint64_t{1} << 62));
  } else if (v.is_number_integer()) {
    x = v.get<int64_t>();
  } else if (v.is_number_float()) {
    double d = v.get<double>();
    // The range check comes first: casting a double outside int64 is undefined.
    if (!(d >= -static_cast<double>(limits::kMaxAttrInteger) &&
          d <= static_cast<double>(limits::kMaxAttrInteger)) ||
        d != static_cast<double>(static_cast<int64_t>(d)))
      badAttr(key, "an integer", v);
    x = static_cast<int64_t>(d);
  } else {
    badAttr(key, "an integer", v);
  }
  if (x < -limits::kMaxAttrInteger || x > limits::kMaxAttrInteger)
    badAttr(key, ("an integer of magnitude at most " + std::to_string(limits::kMaxAttrInteger)).c_str(), v);
  return x;
}
}  // namespace

int64_t intAttr(const Json& attrs, const char* key) {
  return asInt(need(attrs, key), key);
}
int64_t intAttr(const Json& attrs, const char* key, int64_t dflt) {
  return hasAttr(attrs, key) ? intAttr(attrs, key) : dflt;
}

double numAttr(const Json& attrs, const char* key) {
  const Json& v = need(attrs, key);
  if (!v.is_number()) badAttr(key, "a number", v);
  return v.get<double>();
}
double numAttr(const Json& attrs, const char* key, double dflt) {
  return hasAttr(attrs, key) ? numAttr(attrs, key) : dflt;
}

bool boolAttr(const Json& attrs, const char* key, bool dflt) {
  if (!hasAttr(attrs, key)) return dflt;
  const Json& v = attrs[key];
  if (!v.is_boolean()) badAttr(key, "true or false", v);
  return v.get<bool>();
}

std::vector<int64_t> intListAttr(const Json& attrs, const char* key) {
  const Json& v = need(attrs, key);
  if (!v.is_array()) badAttr(key, "a list of integers", v);
  std::vector<int64_t> out;
  for (const Json& e : v)
    out.push_back(asInt(e, key));
  return out;
}

std::string choiceAttr(const Json& attrs, const char* key, std::initializer_list<const char*> allowed) {
  if (!hasAttr(attrs, key)) return *allowed.begin();
  const Json& v = attrs[key];
  std::string options;
  for (const char* a : allowed) {
    if (v.is_string() && v.get<std::string>() == a) return a;
    options += options.empty() ? std::string("\"") + a + "\"" : std::string(", \"") + a + "\"";
  }
  badAttr(key, ("one of " + options).c_str(), v);
}

DType dtypeAttr(const Json& attrs, const char* key, DType dflt) {
  if (!hasAttr(attrs, key)) return dflt;
  const Json& v = attrs[key];
  if (v.is_string())
    if (auto d = parseDType(v.get<std::string>())) return *d;
  badAttr(key, "a dtype (f32, bf16, f16, f64, i64, i32, bool)", v);
}

int normDim(int64_t dim, size_t rank, const std::string& what) {
  int64_t r = static_cast<int64_t>(rank);
  if (dim < -r || dim >= r)
    throw ShapeError(what + " " + std::to_string(dim) + " is out of range for rank " + std::to_string(rank));
  return static_cast<int>(dim < 0 ? dim + r : dim);
}

int dimAttr(const Json& attrs, const char* key, size_t rank) {
  int64_t dim = intAttr(attrs, key);
  try {
    return normDim(dim, rank, std::string("attribute `") + key + "`");
  } catch (const ShapeError& e) {
    throw AttrError(key, e.what());
  }
}

Shape shapeAttr(const Json& attrs, const char* key) {
  Shape s = intListAttr(attrs, key);
  for (int64_t d : s)
    if (d < 0) badAttr(key, "a list of non-negative extents", attrs[key]);
  if (std::string why = limits::shapeLimitError(s); !why.empty())
    throw AttrError(key, std::string("attribute `") + key + "`: " + why);
  return s;
}

void requireFloat(const TensorType& t, const std::string& what) {
  if (isInteger(t.dtype) || t.dtype == DType::Bool)
    throw ShapeError(what + " must be a float tensor, got " + typeString(t));
}

void requireSameKind(const TensorType& a, const TensorType& b, const char* aName, const char* bName) {
  if (a.dtype == DType::Bool || b.dtype == DType::Bool || isInteger(a.dtype) != isInteger(b.dtype))
    throw ShapeError(std::string("operands must be both float or both integer, got ") + aName + " " +
                     typeString(a) + ", " + bName + " " + typeString(b));
}

void requireInteger(const TensorType& t, const std::string& what) {
  if (!isInteger(t.dtype))
    throw ShapeError(what + " must be an integer tensor (i64/i32), got " + typeString(t));
}

void requireRank(const TensorType& t, size_t rank, const std::string& what) {
  if (t.shape.size() != rank)
    throw ShapeError(what + " must have rank " + std::to_string(rank) + ", got " + typeString(t));
}

void requireMinRank(const TensorType& t, size_t rank, const std::string& what) {
  if (t.shape.size() < rank)
    throw ShapeError(what + " must have rank >= " + std::to_string(rank) + ", got " + typeString(t));
}

void requireShape(const TensorType& t, const Shape& s, const std::string& what) {
  if (t.shape != s) throw ShapeError(what + " must have shape " + shapeString(s) + ", got " + typeString(t));
}

void tie(AxisInfo& info, int portA, int axisA, int portB, int axisB) {
  info.ties.push_back({AxisRef{portA, axisA}, AxisRef{portB, axisB}});
}

void tieAll(AxisInfo& info, int portA, int portB, size_t rank) {
  for (size_t i = 0; i < rank; ++i)
    tie(info, portA, static_cast<int>(i), portB, static_cast<int>(i));
}

void tieBroadcast(AxisInfo& info, int inPort, const Shape& in, int outPort, const Shape& out) {
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] == out[off + i]) tie(info, inPort, static_cast<int>(i), outPort, static_cast<int>(off + i));
}

void markReduced(AxisInfo& info, int port, int axis, const Shape& shape) {
  if (shape[axis] > 1) info.reduced.push_back(AxisRef{port, axis});
}

void markFixed(AxisInfo& info, int port, int axis) {
  info.fixed.push_back(AxisRef{port, axis});
}

void indexes(AxisInfo& info, int idPort, int port, int axis) {
  tie(info, idPort, kValues, port, axis);
}

void tieValues(AxisInfo& info, int portA, int portB) {
  tie(info, portA, kValues, portB, kValues);
}

void tieAllValues(AxisInfo& info, int ports) {
  for (int p = 1; p < ports; ++p)
    tieValues(info, 0, p);
}

IntRange hull(const IntRange& a, const IntRange& b) {
  if (!a.bounded || !b.bounded) return IntRange::any();
  if (a.lo >= a.hi) return b;
  if (b.lo >= b.hi) return a;
  return IntRange::of(std::min(a.lo, b.lo), std::max(a.hi, b.hi));
}

std::vector<IntRange> movedRange(const std::vector<IntRange>& in, const Types& inT, const Types& outT,
                                 const Json&) {
  IntRange r = IntRange::of(0, 0);  // empty: no integer input
  bool any = false;
  for (size_t i = 0; i < inT.size() && i < in.size(); ++i)
    if (isInteger(inT[i].dtype)) {
      r = any ? hull(r, in[i]) : in[i];
      any = true;
    }
  return std::vector<IntRange>(outT.size(), any ? r : IntRange::any());
}

int64_t scaled(int64_t value, const AxisFactor& factor, int port, int axis) {
  int64_t f = factor ? factor(AxisRef{port, axis}) : 1;
  return f > 1 ? value / f : value;
}

}  // namespace paraproof::ops::util
