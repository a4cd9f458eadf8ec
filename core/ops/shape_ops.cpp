// Creation (constant, iota) and data movement: reshape, transpose, slice, concat, split, broadcast_to,
// gather. Data movement builds no new expressions: outputs are the input elements rearranged.
#include <numeric>

#include "core/ir/limits.h"
#include "core/ops/broadcast_ops.h"
#include "core/ops/families.h"
#include "core/ops/op_util.h"
#include "core/ops/sym_tensor.h"

namespace paraproof::ops {

namespace {
using namespace util;

OpDef constantOp() {
  OpDef d;
  d.name = "constant";
  d.summary = "a tensor of `shape` filled with `value` (dtype default f32)";
  d.infer = [](const Types&, const Json& a) {
    Shape s = shapeAttr(a, "shape");
    double v = numAttr(a, "value");
    DType t = dtypeAttr(a, "dtype", DType::F32);
    if (isInteger(t) && v != static_cast<double>(static_cast<int64_t>(v)))
      throw AttrError("value", "attribute `value` must be an integer for dtype " + std::string(dtypeName(t)));
    return Types{{s, t}};
  };
  // An integer constant is a fixed number: as an index it has no rule, so its values' class is pinned.
  d.axes = [](const Types&, const Types& out, const Json&) {
    AxisInfo info;  // nothing to tie; every axis holds one value, so a sum along it counts
    std::vector<AxisRef> all;
    for (int i = 0; i < static_cast<int>(out[0].shape.size()); ++i) {
      info.counts.push_back({{0, i}});
      all.push_back({0, i});
    }
    if (all.size() > 1) info.counts.push_back(all);
    return info;
  };
  d.rescale = [](const Json& a, const Types&, const Types& out, const AxisFactor&) {
    Json r = a;
    r["shape"] = out[0].shape;
    return r;
  };
  d.valueRange = [](const std::vector<IntRange>&, const Types&, const Types&, const Json& a) {
    auto v = static_cast<int64_t>(numAttr(a, "value"));
    return std::vector<IntRange>{IntRange::of(v, v + 1)};
  };
  d.lower = [](ExprPool& p, const Tensors&, const Json& a) {
    DType t = dtypeAttr(a, "dtype", DType::F32);
    return Tensors{st::full(shapeAttr(a, "shape"), t, st::scalar(p, numAttr(a, "value"), t).elems[0])};
  };
  return d;
}

OpDef iotaOp() {
  OpDef d;
  d.name = "iota";
  d.summary = "[n] = start, start + 1, ... (positions; dtype default i64)";
  d.infer = [](const Types&, const Json& a) {
    int64_t n = intAttr(a, "n");
    if (n < 0) throw AttrError("n", "attribute `n` must be >= 0, got " + std::to_string(n));
    intAttr(a, "start", 0);
    return Types{{{n}, dtypeAttr(a, "dtype", DType::I64)}};
  };
  // Element i holds position start + i: the values index the output's own axis (whatever that axis
  // stands for: sequence positions, rows of a position table), so they scale with it and `start` is a
  // boundary of that class. As floats the positions become numbers: the axis keeps its full extent.
  d.axes = [](const Types&, const Types& out, const Json& a) {
    AxisInfo info;
    if (int64_t start = intAttr(a, "start", 0)) info.boundaries.push_back({{0, 0}, start});
    if (isInteger(out[0].dtype))
      indexes(info, 0, 0, 0);
    else
      markFixed(info, 0, 0);
    info.positions.push_back({0, 0});  // the values are numbers up to the extent
    return info;
  };
  d.valueRange = [](const std::vector<IntRange>&, const Types&, const Types&, const Json& a) {
    int64_t n = intAttr(a, "n"), start = intAttr(a, "start", 0);
    return std::vector<IntRange>{IntRange::of(start, start + n)};
  };
  d.rescale = [](const Json& a, const Types&, const Types& out, const AxisFactor& f) {
    Json r = a;
    r["n"] = out[0].shape[0];
    if (hasAttr(a, "start")) r["start"] = scaled(intAttr(a, "start"), f, 0, 0);
    return r;
  };
  d.lower = [](ExprPool& p, const Tensors&, const Json& a) {
    int64_t n = intAttr(a, "n"), start = intAttr(a, "start", 0);
    DType t = dtypeAttr(a, "dtype", DType::I64);
    SymTensor r = st::tensor({n}, t, {});
    for (int64_t i = 0; i < n; ++i)
      r.elems.push_back(isInteger(t) ? p.integer(start + i) : p.real(static_cast<double>(start + i)));
    return Tensors{r};
  };
  return d;
}

Shape reshapeTarget(const Shape& in, const Json& a) {
  Shape s = intListAttr(a, "shape");
  int64_t known = 1;
  int wild = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1 && wild < 0) {
      wild = static_cast<int>(i);
    } else if (s[i] < 0) {
      throw AttrError("shape",
                      "attribute `shape` " + shapeString(s) + " may hold one -1 and otherwise extents >= 0");
    } else {
      known = limits::cappedProduct(known, s[i], limits::kMaxTensorElements);
      if (known < 0)
        throw AttrError("shape", "attribute `shape` " + shapeString(s) + " has too many elements");
    }
  }
  int64_t total = numElements(in);
  if (wild >= 0 && known > 0 && total % known == 0) s[wild] = total / known;
  if (numElements(s) != total || (wild >= 0 && known == 0))
    throw ShapeError("cannot reshape " + shapeString(in) + " (" + std::to_string(total) + " elements) to " +
                     a["shape"].dump());
  return s;
}

// Groups input and output axes into minimal runs with equal products: single pairs are ties,
// longer runs are products (heads x head_dim = hidden). Size-1 axes outside a run stay free.
AxisInfo reshapeAxes(const Shape& in, const Shape& out) {
  AxisInfo info;
  if (numElements(in) == 0) {
    for (size_t i = 0; i < in.size(); ++i)
      markFixed(info, 0, static_cast<int>(i));
    for (size_t j = 0; j < out.size(); ++j)
      markFixed(info, 1, static_cast<int>(j));
    return info;
  }
  size_t i = 0, j = 0;
  while (true) {
    while (i < in.size() && in[i] == 1)
      ++i;
    while (j < out.size() && out[j] == 1)
      ++j;
    if (i >= in.size() || j >= out.size()) break;
    AxisInfo::Product prod;
    int64_t pa = in[i], pb = out[j];
    prod.from.push_back({0, static_cast<int>(i)});
    prod.to.push_back({1, static_cast<int>(j)});
    while (pa != pb) {
      if (pa < pb) {
        pa *= in[++i];
        prod.from.push_back({0, static_cast<int>(i)});
      } else {
        pb *= out[++j];
        prod.to.push_back({1, static_cast<int>(j)});
      }
    }
    if (prod.from.size() == 1 && prod.to.size() == 1) {
      info.ties.push_back({prod.from[0], prod.to[0]});
    } else {
      info.products.push_back(std::move(prod));
    }
    ++i;
    ++j;
  }
  return info;
}

OpDef reshapeOp() {
  OpDef d;
  d.name = "reshape";
  d.minInputs = d.maxInputs = 1;
  d.summary = "row-major reshape to `shape` (one entry may be -1)";
  d.infer = [](const Types& in, const Json& a) {
    return Types{{reshapeTarget(in[0].shape, a), in[0].dtype}};
  };
  d.axes = [](const Types& in, const Types& out, const Json&) {
    AxisInfo info = reshapeAxes(in[0].shape, out[0].shape);
    tieValues(info, 0, 1);
    return info;
  };
  d.valueRange = movedRange;
  d.rescale = [](const Json& a, const Types&, const Types& out, const AxisFactor&) {
    Json r = a;
    r["shape"] = out[0].shape;
    return r;
  };
  d.lower = [](ExprPool&, const Tensors& in, const Json& a) {
    return Tensors{st::reshape(in[0], reshapeTarget(in[0].shape(), a))};
  };
  return d;
}

std::vector<int> permAttr(const Json& a, size_t rank) {
  std::vector<int64_t> raw = intListAttr(a, "perm");
  std::vector<int> perm;
  std::vector<bool> seen(rank, false);
  for (int64_t v : raw) {
    if (v < -static_cast<int64_t>(rank) || v >= static_cast<int64_t>(rank))
      throw AttrError("perm", "attribute `perm` " + a["perm"].dump() + ": entry " + std::to_string(v) +
                                  " is out of range for rank " + std::to_string(rank));
    int d = normDim(v, rank, "perm entry");
    if (seen[d]) break;
    seen[d] = true;
    perm.push_back(d);
  }
  if (perm.size() != rank || raw.size() != rank)
    throw AttrError("perm", "attribute `perm` " + a["perm"].dump() + " is not a permutation of " +
                                std::to_string(rank) + " axes");
  return perm;
}

OpDef transposeOp() {
  OpDef d;
  d.name = "transpose";
  d.minInputs = d.maxInputs = 1;
  d.summary = "permute axes: output axis i is input axis perm[i]";
  d.infer = [](const Types& in, const Json& a) {
    std::vector<int> perm = permAttr(a, in[0].shape.size());
    Shape s;
    for (int p : perm)
      s.push_back(in[0].shape[p]);
    return Types{{s, in[0].dtype}};
  };
  d.axes = [](const Types& in, const Types&, const Json& a) {
    AxisInfo info;
    std::vector<int> perm = permAttr(a, in[0].shape.size());
    for (size_t i = 0; i < perm.size(); ++i)
      tie(info, 0, perm[i], 1, static_cast<int>(i));
    tieValues(info, 0, 1);
    return info;
  };
  d.valueRange = movedRange;
  d.lower = [](ExprPool&, const Tensors& in, const Json& a) {
    return Tensors{st::transpose(in[0], permAttr(a, in[0].shape().size()))};
  };
  return d;
}

struct SliceArgs {
  int dim;
  int64_t start, end;
};
SliceArgs sliceArgs(const Shape& s, const Json& a) {
  SliceArgs r{dimAttr(a, "dim", s.size()), intAttr(a, "start"), intAttr(a, "end")};
  if (r.start < 0 || r.start > r.end || r.end > s[r.dim])
    throw ShapeError("slice [" + std::to_string(r.start) + ", " + std::to_string(r.end) +
                     ") is not within [0, " + std::to_string(s[r.dim]) + "] along dim " +
                     std::to_string(r.dim) + " of " + shapeString(s));
  return r;
}

OpDef sliceOp() {
  OpDef d;
  d.name = "slice";
  d.minInputs = d.maxInputs = 1;
  d.summary = "x[..., start:end, ...] along `dim`";
  d.infer = [](const Types& in, const Json& a) {
    SliceArgs s = sliceArgs(in[0].shape, a);
    Shape out = in[0].shape;
    out[s.dim] = s.end - s.start;
    return Types{{out, in[0].dtype}};
  };
  d.axes = [](const Types& in, const Types&, const Json& a) {
    AxisInfo info;
    SliceArgs s = sliceArgs(in[0].shape, a);
    tieAll(info, 0, 1, in[0].shape.size());
    info.boundaries.push_back({{0, s.dim}, s.start});
    info.boundaries.push_back({{0, s.dim}, s.end});
    tieValues(info, 0, 1);
    return info;
  };
  d.valueRange = movedRange;
  d.rescale = [](const Json& a, const Types& in, const Types&, const AxisFactor& f) {
    Json r = a;
    int dim = dimAttr(a, "dim", in[0].shape.size());
    r["start"] = scaled(intAttr(a, "start"), f, 0, dim);
    r["end"] = scaled(intAttr(a, "end"), f, 0, dim);
    return r;
  };
  d.lower = [](ExprPool&, const Tensors& in, const Json& a) {
    SliceArgs s = sliceArgs(in[0].shape(), a);
    return Tensors{st::slice(in[0], s.dim, s.start, s.end)};
  };
  return d;
}

OpDef concatOp() {
  OpDef d;
  d.name = "concat";
  d.minInputs = 1;
  d.maxInputs = -1;
  d.summary = "concatenate the inputs along `dim`";
  d.infer = [](const Types& in, const Json& a) {
    int dim = dimAttr(a, "dim", in[0].shape.size());
    Shape out = in[0].shape;
    for (size_t k = 1; k < in.size(); ++k) {
      Shape s = in[k].shape;
      bool ok = s.size() == out.size() && in[k].dtype == in[0].dtype;
      if (ok) {
        out[dim] += s[dim];
        s[dim] = in[0].shape[dim];
        ok = s == in[0].shape;
      }
      if (!ok)
        throw ShapeError("input " + std::to_string(k) + " is " + typeString(in[k]) + ", input 0 is " +
                         typeString(in[0]) + ": all inputs must agree except along dim " +
                         std::to_string(dim));
    }
    return Types{{out, in[0].dtype}};
  };
  d.axes = [](const Types& in, const Types&, const Json& a) {
    AxisInfo info;
    int n = static_cast<int>(in.size());
    int dim = dimAttr(a, "dim", in[0].shape.size());
    int64_t offset = 0;
    for (int k = 0; k < n; ++k) {
      tieAll(info, k, n, in[k].shape.size());
      if (k > 0) info.boundaries.push_back({{n, dim}, offset});
      offset += in[k].shape[dim];
    }
    tieAllValues(info, n + 1);
    return info;
  };
  d.valueRange = movedRange;
  d.lower = [](ExprPool&, const Tensors& in, const Json& a) {
    return Tensors{st::concat(in, dimAttr(a, "dim", in[0].shape().size()))};
  };
  return d;
}

std::vector<int64_t> splitSizes(const Shape& s, const Json& a, int& dim) {
  dim = dimAttr(a, "dim", s.size());
  std::vector<int64_t> sizes = intListAttr(a, "sizes");
  int64_t total = 0;
  for (int64_t z : sizes) {
    if (z < 0) throw AttrError("sizes", "attribute `sizes` " + a["sizes"].dump() + " has a negative size");
    total += z;
  }
  if (sizes.empty() || total != s[dim])
    throw AttrError("sizes", "attribute `sizes` " + a["sizes"].dump() + " must sum to " +
                                 std::to_string(s[dim]) + " (dim " + std::to_string(dim) + " of " +
                                 shapeString(s) + ")");
  return sizes;
}

OpDef splitOp() {
  OpDef d;
  d.name = "split";
  d.minInputs = d.maxInputs = 1;
  d.summary = "split along `dim` into pieces of `sizes` (one output per piece)";
  d.infer = [](const Types& in, const Json& a) {
    int dim;
    Types out;
    for (int64_t z : splitSizes(in[0].shape, a, dim)) {
      Shape s = in[0].shape;
      s[dim] = z;
      out.push_back({s, in[0].dtype});
    }
    return out;
  };
  d.axes = [](const Types& in, const Types& out, const Json& a) {
    AxisInfo info;
    int dim;
    std::vector<int64_t> sizes = splitSizes(in[0].shape, a, dim);
    int64_t offset = 0;
    for (size_t k = 0; k < out.size(); ++k) {
      tieAll(info, 0, 1 + static_cast<int>(k), in[0].shape.size());
      if (k > 0) info.boundaries.push_back({{0, dim}, offset});
      offset += sizes[k];
    }
    tieAllValues(info, 1 + static_cast<int>(out.size()));
    return info;
  };
  d.valueRange = movedRange;
  d.rescale = [](const Json& a, const Types& in, const Types&, const AxisFactor& f) {
    Json r = a;
    int dim = dimAttr(a, "dim", in[0].shape.size());
    Json sizes = Json::array();
    for (int64_t z : intListAttr(a, "sizes"))
      sizes.push_back(scaled(z, f, 0, dim));
    r["sizes"] = sizes;
    return r;
  };
  d.lower = [](ExprPool&, const Tensors& in, const Json& a) {
    int dim;
    Tensors out;
    int64_t offset = 0;
    for (int64_t z : splitSizes(in[0].shape(), a, dim)) {
      out.push_back(st::slice(in[0], dim, offset, offset + z));
      offset += z;
    }
    return out;
  };
  return d;
}

}  // namespace

// Also reachable as "broadcast" without an `instance` (see broadcast_ops.h).
OpDef broadcastToDef() {
  OpDef d;
  d.name = "broadcast_to";
  d.minInputs = d.maxInputs = 1;
  d.summary = "numpy broadcast to `shape`";
  d.infer = [](const Types& in, const Json& a) {
    Shape s = shapeAttr(a, "shape");
    bool ok = s.size() >= in[0].shape.size();
    if (ok) {
      Shape b = st::broadcastShape(in[0].shape, s);  // throws for incompatible extents
      ok = b == s;
    }
    if (!ok) throw ShapeError("cannot broadcast " + typeString(in[0]) + " to " + shapeString(s));
    return Types{{s, in[0].dtype}};
  };
  d.axes = [](const Types& in, const Types& out, const Json&) {
    AxisInfo info;
    tieBroadcast(info, 0, in[0].shape, 1, out[0].shape);
    tieValues(info, 0, 1);
    // Expanded axes repeat the input: a sum along them multiplies by their extent.
    const Shape &is = in[0].shape, &os = out[0].shape;
    size_t off = os.size() - is.size();
    std::vector<AxisRef> expanded;
    for (size_t i = 0; i < os.size(); ++i)
      if ((i < off || is[i - off] != os[i]) && os[i] > 1) {
        info.counts.push_back({{1, static_cast<int>(i)}});
        expanded.push_back({1, static_cast<int>(i)});
      }
    if (expanded.size() > 1) info.counts.push_back(expanded);
    return info;
  };
  d.valueRange = movedRange;
  d.rescale = [](const Json& a, const Types&, const Types& out, const AxisFactor&) {
    Json r = a;
    r["shape"] = out[0].shape;
    return r;
  };
  d.lower = [](ExprPool&, const Tensors& in, const Json& a) {
    return Tensors{st::broadcastTo(in[0], shapeAttr(a, "shape"))};
  };
  return d;
}

namespace {
OpDef gatherOp() {
  OpDef d;
  d.name = "gather";
  d.minInputs = d.maxInputs = 2;
  d.summary = "take_along_dim(x, idx, dim): out[i] = x[i with i[dim] = idx[i]] (0 when out of range)";
  d.infer = [](const Types& in, const Json& a) {
    requireInteger(in[1], "idx");
    requireRank(in[1], in[0].shape.size(), "idx");
    int dim = dimAttr(a, "dim", in[0].shape.size());
    for (size_t i = 0; i < in[0].shape.size(); ++i)
      if (static_cast<int>(i) != dim && in[1].shape[i] != in[0].shape[i])
        throw ShapeError("idx " + typeString(in[1]) + " and x " + typeString(in[0]) + " differ in dim " +
                         std::to_string(i) + " (only dim " + std::to_string(dim) + " may differ)");
    return Types{{in[1].shape, in[0].dtype}};
  };
  d.axes = [](const Types& in, const Types&, const Json& a) {
    AxisInfo info;
    int dim = dimAttr(a, "dim", in[0].shape.size());
    for (int i = 0; i < static_cast<int>(in[0].shape.size()); ++i) {
      tie(info, 1, i, 2, i);
      if (i != dim) tie(info, 0, i, 2, i);
    }
    markFixed(info, 0, dim);  // idx values index it, and out-of-range ids read 0
    indexes(info, 1, 0, dim);
    tieValues(info, 0, 2);
    return info;
  };
  d.valueRange = [](const std::vector<IntRange>& in, const Types&, const Types&, const Json&) {
    return std::vector<IntRange>{hull(in[0], IntRange::of(0, 1))};  // x's values, or 0 out of range
  };
  d.lower = [](ExprPool& p, const Tensors& in, const Json& a) {
    const SymTensor &x = in[0], &idx = in[1];
    int dim = dimAttr(a, "dim", x.shape().size());
    std::vector<int64_t> xs = st::strides(x.shape());
    int64_t extent = x.shape()[dim];
    SymTensor r = st::tensor(idx.shape(), x.type.dtype, {});
    for (int64_t f = 0; f < static_cast<int64_t>(idx.elems.size()); ++f) {
      std::vector<int64_t> at = unflatIndex(idx.shape(), f);
      at[dim] = 0;
      int64_t base = flatIndex(x.shape(), at);
      ExprId acc = p.zero();
      for (int64_t j = extent; j-- > 0;)
        acc = p.ite(p.eq(idx.elems[f], p.integer(j)), x.elems[base + j * xs[dim]], acc);
      r.elems.push_back(acc);
    }
    return Tensors{r};
  };
  return d;
}
}  // namespace

void registerShapeOps(std::vector<OpDef>& reg) {
  reg.push_back(constantOp());
  reg.push_back(iotaOp());
  reg.push_back(reshapeOp());
  reg.push_back(transposeOp());
  reg.push_back(sliceOp());
  reg.push_back(concatOp());
  reg.push_back(splitOp());
  reg.push_back(broadcastToDef());
  reg.push_back(gatherOp());
}

}  // namespace paraproof::ops
