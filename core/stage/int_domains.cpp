#include "core/stage/int_domains.h"

#include "core/stage/axis_graph.h"

namespace paraproof::stage {

IntDomains intDomains(const Plan& plan) {
  // The model alone decides what an id may be: classes over the logical graph only, so a device op over
  // fewer values (one_hot(2) on ids of a vocabulary of 8, or on ids the model does not index by) is checked
  // against every id the model accepts. Reduction still scales the logical extents with the device ones
  // (reduce.cpp's classes span the whole plan).
  AxisGraph ag(plan, /*logicalOnly=*/true);
  const std::vector<int64_t> extent = ag.classExtents();
  const Graph& g = plan.logical;
  IntDomains d;
  d.logical.assign(g.values.size(), ops::IntRange::any());
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (g.values[v].producer != kNone || !isInteger(g.values[v].type.dtype)) continue;
    const int64_t e = extent[ag.find(ag.values(0, static_cast<ValueId>(v)))];
    if (e > 0) d.logical[v] = ops::IntRange::of(0, e);
  }
  for (const Op& op : g.ops) {
    const ops::OpDef* def = ops::findOp(op.kind);
    if (!def || !def->valueRange) continue;  // integer outputs stay unbounded
    std::vector<ops::IntRange> in;
    std::vector<TensorType> inT, outT;
    for (ValueId v : op.inputs) {
      in.push_back(d.logical[v]);
      inT.push_back(g.values[v].type);
    }
    for (ValueId v : op.outputs)
      outT.push_back(g.values[v].type);
    std::vector<ops::IntRange> out;
    try {
      out = def->valueRange(in, inT, outT, op.attrs);
    } catch (const std::exception&) {
      continue;
    }
    for (size_t i = 0; i < op.outputs.size() && i < out.size(); ++i)
      if (isInteger(outT[i].dtype)) d.logical[op.outputs[i]] = out[i];
  }
  return d;
}

}  // namespace paraproof::stage
