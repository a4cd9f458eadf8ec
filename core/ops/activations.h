// Scalar formulas of the activation functions and their derivatives, shared by the forward ops
// (elementwise.cpp) and the backward ops (nn.cpp) so both use one definition.
#pragma once

#include "core/sym/expr.h"

namespace paraproof::ops::act {

using sym::ExprId;
using sym::ExprPool;

ExprId sigmoid(ExprPool& p, ExprId x);
ExprId silu(ExprPool& p, ExprId x);  // x * sigmoid(x)
// GELU: tanh form 0.5 x (1 + tanh(c (x + 0.044715 x^3))), c = sqrt(2/pi); exact form 0.5 x (1 +
// erf(x/sqrt2)).
ExprId gelu(ExprPool& p, ExprId x, bool exact);
// x^e: integral exponents (|e| <= 64) expand to products (negative: 1 / product); others Apply(Pow).
ExprId power(ExprPool& p, ExprId x, double e);

// Derivatives, written with the same primitives: sigmoid' = s (1 - s), tanh' = 1 - t^2.
ExprId siluDerivative(ExprPool& p, ExprId x);
ExprId geluDerivative(ExprPool& p, ExprId x, bool exact);
ExprId sigmoidDerivativeFromOutput(ExprPool& p, ExprId y);  // y (1 - y)
ExprId tanhDerivativeFromOutput(ExprPool& p, ExprId y);     // 1 - y^2

}  // namespace paraproof::ops::act
