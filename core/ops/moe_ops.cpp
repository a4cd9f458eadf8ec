// MoE routing helpers: the 0/1 indicator of a top-k selection. Routers build their gates as
// scores * indicator, so the selection is a constant factor for the backward pass (the discrete choice has
// zero gradient) and needs no backward op of its own.
#include "core/ops/nn_families.h"
#include "core/ops/op_util.h"
#include "core/ops/sym_tensor.h"

namespace paraproof::ops {

namespace {
using namespace util;
using Types = std::vector<TensorType>;
using Tensors = std::vector<SymTensor>;

OpDef topkIndicatorOp() {
  OpDef d;
  d.name = "topk_indicator";
  d.minInputs = d.maxInputs = 1;
  d.summary = "1 where x is among the top k along the last dim (ties: lower index), else 0";
  d.infer = [](const Types& in, const Json& a) {
    // The same selection as topk: reuse its shape rule for the checks on x and k.
    inferTypes(*findOp("topk"), in, a);
    return Types{in[0]};
  };
  // Leading axes tie to the output; the candidate (expert) axis keeps its full extent: `k` counts
  // candidates, so top-k over a reduced axis would select a different fraction (not partition-preserving).
  d.axes = [](const Types& in, const Types&, const Json&) {
    AxisInfo info;
    const int r = static_cast<int>(in[0].shape.size());
    tieAll(info, 0, 1, static_cast<size_t>(r - 1));
    markFixed(info, 0, r - 1);
    markFixed(info, 1, r - 1);
    return info;
  };
  // Built on topk's selection: element j is chosen when some round's winner index equals j (the very
  // expressions topk_mask guards its values with).
  d.lower = [](sym::ExprPool& p, const Tensors& in, const Json& a) {
    const int64_t k = intAttr(a, "k"), e = in[0].shape().back();
    const SymTensor idx = findOp("topk")->lower(p, in, a).at(1);
    SymTensor out{in[0].type, {}};
    out.elems.reserve(in[0].elems.size());
    for (size_t row = 0; row < idx.elems.size(); row += static_cast<size_t>(k))
      for (int64_t j = 0; j < e; ++j) {
        sym::ExprId chosen = p.boolean(false);
        for (int64_t r = 0; r < k; ++r)
          chosen = p.lor(chosen, p.eq(idx.elems[row + static_cast<size_t>(r)], p.integer(j)));
        out.elems.push_back(p.ite(chosen, p.real(1), p.zero()));
      }
    return Tensors{out};
  };
  return d;
}
}  // namespace

void registerMoe(std::vector<OpDef>& reg) {
  reg.push_back(topkIndicatorOp());
}

}  // namespace paraproof::ops
