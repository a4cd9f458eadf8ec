// Elementwise ops: one input (functions, scalar arithmetic, cast) and two inputs (numpy broadcasting).
#include <algorithm>
#include <cmath>

#include "core/ops/activations.h"
#include "core/ops/families.h"
#include "core/ops/op_util.h"
#include "core/ops/sym_tensor.h"

namespace paraproof::ops {

namespace {
using namespace util;

using ScalarFn = std::function<ExprId(ExprPool&, ExprId, const Json&)>;
using AttrCheck = std::function<void(const Json&)>;

AxisInfo sameAxes(const std::vector<TensorType>& in, const std::vector<TensorType>&, const Json&) {
  AxisInfo info;
  tieAll(info, 0, 1, in[0].shape.size());
  return info;
}

// identity and int -> int casts move integer values unchanged.
AxisInfo sameAxesAndValues(const std::vector<TensorType>& in, const std::vector<TensorType>& out,
                           const Json& a) {
  AxisInfo info = sameAxes(in, out, a);
  if (isInteger(in[0].dtype) && isInteger(out[0].dtype)) tieValues(info, 0, 1);
  return info;
}

OpDef unary(std::string name, std::string summary, ScalarFn fn, AttrCheck check = nullptr,
            bool floatOnly = true) {
  OpDef d;
  d.name = std::move(name);
  d.minInputs = d.maxInputs = 1;
  d.summary = std::move(summary);
  d.infer = [check, floatOnly](const std::vector<TensorType>& in, const Json& attrs) {
    if (floatOnly) requireFloat(in[0], "x");
    if (check) check(attrs);
    return std::vector<TensorType>{in[0]};
  };
  d.axes = sameAxes;
  d.lower = [fn](ExprPool& p, const std::vector<SymTensor>& in, const Json& attrs) {
    return std::vector<SymTensor>{st::map(in[0], [&](ExprId x) { return fn(p, x, attrs); })};
  };
  return d;
}

ExprId applyFn(ExprPool& p, sym::Fn f, ExprId x) {
  return p.apply(f, {x});
}

void registerUnary(std::vector<OpDef>& reg) {
  OpDef identity = unary(
      "identity", "x", [](ExprPool&, ExprId x, const Json&) { return x; }, nullptr, false);
  identity.axes = sameAxesAndValues;
  identity.valueRange = movedRange;
  reg.push_back(std::move(identity));
  // A negated id is no id: integer values have no declared rule (pinned); the range flips.
  OpDef neg = unary(
      "neg", "-x", [](ExprPool& p, ExprId x, const Json&) { return p.neg(x); }, nullptr, false);
  neg.valueRange = [](const std::vector<IntRange>& in, const Types&, const Types&, const Json&) {
    const IntRange& r = in[0];
    return std::vector<IntRange>{r.bounded && r.lo < r.hi ? IntRange::of(1 - r.hi, 1 - r.lo) : r};
  };
  reg.push_back(std::move(neg));
  const std::pair<const char*, sym::Fn> fns[] = {
      {"exp", sym::Fn::Exp},   {"log", sym::Fn::Log}, {"sqrt", sym::Fn::Sqrt}, {"sigmoid", sym::Fn::Sigmoid},
      {"tanh", sym::Fn::Tanh}, {"sin", sym::Fn::Sin}, {"cos", sym::Fn::Cos},   {"erf", sym::Fn::Erf}};
  for (const auto& entry : fns) {
    const sym::Fn fn = entry.second;  // a plain variable: clang 14 cannot capture structured bindings
    reg.push_back(unary(entry.first, std::string(entry.first) + "(x)",
                        [fn](ExprPool& p, ExprId x, const Json&) { return applyFn(p, fn, x); }));
  }
  reg.push_back(unary("rsqrt", "1 / sqrt(x)", [](ExprPool& p, ExprId x, const Json&) {
    return p.div(p.one(), applyFn(p, sym::Fn::Sqrt, x));
  }));
  reg.push_back(
      unary("reciprocal", "1 / x", [](ExprPool& p, ExprId x, const Json&) { return p.div(p.one(), x); }));
  reg.push_back(unary("square", "x * x", [](ExprPool& p, ExprId x, const Json&) { return p.mul(x, x); }));
  reg.push_back(
      unary("relu", "max(x, 0)", [](ExprPool& p, ExprId x, const Json&) { return p.max(x, p.zero()); }));
  reg.push_back(
      unary("silu", "x * sigmoid(x)", [](ExprPool& p, ExprId x, const Json&) { return act::silu(p, x); }));
  reg.push_back(unary(
      "gelu", "GELU; attr approximate: \"tanh\" (default) or \"none\" (erf)",
      [](ExprPool& p, ExprId x, const Json& a) {
        return act::gelu(p, x, choiceAttr(a, "approximate", {"tanh", "none"}) == "none");
      },
      [](const Json& a) {
        choiceAttr(a, "approximate", {"tanh", "none"});
      }));
  reg.push_back(unary(
      "pow", "x ^ exponent (integral exponents expand to products)",
      [](ExprPool& p, ExprId x, const Json& a) { return act::power(p, x, numAttr(a, "exponent")); },
      [](const Json& a) { numAttr(a, "exponent"); }));
  reg.push_back(unary(
      "scale", "x * factor",
      [](ExprPool& p, ExprId x, const Json& a) { return p.mul(p.real(numAttr(a, "factor")), x); },
      [](const Json& a) { numAttr(a, "factor"); }));
  reg.push_back(unary(
      "div_scalar", "x / divisor (exact rational)",
      [](ExprPool& p, ExprId x, const Json& a) { return p.div(x, p.real(numAttr(a, "divisor"))); },
      [](const Json& a) {
        if (numAttr(a, "divisor") == 0) throw AttrError("divisor", "attribute `divisor` must be nonzero");
      }));
  reg.push_back(unary(
      "add_scalar", "x + value",
      [](ExprPool& p, ExprId x, const Json& a) { return p.add(x, p.real(numAttr(a, "value"))); },
      [](const Json& a) { numAttr(a, "value"); }));

  OpDef cast;
  cast.name = "cast";
  cast.minInputs = cast.maxInputs = 1;
  cast.summary = "x with another dtype (values are reals; integers convert exactly to reals)";
  cast.infer = [](const std::vector<TensorType>& in, const Json& attrs) {
    if (!hasAttr(attrs, "dtype")) throw AttrError("dtype", "missing attribute `dtype`");
    DType to = dtypeAttr(attrs, "dtype", in[0].dtype);
    bool fromInt = isInteger(in[0].dtype), toInt = isInteger(to);
    if (!fromInt && toInt)
      throw ShapeError("cast from " + typeString(in[0]) + " to " + dtypeName(to) +
                       " is not supported (float to integer rounds)");
    if (to == DType::Bool || in[0].dtype == DType::Bool)
      throw ShapeError("cast to or from bool is not supported");
    return std::vector<TensorType>{{in[0].shape, to}};
  };
  cast.axes = sameAxesAndValues;  // int -> float: the values become numbers, no rule (pinned)
  cast.valueRange = movedRange;
  cast.lower = [](ExprPool& p, const std::vector<SymTensor>& in, const Json& attrs) {
    DType to = dtypeAttr(attrs, "dtype", in[0].type.dtype);
    SymTensor r = st::withDType(in[0], to);
    if (isInteger(in[0].type.dtype) && !isInteger(to)) r = st::map(r, [&](ExprId x) { return p.toReal(x); });
    return std::vector<SymTensor>{r};
  };
  reg.push_back(std::move(cast));
}

using BinaryFn = SymTensor (*)(ExprPool&, const SymTensor&, const SymTensor&);

OpDef binary(std::string name, std::string summary, BinaryFn fn, bool allowInteger) {
  OpDef d;
  d.name = std::move(name);
  d.minInputs = d.maxInputs = 2;
  d.summary = std::move(summary);
  d.infer = [allowInteger](const std::vector<TensorType>& in, const Json&) {
    if (!allowInteger) {
      requireFloat(in[0], "a");
      requireFloat(in[1], "b");
    } else {
      requireSameKind(in[0], in[1], "a", "b");
    }
    return std::vector<TensorType>{{st::broadcastShape(in[0].shape, in[1].shape), in[0].dtype}};
  };
  d.axes = [](const std::vector<TensorType>& in, const std::vector<TensorType>& out, const Json&) {
    AxisInfo info;
    tieBroadcast(info, 0, in[0].shape, 2, out[0].shape);
    tieBroadcast(info, 1, in[1].shape, 2, out[0].shape);
    return info;
  };
  d.lower = [fn](ExprPool& p, const std::vector<SymTensor>& in, const Json&) {
    return std::vector<SymTensor>{fn(p, in[0], in[1])};
  };
  return d;
}

// Integer arithmetic: the result is no index of a declared kind (its values are pinned by the reducer),
// but its range follows from the operands' (closed bounds [lo, hi - 1]).
using RangeFn = IntRange (*)(int64_t alo, int64_t ahi, int64_t blo, int64_t bhi);
void withRange(OpDef& d, RangeFn fn) {
  d.valueRange = [fn](const std::vector<IntRange>& in, const Types& inT, const Types&, const Json&) {
    const IntRange &a = in[0], &b = in[1];
    if (!isInteger(inT[0].dtype) || !a.bounded || !b.bounded || a.lo >= a.hi || b.lo >= b.hi)
      return std::vector<IntRange>{IntRange::any()};
    return std::vector<IntRange>{fn(a.lo, a.hi - 1, b.lo, b.hi - 1)};
  };
}
IntRange closed(int64_t lo, int64_t hi) {
  return IntRange::of(lo, hi + 1);
}

void registerBinary(std::vector<OpDef>& reg) {
  OpDef add = binary("add", "a + b (broadcasting)", st::add, true);
  withRange(add, [](int64_t al, int64_t ah, int64_t bl, int64_t bh) { return closed(al + bl, ah + bh); });
  OpDef sub = binary("sub", "a - b (broadcasting)", st::sub, true);
  withRange(sub, [](int64_t al, int64_t ah, int64_t bl, int64_t bh) { return closed(al - bh, ah - bl); });
  OpDef mul = binary("mul", "a * b (broadcasting)", st::mul, true);
  withRange(mul, [](int64_t al, int64_t ah, int64_t bl, int64_t bh) {
    int64_t c[] = {al * bl, al * bh, ah * bl, ah * bh};
    return closed(*std::min_element(c, c + 4), *std::max_element(c, c + 4));
  });
  OpDef maximum = binary("maximum", "max(a, b) (broadcasting)", st::maximum, true);
  withRange(maximum, [](int64_t al, int64_t ah, int64_t bl, int64_t bh) {
    return closed(std::max(al, bl), std::max(ah, bh));
  });
  OpDef minimum = binary("minimum", "min(a, b) (broadcasting)", st::minimum, true);
  withRange(minimum, [](int64_t al, int64_t ah, int64_t bl, int64_t bh) {
    return closed(std::min(al, bl), std::min(ah, bh));
  });
  OpDef div = binary("div", "a / b (broadcasting)", st::div, false);
  for (OpDef* d : {&add, &sub, &mul, &div, &maximum, &minimum})
    reg.push_back(std::move(*d));
}

// The sum of 1..n float tensors of one shape: one op where a chain of adds would be n - 1 (the gradient
// norm's per-tensor squares on a device).
OpDef addN() {
  OpDef d;
  d.name = "add_n";
  d.minInputs = 1;
  d.maxInputs = -1;
  d.summary = "x0 + x1 + ... (one shape)";
  d.infer = [](const std::vector<TensorType>& in, const Json&) {
    for (size_t k = 0; k < in.size(); ++k) {
      requireFloat(in[k], "x" + std::to_string(k));
      requireShape(in[k], in[0].shape, "x" + std::to_string(k));
    }
    return std::vector<TensorType>{in[0]};
  };
  d.axes = [](const std::vector<TensorType>& in, const std::vector<TensorType>& out, const Json&) {
    AxisInfo info;
    for (size_t k = 0; k < in.size(); ++k)
      tieAll(info, static_cast<int>(k), static_cast<int>(in.size()), out[0].shape.size());
    return info;
  };
  d.lower = [](ExprPool& p, const std::vector<SymTensor>& in, const Json&) {
    SymTensor out = in[0];
    std::vector<ExprId> terms(in.size());
    for (size_t e = 0; e < out.elems.size(); ++e) {
      for (size_t k = 0; k < in.size(); ++k)
        terms[k] = in[k].elems[e];
      out.elems[e] = p.add(terms);
    }
    return std::vector<SymTensor>{std::move(out)};
  };
  return d;
}
}  // namespace

void registerElementwise(std::vector<OpDef>& reg) {
  registerUnary(reg);
  registerBinary(reg);
  reg.push_back(addN());
}

}  // namespace paraproof::ops
