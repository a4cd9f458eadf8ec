// Token-indexed ops: one_hot, embedding (a one-hot matmul, so vocab shards with a `start` offset give
// zeros for ids outside the shard) and the masked cross-entropy loss with its backward. Ids are Int
// expressions compared exactly with Int constants.
#include "core/ops/nn_families.h"
#include "core/ops/op_util.h"
#include "core/ops/sym_tensor.h"

namespace paraproof::ops {

namespace {
using namespace util;

// ids [...] -> [..., classes]: 1 where id - start == class.
SymTensor oneHot(ExprPool& p, const SymTensor& ids, int64_t classes, int64_t start, DType dtype) {
  Shape s = ids.shape();
  s.push_back(classes);
  SymTensor r = st::tensor(s, dtype, {});
  r.elems.reserve(static_cast<size_t>(numElements(s)));
  ExprId one = isInteger(dtype) ? p.integer(1) : p.one(), zero = isInteger(dtype) ? p.integer(0) : p.zero();
  for (ExprId id : ids.elems)
    for (int64_t c = 0; c < classes; ++c)
      r.elems.push_back(p.ite(p.eq(id, p.integer(start + c)), one, zero));
  return r;
}

// Rows of one-hot codes: [tokens, classes].
SymTensor oneHotRows(ExprPool& p, const SymTensor& ids, int64_t classes, int64_t start) {
  return st::reshape(oneHot(p, ids, classes, start, DType::F32),
                     {static_cast<int64_t>(ids.elems.size()), classes});
}

Tensors embedding(ExprPool& p, const Tensors& in, const Json& a) {
  const SymTensor &ids = in[0], &table = in[1];
  SymTensor rows = st::matmul(p, oneHotRows(p, ids, table.shape()[0], intAttr(a, "start", 0)), table);
  Shape out = ids.shape();
  out.push_back(table.shape()[1]);
  return {st::withDType(st::reshape(rows, out), table.type.dtype)};
}

Tensors embeddingBackward(ExprPool& p, const Tensors& in, const Json& a) {
  const SymTensor &ids = in[0], &dy = in[1];
  int64_t h = dy.shape().back();
  SymTensor codes = oneHotRows(p, ids, intAttr(a, "num_embeddings"), intAttr(a, "start", 0));
  SymTensor grads = st::reshape(dy, {static_cast<int64_t>(ids.elems.size()), h});
  return {st::withDType(st::matmul(p, st::swapLastTwo(codes), grads), dy.type.dtype)};
}

OpDef embeddingOp() {
  OpDef d;
  d.name = "embedding";
  d.minInputs = d.maxInputs = 2;
  d.summary = "table[id - start] where start <= id < start + v, else 0; ids [...] int, table [v, h]";
  d.infer = [](const Types& in, const Json& a) {
    requireInteger(in[0], "ids");
    requireFloat(in[1], "table");
    requireRank(in[1], 2, "table ([v, h])");
    intAttr(a, "start", 0);
    Shape out = in[0].shape;
    out.push_back(in[1].shape[1]);
    return Types{{out, in[1].dtype}};
  };
  d.axes = [](const Types& in, const Types&, const Json& a) {
    AxisInfo info;
    int r = static_cast<int>(in[0].shape.size());
    tieAll(info, 0, 2, r);
    tie(info, 1, 1, 2, r);
    indexes(info, 0, 1, 0);  // ids are rows of the (logical) table; `start` is a row offset
    if (int64_t start = intAttr(a, "start", 0)) info.boundaries.push_back({{1, 0}, start});
    return info;
  };
  d.rescale = [](const Json& a, const Types&, const Types&, const AxisFactor& f) {
    Json r = a;
    if (hasAttr(a, "start")) r["start"] = scaled(intAttr(a, "start"), f, 1, 0);
    return r;
  };
  d.lower = embedding;
  return d;
}

OpDef embeddingBackwardOp() {
  OpDef d;
  d.name = "embedding_backward";
  d.minInputs = d.maxInputs = 2;
  d.summary = "inputs (ids, dy [..., h]) -> [num_embeddings, h] scatter-add of dy rows at id - start";
  d.infer = [](const Types& in, const Json& a) {
    requireInteger(in[0], "ids");
    requireFloat(in[1], "dy");
    Shape expect = in[0].shape;
    if (in[1].shape.size() != expect.size() + 1 ||
        !std::equal(expect.begin(), expect.end(), in[1].shape.begin()))
      throw ShapeError("dy " + typeString(in[1]) + " must be [..., h] over ids " + typeString(in[0]));
    int64_t v = intAttr(a, "num_embeddings");
    if (v < 0) throw AttrError("num_embeddings", "attribute `num_embeddings` must be >= 0");
    intAttr(a, "start", 0);
    return Types{{{v, in[1].shape.back()}, in[1].dtype}};
  };
  d.axes = [](const Types& in, const Types&, const Json& a) {
    AxisInfo info;
    int r = static_cast<int>(in[0].shape.size());
    tieAll(info, 0, 1, r);
    tie(info, 1, r, 2, 1);
    indexes(info, 0, 2, 0);  // ids are rows of the gradient table
    if (int64_t start = intAttr(a, "start", 0)) info.boundaries.push_back({{2, 0}, start});
    return info;
  };
  d.rescale = [](const Json& a, const Types&, const Types& out, const AxisFactor& f) {
    Json r = a;
    r["num_embeddings"] = out[0].shape[0];
    if (hasAttr(a, "start")) r["start"] = scaled(intAttr(a, "start"), f, 2, 0);
    return r;
  };
  d.lower = embeddingBackward;
  return d;
}

OpDef oneHotOp() {
  OpDef d;
  d.name = "one_hot";
  d.minInputs = d.maxInputs = 1;
  d.summary = "[..., num_classes]: 1 where id - start == class, else 0 (dtype default f32)";
  d.infer = [](const Types& in, const Json& a) {
    requireInteger(in[0], "ids");
    int64_t c = intAttr(a, "num_classes");
    if (c < 0) throw AttrError("num_classes", "attribute `num_classes` must be >= 0");
    intAttr(a, "start", 0);
    Shape out = in[0].shape;
    out.push_back(c);
    return Types{{out, dtypeAttr(a, "dtype", DType::F32)}};
  };
  d.axes = [](const Types& in, const Types&, const Json& a) {
    AxisInfo info;
    int r = static_cast<int>(in[0].shape.size());
    tieAll(info, 0, 1, r);
    indexes(info, 0, 1, r);  // ids are classes
    if (int64_t start = intAttr(a, "start", 0)) info.boundaries.push_back({{1, r}, start});
    return info;
  };
  d.rescale = [](const Json& a, const Types& in, const Types& out, const AxisFactor& f) {
    Json r = a;
    int axis = static_cast<int>(in[0].shape.size());
    r["num_classes"] = out[0].shape[axis];
    if (hasAttr(a, "start")) r["start"] = scaled(intAttr(a, "start"), f, 1, axis);
    return r;
  };
  d.lower = [](ExprPool& p, const Tensors& in, const Json& a) {
    return Tensors{oneHot(p, in[0], intAttr(a, "num_classes"), intAttr(a, "start", 0),
                          dtypeAttr(a, "dtype", DType::F32))};
  };
  return d;
}

std::string reductionAttr(const Json& a) {
  return choiceAttr(a, "reduction", {"mean", "sum", "none"});
}

// Per-token weight of the loss gradient: dloss * mask (sum), / sum(mask) (mean), dloss[i] * mask (none).
SymTensor tokenWeights(ExprPool& p, const SymTensor& mask, const SymTensor& dloss, const std::string& red) {
  SymTensor w = st::mul(p, dloss, mask);
  if (red == "mean") w = st::div(p, w, st::sumAll(p, mask));
  return w;
}

// loss_i = log(sum_c exp(x_ic - m_i)) + m_i - x_i[label_i], masked; then reduced.
Tensors crossEntropy(ExprPool& p, const Tensors& in, const Json& a) {
  const SymTensor &logits = in[0], &labels = in[1], &mask = in[2];
  std::string red = reductionAttr(a);
  SymTensor m = st::max(p, logits, {1}, true);
  SymTensor logSumExp = st::log(p, st::sum(p, st::exp(p, st::sub(p, logits, m)), {1}));
  SymTensor picked = st::sum(p, st::mul(p, oneHotRows(p, labels, logits.shape()[1], 0), logits), {1});
  SymTensor loss =
      st::mul(p, st::sub(p, st::add(p, logSumExp, st::reshape(m, {logits.shape()[0]})), picked), mask);
  if (red == "none") return {loss};
  SymTensor total = st::sumAll(p, loss);
  return {red == "mean" ? st::div(p, total, st::sumAll(p, mask)) : total};
}

// dlogits = w_i * (softmax(x_i) - one_hot(label_i)).
Tensors crossEntropyBackward(ExprPool& p, const Tensors& in, const Json& a) {
  const SymTensor &logits = in[0], &labels = in[1], &mask = in[2], &dloss = in[3];
  int64_t n = logits.shape()[0];
  SymTensor w = st::reshape(tokenWeights(p, mask, dloss, reductionAttr(a)), {n, 1});
  SymTensor delta = st::sub(p, st::softmax(p, logits, 1), oneHotRows(p, labels, logits.shape()[1], 0));
  return {st::mul(p, delta, w)};
}

void checkLossInputs(const Types& in) {
  requireFloat(in[0], "logits");
  requireRank(in[0], 2, "logits ([n, v])");
  int64_t n = in[0].shape[0];
  if (in[0].shape[1] == 0) throw ShapeError("logits " + typeString(in[0]) + " has an empty vocab");
  requireInteger(in[1], "labels");
  requireShape(in[1], {n}, "labels");
  requireFloat(in[2], "mask");
  requireShape(in[2], {n}, "mask");
}

// Ports: logits0 labels1 mask2, then (forward) loss3 or (backward) dloss3 | dlogits4.
AxisInfo lossAxes(const Types& in, const std::string& red, bool backward) {
  AxisInfo info;
  tie(info, 0, 0, 1, 0);
  tie(info, 0, 0, 2, 0);
  if (red == "none")
    tie(info, 0, 0, 3, 0);
  else
    markReduced(info, 0, 0, in[0].shape);
  if (backward) tieAll(info, 0, 4, 2);
  markReduced(info, 0, 1, in[0].shape);
  indexes(info, 1, 0, 1);  // labels are vocabulary entries
  return info;
}

OpDef crossEntropyOp(bool backward) {
  OpDef d;
  d.name = backward ? "cross_entropy_backward" : "cross_entropy";
  d.minInputs = d.maxInputs = backward ? 4 : 3;
  d.summary = backward ? "inputs (logits, labels, mask, dloss) -> dlogits"
                       : "masked softmax cross-entropy of logits [n, v] at labels [n]; `reduction` "
                         "mean (over sum(mask), default) / sum / none";
  d.infer = [backward](const Types& in, const Json& a) {
    checkLossInputs(in);
    std::string red = reductionAttr(a);
    Shape loss = red == "none" ? Shape{in[0].shape[0]} : Shape{};
    if (!backward) return Types{{loss, in[0].dtype}};
    requireFloat(in[3], "dloss");
    requireShape(in[3], loss, "dloss (reduction " + red + ")");
    return Types{in[0]};
  };
  d.axes = [backward](const Types& in, const Types&, const Json& a) {
    return lossAxes(in, reductionAttr(a), backward);
  };
  d.lower = backward ? crossEntropyBackward : crossEntropy;
  return d;
}
}  // namespace

void registerTokenOps(std::vector<OpDef>& reg) {
  reg.push_back(embeddingOp());
  reg.push_back(embeddingBackwardOp());
  reg.push_back(oneHotOp());
  reg.push_back(crossEntropyOp(false));
  reg.push_back(crossEntropyOp(true));
}

}  // namespace paraproof::ops
