// Backward ops of the activations: dx = dy * f'(x) (or f' from the forward output y).
#include "core/ops/activations.h"
#include "core/ops/nn_families.h"
#include "core/ops/op_util.h"
#include "core/ops/sym_tensor.h"

namespace paraproof::ops {

namespace {
using namespace util;

// Derivative of the activation at one element (of x, or of the forward output y).
using Derivative = std::function<ExprId(ExprPool&, ExprId, const Json&)>;

OpDef activationBackward(std::string name, std::string summary, const char* first, Derivative deriv,
                         bool hasApproximate = false) {
  OpDef d;
  d.name = std::move(name);
  d.minInputs = d.maxInputs = 2;
  d.summary = std::move(summary);
  std::string firstName = first;
  d.infer = [firstName, hasApproximate](const Types& in, const Json& a) {
    requireFloat(in[0], firstName);
    requireFloat(in[1], "dy");
    if (in[1].shape != in[0].shape)
      throw ShapeError("dy " + typeString(in[1]) + " must have the shape of " + firstName + " " +
                       typeString(in[0]));
    if (hasApproximate) choiceAttr(a, "approximate", {"tanh", "none"});
    return Types{in[0]};
  };
  d.axes = [](const Types& in, const Types&, const Json&) {
    AxisInfo info;
    tieAll(info, 0, 2, in[0].shape.size());
    tieAll(info, 1, 2, in[0].shape.size());
    return info;
  };
  d.lower = [deriv](ExprPool& p, const Tensors& in, const Json& a) {
    return Tensors{st::zip(in[0], in[1], [&](ExprId x, ExprId dy) { return p.mul(dy, deriv(p, x, a)); })};
  };
  return d;
}
}  // namespace

void registerActivationBackward(std::vector<OpDef>& reg) {
  reg.push_back(
      activationBackward("silu_backward", "inputs (x, dy): dy * (s + x s (1 - s)), s = sigmoid(x)", "x",
                         [](ExprPool& p, ExprId x, const Json&) { return act::siluDerivative(p, x); }));
  reg.push_back(activationBackward(
      "gelu_backward", "inputs (x, dy): dy * gelu'(x); attr approximate as gelu", "x",
      [](ExprPool& p, ExprId x, const Json& a) {
        return act::geluDerivative(p, x, choiceAttr(a, "approximate", {"tanh", "none"}) == "none");
      },
      true));
  OpDef relu = activationBackward("relu_backward", "inputs (x, dy): dy where x > 0, else 0", "x", nullptr);
  relu.lower = [](ExprPool& p, const Tensors& in, const Json&) {
    return Tensors{
        st::zip(in[0], in[1], [&](ExprId x, ExprId dy) { return p.ite(p.lt(p.zero(), x), dy, p.zero()); })};
  };
  reg.push_back(std::move(relu));
  reg.push_back(activationBackward(
      "sigmoid_backward", "inputs (y, dy): dy * y (1 - y), y = sigmoid(x)", "y",
      [](ExprPool& p, ExprId y, const Json&) { return act::sigmoidDerivativeFromOutput(p, y); }));
  reg.push_back(activationBackward(
      "tanh_backward", "inputs (y, dy): dy * (1 - y^2), y = tanh(x)", "y",
      [](ExprPool& p, ExprId y, const Json&) { return act::tanhDerivativeFromOutput(p, y); }));
}

}  // namespace paraproof::ops
