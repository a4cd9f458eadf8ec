// A small tensor library over scalar expressions: the vocabulary op semantics are written in.
// Every composite op is a composition of these functions, so it builds exactly the expressions its
// hand decomposition into primitive ops would build (the pool hash-conses them to the same ids).
#pragma once

#include <vector>

#include "core/ops/registry.h"

namespace paraproof::ops::st {

using sym::ExprId;
using sym::ExprPool;

std::vector<int64_t> strides(const Shape& shape);

SymTensor tensor(Shape shape, DType dtype, std::vector<ExprId> elems);
SymTensor full(const Shape& shape, DType dtype, ExprId value);
SymTensor scalar(ExprPool& pool, double value, DType dtype = DType::F32);
SymTensor reshape(SymTensor t, Shape shape);
SymTensor withDType(SymTensor t, DType dtype);

// numpy broadcasting; throws ShapeError when the shapes do not broadcast.
Shape broadcastShape(const Shape& a, const Shape& b);
// For every element of `to`, the flat index of the element of `from` broadcast onto it.
std::vector<int64_t> broadcastIndex(const Shape& from, const Shape& to);
SymTensor broadcastTo(const SymTensor& t, const Shape& shape);

template <class F>
SymTensor map(const SymTensor& t, F f) {
  SymTensor r{t.type, {}};
  r.elems.reserve(t.elems.size());
  for (ExprId e : t.elems)
    r.elems.push_back(f(e));
  return r;
}

// Elementwise binary function with broadcasting; the result keeps a's dtype.
template <class F>
SymTensor zip(const SymTensor& a, const SymTensor& b, F f) {
  if (a.shape() == b.shape()) {
    SymTensor r{a.type, {}};
    r.elems.reserve(a.elems.size());
    for (size_t i = 0; i < a.elems.size(); ++i)
      r.elems.push_back(f(a.elems[i], b.elems[i]));
    return r;
  }
  Shape s = broadcastShape(a.shape(), b.shape());
  std::vector<int64_t> ia = broadcastIndex(a.shape(), s), ib = broadcastIndex(b.shape(), s);
  SymTensor r{{s, a.type.dtype}, {}};
  r.elems.reserve(ia.size());
  for (size_t i = 0; i < ia.size(); ++i)
    r.elems.push_back(f(a.elems[ia[i]], b.elems[ib[i]]));
  return r;
}

SymTensor add(ExprPool& p, const SymTensor& a, const SymTensor& b);
SymTensor sub(ExprPool& p, const SymTensor& a, const SymTensor& b);
SymTensor mul(ExprPool& p, const SymTensor& a, const SymTensor& b);
SymTensor div(ExprPool& p, const SymTensor& a, const SymTensor& b);
SymTensor maximum(ExprPool& p, const SymTensor& a, const SymTensor& b);
SymTensor minimum(ExprPool& p, const SymTensor& a, const SymTensor& b);
SymTensor neg(ExprPool& p, const SymTensor& a);
SymTensor scale(ExprPool& p, const SymTensor& a, double factor);
SymTensor addScalar(ExprPool& p, const SymTensor& a, double value);
SymTensor square(ExprPool& p, const SymTensor& a);
SymTensor apply(ExprPool& p, sym::Fn fn, const SymTensor& a);
SymTensor exp(ExprPool& p, const SymTensor& a);
SymTensor log(ExprPool& p, const SymTensor& a);
SymTensor sqrt(ExprPool& p, const SymTensor& a);
SymTensor rsqrt(ExprPool& p, const SymTensor& a);  // 1 / sqrt(a)
SymTensor sigmoid(ExprPool& p, const SymTensor& a);
SymTensor tanh(ExprPool& p, const SymTensor& a);

// Reductions over normalized `dims`.
enum class Reduce { Sum, Max };
SymTensor reduce(ExprPool& p, const SymTensor& t, const std::vector<int>& dims, bool keepdim, Reduce kind);
SymTensor sum(ExprPool& p, const SymTensor& t, const std::vector<int>& dims, bool keepdim = false);
SymTensor max(ExprPool& p, const SymTensor& t, const std::vector<int>& dims, bool keepdim = false);
SymTensor mean(ExprPool& p, const SymTensor& t, const std::vector<int>& dims, bool keepdim = false);
SymTensor sumAll(ExprPool& p, const SymTensor& t);  // shape []
std::vector<int> allDims(const SymTensor& t);

// Max-shifted like the kernels: exp(x - max) / sum(exp(x - max)).
SymTensor softmax(ExprPool& p, const SymTensor& x, int dim);
SymTensor logSoftmax(ExprPool& p, const SymTensor& x, int dim);
SymTensor softmaxBackward(ExprPool& p, const SymTensor& y, const SymTensor& dy, int dim);
SymTensor logSoftmaxBackward(ExprPool& p, const SymTensor& y, const SymTensor& dy, int dim);

SymTensor transpose(const SymTensor& t, const std::vector<int>& perm);
SymTensor swapLastTwo(const SymTensor& t);
SymTensor slice(const SymTensor& t, int dim, int64_t start, int64_t end);
SymTensor concat(const std::vector<SymTensor>& parts, int dim);
// Batched a[..., m, k] @ b[..., k, n]; batch dims broadcast.
SymTensor matmul(ExprPool& p, const SymTensor& a, const SymTensor& b);
// ite(id == value, 1, 0) as a Real, for an Int-sorted id: exact one-hot selection.
ExprId indicator(ExprPool& p, ExprId id, int64_t value);

}  // namespace paraproof::ops::st
