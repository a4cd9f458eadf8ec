#include "core/ops/sym_tensor.h"

#include <algorithm>

namespace paraproof::ops::st {

std::vector<int64_t> strides(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    s[i - 1] = s[i] * shape[i];
  return s;
}

SymTensor tensor(Shape shape, DType dtype, std::vector<ExprId> elems) {
  return SymTensor{{std::move(shape), dtype}, std::move(elems)};
}

SymTensor full(const Shape& shape, DType dtype, ExprId value) {
  return tensor(shape, dtype, std::vector<ExprId>(static_cast<size_t>(numElements(shape)), value));
}

SymTensor scalar(ExprPool& pool, double value, DType dtype) {
  return full({}, dtype, isInteger(dtype) ? pool.integer(static_cast<int64_t>(value)) : pool.real(value));
}

SymTensor reshape(SymTensor t, Shape shape) {
  t.type.shape = std::move(shape);
  return t;
}

SymTensor withDType(SymTensor t, DType dtype) {
  t.type.dtype = dtype;
  return t;
}

Shape broadcastShape(const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape s(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      throw ShapeError("shapes " + shapeString(a) + " and " + shapeString(b) + " do not broadcast");
    s[i] = da == 1 ? db : da;
  }
  return s;
}

std::vector<int64_t> broadcastIndex(const Shape& from, const Shape& to) {
  // Stride of each target axis in `from` (0 where `from` is broadcast along it).
  size_t off = to.size() - from.size();
  std::vector<int64_t> fs = strides(from), step(to.size(), 0);
  for (size_t i = 0; i < from.size(); ++i)
    step[off + i] = from[i] == 1 ? 0 : fs[i];
  int64_t n = numElements(to);
  std::vector<int64_t> out(static_cast<size_t>(n));
  std::vector<int64_t> idx(to.size(), 0);
  int64_t cur = 0;
  for (int64_t f = 0; f < n; ++f) {
    out[f] = cur;
    for (size_t d = to.size(); d-- > 0;) {  // odometer increment
      if (++idx[d] < to[d]) {
        cur += step[d];
        break;
      }
      cur -= step[d] * (to[d] - 1);
      idx[d] = 0;
    }
  }
  return out;
}

SymTensor broadcastTo(const SymTensor& t, const Shape& shape) {
  if (t.shape() == shape) return t;
  if (broadcastShape(t.shape(), shape) != shape)
    throw ShapeError("cannot broadcast " + shapeString(t.shape()) + " to " + shapeString(shape));
  SymTensor r{{shape, t.type.dtype}, {}};
  for (int64_t i : broadcastIndex(t.shape(), shape))
    r.elems.push_back(t.elems[i]);
  return r;
}

SymTensor add(ExprPool& p, const SymTensor& a, const SymTensor& b) {
  return zip(a, b, [&](ExprId x, ExprId y) { return p.add(x, y); });
}
SymTensor sub(ExprPool& p, const SymTensor& a, const SymTensor& b) {
  return zip(a, b, [&](ExprId x, ExprId y) { return p.sub(x, y); });
}
SymTensor mul(ExprPool& p, const SymTensor& a, const SymTensor& b) {
  return zip(a, b, [&](ExprId x, ExprId y) { return p.mul(x, y); });
}
SymTensor div(ExprPool& p, const SymTensor& a, const SymTensor& b) {
  return zip(a, b, [&](ExprId x, ExprId y) { return p.div(x, y); });
}
SymTensor maximum(ExprPool& p, const SymTensor& a, const SymTensor& b) {
  return zip(a, b, [&](ExprId x, ExprId y) { return p.max(x, y); });
}
SymTensor minimum(ExprPool& p, const SymTensor& a, const SymTensor& b) {
  return zip(a, b, [&](ExprId x, ExprId y) { return p.min(x, y); });
}
SymTensor neg(ExprPool& p, const SymTensor& a) {
  return map(a, [&](ExprId x) { return p.neg(x); });
}
SymTensor scale(ExprPool& p, const SymTensor& a, double factor) {
  ExprId c = p.real(factor);
  return map(a, [&](ExprId x) { return p.mul(c, x); });
}
SymTensor addScalar(ExprPool& p, const SymTensor& a, double value) {
  ExprId c = p.real(value);
  return map(a, [&](ExprId x) { return p.add(x, c); });
}
SymTensor square(ExprPool& p, const SymTensor& a) {
  return map(a, [&](ExprId x) { return p.mul(x, x); });
}
SymTensor apply(ExprPool& p, sym::Fn fn, const SymTensor& a) {
  return map(a, [&](ExprId x) { return p.apply(fn, {x}); });
}
SymTensor exp(ExprPool& p, const SymTensor& a) {
  return apply(p, sym::Fn::Exp, a);
}
SymTensor log(ExprPool& p, const SymTensor& a) {
  return apply(p, sym::Fn::Log, a);
}
SymTensor sqrt(ExprPool& p, const SymTensor& a) {
  return apply(p, sym::Fn::Sqrt, a);
}
SymTensor sigmoid(ExprPool& p, const SymTensor& a) {
  return apply(p, sym::Fn::Sigmoid, a);
}
SymTensor tanh(ExprPool& p, const SymTensor& a) {
  return apply(p, sym::Fn::Tanh, a);
}
SymTensor rsqrt(ExprPool& p, const SymTensor& a) {
  return map(a, [&](ExprId x) { return p.div(p.one(), p.apply(sym::Fn::Sqrt, {x})); });
}

std::vector<int> allDims(const SymTensor& t) {
  std::vector<int> d(t.shape().size());
  for (size_t i = 0; i < d.size(); ++i)
    d[i] = static_cast<int>(i);
  return d;
}

SymTensor reduce(ExprPool& p, const SymTensor& t, const std::vector<int>& dims, bool keepdim, Reduce kind) {
  const Shape& in = t.shape();
  std::vector<bool> reduced(in.size(), false);
  for (int d : dims)
    reduced[d] = true;
  Shape kept, out;
  for (size_t i = 0; i < in.size(); ++i) {
    kept.push_back(reduced[i] ? 1 : in[i]);
    if (!reduced[i] || keepdim) out.push_back(reduced[i] ? 1 : in[i]);
  }
  // Output flat index of every input element: the kept shape broadcast back onto the input.
  std::vector<int64_t> target = broadcastIndex(kept, in);
  std::vector<std::vector<ExprId>> groups(static_cast<size_t>(numElements(kept)));
  for (size_t i = 0; i < t.elems.size(); ++i)
    groups[target[i]].push_back(t.elems[i]);
  SymTensor r{{out, t.type.dtype}, {}};
  r.elems.reserve(groups.size());
  for (auto& g : groups) {
    if (kind == Reduce::Sum) {
      r.elems.push_back(g.empty() ? p.zero() : p.add(std::move(g)));
    } else {
      ExprId acc = g.empty() ? p.zero() : g[0];
      for (size_t i = 1; i < g.size(); ++i)
        acc = p.max(acc, g[i]);
      r.elems.push_back(acc);
    }
  }
  return r;
}

SymTensor sum(ExprPool& p, const SymTensor& t, const std::vector<int>& dims, bool keepdim) {
  return reduce(p, t, dims, keepdim, Reduce::Sum);
}
SymTensor max(ExprPool& p, const SymTensor& t, const std::vector<int>& dims, bool keepdim) {
  return reduce(p, t, dims, keepdim, Reduce::Max);
}
SymTensor mean(ExprPool& p, const SymTensor& t, const std::vector<int>& dims, bool keepdim) {
  int64_t count = 1;
  for (int d : dims)
    count *= t.shape()[d];
  ExprId c = p.real(static_cast<double>(count));
  return map(sum(p, t, dims, keepdim), [&](ExprId s) { return p.div(s, c); });
}
SymTensor sumAll(ExprPool& p, const SymTensor& t) {
  return sum(p, t, allDims(t));
}

SymTensor softmax(ExprPool& p, const SymTensor& x, int dim) {
  SymTensor e = exp(p, sub(p, x, max(p, x, {dim}, true)));
  return div(p, e, sum(p, e, {dim}, true));
}

SymTensor logSoftmax(ExprPool& p, const SymTensor& x, int dim) {
  SymTensor shifted = sub(p, x, max(p, x, {dim}, true));
  return sub(p, shifted, log(p, sum(p, exp(p, shifted), {dim}, true)));
}

SymTensor softmaxBackward(ExprPool& p, const SymTensor& y, const SymTensor& dy, int dim) {
  return mul(p, y, sub(p, dy, sum(p, mul(p, dy, y), {dim}, true)));
}

SymTensor logSoftmaxBackward(ExprPool& p, const SymTensor& y, const SymTensor& dy, int dim) {
  return sub(p, dy, mul(p, exp(p, y), sum(p, dy, {dim}, true)));
}

SymTensor transpose(const SymTensor& t, const std::vector<int>& perm) {
  const Shape& in = t.shape();
  std::vector<int64_t> is = strides(in);
  Shape out(perm.size());
  Shape permStrides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    out[i] = in[perm[i]];
    permStrides[i] = is[perm[i]];
  }
  // Same odometer as broadcastIndex, with the permuted input strides.
  SymTensor r{{out, t.type.dtype}, {}};
  r.elems.reserve(t.elems.size());
  std::vector<int64_t> idx(out.size(), 0);
  int64_t cur = 0;
  for (size_t f = 0; f < t.elems.size(); ++f) {
    r.elems.push_back(t.elems[cur]);
    for (size_t d = out.size(); d-- > 0;) {
      if (++idx[d] < out[d]) {
        cur += permStrides[d];
        break;
      }
      cur -= permStrides[d] * (out[d] - 1);
      idx[d] = 0;
    }
  }
  return r;
}

SymTensor swapLastTwo(const SymTensor& t) {
  std::vector<int> perm = allDims(t);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return transpose(t, perm);
}

SymTensor slice(const SymTensor& t, int dim, int64_t start, int64_t end) {
  const Shape& in = t.shape();
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < dim; ++i)
    outer *= in[i];
  for (size_t i = dim + 1; i < in.size(); ++i)
    inner *= in[i];
  Shape out = in;
  out[dim] = end - start;
  SymTensor r{{out, t.type.dtype}, {}};
  r.elems.reserve(static_cast<size_t>(outer * (end - start) * inner));
  for (int64_t o = 0; o < outer; ++o) {
    auto first = t.elems.begin() + (o * in[dim] + start) * inner;
    r.elems.insert(r.elems.end(), first, first + (end - start) * inner);
  }
  return r;
}

SymTensor concat(const std::vector<SymTensor>& parts, int dim) {
  Shape out = parts.at(0).shape();
  out[dim] = 0;
  for (const SymTensor& t : parts)
    out[dim] += t.shape()[dim];
  int64_t outer = 1;
  for (int i = 0; i < dim; ++i)
    outer *= out[i];
  SymTensor r{{out, parts[0].type.dtype}, {}};
  r.elems.reserve(static_cast<size_t>(numElements(out)));
  for (int64_t o = 0; o < outer; ++o) {
    for (const SymTensor& t : parts) {
      int64_t chunk = outer == 0 ? 0 : static_cast<int64_t>(t.elems.size()) / outer;
      auto first = t.elems.begin() + o * chunk;
      r.elems.insert(r.elems.end(), first, first + chunk);
    }
  }
  return r;
}

SymTensor matmul(ExprPool& p, const SymTensor& a, const SymTensor& b) {
  const Shape &sa = a.shape(), &sb = b.shape();
  int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  Shape batch = broadcastShape(ba, bb);
  std::vector<int64_t> ia = broadcastIndex(ba, batch), ib = broadcastIndex(bb, batch);
  SymTensor bt = swapLastTwo(b);  // rows of bt are columns of b: contiguous dot products
  Shape out = batch;
  out.push_back(m);
  out.push_back(n);
  SymTensor r{{out, a.type.dtype}, {}};
  r.elems.reserve(static_cast<size_t>(numElements(out)));
  std::vector<ExprId> terms;
  for (size_t bi = 0; bi < ia.size(); ++bi) {
    const ExprId* A = a.elems.data() + ia[bi] * m * k;
    const ExprId* B = bt.elems.data() + ib[bi] * n * k;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        terms.clear();
        for (int64_t q = 0; q < k; ++q)
          terms.push_back(p.mul(A[i * k + q], B[j * k + q]));
        r.elems.push_back(p.add(terms));
      }
    }
  }
  return r;
}

ExprId indicator(ExprPool& p, ExprId id, int64_t value) {
  return p.ite(p.eq(id, p.integer(value)), p.one(), p.zero());
}

}  // namespace paraproof::ops::st
