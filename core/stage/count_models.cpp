// Each model follows its op's lowering in core/ops step by step: a sum over a scaled axis is `summed`, a
// mean also `divided`, a root, exponential, logarithm, comparison or extremum an atom (Atoms::apply) whose
// argument is recorded, a quotient by data `quotient`. Products and differences keep the tracks of both
// operands. A model that left out a step could hide a count, so each names the lowering it follows.
#include "core/stage/count_models.h"

#include <map>
#include <string>

namespace paraproof::stage::counts {

namespace {

Tracks sumIf(const Tracks& x, bool scaled) {
  return scaled ? summed(x) : x;
}
Tracks meanIf(const Tracks& x, bool scaled) {
  return scaled ? divided(summed(x)) : x;
}

// max over an axis: one of the elements, so the same powers of t; the same on every member of a scaled axis.
Tracks maxOver(Atoms& atoms, const Tracks& x, bool scaled) {
  atoms.apply("max", x);
  return scaled ? Tracks{{}, x.own | x.shared, x.plain} : x;
}

Tracks reciprocal(const Tracks& x) {
  return quotient(constant(), x);
}

int lastAxis(const OpUse& u, int port) {
  return static_cast<int>(u.types[static_cast<size_t>(port)].shape.size()) - 1;
}

int dimOf(const OpUse& u) {
  const int rank = lastAxis(u, 0) + 1;
  const int dim = u.op.attrs.value("dim", -1);
  return dim < 0 ? dim + rank : dim;
}

// A sum over every axis of port `port` but its last (a norm's dw, db).
Tracks sumLeading(const OpUse& u, int port, Tracks x) {
  for (int a = 0; a < lastAxis(u, port); ++a)
    x = sumIf(x, u.scaled(port, a));
  return x;
}

Tracks sumAll(const OpUse& u, int port, Tracks x) {
  for (int a = 0; a <= lastAxis(u, port); ++a)
    x = sumIf(x, u.scaled(port, a));
  return x;
}

// softmax along an axis (st::softmax): exp(x - max) / sum(exp(x - max)).
Tracks softmax(Atoms& atoms, const Tracks& x, bool scaled) {
  const Tracks e = atoms.apply("exp", x | maxOver(atoms, x, scaled));
  return quotient(e, sumIf(e, scaled));
}

// rsqrt(mean(x^2) + eps) over the last axis (nn_norms.cpp rmsInverse), and the centred form.
Tracks rmsInverse(Atoms& atoms, const Tracks& x, bool scaled) {
  return reciprocal(atoms.apply("sqrt", meanIf(product(x, x), scaled) | constant()));
}

std::vector<Tracks> rmsnorm(const OpUse& u, Atoms& atoms) {
  const Tracks &x = u.in[0], &w = u.in[1];
  const Tracks r = rmsInverse(atoms, x, u.scaled(0, lastAxis(u, 0)));
  return {product(product(x, r), w)};
}

std::vector<Tracks> rmsnormBackward(const OpUse& u, Atoms& atoms) {
  const Tracks &x = u.in[0], &w = u.in[1], &dy = u.in[2];
  const bool h = u.scaled(0, lastAxis(u, 0));
  const Tracks r = rmsInverse(atoms, x, h), g = product(dy, w);
  const Tracks r3 = product(product(r, r), r);
  const Tracks dx = product(g, r) | product(product(x, r3), meanIf(product(g, x), h));
  return {dx, sumLeading(u, 0, product(dy, product(x, r)))};
}

struct Centered {
  Tracks xc, r;
};
Centered center(Atoms& atoms, const Tracks& x, bool h) {
  const Tracks xc = x | meanIf(x, h);
  return {xc, rmsInverse(atoms, xc, h)};
}

std::vector<Tracks> layernorm(const OpUse& u, Atoms& atoms) {
  const Centered c = center(atoms, u.in[0], u.scaled(0, lastAxis(u, 0)));
  return {product(product(c.xc, c.r), u.in[1]) | u.in[2]};
}

std::vector<Tracks> layernormBackward(const OpUse& u, Atoms& atoms) {
  const Tracks &w = u.in[1], &dy = u.in[2];
  const bool h = u.scaled(0, lastAxis(u, 0));
  const Centered c = center(atoms, u.in[0], h);
  const Tracks xhat = product(c.xc, c.r), g = product(dy, w);
  const Tracks inner = g | meanIf(g, h) | product(xhat, meanIf(product(g, xhat), h));
  return {product(c.r, inner), sumLeading(u, 0, product(dy, xhat)), sumLeading(u, 0, dy)};
}

std::vector<Tracks> softmaxOp(const OpUse& u, Atoms& atoms) {
  return {softmax(atoms, u.in[0], u.scaled(0, dimOf(u)))};
}

std::vector<Tracks> logSoftmax(const OpUse& u, Atoms& atoms) {
  const bool s = u.scaled(0, dimOf(u));
  const Tracks shifted = u.in[0] | maxOver(atoms, u.in[0], s);
  return {shifted | atoms.apply("log", sumIf(atoms.apply("exp", shifted), s))};
}

std::vector<Tracks> softmaxBackward(const OpUse& u, Atoms&) {
  const Tracks &y = u.in[0], &dy = u.in[1];
  return {product(y, dy | sumIf(product(dy, y), u.scaled(0, dimOf(u))))};
}

std::vector<Tracks> logSoftmaxBackward(const OpUse& u, Atoms& atoms) {
  const Tracks &y = u.in[0], &dy = u.in[1];
  return {dy | product(atoms.apply("exp", y), sumIf(dy, u.scaled(0, dimOf(u))))};
}

// nn_attention.cpp attentionProbs: softmax over the keys of causal_mask(scale * q k^T); ports q0 k1 v2
// qpos3 kpos4. The mask compares positions (an atom) and fills with a constant.
Tracks attentionProbs(const OpUse& u, Atoms& atoms) {
  Tracks scores = sumIf(product(u.in[0], u.in[1]), u.scaled(0, 3));
  if (u.op.attrs.value("causal", true)) {
    atoms.apply("cmp", u.in[3] | u.in[4]);
    scores = scores | constant();
  }
  return softmax(atoms, scores, u.scaled(1, 1));
}

std::vector<Tracks> attention(const OpUse& u, Atoms& atoms) {
  return {sumIf(product(attentionProbs(u, atoms), u.in[2]), u.scaled(1, 1))};
}

std::vector<Tracks> attentionBackward(const OpUse& u, Atoms& atoms) {
  const Tracks &q = u.in[0], &k = u.in[1], &v = u.in[2], &dout = u.in[5];
  const Tracks p = attentionProbs(u, atoms);
  const Tracks dv = sumIf(product(p, dout), u.scaled(0, 1));
  const Tracks dprobs = sumIf(product(dout, v), u.scaled(2, 3));
  Tracks ds = product(p, dprobs | sumIf(product(dprobs, p), u.scaled(1, 1)));
  if (u.op.attrs.value("causal", true)) ds = ds | constant();
  return {sumIf(product(ds, k), u.scaled(1, 1)), sumIf(product(ds, q), u.scaled(0, 1)), dv};
}

std::vector<Tracks> globalNormSq(const OpUse& u, Atoms&) {
  Tracks r;
  for (size_t k = 0; k < u.in.size(); ++k)
    r = r | sumAll(u, static_cast<int>(k), product(u.in[k], u.in[k]));
  return {r};
}

// nn_tokens.cpp crossEntropy: log-sum-exp over the vocabulary minus the logit at the label (a one-hot of
// comparisons), masked; then summed over the rows, or divided by the mask's sum. Ports logits0 labels1 mask2.
Tracks oneHot(const OpUse& u, Atoms& atoms) {
  return atoms.apply("cmp", u.in[1] | constant());
}

std::vector<Tracks> crossEntropy(const OpUse& u, Atoms& atoms) {
  const Tracks &logits = u.in[0], &mask = u.in[2];
  const bool v = u.scaled(0, 1), n = u.scaled(0, 0);
  const Tracks m = maxOver(atoms, logits, v);
  const Tracks lse = atoms.apply("log", sumIf(atoms.apply("exp", logits | m), v)) | m;
  const Tracks picked = sumIf(product(oneHot(u, atoms), logits), v);
  const Tracks loss = product(lse | picked, mask);
  const std::string red = u.op.attrs.value("reduction", std::string("mean"));
  if (red == "none") return {loss};
  return {red == "mean" ? quotient(sumIf(loss, n), sumIf(mask, n)) : sumIf(loss, n)};
}

std::vector<Tracks> crossEntropyBackward(const OpUse& u, Atoms& atoms) {
  const Tracks &logits = u.in[0], &mask = u.in[2], &dloss = u.in[3];
  const std::string red = u.op.attrs.value("reduction", std::string("mean"));
  Tracks w = product(dloss, mask);
  if (red == "mean") w = quotient(w, sumIf(mask, u.scaled(0, 0)));
  const Tracks delta = softmax(atoms, logits, u.scaled(0, 1)) | oneHot(u, atoms);
  return {product(delta, w)};
}

// Elementwise functions (elementwise.cpp, activations.cpp): an atom of the input.
template <const char* Fn>
std::vector<Tracks> atomOf(const OpUse& u, Atoms& atoms) {
  return {atoms.apply(Fn, u.in[0])};
}
constexpr char kExp[] = "exp", kLog[] = "log", kSqrt[] = "sqrt", kSigmoid[] = "sigmoid", kTanh[] = "tanh",
               kSin[] = "sin", kCos[] = "cos", kErf[] = "erf";

std::vector<Tracks> rsqrt(const OpUse& u, Atoms& atoms) {
  return {reciprocal(atoms.apply(kSqrt, u.in[0]))};
}
std::vector<Tracks> silu(const OpUse& u, Atoms& atoms) {  // x * sigmoid(x)
  return {product(u.in[0], atoms.apply(kSigmoid, u.in[0]))};
}

using Model = std::vector<Tracks> (*)(const OpUse&, Atoms&);
const std::map<std::string, Model>& models() {
  static const std::map<std::string, Model> m{
      {"rmsnorm", rmsnorm},
      {"rmsnorm_backward", rmsnormBackward},
      {"layernorm", layernorm},
      {"layernorm_backward", layernormBackward},
      {"softmax", softmaxOp},
      {"log_softmax", logSoftmax},
      {"softmax_backward", softmaxBackward},
      {"log_softmax_backward", logSoftmaxBackward},
      {"attention", attention},
      {"attention_backward", attentionBackward},
      {"global_norm_sq", globalNormSq},
      {"cross_entropy", crossEntropy},
      {"cross_entropy_backward", crossEntropyBackward},
      {"exp", atomOf<kExp>},
      {"log", atomOf<kLog>},
      {"sqrt", atomOf<kSqrt>},
      {"sigmoid", atomOf<kSigmoid>},
      {"tanh", atomOf<kTanh>},
      {"sin", atomOf<kSin>},
      {"cos", atomOf<kCos>},
      {"erf", atomOf<kErf>},
      {"rsqrt", rsqrt},
      {"silu", silu},
  };
  return m;
}

}  // namespace

std::optional<std::vector<Tracks>> fusedOutputs(const OpUse& use, Atoms& atoms) {
  const auto it = models().find(use.op.kind);
  if (it == models().end()) return std::nullopt;
  std::vector<Tracks> out = it->second(use, atoms);
  if (out.size() != use.op.outputs.size()) return std::nullopt;
  return out;
}

}  // namespace paraproof::stage::counts
