// Comparisons and selection: masks are i64 tensors of 0 and 1 (the plan has no boolean arithmetic), and
// `where` reads any nonzero condition as true, so torch's bool masks, their `&`, `|`, `~` (min, max, 1 - m)
// and a user's 0/1 mask input all have one exact meaning.
#include "core/ops/families.h"
#include "core/ops/op_util.h"

namespace paraproof::ops {

namespace {
using namespace util;

const std::initializer_list<const char*> kRelations = {"eq", "ne", "lt", "le", "gt", "ge"};

ExprId relation(ExprPool& p, const std::string& cmp, ExprId a, ExprId b) {
  if (cmp == "eq") return p.eq(a, b);
  if (cmp == "ne") return p.lnot(p.eq(a, b));
  if (cmp == "lt") return p.lt(a, b);
  if (cmp == "le") return p.le(a, b);
  if (cmp == "gt") return p.lt(b, a);
  return p.le(b, a);  // ge
}

OpDef compareOp() {
  OpDef d;
  d.name = "compare";
  d.minInputs = d.maxInputs = 2;
  d.summary = "1 where `a cmp b` holds, else 0 (i64; broadcasting); exact on reals and integers";
  d.infer = [](const Types& in, const Json& a) {
    requireSameKind(in[0], in[1], "a", "b");
    choiceAttr(a, "cmp", kRelations);
    return Types{{st::broadcastShape(in[0].shape, in[1].shape), DType::I64}};
  };
  d.axes = [](const Types& in, const Types& out, const Json&) {
    AxisInfo info;
    tieBroadcast(info, 0, in[0].shape, 2, out[0].shape);
    tieBroadcast(info, 1, in[1].shape, 2, out[0].shape);
    tieValues(info, 0, 1);  // compared with each other: a reduction scales both or neither
    return info;
  };
  d.valueRange = [](const std::vector<IntRange>&, const Types&, const Types&, const Json&) {
    return std::vector<IntRange>{IntRange::of(0, 2)};
  };
  d.lower = [](ExprPool& p, const Tensors& in, const Json& a) {
    std::string cmp = choiceAttr(a, "cmp", kRelations);
    ExprId one = p.integer(1), zero = p.integer(0);
    SymTensor r =
        st::zip(in[0], in[1], [&](ExprId x, ExprId y) { return p.ite(relation(p, cmp, x, y), one, zero); });
    return Tensors{st::withDType(r, DType::I64)};
  };
  return d;
}

OpDef whereOp() {
  OpDef d;
  d.name = "where";
  d.minInputs = d.maxInputs = 3;
  d.summary = "a where cond is nonzero, else b (broadcasting the three)";
  d.infer = [](const Types& in, const Json&) {
    requireInteger(in[0], "cond");
    requireSameKind(in[1], in[2], "a", "b");
    Shape s = st::broadcastShape(st::broadcastShape(in[0].shape, in[1].shape), in[2].shape);
    return Types{{s, in[1].dtype}};
  };
  d.axes = [](const Types& in, const Types& out, const Json&) {
    AxisInfo info;
    for (int port = 0; port < 3; ++port)
      tieBroadcast(info, port, in[port].shape, 3, out[0].shape);
    tieValues(info, 1, 3);  // the output holds values of a and of b
    tieValues(info, 2, 3);
    return info;
  };
  d.valueRange = [](const std::vector<IntRange>& in, const Types& inT, const Types&, const Json&) {
    if (!isInteger(inT[1].dtype)) return std::vector<IntRange>{IntRange::any()};
    return std::vector<IntRange>{hull(in[1], in[2])};
  };
  d.lower = [](ExprPool& p, const Tensors& in, const Json&) {
    Shape s = st::broadcastShape(st::broadcastShape(in[0].shape(), in[1].shape()), in[2].shape());
    SymTensor c = st::broadcastTo(in[0], s), a = st::broadcastTo(in[1], s), b = st::broadcastTo(in[2], s);
    SymTensor r = st::tensor(s, in[1].type.dtype, {});
    r.elems.reserve(c.elems.size());
    ExprId zero = p.integer(0);
    for (size_t i = 0; i < c.elems.size(); ++i)
      r.elems.push_back(p.ite(p.lnot(p.eq(c.elems[i], zero)), a.elems[i], b.elems[i]));
    return Tensors{r};
  };
  return d;
}
}  // namespace

void registerSelection(std::vector<OpDef>& reg) {
  reg.push_back(compareOp());
  reg.push_back(whereOp());
}

}  // namespace paraproof::ops
