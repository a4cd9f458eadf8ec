// Training-step ops: the global gradient norm, the clipping coefficient and the AdamW update.
#include <cmath>
#include <string>
#include <utility>

#include "core/ops/nn_families.h"
#include "core/ops/op_util.h"
#include "core/ops/sym_tensor.h"

namespace paraproof::ops {

namespace {
using namespace util;

constexpr double kClipEps = 1e-6;

OpDef globalNormSqOp() {
  OpDef d;
  d.name = "global_norm_sq";
  d.minInputs = 1;
  d.maxInputs = -1;
  d.summary = "[]: sum of the squares of every element of every input";
  d.infer = [](const Types& in, const Json&) {
    for (size_t k = 0; k < in.size(); ++k)
      requireFloat(in[k], "input " + std::to_string(k));
    return Types{{{}, in[0].dtype}};
  };
  d.axes = [](const Types& in, const Types&, const Json&) {
    AxisInfo info;
    for (size_t k = 0; k < in.size(); ++k)
      for (size_t i = 0; i < in[k].shape.size(); ++i)
        markReduced(info, static_cast<int>(k), static_cast<int>(i), in[k].shape);
    return info;
  };
  d.lower = [](ExprPool& p, const Tensors& in, const Json&) {
    std::vector<ExprId> terms;  // one flat sum: equal to adding per-tensor sums of squares
    size_t count = 0;
    for (const SymTensor& t : in)
      count += t.elems.size();
    terms.reserve(count);
    for (const SymTensor& t : in)
      for (ExprId x : t.elems)
        terms.push_back(p.mul(x, x));
    return Tensors{st::full({}, in[0].type.dtype, p.add(std::move(terms)))};
  };
  return d;
}

OpDef clipCoefOp() {
  OpDef d;
  d.name = "clip_coef";
  d.minInputs = d.maxInputs = 1;
  d.summary = "min(1, max_norm / (sqrt(norm_sq) + 1e-6)) of a scalar norm_sq";
  d.infer = [](const Types& in, const Json& a) {
    requireFloat(in[0], "norm_sq");
    requireRank(in[0], 0, "norm_sq");
    numAttr(a, "max_norm");
    return Types{in[0]};
  };
  d.axes = [](const Types&, const Types&, const Json&) { return AxisInfo{}; };
  d.lower = [](ExprPool& p, const Tensors& in, const Json& a) {
    ExprId denom = p.add(p.apply(sym::Fn::Sqrt, {in[0].elems[0]}), p.real(kClipEps));
    ExprId coef = p.min(p.one(), p.div(p.real(numAttr(a, "max_norm")), denom));
    return Tensors{st::full({}, in[0].type.dtype, coef)};
  };
  return d;
}

struct AdamW {
  double lr, beta1, beta2, eps, weightDecay;
  int64_t step;
};
AdamW adamwAttrs(const Json& a) {
  AdamW h{numAttr(a, "lr"),
          numAttr(a, "beta1"),
          numAttr(a, "beta2"),
          numAttr(a, "eps"),
          numAttr(a, "weight_decay", 0.0),
          intAttr(a, "step")};
  if (h.step < 1)
    throw AttrError("step", "attribute `step` must be >= 1 (bias correction divides by 1 - beta^step)");
  for (auto [key, beta] : {std::pair<const char*, double>{"beta1", h.beta1}, {"beta2", h.beta2}})
    if (beta < 0 || beta >= 1)
      throw AttrError(key,
                      std::string("attribute `") + key + "` must be in [0, 1), got " + std::to_string(beta));
  return h;
}

// m' = b1 m + (1 - b1) g;  v' = b2 v + (1 - b2) g^2;
// p' = p (1 - lr wd) - lr (m' / (1 - b1^t)) / (sqrt(v' / (1 - b2^t)) + eps)   (decoupled weight decay)
Tensors adamw(ExprPool& p, const Tensors& in, const Json& a) {
  AdamW h = adamwAttrs(a);
  const SymTensor &param = in[0], &grad = in[1], &m = in[2], &v = in[3];
  SymTensor m1 = st::add(p, st::scale(p, m, h.beta1), st::scale(p, grad, 1 - h.beta1));
  SymTensor v1 = st::add(p, st::scale(p, v, h.beta2), st::scale(p, st::square(p, grad), 1 - h.beta2));
  double c1 = 1 - std::pow(h.beta1, static_cast<double>(h.step));
  double c2 = 1 - std::pow(h.beta2, static_cast<double>(h.step));
  SymTensor mhat = st::div(p, m1, st::scalar(p, c1)), vhat = st::div(p, v1, st::scalar(p, c2));
  SymTensor update = st::div(p, mhat, st::addScalar(p, st::sqrt(p, vhat), h.eps));
  SymTensor decayed = st::scale(p, param, 1 - h.lr * h.weightDecay);
  return {st::sub(p, decayed, st::scale(p, update, h.lr)), m1, v1};
}

OpDef adamwOp() {
  OpDef d;
  d.name = "adamw";
  d.minInputs = d.maxInputs = 4;
  d.summary = "inputs (param, grad, m, v) -> param', m', v' (bias-corrected Adam, decoupled weight decay)";
  d.infer = [](const Types& in, const Json& a) {
    const char* names[] = {"param", "grad", "m", "v"};
    for (int k = 0; k < 4; ++k) {
      requireFloat(in[k], names[k]);
      if (in[k].shape != in[0].shape)
        throw ShapeError(std::string(names[k]) + " " + typeString(in[k]) + " must have the shape of param " +
                         typeString(in[0]));
    }
    adamwAttrs(a);
    return Types{in[0], in[2], in[3]};
  };
  d.axes = [](const Types& in, const Types&, const Json&) {
    AxisInfo info;
    for (int port = 1; port < 7; ++port)
      tieAll(info, 0, port, in[0].shape.size());
    return info;
  };
  d.lower = adamw;
  return d;
}
}  // namespace

void registerTraining(std::vector<OpDef>& reg) {
  reg.push_back(globalNormSqOp());
  reg.push_back(clipCoefOp());
  reg.push_back(adamwOp());
}

}  // namespace paraproof::ops
