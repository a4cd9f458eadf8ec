// Linear algebra: batched matmul, linear (x @ w^T + bias) and einsum, all as sums of products.
#include <cctype>
#include <map>

#include "core/ops/families.h"
#include "core/ops/op_util.h"
#include "core/ops/sym_tensor.h"

namespace paraproof::ops {

namespace {
using namespace util;

OpDef matmulOp() {
  OpDef d;
  d.name = "matmul";
  d.minInputs = d.maxInputs = 2;
  d.summary = "batched a[..., m, k] @ b[..., k, n]; batch dims broadcast";
  d.infer = [](const Types& in, const Json&) {
    const Shape &a = in[0].shape, &b = in[1].shape;
    requireFloat(in[0], "a");
    requireFloat(in[1], "b");
    requireMinRank(in[0], 2, "a");
    requireMinRank(in[1], 2, "b");
    if (a.back() != b[b.size() - 2])
      throw ShapeError("inner dims differ: a is " + shapeString(a) + ", b is " + shapeString(b));
    Shape out = st::broadcastShape(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
    out.push_back(a[a.size() - 2]);
    out.push_back(b.back());
    return Types{{out, in[0].dtype}};
  };
  d.axes = [](const Types& in, const Types& out, const Json&) {
    AxisInfo info;
    const Shape &a = in[0].shape, &b = in[1].shape, &o = out[0].shape;
    int ra = static_cast<int>(a.size()), rb = static_cast<int>(b.size()), ro = static_cast<int>(o.size());
    tieBroadcast(info, 0, Shape(a.begin(), a.end() - 2), 2, Shape(o.begin(), o.end() - 2));
    tieBroadcast(info, 1, Shape(b.begin(), b.end() - 2), 2, Shape(o.begin(), o.end() - 2));
    tie(info, 0, ra - 2, 2, ro - 2);  // m
    tie(info, 1, rb - 1, 2, ro - 1);  // n
    tie(info, 0, ra - 1, 1, rb - 2);  // k
    markReduced(info, 0, ra - 1, a);
    return info;
  };
  d.lower = [](ExprPool& p, const Tensors& in, const Json&) { return Tensors{st::matmul(p, in[0], in[1])}; };
  return d;
}

OpDef linearOp() {
  OpDef d;
  d.name = "linear";
  d.minInputs = 2;
  d.maxInputs = 3;
  d.summary = "x[..., in] @ w[out, in]^T (+ bias[out])";
  d.infer = [](const Types& in, const Json&) {
    requireFloat(in[0], "x");
    requireFloat(in[1], "w");
    requireMinRank(in[0], 1, "x");
    requireRank(in[1], 2, "w");
    const Shape &x = in[0].shape, &w = in[1].shape;
    if (x.back() != w[1])
      throw ShapeError("inner dims differ: x is " + shapeString(x) + ", w is " + shapeString(w) +
                       " ([out, in])");
    if (in.size() == 3) {
      requireFloat(in[2], "bias");
      requireShape(in[2], {w[0]}, "bias");
    }
    Shape out = x;
    out.back() = w[0];
    return Types{{out, in[0].dtype}};
  };
  d.axes = [](const Types& in, const Types&, const Json&) {
    AxisInfo info;
    int rx = static_cast<int>(in[0].shape.size());
    int outPort = static_cast<int>(in.size());
    for (int i = 0; i + 1 < rx; ++i)
      tie(info, 0, i, outPort, i);
    tie(info, 0, rx - 1, 1, 1);  // in
    tie(info, 1, 0, outPort, rx - 1);
    if (in.size() == 3) tie(info, 2, 0, outPort, rx - 1);
    markReduced(info, 0, rx - 1, in[0].shape);
    return info;
  };
  d.lower = [](ExprPool& p, const Tensors& in, const Json&) {
    const SymTensor& x = in[0];
    int64_t rows = numElements(x.shape()) / x.shape().back();
    SymTensor y = st::matmul(p, st::reshape(x, {rows, x.shape().back()}), st::swapLastTwo(in[1]));
    Shape out = x.shape();
    out.back() = in[1].shape()[0];
    y = st::reshape(y, out);
    if (in.size() == 3) y = st::add(p, y, in[2]);
    return Tensors{y};
  };
  return d;
}

struct Einsum {
  std::vector<std::string> inputs;
  std::string output;
  std::map<char, int64_t> size;
};

Einsum parseEinsum(const Types& in, const Json& a) {
  if (!hasAttr(a, "equation") || !a["equation"].is_string())
    throw AttrError("equation", "attribute `equation` must be a string like \"bij,bjk->bik\"");
  std::string eq = a["equation"].get<std::string>();
  std::string spaceless;
  for (char c : eq)
    if (c != ' ') spaceless += c;
  auto arrow = spaceless.find("->");
  if (arrow == std::string::npos || spaceless.find("...") != std::string::npos)
    throw ShapeError("equation \"" + eq + "\" must have the explicit form \"ij,jk->ik\" (no ellipsis)");
  Einsum e;
  e.output = spaceless.substr(arrow + 2);
  std::string lhs = spaceless.substr(0, arrow);
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    e.inputs.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (e.inputs.size() != in.size())
    throw ShapeError("equation \"" + eq + "\" names " + std::to_string(e.inputs.size()) + " operands, got " +
                     std::to_string(in.size()) + " inputs");
  for (size_t k = 0; k < in.size(); ++k) {
    requireFloat(in[k], "input " + std::to_string(k));
    const std::string& spec = e.inputs[k];
    if (spec.size() != in[k].shape.size())
      throw ShapeError("operand \"" + spec + "\" of \"" + eq + "\" has " + std::to_string(spec.size()) +
                       " letters but input " + std::to_string(k) + " is " + typeString(in[k]));
    for (size_t i = 0; i < spec.size(); ++i) {
      char c = spec[i];
      if (!std::isalpha(static_cast<unsigned char>(c)))
        throw ShapeError("equation \"" + eq + "\" has a non-letter index '" + std::string(1, c) + "'");
      auto [it, fresh] = e.size.emplace(c, in[k].shape[i]);
      if (!fresh && it->second != in[k].shape[i])
        throw ShapeError("index '" + std::string(1, c) + "' of \"" + eq + "\" has extent " +
                         std::to_string(it->second) + " and " + std::to_string(in[k].shape[i]));
    }
  }
  for (size_t i = 0; i < e.output.size(); ++i) {
    char c = e.output[i];
    if (!e.size.count(c) || e.output.find(c) != i)
      throw ShapeError("output index '" + std::string(1, c) + "' of \"" + eq +
                       "\" must appear in an input and only once in the output");
  }
  return e;
}

Tensors lowerEinsum(ExprPool& p, const Tensors& in, const Einsum& e) {
  // One odometer over every index letter; each input's and the output's flat offsets follow it.
  std::vector<char> letters;
  for (auto& [c, n] : e.size)
    letters.push_back(c);
  size_t L = letters.size(), n = in.size();
  std::vector<int64_t> extent(L);
  std::vector<std::vector<int64_t>> step(n + 1, std::vector<int64_t>(L, 0));  // n inputs + output
  for (size_t l = 0; l < L; ++l) {
    extent[l] = e.size.at(letters[l]);
    for (size_t k = 0; k <= n; ++k) {
      const std::string& spec = k < n ? e.inputs[k] : e.output;
      Shape s;
      for (char c : spec)
        s.push_back(e.size.at(c));
      std::vector<int64_t> str = st::strides(s);
      for (size_t i = 0; i < spec.size(); ++i)
        if (spec[i] == letters[l]) step[k][l] += str[i];
    }
  }
  Shape outShape;
  for (char c : e.output)
    outShape.push_back(e.size.at(c));
  std::vector<std::vector<ExprId>> terms(static_cast<size_t>(numElements(outShape)));
  int64_t combos = 1;
  for (int64_t x : extent)
    combos *= x;
  std::vector<int64_t> idx(L, 0), off(n + 1, 0);
  std::vector<ExprId> factors(n);
  for (int64_t c = 0; c < combos; ++c) {
    for (size_t k = 0; k < n; ++k)
      factors[k] = in[k].elems[off[k]];
    terms[off[n]].push_back(p.mul(factors));
    for (size_t l = L; l-- > 0;) {
      if (++idx[l] < extent[l]) {
        for (size_t k = 0; k <= n; ++k)
          off[k] += step[k][l];
        break;
      }
      for (size_t k = 0; k <= n; ++k)
        off[k] -= step[k][l] * (extent[l] - 1);
      idx[l] = 0;
    }
  }
  SymTensor r = st::tensor(outShape, in[0].type.dtype, {});
  for (auto& t : terms)
    r.elems.push_back(p.add(std::move(t)));
  return Tensors{r};
}

OpDef einsumOp() {
  OpDef d;
  d.name = "einsum";
  d.minInputs = 1;
  d.maxInputs = -1;
  d.summary = "sum of products by `equation` like \"bij,bjk->bik\" (no ellipsis)";
  d.infer = [](const Types& in, const Json& a) {
    Einsum e = parseEinsum(in, a);
    Shape out;
    for (char c : e.output)
      out.push_back(e.size.at(c));
    return Types{{out, in[0].dtype}};
  };
  d.axes = [](const Types& in, const Types&, const Json& a) {
    Einsum e = parseEinsum(in, a);
    AxisInfo info;
    std::map<char, AxisRef> first;
    for (size_t k = 0; k <= in.size(); ++k) {
      const std::string& spec = k < in.size() ? e.inputs[k] : e.output;
      for (size_t i = 0; i < spec.size(); ++i) {
        AxisRef here{static_cast<int>(k), static_cast<int>(i)};
        auto [it, fresh] = first.emplace(spec[i], here);
        if (!fresh) info.ties.push_back({it->second, here});
      }
    }
    for (auto& [c, ref] : first)
      if (e.output.find(c) == std::string::npos && e.size.at(c) > 1) info.reduced.push_back(ref);
    return info;
  };
  d.lower = [](ExprPool& p, const Tensors& in, const Json& a) {
    Types types;
    for (const SymTensor& t : in)
      types.push_back(t.type);
    return lowerEinsum(p, in, parseEinsum(types, a));
  };
  return d;
}
}  // namespace

void registerLinalg(std::vector<OpDef>& reg) {
  reg.push_back(matmulOp());
  reg.push_back(linearOp());
  reg.push_back(einsumOp());
}

}  // namespace paraproof::ops
