// RMSNorm and LayerNorm over the last dim, with their backward ops (dw/db summed over leading dims).
#include "core/ops/nn_families.h"
#include "core/ops/op_util.h"
#include "core/ops/sym_tensor.h"

namespace paraproof::ops {

namespace {
using namespace util;

int lastDim(const SymTensor& t) {
  return static_cast<int>(t.shape().size()) - 1;
}

std::vector<int> leadingDims(const SymTensor& t) {
  std::vector<int> d = st::allDims(t);
  d.pop_back();
  return d;
}

// rsqrt(mean(x^2) + eps) along the last dim, keepdim.
SymTensor rmsInverse(ExprPool& p, const SymTensor& x, double eps) {
  return st::rsqrt(p, st::addScalar(p, st::mean(p, st::square(p, x), {lastDim(x)}, true), eps));
}

struct Centered {
  SymTensor xc;  // x - mean(x)
  SymTensor r;   // rsqrt(var + eps)
};
Centered center(ExprPool& p, const SymTensor& x, double eps) {
  int h = lastDim(x);
  SymTensor xc = st::sub(p, x, st::mean(p, x, {h}, true));
  SymTensor r = st::rsqrt(p, st::addScalar(p, st::mean(p, st::square(p, xc), {h}, true), eps));
  return {xc, r};
}

Tensors rmsnorm(ExprPool& p, const Tensors& in, const Json& a) {
  const SymTensor &x = in[0], &w = in[1];
  return {st::mul(p, st::mul(p, x, rmsInverse(p, x, numAttr(a, "eps"))), w)};
}

Tensors rmsnormBackward(ExprPool& p, const Tensors& in, const Json& a) {
  const SymTensor &x = in[0], &w = in[1], &dy = in[2];
  SymTensor r = rmsInverse(p, x, numAttr(a, "eps"));
  SymTensor g = st::mul(p, dy, w);
  // d r / d x_j = -r^3 x_j / h, so dx = r g - x r^3 mean(g x).
  SymTensor r3 = st::mul(p, st::mul(p, r, r), r);
  SymTensor dx = st::sub(p, st::mul(p, g, r),
                         st::mul(p, st::mul(p, x, r3), st::mean(p, st::mul(p, g, x), {lastDim(x)}, true)));
  SymTensor dw = st::sum(p, st::mul(p, dy, st::mul(p, x, r)), leadingDims(x));
  return {dx, dw};
}

Tensors layernorm(ExprPool& p, const Tensors& in, const Json& a) {
  const SymTensor &x = in[0], &w = in[1], &b = in[2];
  Centered c = center(p, x, numAttr(a, "eps"));
  return {st::add(p, st::mul(p, st::mul(p, c.xc, c.r), w), b)};
}

Tensors layernormBackward(ExprPool& p, const Tensors& in, const Json& a) {
  const SymTensor &x = in[0], &w = in[1], &dy = in[2];
  int h = lastDim(x);
  Centered c = center(p, x, numAttr(a, "eps"));
  SymTensor xhat = st::mul(p, c.xc, c.r);
  SymTensor g = st::mul(p, dy, w);
  // dx = r (g - mean(g) - xhat mean(g xhat))
  SymTensor inner = st::sub(p, st::sub(p, g, st::mean(p, g, {h}, true)),
                            st::mul(p, xhat, st::mean(p, st::mul(p, g, xhat), {h}, true)));
  SymTensor dx = st::mul(p, c.r, inner);
  SymTensor dw = st::sum(p, st::mul(p, dy, xhat), leadingDims(x));
  SymTensor db = st::sum(p, dy, leadingDims(x));
  return {dx, dw, db};
}

void checkNormInputs(const Types& in, const Json& a, bool withBias, bool withDy) {
  requireFloat(in[0], "x");
  requireMinRank(in[0], 1, "x");
  Shape h{in[0].shape.back()};
  requireFloat(in[1], "w");
  requireShape(in[1], h, "w");
  if (withBias) {
    requireFloat(in[2], "b");
    requireShape(in[2], h, "b");
  }
  if (withDy) {
    requireFloat(in[2], "dy");
    if (in[2].shape != in[0].shape)
      throw ShapeError("dy " + typeString(in[2]) + " must have the shape of x " + typeString(in[0]));
  }
  double eps = numAttr(a, "eps");
  if (eps < 0) throw AttrError("eps", "attribute `eps` must be >= 0");
}

// x-shaped ports tie fully; h-shaped ports tie to x's last axis; x's last axis is reduced.
AxisInfo normAxes(const TensorType& x, const std::vector<int>& xLike, const std::vector<int>& hLike) {
  AxisInfo info;
  int last = static_cast<int>(x.shape.size()) - 1;
  for (int port : xLike)
    if (port != 0) tieAll(info, 0, port, x.shape.size());
  for (int port : hLike)
    tie(info, 0, last, port, 0);
  markReduced(info, 0, last, x.shape);
  info.counts.push_back({{0, last}});  // the mean over the last dim divides by its width
  return info;
}

OpDef normOp(std::string name, std::string summary, int inputs, bool bias, bool dy, int outputs,
             std::vector<int> xLike, std::vector<int> hLike,
             std::function<Tensors(ExprPool&, const Tensors&, const Json&)> lower) {
  OpDef d;
  d.name = std::move(name);
  d.minInputs = d.maxInputs = inputs;
  d.summary = std::move(summary);
  d.infer = [bias, dy, outputs](const Types& in, const Json& a) {
    checkNormInputs(in, a, bias, dy);
    Types out{in[0]};
    for (int k = 1; k < outputs; ++k)
      out.push_back({{in[0].shape.back()}, in[0].dtype});
    return out;
  };
  d.axes = [xLike, hLike](const Types& in, const Types&, const Json&) {
    return normAxes(in[0], xLike, hLike);
  };
  d.lower = std::move(lower);
  return d;
}
}  // namespace

void registerNorms(std::vector<OpDef>& reg) {
  // Ports: rmsnorm x0 w1 | y2; rmsnorm_backward x0 w1 dy2 | dx3 dw4;
  //        layernorm x0 w1 b2 | y3; layernorm_backward x0 w1 dy2 | dx3 dw4 db5.
  reg.push_back(normOp("rmsnorm", "x * rsqrt(mean(x^2) + eps) * w over the last dim", 2, false, false, 1, {2},
                       {1}, rmsnorm));
  reg.push_back(normOp("rmsnorm_backward", "inputs (x, w, dy) -> dx, dw (dw summed over leading dims)", 3,
                       false, true, 2, {2, 3}, {1, 4}, rmsnormBackward));
  reg.push_back(normOp("layernorm", "(x - mean) * rsqrt(var + eps) * w + b over the last dim", 3, true, false,
                       1, {3}, {1, 2}, layernorm));
  reg.push_back(normOp("layernorm_backward", "inputs (x, w, dy) -> dx, dw, db", 3, false, true, 3, {2, 3},
                       {1, 4, 5}, layernormBackward));
}

}  // namespace paraproof::ops
