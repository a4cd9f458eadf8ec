// DeepSeek MoE FFN sublayer, forward and backward, under tensor and expert parallelism.
//
// Routing (DeepSeek-V2/V3): logits = n2 @ gate^T; scores = softmax (V2) or sigmoid (V3); with groups > 1
// only the best `topkGroups` groups are eligible (group score = max of its scores, V2, or the sum of its
// top 2, V3; the others are masked to 0); the top-k eligible experts are selected; gates = selected scores
// (zero elsewhere), normalised to sum 1 for V3, times routedScaling. The selection is a 0/1 indicator
// (topk_indicator) multiplied into the scores, so it is a constant for the backward pass.
//
// Routed experts are modelled densely: every expert evaluates every token and the gates zero the
// unselected ones - the same values as sparse dispatch (capacity dropping is out of scope). Under expert
// parallelism each rank holds E/ep experts; the per-expert token tensor [E, T, H] is exchanged over the ep
// group with all_to_all (experts split, tokens concatenated), the local experts run on the group's tokens,
// and a second all_to_all brings the outputs back. Experts and shared experts are tp-sharded like the dense
// MLP (Megatron's default expert tensor parallel = tp); the router is replicated over tp.
#include <map>

#include "core/models/tp_layout.h"
#include "core/models/training_step.h"

namespace paraproof::models {

namespace {
using tp::partial;
using tp::reshapeTo;
using tp::sharded;
std::string layerScope(int l) {
  return "layers." + std::to_string(l);
}
}  // namespace

bool TrainingStep::moeLayer(int layer) const {
  return cfg_.family == Family::DeepSeek && cfg_.moe.routedExperts > 0 && layer >= cfg_.moe.denseLayers;
}

std::vector<ParamInfo> TrainingStep::moeParams(int layer) const {
  const MoeConfig& m = cfg_.moe;
  const int64_t h = cfg_.hidden, e = m.routedExperts, fe = m.expertFfn,
                fs = static_cast<int64_t>(m.sharedExperts) * m.expertFfn;
  const std::string l = layerScope(layer);
  std::vector<ParamInfo> ps;
  auto add = [&](const std::string& scope, Shape s, int tpDim, int epDim = -1) {
    ps.push_back(ParamInfo{.name = scope + ".weight",
                           .scope = scope,
                           .shape = std::move(s),
                           .tpDim = tpDim,
                           .block = layer + 1,
                           .epDim = epDim});
  };
  // Under sp the norm and the router see only the rank's sequence shard (Megatron's router is
  // sequence-parallel too): their gradients are partial over tp.
  add(l + ".ffn_norm", {h}, -1);
  ps.back().sequenceParallel = true;
  add(l + ".mlp.gate", {e, h}, -1);
  ps.back().sequenceParallel = true;
  add(l + ".mlp.experts.w1", {e, fe, h}, 1, 0);
  add(l + ".mlp.experts.w3", {e, fe, h}, 1, 0);
  add(l + ".mlp.experts.w2", {e, h, fe}, 2, 0);
  if (fs > 0) {
    add(l + ".mlp.shared_experts.w1", {fs, h}, 0);
    add(l + ".mlp.shared_experts.w3", {fs, h}, 0);
    add(l + ".mlp.shared_experts.w2", {h, fs}, 1);
  }
  return ps;
}

Layout TrainingStep::expertAct(const std::string& name, int64_t width, bool dispatched, bool tpSharded,
                               int source) const {
  const Degrees& d = ctx_.deg();
  const int64_t rows = shape_.batch / (d.dp * d.mb);
  Layout l = Layout::full(name, {cfg_.moe.routedExperts, shape_.batch, shape_.seq, width});
  if (chunks() > 1) l.slice(2, chunkStart(chunk_), chunkLength());  // context parallel: this chunk
  if (!dispatched || d.ep == 1) {
    l.slice(1, ctx_.at().dp * (shape_.batch / d.dp) + mb_ * rows, rows);
  } else if (source >= 0) {
    const int src = ctx_.edpIndex() * d.ep + source;  // dp coordinate of the chunk's tokens
    l.shard(0, ctx_.epIndex(), d.ep);
    l.slice(1, src * (shape_.batch / d.dp) + mb_ * rows, rows);
    l = l.named(name + ".from" + std::to_string(source));
  } else {
    // The ep group's tokens in group order: a contiguous row range only with one micro-batch; otherwise
    // the rows interleave with other micro-batches' and the tensor has no lineage (it stays inside the
    // stage between the two all_to_alls).
    const int first = ctx_.edpIndex() * d.ep;
    l.shard(0, ctx_.epIndex(), d.ep);
    l.slice(1, first * (shape_.batch / d.dp) + mb_ * rows, rows * d.ep);
    if (d.mb > 1) l.lineage = false;
  }
  if (tpSharded) l = sharded(l, 3, ctx_);
  return l;
}

// The dispatched tensor split back into its ep source chunks (one piece when ep = 1).
std::vector<Val> TrainingStep::expertChunks(const Val& x, const std::string& name, int64_t width,
                                            const std::string& scope) {
  const int n = ctx_.deg().ep;
  if (n == 1) return {x};
  std::vector<Layout> outs;
  for (int j = 0; j < n; ++j)
    outs.push_back(expertAct(name, width, true, false, j));
  const int64_t rows = outs.front().localShape().at(1);
  return em_.opN("split", {x}, {{"dim", 1}, {"sizes", std::vector<int64_t>(static_cast<size_t>(n), rows)}},
                 scope, outs);
}

Val TrainingStep::expertConcat(const std::vector<Val>& chunks, const Layout& out, const std::string& scope) {
  if (chunks.size() == 1) return chunks.front();
  return em_.op("concat", chunks, {{"dim", 1}}, scope, out);
}

Layout TrainingStep::expertGradChunk(const std::string& weight, int source) const {
  const Degrees& d = ctx_.deg();
  const ParamInfo& p = paramInfo(weight);
  const int src = ctx_.edpIndex() * d.ep + source;
  Layout l = param(p).renamed(p.name + ".grad");
  // As gradPart() with the source rank's dp coordinate: micro-batch, then chunk, the innermost.
  l.partial(((src * d.cp + ctx_.at().cp) * d.mb + mb_) * chunks() + chunk_, d.dp * d.cp * d.mb * chunks());
  return l.named(p.name + ".grad.from" + std::to_string(source));
}

// Sums the chunks' contributions: the tokens of the whole ep group, this rank's expert gradient part.
void TrainingStep::addExpertGrad(const std::string& weight, const std::vector<Val>& parts) {
  const std::string scope = paramInfo(weight).scope;
  Val acc = parts.front();
  for (size_t j = 1; j < parts.size(); ++j) {
    Layout l = gradUse(weight, scope);
    if (j + 1 < parts.size()) {
      l.lineage = false;
      l = l.named(weight + ".grad.sum" + std::to_string(j));
    }
    acc = em_.op("add", {acc, parts[j]}, {}, scope, l);
  }
  addGrad(weight, acc);
}

int TrainingStep::expertGradPart() const {
  const Degrees& d = ctx_.deg();
  return ((ctx_.edpIndex() * d.cp + ctx_.at().cp) * d.mb + mb_) * chunks() + chunk_;
}

int TrainingStep::expertGradParts() const {
  const Degrees& d = ctx_.deg();
  return d.dp / d.ep * d.cp * d.mb * chunks();
}

// On the rank's sequence shard under sp (n2 before the gather), as Megatron's router; else every tp rank
// routes the whole sequence (replicated).
void TrainingStep::moeRouterForward(int l, const Val& n2) {
  const std::string s = layerScope(l), g = s + ".mlp.gate";
  const MoeConfig& m = cfg_.moe;
  const int64_t B = shape_.batch, S = shape_.seq, E = m.routedExperts, G = m.groups;
  env(mb_, chunk_)[g + ".in"] = n2;
  auto tok = [&](const std::string& name, int64_t width) { return seqAct(name, {B, S, width}); };
  auto grouped = [&](const std::string& name, int64_t width) { return seqAct(name, {B, S, G, width}); };

  Val logits = linear(g, n2, g + ".weight", tok(g + ".out", E));
  Val scores = m.sigmoidScoring ? em_.op("sigmoid", {logits}, {}, g, tok(g + ".scores", E))
                                : em_.op("softmax", {logits}, {{"dim", -1}}, g, tok(g + ".scores", E));
  Val eligible = scores;
  if (G > 1) {
    // Group-limited routing: keep the best topkGroups groups, mask the other groups' scores to 0.
    Layout view = grouped(g + ".group_view", E / G);
    Val v = em_.op("reshape", {scores}, reshapeTo(view), g, view);
    Val gs;
    if (m.sigmoidScoring) {
      std::vector<Val> top2 = em_.opN("topk", {v}, {{"k", 2}}, g,
                                      {grouped(g + ".group_top2", 2), grouped(g + ".group_top2_index", 2)});
      gs = em_.op("sum", {top2[0]}, {{"dims", {-1}}, {"keepdim", false}}, g, tok(g + ".group_scores", G));
    } else {
      gs = em_.op("max", {v}, {{"dims", {-1}}, {"keepdim", false}}, g, tok(g + ".group_scores", G));
    }
    Val gsel = em_.op("topk_indicator", {gs}, {{"k", m.topkGroups}}, g, tok(g + ".group_select", G));
    Layout col = grouped(g + ".group_select_col", 1);
    Val gc = em_.op("reshape", {gsel}, reshapeTo(col), g, col);
    Val ev = em_.op("mul", {v, gc}, {}, g, grouped(g + ".eligible_view", E / G));
    Layout flat = tok(g + ".eligible", E);
    eligible = em_.op("reshape", {ev}, reshapeTo(flat), g, flat);
  }
  Val sel = em_.op("topk_indicator", {eligible}, {{"k", m.topk}}, g, tok(g + ".select", E));
  Val gates = em_.op("mul", {scores, sel}, {}, g, tok(g + ".selected", E));
  if (m.sigmoidScoring) {
    Val sum = em_.op("sum", {gates}, {{"dims", {-1}}, {"keepdim", true}}, g, tok(g + ".selected_sum", 1));
    gates = em_.op("div", {gates, sum}, {}, g, tok(g + ".normalized", E));
    put(sum);
  }
  put(em_.op("scale", {gates}, {{"factor", m.routedScaling}}, g, tok(g + ".weights", E)));
  for (const Val& t : {scores, sel, gates})
    put(t);
  // The combine weights every token's expert outputs: the whole sequence (replaces the shard under sp).
  put(gatherSeq(get(g + ".weights"), g));
}

void TrainingStep::moeForward(int l) {
  const std::string s = layerScope(l), ex = s + ".mlp.experts", sh = s + ".mlp.shared_experts";
  const MoeConfig& m = cfg_.moe;
  const int64_t B = shape_.batch, S = shape_.seq, H = cfg_.hidden, Fe = m.expertFfn,
                Fs = static_cast<int64_t>(m.sharedExperts) * m.expertFfn;
  const Json eps = {{"eps", cfg_.normEps}};
  const Group ep = ctx_.group(Axis::EP);
  const Val h1 = get(s + ".attention.residual");
  Val n2 = em_.op("rmsnorm", {h1, get(s + ".ffn_norm.weight")}, eps, s + ".ffn_norm",
                  seqAct(s + ".ffn_norm.out", {B, S, H}));
  moeRouterForward(l, n2);
  // The experts (tp-sharded on their FFN width) need every token of the sequence.
  n2 = gatherSeq(n2, s + ".ffn_norm");
  put(n2);

  // Routed experts: broadcast the tokens to every expert, dispatch over ep, run the local experts.
  Layout inLay = expertAct(ex + ".in", H, false, false);
  Val xe = em_.op("broadcast_to", {n2}, reshapeTo(inLay), ex, inLay);
  Val xd = em_.allToAll(xe, ep, 0, 1, expertAct(ex + ".in", H, true, false), ex + ".dispatch");
  auto expertLinear = [&](const std::string& w, const char* eq, const Val& x, const Layout& out) {
    return em_.op("einsum", {x, get(ex + "." + w + ".weight")}, {{"equation", eq}}, ex + "." + w, out);
  };
  const std::vector<Val> xs = expertChunks(xd, ex + ".in", H, ex + ".dispatch");
  std::vector<Val> os;
  for (int j = 0; j < static_cast<int>(xs.size()); ++j) {
    const int src = xs.size() > 1 ? j : -1;
    auto lay = [&](const std::string& n, int64_t w, bool tps) { return expertAct(n, w, true, tps, src); };
    Val a = expertLinear("w1", "ebsh,efh->ebsf", xs[j], lay(ex + ".w1.out", Fe, true));
    Val u = expertLinear("w3", "ebsh,efh->ebsf", xs[j], lay(ex + ".w3.out", Fe, true));
    Val ac = em_.op("silu", {a}, {}, ex + ".act", lay(ex + ".act", Fe, true));
    Val gm = em_.op("mul", {ac, u}, {}, ex + ".gate", lay(ex + ".gate", Fe, true));
    os.push_back(expertLinear("w2", "ebsf,ehf->ebsh", gm, partial(lay(ex + ".out", H, false), ctx_)));
    for (const Val& t : {xs[j], a, u, ac, gm})
      env(mb_, chunk_)[t.lay.name + (src >= 0 ? ".from" + std::to_string(j) : "")] = t;
  }
  Val o = expertConcat(os, partial(expertAct(ex + ".out", H, true, false), ctx_), ex + ".combine");
  // Combine: bring every expert's outputs for this rank's tokens back, weight them by the gates.
  Val oc = em_.allToAll(o, ep, 1, 0, partial(expertAct(ex + ".out", H, false, false), ctx_), ex + ".combine");
  Val y = em_.op("einsum", {get(s + ".mlp.gate.weights"), oc}, {{"equation", "bse,ebsh->bsh"}}, ex,
                 partial(act(ex + ".combined", {B, S, H}), ctx_));
  put(oc);

  Val f = y;
  if (Fs > 0) {
    auto shard = [&](const std::string& name) { return sharded(act(name, {B, S, Fs}), 2, ctx_); };
    Val sg = linear(sh + ".w1", n2, sh + ".w1.weight", shard(sh + ".w1.out"));
    Val su = linear(sh + ".w3", n2, sh + ".w3.weight", shard(sh + ".w3.out"));
    Val sa = em_.op("silu", {sg}, {}, sh + ".act", shard(sh + ".act"));
    Val sm = em_.op("mul", {sa, su}, {}, sh + ".gate", shard(sh + ".gate"));
    Val so = linear(sh + ".w2", sm, sh + ".w2.weight", partial(act(sh + ".w2.out", {B, S, H}), ctx_));
    f = em_.op("add", {y, so}, {}, s + ".mlp", partial(act(s + ".mlp.out", {B, S, H}), ctx_));
    for (const Val& t : {sg, su, sa, sm})
      put(t);
  }
  f = reduceRowOutput(f, s + ".mlp");
  put(em_.op("add", {h1, f}, {}, s + ".mlp.residual", hiddenLayout(l + 1)));
}

void TrainingStep::moeRouterBackward(int l, const Val& dGates) {
  const std::string s = layerScope(l), g = s + ".mlp.gate";
  const MoeConfig& m = cfg_.moe;
  const int64_t B = shape_.batch, S = shape_.seq, E = m.routedExperts;
  auto tok = [&](const std::string& name, int64_t width) { return seqAct(name, {B, S, width}); };
  Val dg0;
  if (m.sigmoidScoring) {
    // gates = g0 / sum(g0): d g0 = (d gates - sum(d gates * gates)) / sum(g0)
    Val dn = em_.op("scale", {dGates}, {{"factor", m.routedScaling}}, g, tok(g + ".normalized.grad", E));
    Val p = em_.op("mul", {dn, get(g + ".normalized")}, {}, g, tok(g + ".normalized.grad_x_out", E));
    Val t = em_.op("sum", {p}, {{"dims", {-1}}, {"keepdim", true}}, g, tok(g + ".normalized.grad_dot", 1));
    Val c = em_.op("sub", {dn, t}, {}, g, tok(g + ".normalized.grad_centered", E));
    dg0 = em_.op("div", {c, get(g + ".selected_sum")}, {}, g, tok(g + ".selected.grad", E));
  } else {
    dg0 = em_.op("scale", {dGates}, {{"factor", m.routedScaling}}, g, tok(g + ".selected.grad", E));
  }
  // The selection is discrete: its indicator is a constant factor.
  Val ds = em_.op("mul", {dg0, get(g + ".select")}, {}, g, tok(g + ".scores.grad", E));
  Val dl =
      m.sigmoidScoring
          ? em_.op("sigmoid_backward", {get(g + ".scores"), ds}, {}, g, tok(g + ".out.grad", E))
          : em_.op("softmax_backward", {get(g + ".scores"), ds}, {{"dim", -1}}, g, tok(g + ".out.grad", E));
  put(linearDx(g, dl, g + ".weight", tok(g + ".dx", cfg_.hidden)));
  // Under sp a tp rank's router gradient covers its sequence shard only: a partial sum over tp
  // (ParamInfo::sequenceParallel), all-reduced over tp with the norm weights.
  linearDw(g, dl, get(g + ".in"), g + ".weight");
}

void TrainingStep::moeBackward(int l) {
  const std::string s = layerScope(l), at = s + ".attention", ex = s + ".mlp.experts",
                    sh = s + ".mlp.shared_experts";
  const MoeConfig& m = cfg_.moe;
  const int64_t B = shape_.batch, S = shape_.seq, H = cfg_.hidden, E = m.routedExperts, Fe = m.expertFfn,
                Fs = static_cast<int64_t>(m.sharedExperts) * m.expertFfn;
  const Json eps = {{"eps", cfg_.normEps}};
  const Group ep = ctx_.group(Axis::EP);
  const Val dyl = get(hiddenName(l + 1) + ".grad");
  const Val dy = gatherSeq(dyl, s + ".mlp");

  // Combine backward: the gates' gradient (the expert outputs are tp partial sums: reduced, and under sp
  // scattered back to the router's sequence shard) and each expert's.
  Val dg = em_.op("einsum", {dy, get(ex + ".out")}, {{"equation", "bsh,ebsh->bse"}}, ex,
                  partial(act(s + ".mlp.gate.weights.grad", {B, S, E}), ctx_));
  dg = reduceRowOutput(dg, ex);
  Val doc = em_.op("einsum", {get(s + ".mlp.gate.weights"), dy}, {{"equation", "bse,bsh->ebsh"}}, ex,
                   expertAct(ex + ".out.grad", H, false, false));
  Val dod = em_.allToAll(doc, ep, 0, 1, expertAct(ex + ".out.grad", H, true, false), ex + ".combine");

  // Expert FFN backward on the dispatched tokens, chunk by chunk as in the forward.
  const std::vector<Val> dods = expertChunks(dod, ex + ".out.grad", H, ex + ".combine");
  std::map<std::string, std::vector<Val>> dws;
  std::vector<Val> dxds;
  for (int j = 0; j < static_cast<int>(dods.size()); ++j) {
    const int src = dods.size() > 1 ? j : -1;
    auto lay = [&](const std::string& n, int64_t w, bool tps) { return expertAct(n, w, true, tps, src); };
    auto saved = [&](const std::string& n) -> const Val& {
      return get(n + (src >= 0 ? ".from" + std::to_string(j) : ""));
    };
    auto dw = [&](const std::string& w, const char* eq, const Val& a, const Val& b) {
      const std::string weight = ex + "." + w + ".weight";
      const Layout l = src >= 0 ? expertGradChunk(weight, j) : gradUse(weight, ex + "." + w);
      dws[weight].push_back(em_.op("einsum", {a, b}, {{"equation", eq}}, ex + "." + w, l));
    };
    auto dx = [&](const std::string& w, const char* eq, const Val& x, const Layout& out) {
      return em_.op("einsum", {x, get(ex + "." + w + ".weight")}, {{"equation", eq}}, ex + "." + w, out);
    };
    const Val &xd = saved(ex + ".in"), &dy2 = dods[j];
    Val dgm = dx("w2", "ebsh,ehf->ebsf", dy2, lay(ex + ".gate.grad", Fe, true));
    dw("w2", "ebsh,ebsf->ehf", dy2, saved(ex + ".gate"));
    Val dac = em_.op("mul", {dgm, saved(ex + ".w3.out")}, {}, ex + ".gate", lay(ex + ".act.grad", Fe, true));
    Val du = em_.op("mul", {dgm, saved(ex + ".act")}, {}, ex + ".gate", lay(ex + ".w3.out.grad", Fe, true));
    Val da = em_.op("silu_backward", {saved(ex + ".w1.out"), dac}, {}, ex + ".act",
                    lay(ex + ".w1.out.grad", Fe, true));
    Val dx1 = dx("w1", "ebsf,efh->ebsh", da, partial(lay(ex + ".w1.dx", H, false), ctx_));
    Val dx3 = dx("w3", "ebsf,efh->ebsh", du, partial(lay(ex + ".w3.dx", H, false), ctx_));
    dxds.push_back(em_.op("add", {dx1, dx3}, {}, ex, partial(lay(ex + ".in.grad", H, false), ctx_)));
    dw("w1", "ebsf,ebsh->efh", da, xd);
    dw("w3", "ebsf,ebsh->efh", du, xd);
  }
  for (const char* w : {"w2", "w1", "w3"})
    addExpertGrad(ex + "." + w + ".weight", dws.at(ex + "." + w + ".weight"));
  Val dxd = expertConcat(dxds, partial(expertAct(ex + ".in.grad", H, true, false), ctx_), ex + ".dispatch");
  Val dxe = em_.allToAll(dxd, ep, 1, 0, partial(expertAct(ex + ".in.grad", H, false, false), ctx_),
                         ex + ".dispatch");
  Val dn = em_.op("sum", {dxe}, {{"dims", {0}}, {"keepdim", false}}, ex,
                  partial(act(ex + ".dx", {B, S, H}), ctx_));

  if (Fs > 0) {
    const Val n2 = get(s + ".ffn_norm.out");
    auto shard = [&](const std::string& name) { return sharded(act(name, {B, S, Fs}), 2, ctx_); };
    Val dsm = linearDx(sh + ".w2", dy, sh + ".w2.weight", shard(sh + ".gate.grad"));
    linearDw(sh + ".w2", dy, get(sh + ".gate"), sh + ".w2.weight");
    Val dsa = em_.op("mul", {dsm, get(sh + ".w3.out")}, {}, sh + ".gate", shard(sh + ".act.grad"));
    Val dsu = em_.op("mul", {dsm, get(sh + ".act")}, {}, sh + ".gate", shard(sh + ".w3.out.grad"));
    Val dsg =
        em_.op("silu_backward", {get(sh + ".w1.out"), dsa}, {}, sh + ".act", shard(sh + ".w1.out.grad"));
    Val d1 = linearDx(sh + ".w1", dsg, sh + ".w1.weight", partial(act(sh + ".w1.dx", {B, S, H}), ctx_));
    Val d3 = linearDx(sh + ".w3", dsu, sh + ".w3.weight", partial(act(sh + ".w3.dx", {B, S, H}), ctx_));
    linearDw(sh + ".w1", dsg, n2, sh + ".w1.weight");
    linearDw(sh + ".w3", dsu, n2, sh + ".w3.weight");
    Val ds = em_.op("add", {d1, d3}, {}, sh, partial(act(sh + ".dx", {B, S, H}), ctx_));
    dn = em_.op("add", {dn, ds}, {}, s + ".mlp", partial(act(s + ".mlp.dx", {B, S, H}), ctx_));
  }
  dn = reduceRowOutput(dn, s + ".mlp");
  moeRouterBackward(l, dg);
  Val dn2 = em_.op("add", {dn, get(s + ".mlp.gate.dx")}, {}, s + ".ffn_norm",
                   seqAct(s + ".ffn_norm.out.grad", {B, S, H}));
  std::vector<Val> nb = em_.opN(
      "rmsnorm_backward", {get(at + ".residual"), get(s + ".ffn_norm.weight"), dn2}, eps, s + ".ffn_norm",
      {seqAct(s + ".ffn_norm.dx", {B, S, H}), grad(paramInfo(s + ".ffn_norm.weight"))});
  addGrad(s + ".ffn_norm.weight", nb[1]);
  put(em_.op("add", {dyl, nb[0]}, {}, s + ".mlp.residual", seqAct(at + ".residual.grad", {B, S, H})));
}

}  // namespace paraproof::models
