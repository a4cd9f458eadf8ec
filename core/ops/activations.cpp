#include "core/ops/activations.h"

#include <cmath>
#include <vector>

namespace paraproof::ops::act {

namespace {
constexpr double kGeluCubic = 0.044715;
const double kSqrt2OverPi = std::sqrt(2.0 / M_PI);
constexpr double kInvSqrt2 = M_SQRT1_2;
const double kInvSqrt2Pi = 1.0 / std::sqrt(2.0 * M_PI);

ExprId oneMinus(ExprPool& p, ExprId a) {
  return p.sub(p.one(), a);
}
}  // namespace

ExprId sigmoid(ExprPool& p, ExprId x) {
  return p.apply(sym::Fn::Sigmoid, {x});
}

ExprId silu(ExprPool& p, ExprId x) {
  return p.mul(x, sigmoid(p, x));
}

ExprId gelu(ExprPool& p, ExprId x, bool exact) {
  ExprId inner;
  if (exact) {
    inner = p.apply(sym::Fn::Erf, {p.mul(p.real(kInvSqrt2), x)});
  } else {
    ExprId u = p.mul(p.real(kSqrt2OverPi), p.add(x, p.mul({p.real(kGeluCubic), x, x, x})));
    inner = p.apply(sym::Fn::Tanh, {u});
  }
  return p.mul({p.real(0.5), x, p.add(p.one(), inner)});
}

ExprId power(ExprPool& p, ExprId x, double e) {
  if (e == std::trunc(e) && std::fabs(e) <= 64) {
    std::vector<ExprId> f(static_cast<size_t>(std::fabs(e)), x);
    ExprId prod = p.mul(std::move(f));
    return e < 0 ? p.div(p.one(), prod) : prod;
  }
  return p.apply(sym::Fn::Pow, {x, p.real(e)});
}

ExprId siluDerivative(ExprPool& p, ExprId x) {
  // d/dx x s(x) = s + x s (1 - s)
  ExprId s = sigmoid(p, x);
  return p.add(s, p.mul({x, s, oneMinus(p, s)}));
}

ExprId geluDerivative(ExprPool& p, ExprId x, bool exact) {
  if (exact) {
    // 0.5 (1 + erf(x/sqrt2)) + x exp(-x^2/2) / sqrt(2 pi)
    ExprId cdf = p.mul(p.real(0.5), p.add(p.one(), p.apply(sym::Fn::Erf, {p.mul(p.real(kInvSqrt2), x)})));
    ExprId pdf = p.mul(p.real(kInvSqrt2Pi), p.apply(sym::Fn::Exp, {p.mul({p.real(-0.5), x, x})}));
    return p.add(cdf, p.mul(x, pdf));
  }
  // t = tanh(u), u = c (x + a x^3): 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 a x^2)
  ExprId u = p.mul(p.real(kSqrt2OverPi), p.add(x, p.mul({p.real(kGeluCubic), x, x, x})));
  ExprId t = p.apply(sym::Fn::Tanh, {u});
  ExprId du = p.mul(p.real(kSqrt2OverPi), p.add(p.one(), p.mul({p.real(3 * kGeluCubic), x, x})));
  return p.add(p.mul(p.real(0.5), p.add(p.one(), t)),
               p.mul({p.real(0.5), x, tanhDerivativeFromOutput(p, t), du}));
}

ExprId sigmoidDerivativeFromOutput(ExprPool& p, ExprId y) {
  return p.mul(y, oneMinus(p, y));
}

ExprId tanhDerivativeFromOutput(ExprPool& p, ExprId y) {
  return oneMinus(p, p.mul(y, y));
}

}  // namespace paraproof::ops::act
