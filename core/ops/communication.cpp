// Collectives and point-to-point ops. A collective's lowerGroup maps the inputs of its group members
// (in the order of attrs["group"]) to their outputs. all_reduce may carry a coalesced bucket of n tensors
// per member: memberInputs is then member-major (member i's j-th tensor at i * n + j), and so are the
// outputs. send/recv have no lowering: the stage evaluator pairs them (recv output = matching send input).
#include <algorithm>

#include "core/ops/broadcast_ops.h"
#include "core/ops/families.h"
#include "core/ops/op_util.h"
#include "core/ops/sym_tensor.h"

namespace paraproof::ops {

namespace {
using namespace util;

std::vector<int64_t> groupAttr(const Json& a) {
  std::vector<int64_t> g = intListAttr(a, "group");
  if (g.empty()) throw AttrError("group", "attribute `group` must list at least one rank");
  std::vector<int64_t> sorted = g;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    throw AttrError("group", "attribute `group` " + a["group"].dump() + " lists a rank twice");
  return g;
}

void requireInstance(const Json& a) {
  if (!hasAttr(a, "instance") || !a["instance"].is_string())
    throw AttrError("instance", "attribute `instance` must be a string id shared by the matching calls");
}

int64_t groupSize(const Json& a) {
  requireInstance(a);
  return static_cast<int64_t>(groupAttr(a).size());
}

// Every member must contribute tensors of one type.
void requireUniform(const Tensors& members, size_t perMember) {
  for (size_t i = perMember; i < members.size(); ++i)
    if (members[i].type != members[i % perMember].type)
      throw ShapeError("member " + std::to_string(i / perMember) + " contributes " +
                       typeString(members[i].type) + " but member 0 contributes " +
                       typeString(members[i % perMember].type));
}

void requireMembers(const Tensors& members, const Json& a, size_t perMember) {
  size_t g = groupAttr(a).size();
  if (members.size() != g * perMember)
    throw ShapeError("group of " + std::to_string(g) + " ranks got " + std::to_string(members.size()) +
                     " member inputs");
  requireUniform(members, perMember);
}

// Elementwise reduction of the members' j-th tensors.
SymTensor reduceMembers(ExprPool& p, const Tensors& members, size_t perMember, size_t j,
                        const std::string& kind) {
  size_t g = members.size() / perMember;
  SymTensor r = members[j];
  for (size_t e = 0; e < r.elems.size(); ++e) {
    if (kind == "max") {
      ExprId acc = members[j].elems[e];
      for (size_t i = 1; i < g; ++i)
        acc = p.max(acc, members[i * perMember + j].elems[e]);
      r.elems[e] = acc;
    } else {
      std::vector<ExprId> terms;
      for (size_t i = 0; i < g; ++i)
        terms.push_back(members[i * perMember + j].elems[e]);
      r.elems[e] = p.add(std::move(terms));
      if (kind == "avg") r.elems[e] = p.div(r.elems[e], p.real(static_cast<double>(g)));
    }
  }
  return r;
}

OpDef allReduceOp() {
  OpDef d;
  d.name = "all_reduce";
  d.minInputs = 1;
  d.maxInputs = -1;
  d.communication = true;
  d.summary = "elementwise `reduce` (sum / avg / max) over the group; n inputs = a coalesced bucket";
  d.infer = [](const Types& in, const Json& a) {
    groupSize(a);
    std::string kind = choiceAttr(a, "reduce", {"sum", "avg", "max"});
    for (size_t k = 0; k < in.size(); ++k)
      if (kind == "avg") requireFloat(in[k], "input " + std::to_string(k) + " of an avg all_reduce");
    return in;
  };
  d.axes = [](const Types& in, const Types&, const Json& a) {
    AxisInfo info;
    int n = static_cast<int>(in.size());
    const bool max = choiceAttr(a, "reduce", {"sum", "avg", "max"}) == "max";
    for (int k = 0; k < n; ++k) {
      tieAll(info, k, n + k, in[k].shape.size());
      if (max) tieValues(info, k, n + k);  // the max of ids is one of them; a sum of ids is no id
    }
    return info;
  };
  d.lowerGroup = [](ExprPool& p, const Tensors& members, const Json& a) {
    size_t g = groupAttr(a).size();
    size_t n = members.size() / g;
    requireMembers(members, a, n);
    std::string kind = choiceAttr(a, "reduce", {"sum", "avg", "max"});
    Tensors reduced;
    for (size_t j = 0; j < n; ++j)
      reduced.push_back(reduceMembers(p, members, n, j, kind));
    Tensors out;
    for (size_t i = 0; i < g; ++i)
      out.insert(out.end(), reduced.begin(), reduced.end());
    return out;
  };
  return d;
}

OpDef allGatherOp() {
  OpDef d;
  d.name = "all_gather";
  d.minInputs = d.maxInputs = 1;
  d.communication = true;
  d.summary = "concatenation of the members' inputs along `dim`, in group order";
  d.infer = [](const Types& in, const Json& a) {
    int64_t g = groupSize(a);
    Shape s = in[0].shape;
    s[dimAttr(a, "dim", s.size())] *= g;
    return Types{{s, in[0].dtype}};
  };
  d.axes = [](const Types& in, const Types&, const Json& a) {
    AxisInfo info;
    int dim = dimAttr(a, "dim", in[0].shape.size());
    tieAll(info, 0, 1, in[0].shape.size());
    tieValues(info, 0, 1);
    for (int64_t k = 1; k < groupSize(a); ++k)
      info.boundaries.push_back({{1, dim}, k * in[0].shape[dim]});
    return info;
  };
  d.lowerGroup = [](ExprPool&, const Tensors& members, const Json& a) {
    requireMembers(members, a, 1);
    SymTensor all = st::concat(members, dimAttr(a, "dim", members[0].shape().size()));
    return Tensors(members.size(), all);
  };
  return d;
}

OpDef reduceScatterOp() {
  OpDef d;
  d.name = "reduce_scatter";
  d.minInputs = d.maxInputs = 1;
  d.communication = true;
  d.summary = "member i gets shard i (along `dim`) of the `reduce` (sum / avg) over the group";
  d.infer = [](const Types& in, const Json& a) {
    int64_t g = groupSize(a);
    choiceAttr(a, "reduce", {"sum", "avg"});
    Shape s = in[0].shape;
    int dim = dimAttr(a, "dim", s.size());
    if (s[dim] % g)
      throw ShapeError("dim " + std::to_string(dim) + " of " + typeString(in[0]) +
                       " is not divisible by the group size " + std::to_string(g));
    s[dim] /= g;
    return Types{{s, in[0].dtype}};
  };
  d.axes = [](const Types& in, const Types& out, const Json& a) {
    AxisInfo info;
    int dim = dimAttr(a, "dim", in[0].shape.size());
    tieAll(info, 0, 1, in[0].shape.size());
    for (int64_t k = 1; k < groupSize(a); ++k)
      info.boundaries.push_back({{0, dim}, k * out[0].shape[dim]});
    return info;
  };
  d.lowerGroup = [](ExprPool& p, const Tensors& members, const Json& a) {
    requireMembers(members, a, 1);
    int dim = dimAttr(a, "dim", members[0].shape().size());
    int64_t g = static_cast<int64_t>(members.size()), shard = members[0].shape()[dim] / g;
    SymTensor total = reduceMembers(p, members, 1, 0, choiceAttr(a, "reduce", {"sum", "avg"}));
    Tensors out;
    for (int64_t i = 0; i < g; ++i)
      out.push_back(st::slice(total, dim, i * shard, (i + 1) * shard));
    return out;
  };
  return d;
}

struct AllToAll {
  int split, concat;
};
AllToAll allToAllDims(const Shape& s, const Json& a) {
  return {dimAttr(a, "split_dim", s.size()), dimAttr(a, "concat_dim", s.size())};
}

OpDef allToAllOp() {
  OpDef d;
  d.name = "all_to_all";
  d.minInputs = d.maxInputs = 1;
  d.communication = true;
  d.summary = "member j's output chunk i (along concat_dim) is member i's input chunk j (along split_dim)";
  d.infer = [](const Types& in, const Json& a) {
    int64_t g = groupSize(a);
    Shape s = in[0].shape;
    AllToAll t = allToAllDims(s, a);
    if (s[t.split] % g)
      throw ShapeError("split dim " + std::to_string(t.split) + " of " + typeString(in[0]) +
                       " is not divisible by the group size " + std::to_string(g));
    s[t.split] /= g;
    s[t.concat] *= g;
    return Types{{s, in[0].dtype}};
  };
  d.axes = [](const Types& in, const Types& out, const Json& a) {
    AxisInfo info;
    AllToAll t = allToAllDims(in[0].shape, a);
    tieAll(info, 0, 1, in[0].shape.size());
    tieValues(info, 0, 1);
    int64_t g = groupSize(a), chunk = in[0].shape[t.split] / g;
    int64_t piece = out[0].shape[t.concat] / g;
    for (int64_t k = 1; k < g; ++k) {
      info.boundaries.push_back({{0, t.split}, k * chunk});
      info.boundaries.push_back({{1, t.concat}, k * piece});
    }
    return info;
  };
  d.lowerGroup = [](ExprPool&, const Tensors& members, const Json& a) {
    requireMembers(members, a, 1);
    AllToAll t = allToAllDims(members[0].shape(), a);
    int64_t g = static_cast<int64_t>(members.size()), chunk = members[0].shape()[t.split] / g;
    Tensors out;
    for (int64_t j = 0; j < g; ++j) {
      Tensors pieces;
      for (int64_t i = 0; i < g; ++i)
        pieces.push_back(st::slice(members[i], t.split, j * chunk, (j + 1) * chunk));
      out.push_back(st::concat(pieces, t.concat));
    }
    return out;
  };
  return d;
}

size_t srcPosition(const Json& a) {
  std::vector<int64_t> g = groupAttr(a);
  int64_t src = intAttr(a, "src");
  auto it = std::find(g.begin(), g.end(), src);
  if (it == g.end())
    throw AttrError("src", "src rank " + std::to_string(src) + " is not in group " + a["group"].dump());
  return static_cast<size_t>(it - g.begin());
}

}  // namespace

OpDef broadcastCollectiveDef() {
  OpDef d;
  d.name = "broadcast";
  d.minInputs = d.maxInputs = 1;
  d.communication = true;
  d.summary = "every member gets the input of rank `src`";
  d.infer = [](const Types& in, const Json& a) {
    requireInstance(a);
    srcPosition(a);
    return in;
  };
  d.axes = [](const Types& in, const Types&, const Json&) {
    AxisInfo info;
    tieAll(info, 0, 1, in[0].shape.size());
    tieValues(info, 0, 1);
    return info;
  };
  d.lowerGroup = [](ExprPool&, const Tensors& members, const Json& a) {
    requireMembers(members, a, 1);
    return Tensors(members.size(), members[srcPosition(a)]);
  };
  return d;
}

OpDef broadcastDispatchDef(OpDef shapeOp, OpDef collective) {
  OpDef d = collective;
  d.summary =
      "collective (with `instance`): " + collective.summary + "; shape op (without): " + shapeOp.summary;
  d.infer = [shapeOp, collective](const Types& in, const Json& a) {
    // The two forms take disjoint attributes: one of the other form would be silently ignored.
    const bool coll = isCollectiveBroadcast(a);
    for (const char* key : {"group", "src", "shape"})
      if (hasAttr(a, key) && coll == (std::string(key) == "shape"))
        throw AttrError(key, std::string("attribute `") + key + "` belongs to the " +
                                 (coll ? "broadcast_to form (without `instance`)"
                                       : "collective form (with `instance`, `group` and `src`)"));
    return coll ? collective.infer(in, a) : shapeOp.infer(in, a);
  };
  d.axes = [shapeOp, collective](const Types& in, const Types& out, const Json& a) {
    return isCollectiveBroadcast(a) ? collective.axes(in, out, a) : shapeOp.axes(in, out, a);
  };
  d.rescale = [shapeOp](const Json& a, const Types& in, const Types& out, const AxisFactor& f) {
    return isCollectiveBroadcast(a) ? a : shapeOp.rescale(a, in, out, f);
  };
  d.valueRange = util::movedRange;
  d.lower = [shapeOp](ExprPool& p, const Tensors& in, const Json& a) {
    if (isCollectiveBroadcast(a))
      throw ShapeError("the broadcast collective spans devices: it has no single-device lowering");
    return shapeOp.lower(p, in, a);
  };
  return d;
}

namespace {
void requirePeer(const Json& a) {
  requireInstance(a);
  if (intAttr(a, "peer") < 0) throw AttrError("peer", "attribute `peer` must be a rank >= 0");
}

OpDef sendOp() {
  OpDef d;
  d.name = "send";
  d.minInputs = d.maxInputs = 1;
  d.communication = true;
  d.summary = "send the input to rank `peer` (paired with its recv by `instance`)";
  d.infer = [](const Types&, const Json& a) {
    requirePeer(a);
    return Types{};
  };
  d.axes = [](const Types&, const Types&, const Json&) { return AxisInfo{}; };
  return d;
}

OpDef recvOp() {
  OpDef d;
  d.name = "recv";
  d.communication = true;
  d.summary = "the tensor sent by rank `peer` with the same `instance`; declares `shape` and `dtype`";
  d.infer = [](const Types&, const Json& a) {
    requirePeer(a);
    return Types{{shapeAttr(a, "shape"), dtypeAttr(a, "dtype", DType::F32)}};
  };
  d.axes = [](const Types&, const Types&, const Json&) { return AxisInfo{}; };
  d.rescale = [](const Json& a, const Types&, const Types& out, const AxisFactor&) {
    Json r = a;
    r["shape"] = out[0].shape;
    return r;
  };
  return d;
}
}  // namespace

void registerCommunication(std::vector<OpDef>& reg) {
  reg.push_back(allReduceOp());
  reg.push_back(allGatherOp());
  reg.push_back(reduceScatterOp());
  reg.push_back(allToAllOp());
  reg.push_back(broadcastDispatchDef(broadcastToDef(), broadcastCollectiveDef()));
  reg.push_back(sendOp());
  reg.push_back(recvOp());
}

}  // namespace paraproof::ops
