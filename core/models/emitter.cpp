#include "core/models/emitter.h"

#include <stdexcept>

namespace paraproof::models {

namespace {
Json groupJson(const Group& g) {
  return Json(g.ranks);
}
}  // namespace

void Emitter::record(ValueId v, const Layout& l) {
  const Shape got = b_.type(v).shape;
  if (got != l.localShape())
    throw std::logic_error("generator: value '" + b_.name(v) + "' has shape " + shapeString(got) +
                           " but its layout says " + shapeString(l.localShape()));
  if (!lineage_ || !l.lineage) return;
  Lineage lin;
  lin.tensor = l.name;
  lin.box.ranges = l.box;
  lin.part = l.part;
  lin.parts = l.parts;
  (*lineage_)[v] = lin;
}

std::string Emitter::uniqueName(const std::string& base) const {
  const Graph& g = b_.graph();
  if (g.findValue(base) == kNone && g.findOp(base) == kNone) return base;
  for (int i = 1;; ++i) {
    std::string n = base + "." + std::to_string(i);
    if (g.findValue(n) == kNone && g.findOp(n) == kNone) return n;
  }
}

Val Emitter::input(const Layout& lay, DType dtype) {
  Val v{b_.input(valueName(lay), TensorType{lay.localShape(), dtype}), lay};
  record(v.id, lay);
  return v;
}

std::vector<Val> Emitter::opN(const std::string& kind, const std::vector<Val>& in, const Json& attrs,
                              const std::string& scope, const std::vector<Layout>& outs,
                              const std::string& origin) {
  OpSpec s;
  s.kind = kind;
  for (const Val& v : in)
    s.inputs.push_back(v.id);
  s.attrs = attrs;
  s.scope = scope;
  for (const Layout& l : outs)
    s.outputs.push_back(valueName(l));
  s.id = s.outputs.empty() ? uniqueName(kind) : s.outputs.front();
  if (!logical()) {
    if (origin != kAuto)
      s.origin = origin;
    else if (!outs.empty() && outs.front().lineage)
      s.origin = outs.front().name;
  }
  return emit(s, outs);
}

std::vector<Val> Emitter::emit(const OpSpec& s, const std::vector<Layout>& outs) {
  std::vector<ValueId> ids = b_.op(s);
  std::vector<Val> vals;
  for (size_t i = 0; i < ids.size(); ++i) {
    record(ids[i], outs[i]);
    vals.push_back(Val{ids[i], outs[i]});
  }
  return vals;
}

Val Emitter::op(const std::string& kind, const std::vector<Val>& in, const Json& attrs,
                const std::string& scope, const Layout& out, const std::string& origin) {
  return opN(kind, in, attrs, scope, {out}, origin).front();
}

Val Emitter::allReduce(const Val& x, const Group& g, const std::string& reduce, const std::string& scope,
                       const std::optional<Layout>& out) {
  Val v = allReduceBucket({x}, g, reduce, scope).front();
  if (out && v.id != x.id) {
    v.lay = *out;
    record(v.id, *out);
  }
  return v;
}

std::vector<Val> Emitter::allReduceBucket(const std::vector<Val>& xs, const Group& g,
                                          const std::string& reduce, const std::string& scope) {
  if (g.size() <= 1 || xs.empty()) return xs;
  OpSpec s;
  s.kind = "all_reduce";
  std::vector<Layout> outs;
  for (const Val& x : xs) {
    s.inputs.push_back(x.id);
    s.outputs.push_back(names::collectiveOutput(b_.name(x.id), names::kAllReduce));
    Layout l = x.lay;
    if (reduce == "sum" && l.parts == g.size())
      l.whole();
    else if (reduce != "sum" || l.parts != 1)
      l.lineage = false;
    outs.push_back(l);
  }
  s.id = s.outputs.front();
  s.attrs = {{"group", groupJson(g)}, {"instance", s.id + "@" + g.name}, {"reduce", reduce}};
  s.scope = scope;
  return emit(s, outs);
}

Val Emitter::collective(const std::string& kind, std::string_view tag, const Val& x, const Group& g,
                        Json attrs, const Layout& out, const std::string& scope) {
  if (g.size() <= 1) return x;
  OpSpec s;
  s.kind = kind;
  s.inputs = {x.id};
  s.outputs = {names::collectiveOutput(b_.name(x.id), tag)};
  s.id = s.outputs.front();
  attrs["group"] = groupJson(g);
  attrs["instance"] = s.id + "@" + g.name;
  s.attrs = std::move(attrs);
  s.scope = scope;
  return emit(s, {out}).front();
}

Val Emitter::allGather(const Val& x, const Group& g, int dim, const Layout& out, const std::string& scope) {
  return collective("all_gather", names::kAllGather, x, g, {{"dim", dim}}, out, scope);
}

Val Emitter::reduceScatter(const Val& x, const Group& g, int dim, const std::string& reduce,
                           const Layout& out, const std::string& scope) {
  return collective("reduce_scatter", names::kReduceScatter, x, g, {{"dim", dim}, {"reduce", reduce}}, out,
                    scope);
}

Val Emitter::allToAll(const Val& x, const Group& g, int splitDim, int concatDim, const Layout& out,
                      const std::string& scope) {
  return collective("all_to_all", names::kAllToAll, x, g,
                    {{"split_dim", splitDim}, {"concat_dim", concatDim}}, out, scope);
}

void Emitter::send(const Val& x, int self, int peer, const std::string& scope) {
  OpSpec s;
  s.kind = "send";
  s.inputs = {x.id};
  s.id = "send:" + x.lay.name + suffix_;
  s.attrs = {
      {"peer", peer},
      {"instance", "p2p:" + x.lay.name + suffix_ + ":" + std::to_string(self) + "->" + std::to_string(peer)}};
  s.scope = scope;
  b_.op(s);
}

Val Emitter::recv(const Layout& lay, DType dtype, int self, int peer, const std::string& scope) {
  OpSpec s;
  s.kind = "recv";
  s.outputs = {valueName(lay)};
  s.id = s.outputs.front();
  s.attrs = {
      {"peer", peer},
      {"instance", "p2p:" + lay.name + suffix_ + ":" + std::to_string(peer) + "->" + std::to_string(self)},
      {"shape", lay.localShape()},
      {"dtype", dtypeName(dtype)}};
  s.scope = scope;
  return emit(s, {lay}).front();
}

}  // namespace paraproof::models
