// RoPE, the causal mask and (grouped-query) attention with its backward. Attention is written as its
// kernel-free decomposition: softmax(causal_mask(scale * q k^T)) v, with the same helpers the primitive
// ops use, so a plan that spells it out in primitive ops builds the very same expressions.
#include <cmath>

#include "core/ops/nn_families.h"
#include "core/ops/op_util.h"
#include "core/ops/sym_tensor.h"

namespace paraproof::ops {

namespace {
using namespace util;

constexpr double kDefaultFill = -1e9;

// rotate_half(x) = cat(-x2, x1) along the last dim; its transpose is cat(x2, -x1).
SymTensor rotateHalf(ExprPool& p, const SymTensor& x, bool transposed) {
  int last = static_cast<int>(x.shape().size()) - 1;
  int64_t d = x.shape().back();
  SymTensor x1 = st::slice(x, last, 0, d / 2), x2 = st::slice(x, last, d / 2, d);
  return transposed ? st::concat({x2, st::neg(p, x1)}, last) : st::concat({st::neg(p, x2), x1}, last);
}

// cos/sin [s, d] aligned with x [b, s, h, d].
SymTensor perPosition(const SymTensor& table) {
  return st::reshape(table, {table.shape()[0], 1, table.shape()[1]});
}

Tensors rope(ExprPool& p, const Tensors& in, bool backward) {
  const SymTensor& x = in[0];
  SymTensor c = perPosition(in[1]), s = perPosition(in[2]);
  if (!backward) return {st::add(p, st::mul(p, x, c), st::mul(p, rotateHalf(p, x, false), s))};
  // y = x c + R x s  =>  dx = dy c + R^T (dy s)
  return {st::add(p, st::mul(p, x, c), rotateHalf(p, st::mul(p, x, s), true))};
}

OpDef ropeOp(std::string name, std::string summary, bool backward) {
  OpDef d;
  d.name = std::move(name);
  d.minInputs = d.maxInputs = 3;
  d.summary = std::move(summary);
  std::string x = backward ? "dy" : "x";
  d.infer = [x](const Types& in, const Json&) {
    requireFloat(in[0], x);
    requireRank(in[0], 4, x + " ([b, s, h, d])");
    const Shape& s = in[0].shape;
    if (s[3] % 2) throw ShapeError("head dim of " + x + " " + typeString(in[0]) + " must be even");
    requireFloat(in[1], "cos");
    requireShape(in[1], {s[1], s[3]}, "cos ([s, d])");
    requireFloat(in[2], "sin");
    requireShape(in[2], {s[1], s[3]}, "sin ([s, d])");
    return Types{in[0]};
  };
  d.axes = [](const Types& in, const Types&, const Json&) {
    AxisInfo info;
    tieAll(info, 0, 3, 4);
    for (int t : {1, 2}) {
      tie(info, 0, 1, t, 0);
      tie(info, 0, 3, t, 1);
    }
    info.boundaries.push_back({{0, 3}, in[0].shape[3] / 2});  // the halves stay halves
    return info;
  };
  d.lower = [backward](ExprPool& p, const Tensors& in, const Json&) { return rope(p, in, backward); };
  return d;
}

// Whether key j is visible to query i: kpos[j] <= qpos[i], as an exact Int comparison.
ExprId visible(ExprPool& p, ExprId qpos, ExprId kpos) {
  return p.le(kpos, qpos);
}

// scores[..., sq, sk] -> score where visible, else fill (grad: dscore where visible, else 0).
SymTensor causalMask(ExprPool& p, const SymTensor& scores, const SymTensor& qpos, const SymTensor& kpos,
                     ExprId fill) {
  int64_t sq = qpos.elems.size(), sk = kpos.elems.size();
  SymTensor r{scores.type, {}};
  r.elems.reserve(scores.elems.size());
  for (size_t f = 0; f < scores.elems.size(); ++f) {
    int64_t j = static_cast<int64_t>(f) % sk, i = (static_cast<int64_t>(f) / sk) % sq;
    r.elems.push_back(p.ite(visible(p, qpos.elems[i], kpos.elems[j]), scores.elems[f], fill));
  }
  return r;
}

OpDef causalMaskOp() {
  OpDef d;
  d.name = "causal_mask";
  d.minInputs = d.maxInputs = 3;
  d.summary = "scores[..., sq, sk] where kpos <= qpos, else `fill` (default -1e9)";
  d.infer = [](const Types& in, const Json& a) {
    requireFloat(in[0], "scores");
    requireMinRank(in[0], 2, "scores");
    const Shape& s = in[0].shape;
    requireInteger(in[1], "qpos");
    requireShape(in[1], {s[s.size() - 2]}, "qpos");
    requireInteger(in[2], "kpos");
    requireShape(in[2], {s.back()}, "kpos");
    numAttr(a, "fill", kDefaultFill);
    return Types{in[0]};
  };
  d.axes = [](const Types& in, const Types&, const Json&) {
    AxisInfo info;
    int r = static_cast<int>(in[0].shape.size());
    tieAll(info, 0, 3, r);
    tie(info, 1, 0, 0, r - 2);
    tie(info, 2, 0, 0, r - 1);
    // Positions along the query and key sequences, compared with each other: one kind of index.
    indexes(info, 1, 0, r - 2);
    indexes(info, 2, 0, r - 1);
    tieValues(info, 1, 2);
    return info;
  };
  d.lower = [](ExprPool& p, const Tensors& in, const Json& a) {
    return Tensors{causalMask(p, in[0], in[1], in[2], p.real(numAttr(a, "fill", kDefaultFill)))};
  };
  return d;
}

// Heads of kv tensors [b, hk, ...] repeated `rep` times each (GQA): head i uses kv head i / rep.
SymTensor repeatHeads(const SymTensor& t, int64_t rep) {
  if (rep == 1) return t;
  std::vector<SymTensor> parts;
  for (int64_t g = 0; g < t.shape()[1]; ++g) {
    SymTensor head = st::slice(t, 1, g, g + 1);
    for (int64_t r = 0; r < rep; ++r)
      parts.push_back(head);
  }
  return st::concat(parts, 1);
}

// The transpose of repeatHeads: [b, h, ...] -> [b, hk, ...] summing each group of `rep` heads.
SymTensor sumHeadGroups(ExprPool& p, const SymTensor& t, int64_t rep) {
  if (rep == 1) return t;
  Shape s = t.shape();
  Shape grouped{s[0], s[1] / rep, rep};
  grouped.insert(grouped.end(), s.begin() + 2, s.end());
  return st::sum(p, st::reshape(t, grouped), {2});
}

struct AttentionArgs {
  double scale;
  bool causal;
  int64_t rep;
};

AttentionArgs attentionArgs(const Types& in, const Json& a) {
  return {numAttr(a, "scale", 1.0 / std::sqrt(static_cast<double>(in[0].shape[3]))),
          boolAttr(a, "causal", true), in[0].shape[2] / in[1].shape[2]};
}

// Head-major views: q [b,h,s,d], k and v expanded to h heads [b,h,t,d], [b,h,t,dv].
struct HeadMajor {
  SymTensor q, k, v;
};
HeadMajor headMajor(const Tensors& in, int64_t rep) {
  return {st::transpose(in[0], {0, 2, 1, 3}), repeatHeads(st::transpose(in[1], {0, 2, 1, 3}), rep),
          repeatHeads(st::transpose(in[2], {0, 2, 1, 3}), rep)};
}

// softmax(causal_mask(scale * q k^T)) along keys: [b, h, s, t].
SymTensor attentionProbs(ExprPool& p, const HeadMajor& hm, const SymTensor& qpos, const SymTensor& kpos,
                         const AttentionArgs& args) {
  SymTensor scores = st::scale(p, st::matmul(p, hm.q, st::swapLastTwo(hm.k)), args.scale);
  if (args.causal) scores = causalMask(p, scores, qpos, kpos, p.real(kDefaultFill));
  return st::softmax(p, scores, 3);
}

Tensors attention(ExprPool& p, const Tensors& in, const Json& a) {
  Types types;
  for (const SymTensor& t : in)
    types.push_back(t.type);
  AttentionArgs args = attentionArgs(types, a);
  HeadMajor hm = headMajor(in, args.rep);
  SymTensor probs = attentionProbs(p, hm, in[3], in[4], args);
  return {st::transpose(st::matmul(p, probs, hm.v), {0, 2, 1, 3})};
}

Tensors attentionBackward(ExprPool& p, const Tensors& in, const Json& a) {
  Types types;
  for (const SymTensor& t : in)
    types.push_back(t.type);
  AttentionArgs args = attentionArgs(types, a);
  HeadMajor hm = headMajor(in, args.rep);
  SymTensor probs = attentionProbs(p, hm, in[3], in[4], args);
  SymTensor dout = st::transpose(in[5], {0, 2, 1, 3});            // [b,h,s,dv]
  SymTensor dv = st::matmul(p, st::swapLastTwo(probs), dout);     // [b,h,t,dv]
  SymTensor dprobs = st::matmul(p, dout, st::swapLastTwo(hm.v));  // [b,h,s,t]
  SymTensor dscores = st::softmaxBackward(p, probs, dprobs, 3);
  if (args.causal) dscores = causalMask(p, dscores, in[3], in[4], p.zero());  // the fill is a constant
  dscores = st::scale(p, dscores, args.scale);
  SymTensor dq = st::matmul(p, dscores, hm.k);                   // [b,h,s,d]
  SymTensor dk = st::matmul(p, st::swapLastTwo(dscores), hm.q);  // [b,h,t,d]
  return {st::transpose(dq, {0, 2, 1, 3}), st::transpose(sumHeadGroups(p, dk, args.rep), {0, 2, 1, 3}),
          st::transpose(sumHeadGroups(p, dv, args.rep), {0, 2, 1, 3})};
}

void checkAttentionInputs(const Types& in, const Json& a) {
  requireFloat(in[0], "q");
  requireRank(in[0], 4, "q ([b, s, h, d])");
  requireFloat(in[1], "k");
  requireRank(in[1], 4, "k ([b, t, hk, d])");
  requireFloat(in[2], "v");
  requireRank(in[2], 4, "v ([b, t, hk, dv])");
  const Shape &q = in[0].shape, &k = in[1].shape, &v = in[2].shape;
  if (k[0] != q[0] || k[3] != q[3])
    throw ShapeError("k " + typeString(in[1]) + " must match q " + typeString(in[0]) +
                     " in batch and head dim");
  if (v[0] != k[0] || v[1] != k[1] || v[2] != k[2])
    throw ShapeError("v " + typeString(in[2]) + " must match k " + typeString(in[1]) + " in [b, t, hk]");
  if (k[2] == 0 || q[2] % k[2])
    throw ShapeError("query heads " + std::to_string(q[2]) + " must be a multiple of kv heads " +
                     std::to_string(k[2]));
  requireInteger(in[3], "qpos");
  requireShape(in[3], {q[1]}, "qpos");
  requireInteger(in[4], "kpos");
  requireShape(in[4], {k[1]}, "kpos");
  numAttr(a, "scale", 1.0);
  boolAttr(a, "causal", true);
}

// Ports: q0 k1 v2 qpos3 kpos4, then (forward) o5 or (backward) do5 | dq6 dk7 dv8.
AxisInfo attentionAxes(const Types& in, bool backward) {
  AxisInfo info;
  tie(info, 0, 0, 1, 0);  // b
  tie(info, 0, 0, 2, 0);
  tie(info, 1, 1, 2, 1);  // t
  tie(info, 1, 1, 4, 0);
  tie(info, 1, 2, 2, 2);  // hk
  tie(info, 0, 2, 1, 2);  // h and hk share a factor: the GQA group size h / hk stays the same
  tie(info, 0, 1, 3, 0);  // s
  tie(info, 0, 3, 1, 3);  // d
  tieAll(info, 0, 5, 3);  // o / do: b, s, h
  tie(info, 2, 3, 5, 3);  // dv
  markReduced(info, 0, 3, in[0].shape);
  markReduced(info, 1, 1, in[1].shape);
  indexes(info, 3, 0, 1);  // qpos: positions along q's sequence
  indexes(info, 4, 1, 1);  // kpos: along k's, compared with qpos
  tieValues(info, 3, 4);
  if (backward)
    for (int k = 0; k < 3; ++k)
      tieAll(info, k, 6 + k, 4);
  return info;
}

OpDef attentionOp(bool backward) {
  OpDef d;
  d.name = backward ? "attention_backward" : "attention";
  d.minInputs = d.maxInputs = backward ? 6 : 5;
  d.summary = backward
                  ? "inputs (q, k, v, qpos, kpos, do) -> dq, dk, dv"
                  : "softmax(causal_mask(scale q k^T)) v; q [b,s,h,d], k [b,t,hk,d], v [b,t,hk,dv] (GQA)";
  d.infer = [backward](const Types& in, const Json& a) {
    checkAttentionInputs(in, a);
    Shape o{in[0].shape[0], in[0].shape[1], in[0].shape[2], in[2].shape[3]};
    if (!backward) return Types{{o, in[0].dtype}};
    requireFloat(in[5], "do");
    requireShape(in[5], o, "do");
    return Types{in[0], in[1], in[2]};
  };
  d.axes = [backward](const Types& in, const Types&, const Json&) { return attentionAxes(in, backward); };
  d.lower = backward ? attentionBackward : attention;
  return d;
}
}  // namespace

void registerAttention(std::vector<OpDef>& reg) {
  reg.push_back(ropeOp("rope", "x * cos + rotate_half(x) * sin; x [b, s, h, d], cos/sin [s, d]", false));
  reg.push_back(ropeOp("rope_backward", "dy * cos + rotate_half^T(dy * sin), the transpose of rope", true));
  reg.push_back(causalMaskOp());
  reg.push_back(attentionOp(false));
  reg.push_back(attentionOp(true));
}

}  // namespace paraproof::ops
