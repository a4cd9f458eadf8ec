#include <algorithm>
#include <stdexcept>

#include "core/parallel/bug_catalog.h"
#include "core/parallel/plan_edit.h"

namespace paraproof::parallel::catalog {

std::vector<int> groupOf(const Op& o) {
  return o.attrs.at("group").get<std::vector<int>>();
}

// Applies `fn` to the collective `opId` on every member of its group (the same op id on each: SPMD), so
// the plan stays well matched.
void onEveryMember(Where& w, const std::string& opId, const std::function<void(Device&, Op&)>& fn) {
  Op& first = opById(w.here(), opId);
  if (first.kind != "all_reduce" && first.kind != "all_gather" && first.kind != "reduce_scatter")
    throw std::logic_error("bug injection: op '" + opId + "' is a " + first.kind + ", not a collective");
  for (int r : groupOf(first)) {
    Device& d = w.dev(r);
    fn(d, opById(d, opId));
    w.changed(r, opId);
  }
}

const std::string& nameOf(const Device& d, ValueId v) {
  return d.graph.values[v].name;
}

// The op producing a value (by value name) on a device.
Op& producerOf(Device& d, const std::string& value) {
  const Value& v = d.graph.values[valueByName(d, value)];
  if (v.producer == kNone) throw std::invalid_argument("value '" + value + "' is a graph input");
  return d.graph.ops[v.producer];
}

// The forward tensor-parallel all-reduce closing the layer's MLP (row-parallel second linear).
std::string mlpOutputReduce(const Where& w) {
  return names::collectiveOutput(w.mb(w.layer(w.llama ? "mlp.w2.out" : "mlp.fc2.out")), names::kAllReduce);
}

// The data-parallel gradient bucket of the layer (one coalesced all_reduce over the layer's gradients).
std::string gradBucket(Where& w) {
  const std::string scope = "layers." + std::to_string(w.site.layer);
  for (const Op& o : w.here().graph.ops)
    if (o.kind == "all_reduce" && o.scope == scope && o.inputs.size() > 1) return o.id;
  throw std::invalid_argument("no data-parallel gradient bucket for " + scope + " on rank " +
                              std::to_string(w.site.rank));
}

void toIdentity(Device&, Op& o) {
  o.kind = "identity";
  o.attrs = Json::object();
}

void setEps(Where& w, int rank) {
  const std::string id = w.mb(w.layer("attention_norm.out"));
  Op& o = opById(w.dev(rank), id);
  o.attrs.set("eps", 1e-3);
  w.changed(rank, id);
}

void setAttentionScale(Where& w, int rank) {
  const std::string id = w.mb(w.layer("attention.core.out"));
  Op& o = opById(w.dev(rank), id);
  const double scale = o.attrs.at("scale").get<double>();
  o.attrs.set("scale", scale * scale);  // 1/d instead of 1/sqrt(d)
  w.changed(rank, id);
}

// Another rank holding the same layer (same pipeline stage): the tp neighbour, else the dp neighbour.
int neighbour(Where& w, std::vector<const char*> axes) {
  for (const char* kind : axes)
    for (const Op& o : w.here().graph.ops)
      if (o.kind == "all_reduce" &&
          o.attrs.at("instance").get<std::string>().find(std::string("@") + kind) != std::string::npos)
        for (int r : groupOf(o))
          if (r != w.site.rank) return r;
  throw std::invalid_argument("the bug needs a second rank holding layer " + std::to_string(w.site.layer));
}

// The site rank skips the update of one piece of state (a parameter or an AdamW moment of the site layer):
// it outputs the state input it holds, with its true lineage to the input, instead of the successor. Only
// where another rank holds the same piece, so the successor stays covered and the plan valid.
Mutation keepsOldState(std::string rest) {
  return [rest](Where& w) {
    const std::string state = w.layer(rest), successor = state + ".out";
    Device& d = w.here();
    for (ValueId in : d.graph.inputs) {
      auto held = d.lineage.find(in);
      if (held == d.lineage.end() || held->second.tensor != state) continue;
      const bool replicated = std::any_of(w.plan.devices.begin(), w.plan.devices.end(), [&](const Device& o) {
        return o.rank != d.rank && std::any_of(o.graph.inputs.begin(), o.graph.inputs.end(), [&](ValueId v) {
                 auto l = o.lineage.find(v);
                 return l != o.lineage.end() && l->second == held->second;
               });
      });
      if (!replicated) break;
      for (ValueId& out : d.graph.outputs) {
        auto l = d.lineage.find(out);
        if (l == d.lineage.end() || l->second.tensor != successor || l->second.box != held->second.box)
          continue;
        w.changed(d.rank, d.graph.ops[d.graph.values[out].producer].id);
        out = in;
        return;
      }
    }
    throw std::invalid_argument("rank " + std::to_string(w.site.rank) + " holds no replicated piece of " +
                                state + " whose successor it outputs");
  };
}

// Sequence parallelism and kv-head replication: gradients that are partial sums over (part of) the tp group
// and must be all-reduced there before the data-parallel reduction; the mutation drops that all-reduce.
Mutation unreduced(std::string grad, std::string group) {
  return [grad, group](Where& w) {
    const std::string prefix = w.layer(grad);
    for (const Op& o : w.here().graph.ops)
      if (o.kind == "all_reduce" && nameOf(w.here(), o.inputs[0]).starts_with(prefix) &&
          o.attrs.at("instance").get<std::string>().find("@" + group) != std::string::npos) {
        onEveryMember(w, o.id, toIdentity);
        return;
      }
    throw std::invalid_argument("rank " + std::to_string(w.site.rank) + " has no " + group +
                                " all-reduce of " + prefix);
  };
}

}  // namespace paraproof::parallel::catalog
