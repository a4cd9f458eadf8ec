// MoE routing: top-k along the last dim by repeated max selection (exact comparisons; ties go to the
// lower index), as values + i64 indices, or as a mask keeping the selected entries.
#include "core/ops/nn_families.h"
#include "core/ops/op_util.h"
#include "core/ops/sym_tensor.h"

namespace paraproof::ops {

namespace {
using namespace util;

struct Selection {
  std::vector<ExprId> values, indices;  // per round, the winner
  std::vector<ExprId> chosen;           // per element, Bool: selected in some round
};

// k rounds over one row; round r scans left to right keeping the first strict maximum among the
// elements not chosen yet.
Selection selectTopK(ExprPool& p, const ExprId* row, int64_t e, int64_t k) {
  Selection s;
  s.chosen.assign(static_cast<size_t>(e), p.boolean(false));
  for (int64_t r = 0; r < k; ++r) {
    ExprId best = p.zero(), bestIdx = p.integer(0), found = p.boolean(false);
    for (int64_t j = 0; j < e; ++j) {
      ExprId avail = p.lnot(s.chosen[j]);
      ExprId take = p.land(avail, p.lor(p.lnot(found), p.lt(best, row[j])));
      best = p.ite(take, row[j], best);
      bestIdx = p.ite(take, p.integer(j), bestIdx);
      found = p.lor(found, avail);
    }
    s.values.push_back(best);
    s.indices.push_back(bestIdx);
    for (int64_t j = 0; j < e; ++j)
      s.chosen[j] = p.lor(s.chosen[j], p.eq(bestIdx, p.integer(j)));
  }
  return s;
}

int64_t kAttr(const Types& in, const Json& a) {
  requireFloat(in[0], "x");
  requireMinRank(in[0], 1, "x");
  int64_t k = intAttr(a, "k"), e = in[0].shape.back();
  if (k < 1 || k > e)
    throw AttrError("k", "attribute `k` = " + std::to_string(k) + " must be in [1, " + std::to_string(e) +
                             "] for x " + typeString(in[0]));
  return k;
}

// Leading axes tie to every output; the last (expert) axis keeps its extent, `k` being a count.
AxisInfo topkAxes(const Types& in, int outputs) {
  AxisInfo info;
  int r = static_cast<int>(in[0].shape.size());
  for (int o = 1; o <= outputs; ++o) {
    tieAll(info, 0, o, r - 1);
    markFixed(info, o, r - 1);
  }
  markFixed(info, 0, r - 1);
  return info;
}

template <class Emit>
void forEachRow(ExprPool& p, const SymTensor& x, int64_t k, Emit emit) {
  int64_t e = x.shape().back();
  for (size_t base = 0; base < x.elems.size(); base += static_cast<size_t>(e))
    emit(selectTopK(p, x.elems.data() + base, e, k), base);
}

OpDef topkOp() {
  OpDef d;
  d.name = "topk";
  d.minInputs = d.maxInputs = 1;
  d.summary =
      "values [..., k] and i64 indices [..., k] of the k largest along the last dim (ties: lower index)";
  d.infer = [](const Types& in, const Json& a) {
    Shape s = in[0].shape;
    s.back() = kAttr(in, a);
    return Types{{s, in[0].dtype}, {s, DType::I64}};
  };
  d.axes = [](const Types& in, const Types&, const Json&) {
    AxisInfo info = topkAxes(in, 2);
    indexes(info, 2, 0, static_cast<int>(in[0].shape.size()) - 1);  // indices are candidates (pinned)
    return info;
  };
  d.valueRange = [](const std::vector<IntRange>&, const Types& in, const Types&, const Json&) {
    return std::vector<IntRange>{IntRange::any(), IntRange::of(0, in[0].shape.back())};
  };
  d.lower = [](ExprPool& p, const Tensors& in, const Json& a) {
    int64_t k = intAttr(a, "k");
    Shape s = in[0].shape();
    s.back() = k;
    SymTensor values = st::tensor(s, in[0].type.dtype, {}), indices = st::tensor(s, DType::I64, {});
    forEachRow(p, in[0], k, [&](const Selection& sel, size_t) {
      values.elems.insert(values.elems.end(), sel.values.begin(), sel.values.end());
      indices.elems.insert(indices.elems.end(), sel.indices.begin(), sel.indices.end());
    });
    return Tensors{values, indices};
  };
  return d;
}

OpDef topkMaskOp() {
  OpDef d;
  d.name = "topk_mask";
  d.minInputs = d.maxInputs = 1;
  d.summary = "x where among the top k along the last dim, else 0";
  d.infer = [](const Types& in, const Json& a) {
    kAttr(in, a);
    return Types{in[0]};
  };
  d.axes = [](const Types& in, const Types&, const Json&) { return topkAxes(in, 1); };
  d.lower = [](ExprPool& p, const Tensors& in, const Json& a) {
    SymTensor out{in[0].type, {}};
    forEachRow(p, in[0], intAttr(a, "k"), [&](const Selection& sel, size_t base) {
      for (size_t j = 0; j < sel.chosen.size(); ++j)
        out.elems.push_back(p.ite(sel.chosen[j], in[0].elems[base + j], p.zero()));
    });
    return Tensors{out};
  };
  return d;
}
}  // namespace

void registerRouting(std::vector<OpDef>& reg) {
  reg.push_back(topkOp());
  reg.push_back(topkMaskOp());
}

}  // namespace paraproof::ops
