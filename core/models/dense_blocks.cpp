// Embedding, dense transformer / MLP layers and the output head, forward and backward, under tensor
// parallelism (Megatron column/row linears, head-sharded attention, vocab-parallel embedding and loss) and
// sequence parallelism (sp_blocks.cpp: gatherSeq before column-parallel blocks, reduceRowOutput after
// row-parallel linears; hidden states, norms and residuals on sequence shards).
#include <cmath>

#include "core/models/tp_layout.h"
#include "core/models/training_step.h"

namespace paraproof::models {

namespace {
using tp::partial;
using tp::reshapeTo;
using tp::sharded;
}  // namespace

Val TrainingStep::linear(const std::string& scope, const Val& x, const std::string& weight,
                         const Layout& out) {
  return em_.op("linear", {x, get(weight)}, {}, scope, out);
}

Val TrainingStep::linearDx(const std::string& scope, const Val& dy, const std::string& weight,
                           const Layout& dx) {
  return em_.op("matmul", {dy, get(weight)}, {}, scope, dx);
}

void TrainingStep::linearDw(const std::string& scope, const Val& dy, const Val& x,
                            const std::string& weight) {
  addGrad(weight, em_.op("einsum", {dy, x}, {{"equation", "bso,bsi->oi"}}, scope, gradUse(weight, scope)));
}

void TrainingStep::embeddingForward() {
  const int64_t shard = cfg_.vocab / ctx_.deg().tp;
  Val e = em_.op("embedding", {get("tokens"), get("embed.weight")}, {{"start", ctx_.at().tp * shard}},
                 "embed", partial(act(hiddenName(0), {shape_.batch, shape_.seq, cfg_.hidden}), ctx_));
  put(reduceRowOutput(e, "embed"));
}

void TrainingStep::embeddingBackward() {
  const int64_t shard = cfg_.vocab / ctx_.deg().tp;
  const Val dy = gatherSeq(get("embed.out.grad"), "embed");
  addGrad("embed.weight", em_.op("embedding_backward", {get("tokens"), dy},
                                 {{"num_embeddings", shard}, {"start", ctx_.at().tp * shard}}, "embed",
                                 gradUse("embed.weight", "embed")));
}

void TrainingStep::mlpLayerForward(int l) {
  const std::string s = "layers." + std::to_string(l);
  const int64_t B = shape_.batch, S = shape_.seq, H = cfg_.hidden, F = cfg_.ffn;
  const Val x = get(hiddenName(l));
  // Under sp the full-sequence copy replaces the shard in the environment: backward needs only it (fc1.dW).
  const Val xf = gatherSeq(x, s + ".mlp.fc1");
  put(xf);
  Val g =
      linear(s + ".mlp.fc1", xf, s + ".mlp.fc1.weight", sharded(act(s + ".mlp.fc1.out", {B, S, F}), 2, ctx_));
  Val a = em_.op("gelu", {g}, {{"approximate", "tanh"}}, s + ".mlp.act",
                 sharded(act(s + ".mlp.act", {B, S, F}), 2, ctx_));
  Val f = linear(s + ".mlp.fc2", a, s + ".mlp.fc2.weight", partial(act(s + ".mlp.fc2.out", {B, S, H}), ctx_));
  f = reduceRowOutput(f, s + ".mlp.fc2");
  for (const Val& v : {g, a})
    put(v);
  put(em_.op("add", {x, f}, {}, s + ".mlp.residual", hiddenLayout(l + 1)));
}

void TrainingStep::mlpLayerBackward(int l) {
  const std::string s = "layers." + std::to_string(l);
  const int64_t B = shape_.batch, S = shape_.seq, H = cfg_.hidden, F = cfg_.ffn;
  const Val dy = get(hiddenName(l + 1) + ".grad");
  const Val dyf = gatherSeq(dy, s + ".mlp.fc2");
  Val da = linearDx(s + ".mlp.fc2", dyf, s + ".mlp.fc2.weight",
                    sharded(act(s + ".mlp.act.grad", {B, S, F}), 2, ctx_));
  linearDw(s + ".mlp.fc2", dyf, get(s + ".mlp.act"), s + ".mlp.fc2.weight");
  Val dg = em_.op("gelu_backward", {get(s + ".mlp.fc1.out"), da}, {{"approximate", "tanh"}}, s + ".mlp.act",
                  sharded(act(s + ".mlp.fc1.out.grad", {B, S, F}), 2, ctx_));
  Val dx =
      linearDx(s + ".mlp.fc1", dg, s + ".mlp.fc1.weight", partial(act(s + ".mlp.fc1.dx", {B, S, H}), ctx_));
  dx = reduceRowOutput(dx, s + ".mlp.fc1");
  linearDw(s + ".mlp.fc1", dg, get(hiddenName(l)), s + ".mlp.fc1.weight");
  put(em_.op("add", {dy, dx}, {}, s + ".mlp.residual", hiddenGradLayout(l)));
}

Json TrainingStep::attentionAttrs() const {
  return {{"scale", 1.0 / std::sqrt(static_cast<double>(cfg_.headDim()))}, {"causal", true}};
}

void TrainingStep::attentionForward(int l) {
  attentionInput(l);
  attentionCore(l);
  attentionOutput(l);
}

void TrainingStep::attentionInput(int l) {
  const std::string s = "layers." + std::to_string(l), at = s + ".attention";
  const int64_t B = shape_.batch, S = shape_.seq, H = cfg_.hidden, d = cfg_.headDim();
  const int64_t nh = cfg_.heads, nkv = cfg_.kvHeads;
  const Json eps = {{"eps", cfg_.normEps}};
  const Val x = get(hiddenName(l));
  const Val &cos = get("rope.cos"), &sin = get("rope.sin");

  Val n1 = em_.op("rmsnorm", {x, get(s + ".attention_norm.weight")}, eps, s + ".attention_norm",
                  seqAct(s + ".attention_norm.out", {B, S, H}));
  n1 = gatherSeq(n1, s + ".attention_norm");
  put(n1);
  // Query heads are sharded over tp; kv heads too, or replicated when tp exceeds them (kvSharded).
  auto heads = [&](Layout l, bool kv) {
    return kv ? kvSharded(std::move(l), 2) : sharded(std::move(l), 2, ctx_);
  };
  auto project = [&](const std::string& w, const std::string& name, int64_t n, bool kv) {
    Val p = linear(at + "." + w, n1, at + "." + w + ".weight",
                   heads(act(at + "." + w + ".out", {B, S, n * d}), kv));
    put(p);
    Layout l4 = heads(act(at + "." + name, {B, S, n, d}), kv);
    return em_.op("reshape", {p}, reshapeTo(l4), at + "." + w, l4);
  };
  Val q = project("wq", "q", nh, false), k = project("wk", "k", nkv, true), v = project("wv", "v", nkv, true);
  Val qr =
      em_.op("rope", {q, cos, sin}, {}, at + ".rope", sharded(act(at + ".q_rot", {B, S, nh, d}), 2, ctx_));
  Val kr = em_.op("rope", {k, cos, sin}, {}, at + ".rope", kvSharded(act(at + ".k_rot", {B, S, nkv, d}), 2));
  for (const Val& t : {v, qr, kr})
    put(t);
}

void TrainingStep::attentionCore(int l) {
  const std::string at = "layers." + std::to_string(l) + ".attention";
  const int64_t B = shape_.batch, S = shape_.seq, d = cfg_.headDim(), nh = cfg_.heads;
  const Val& pos = get("rope.positions");
  put(em_.op("attention", {get(at + ".q_rot"), get(at + ".k_rot"), get(at + ".v"), pos, pos},
             attentionAttrs(), at + ".core", sharded(act(at + ".core.out", {B, S, nh, d}), 2, ctx_)));
}

// Shared by GQA and MLA: the heads' outputs (coreOperands().vDim wide) through the row-parallel wo.
void TrainingStep::attentionOutput(int l) {
  const std::string at = "layers." + std::to_string(l) + ".attention";
  const int64_t B = shape_.batch, S = shape_.seq, H = cfg_.hidden, d = coreOperands().vDim, nh = cfg_.heads;
  const Val x = get(hiddenName(l)), o = get(at + ".core.out");
  Layout ctxLay = sharded(act(at + ".context", {B, S, nh * d}), 2, ctx_);
  Val c = em_.op("reshape", {o}, reshapeTo(ctxLay), at + ".core", ctxLay);
  Val a = linear(at + ".wo", c, at + ".wo.weight", partial(act(at + ".wo.out", {B, S, H}), ctx_));
  a = reduceRowOutput(a, at + ".wo");
  Val h1 = em_.op("add", {x, a}, {}, at + ".residual", seqAct(at + ".residual", {B, S, H}));
  for (const Val& t : {c, h1})
    put(t);
}

void TrainingStep::swigluForward(int l) {
  const std::string s = "layers." + std::to_string(l);
  const int64_t B = shape_.batch, S = shape_.seq, H = cfg_.hidden, F = cfg_.ffn;
  const Json eps = {{"eps", cfg_.normEps}};
  const Val h1 = get(s + ".attention.residual");
  Val n2 = em_.op("rmsnorm", {h1, get(s + ".ffn_norm.weight")}, eps, s + ".ffn_norm",
                  seqAct(s + ".ffn_norm.out", {B, S, H}));
  n2 = gatherSeq(n2, s + ".ffn_norm");
  Val g =
      linear(s + ".mlp.w1", n2, s + ".mlp.w1.weight", sharded(act(s + ".mlp.w1.out", {B, S, F}), 2, ctx_));
  Val u =
      linear(s + ".mlp.w3", n2, s + ".mlp.w3.weight", sharded(act(s + ".mlp.w3.out", {B, S, F}), 2, ctx_));
  Val ac = em_.op("silu", {g}, {}, s + ".mlp.act", sharded(act(s + ".mlp.act", {B, S, F}), 2, ctx_));
  Val m = em_.op("mul", {ac, u}, {}, s + ".mlp.gate", sharded(act(s + ".mlp.gate", {B, S, F}), 2, ctx_));
  Val f = linear(s + ".mlp.w2", m, s + ".mlp.w2.weight", partial(act(s + ".mlp.w2.out", {B, S, H}), ctx_));
  f = reduceRowOutput(f, s + ".mlp.w2");
  for (const Val& t : {n2, g, u, ac, m})
    put(t);
  put(em_.op("add", {h1, f}, {}, s + ".mlp.residual", hiddenLayout(l + 1)));
}

void TrainingStep::swigluBackward(int l) {
  const std::string s = "layers." + std::to_string(l), at = s + ".attention";
  const int64_t B = shape_.batch, S = shape_.seq, H = cfg_.hidden, F = cfg_.ffn;
  const Json eps = {{"eps", cfg_.normEps}};
  const Val dy = get(hiddenName(l + 1) + ".grad");
  const Val dyf = gatherSeq(dy, s + ".mlp.w2");

  // SwiGLU MLP
  Val dm = linearDx(s + ".mlp.w2", dyf, s + ".mlp.w2.weight",
                    sharded(act(s + ".mlp.gate.grad", {B, S, F}), 2, ctx_));
  linearDw(s + ".mlp.w2", dyf, get(s + ".mlp.gate"), s + ".mlp.w2.weight");
  Val dac = em_.op("mul", {dm, get(s + ".mlp.w3.out")}, {}, s + ".mlp.gate",
                   sharded(act(s + ".mlp.act.grad", {B, S, F}), 2, ctx_));
  Val du = em_.op("mul", {dm, get(s + ".mlp.act")}, {}, s + ".mlp.gate",
                  sharded(act(s + ".mlp.w3.out.grad", {B, S, F}), 2, ctx_));
  Val dg = em_.op("silu_backward", {get(s + ".mlp.w1.out"), dac}, {}, s + ".mlp.act",
                  sharded(act(s + ".mlp.w1.out.grad", {B, S, F}), 2, ctx_));
  Val dng =
      linearDx(s + ".mlp.w1", dg, s + ".mlp.w1.weight", partial(act(s + ".mlp.w1.dx", {B, S, H}), ctx_));
  Val dnu =
      linearDx(s + ".mlp.w3", du, s + ".mlp.w3.weight", partial(act(s + ".mlp.w3.dx", {B, S, H}), ctx_));
  Val dn2 =
      em_.op("add", {dng, dnu}, {}, s + ".ffn_norm", partial(act(s + ".ffn_norm.out.grad", {B, S, H}), ctx_));
  dn2 = reduceRowOutput(dn2, s + ".ffn_norm");
  linearDw(s + ".mlp.w1", dg, get(s + ".ffn_norm.out"), s + ".mlp.w1.weight");
  linearDw(s + ".mlp.w3", du, get(s + ".ffn_norm.out"), s + ".mlp.w3.weight");
  std::vector<Val> nb = em_.opN(
      "rmsnorm_backward", {get(at + ".residual"), get(s + ".ffn_norm.weight"), dn2}, eps, s + ".ffn_norm",
      {seqAct(s + ".ffn_norm.dx", {B, S, H}), grad(paramInfo(s + ".ffn_norm.weight"))});
  addGrad(s + ".ffn_norm.weight", nb[1]);
  put(em_.op("add", {dy, nb[0]}, {}, s + ".mlp.residual", seqAct(at + ".residual.grad", {B, S, H})));
}

void TrainingStep::attentionBackward(int l) {
  attentionOutputBackward(l);
  attentionCoreBackward(l);
  attentionInputBackward(l);
}

void TrainingStep::attentionOutputBackward(int l) {
  const std::string at = "layers." + std::to_string(l) + ".attention";
  const int64_t B = shape_.batch, S = shape_.seq, d = coreOperands().vDim, nh = cfg_.heads;
  const Val dh1f = gatherSeq(get(at + ".residual.grad"), at + ".wo");
  Val dc = linearDx(at + ".wo", dh1f, at + ".wo.weight",
                    sharded(act(at + ".context.grad", {B, S, nh * d}), 2, ctx_));
  linearDw(at + ".wo", dh1f, get(at + ".context"), at + ".wo.weight");
  Layout do4 = sharded(act(at + ".core.out.grad", {B, S, nh, d}), 2, ctx_);
  put(em_.op("reshape", {dc}, reshapeTo(do4), at + ".core", do4));
}

// A replicated kv head's gradient on one rank is only its own query heads' share: part of r.
Layout TrainingStep::kvGrad(const std::string& name, Shape shape) const {
  const int r = kvReplicas();
  return kvSharded(act(name, std::move(shape)), 2).partial(ctx_.at().tp % r, r);
}

void TrainingStep::attentionCoreBackward(int l) {
  const std::string at = "layers." + std::to_string(l) + ".attention";
  const int64_t B = shape_.batch, S = shape_.seq, d = cfg_.headDim(), nh = cfg_.heads, nkv = cfg_.kvHeads;
  const Val& pos = get("rope.positions");
  std::vector<Val> dqkv =
      em_.opN("attention_backward",
              {get(at + ".q_rot"), get(at + ".k_rot"), get(at + ".v"), pos, pos, get(at + ".core.out.grad")},
              attentionAttrs(), at + ".core",
              {sharded(act(at + ".q_rot.grad", {B, S, nh, d}), 2, ctx_),
               kvGrad(at + ".k_rot.grad", {B, S, nkv, d}), kvGrad(at + ".v.grad", {B, S, nkv, d})});
  for (const Val& t : dqkv)
    put(t);
}

void TrainingStep::attentionInputBackward(int l) {
  const std::string s = "layers." + std::to_string(l), at = s + ".attention";
  const int64_t B = shape_.batch, S = shape_.seq, H = cfg_.hidden, d = cfg_.headDim();
  const int64_t nh = cfg_.heads, nkv = cfg_.kvHeads;
  const Json eps = {{"eps", cfg_.normEps}};
  const Val dh1 = get(at + ".residual.grad");
  const std::vector<Val> dqkv = {get(at + ".q_rot.grad"), get(at + ".k_rot.grad"), get(at + ".v.grad")};
  const Val &cos = get("rope.cos"), &sin = get("rope.sin");
  Val dq = em_.op("rope_backward", {dqkv[0], cos, sin}, {}, at + ".rope",
                  sharded(act(at + ".q.grad", {B, S, nh, d}), 2, ctx_));
  Val dk =
      em_.op("rope_backward", {dqkv[1], cos, sin}, {}, at + ".rope", kvGrad(at + ".k.grad", {B, S, nkv, d}));
  Val dn1 = Val{};
  const Val n1 = get(s + ".attention_norm.out");
  for (auto [w, dh, heads] :
       {std::tuple{"wq", dq, nh}, std::tuple{"wk", dk, nkv}, std::tuple{"wv", dqkv[2], nkv}}) {
    const std::string ws = at + "." + w;
    Layout flat = std::string(w) == "wq" ? sharded(act(ws + ".out.grad", {B, S, heads * d}), 2, ctx_)
                                         : kvGrad(ws + ".out.grad", {B, S, heads * d});
    Val dp = em_.op("reshape", {dh}, reshapeTo(flat), ws, flat);
    Val dx = linearDx(ws, dp, ws + ".weight", partial(act(ws + ".dx", {B, S, H}), ctx_));
    linearDw(ws, dp, n1, ws + ".weight");
    const std::string sum = std::string(w) == "wv" ? s + ".attention_norm.out.grad" : at + ".wqk.dx";
    dn1 = dn1.valid()
              ? em_.op("add", {dn1, dx}, {}, s + ".attention_norm", partial(act(sum, {B, S, H}), ctx_))
              : dx;
  }
  dn1 = reduceRowOutput(dn1, s + ".attention_norm");
  std::vector<Val> na =
      em_.opN("rmsnorm_backward", {get(hiddenName(l)), get(s + ".attention_norm.weight"), dn1}, eps,
              s + ".attention_norm",
              {seqAct(s + ".attention_norm.dx", {B, S, H}), grad(paramInfo(s + ".attention_norm.weight"))});
  addGrad(s + ".attention_norm.weight", na[1]);
  put(em_.op("add", {dh1, na[0]}, {}, at + ".residual", hiddenGradLayout(l)));
}

void TrainingStep::headForward() {
  const int64_t B = shape_.batch, S = shape_.seq, H = cfg_.hidden, V = cfg_.vocab;
  const int L = shape_.layers;
  Val x = get(hiddenName(L));
  if (cfg_.family != Family::Mlp)
    x = em_.op("rmsnorm", {x, get("norm.weight")}, {{"eps", cfg_.normEps}}, "norm",
               seqAct("norm.out", {B, S, H}));
  // Under sp the full-sequence copy replaces the shard in the environment (the output's dW needs it).
  x = gatherSeq(x, "output");
  put(x);
  Val logits = linear("output", x, outputWeight(), sharded(act("output.out", {B, S, V}), 2, ctx_));
  put(logits);
  vocabParallelLoss(logits, get("labels"), get("loss_mask"));
  lossParts_.push_back(
      em_.op("div", {get("loss.ce_sum"), get("loss.valid_tokens")}, {}, "loss", lossPart("loss")));
}

void TrainingStep::headBackward() {
  const int64_t B = shape_.batch, S = shape_.seq, H = cfg_.hidden;
  const int L = shape_.layers;
  vocabParallelLossBackward(get("output.out"), get("labels"), get("loss_mask"));
  const Val dlogits = get("output.out.grad");
  const bool norm = cfg_.family != Family::Mlp;
  const std::string xName = norm ? "norm.out" : hiddenName(L);
  Val dx = linearDx("output", dlogits, outputWeight(), partial(act(xName + ".grad", {B, S, H}), ctx_));
  dx = reduceRowOutput(dx, "output");
  linearDw("output", dlogits, get(xName), outputWeight());
  if (!norm) {
    put(dx);
    return;
  }
  std::vector<Val> nb =
      em_.opN("rmsnorm_backward", {get(hiddenName(L)), get("norm.weight"), dx}, {{"eps", cfg_.normEps}},
              "norm", {hiddenGradLayout(L), grad(paramInfo("norm.weight"))});
  addGrad("norm.weight", nb[1]);
  put(nb[0]);
}

// Cross-entropy written in primitives, one code path for the logical graph and vocabulary shards: the row
// max and the sum of exponentials are global (all-reduced over tp), the target logit is picked on the
// shard that owns it and summed. Per-token quantities carry lineage, so each piece is checked on its own.
// Logits stay [batch, seq, vocab] (reductions over the last dim): a sequence chunk of several rows (context
// parallel) is a box of the 3-d tensor, not of a flattened [batch*seq] one.
void TrainingStep::vocabParallelLoss(const Val& lg, const Val& labels, const Val& mask) {
  const int64_t B = shape_.batch, S = shape_.seq, V = cfg_.vocab;
  const Shape ls = em_.type(lg).shape;
  const int64_t v = ls[2];
  const Group tp = ctx_.group(Axis::TP);
  auto tok = [&](const std::string& name) { return act(name, {B, S, 1}); };
  auto vshard = [&](const std::string& name) { return sharded(act(name, {B, S, V}), 2, ctx_); };
  const Json rowReduce = {{"dims", {2}}, {"keepdim", true}};
  const bool split = ctx_.deg().tp > 1;
  Val mx = em_.op("max", {lg}, rowReduce, "loss",
                  split ? Layout::local("loss.local_max", {ls[0], ls[1], 1}) : tok("loss.max"), "loss.max");
  mx = em_.allReduce(mx, tp, "max", "loss", tok("loss.max"));  // the global row max
  Val z = em_.op("sub", {lg, mx}, {}, "loss", vshard("loss.shifted"));
  Val e = em_.op("exp", {z}, {}, "loss", vshard("loss.exp"));
  Val se = em_.op("sum", {e}, rowReduce, "loss", partial(tok("loss.sumexp"), ctx_));
  se = em_.allReduce(se, tp, "sum", "loss");
  Val lse = em_.op("add", {em_.op("log", {se}, {}, "loss", tok("loss.log_sumexp")), mx}, {}, "loss",
                   tok("loss.lse"));
  Val oh = em_.op("one_hot", {labels}, {{"num_classes", v}, {"start", ctx_.at().tp * v}, {"dtype", "f32"}},
                  "loss", vshard("loss.onehot"));
  Val picked = em_.op("mul", {oh, lg}, {}, "loss", vshard("loss.picked"));
  Val target = em_.op("sum", {picked}, rowReduce, "loss", partial(tok("loss.target"), ctx_));
  target = em_.allReduce(target, tp, "sum", "loss");
  Val t = em_.op("sub", {lse, target}, {}, "loss", tok("loss.token_loss"));
  Layout perToken = act("loss.per_token", {B, S});
  Val t1 = em_.op("reshape", {t}, reshapeTo(perToken), "loss", perToken);
  Val masked = em_.op("mul", {t1, mask}, {}, "loss", act("loss.masked", {B, S}));
  for (const Val& x : {e, se, oh})
    put(x);
  put(em_.op("sum", {masked}, {{"dims", {0, 1}}, {"keepdim", false}}, "loss", lossPart("loss.ce_sum")));
}

void TrainingStep::vocabParallelLossBackward(const Val& /*logits*/, const Val& /*labels*/, const Val& mask) {
  const int64_t B = shape_.batch, S = shape_.seq, V = cfg_.vocab;
  auto vshard = [&](const std::string& name) { return sharded(act(name, {B, S, V}), 2, ctx_); };
  Val p = em_.op("div", {get("loss.exp"), get("loss.sumexp")}, {}, "loss", vshard("loss.softmax"));
  Val diff = em_.op("sub", {p, get("loss.onehot")}, {}, "loss", vshard("loss.softmax_minus_target"));
  Val w = em_.op("mul", {mask, get("loss.inv_valid_tokens")}, {}, "loss", act("loss.token_weight", {B, S}));
  Layout col = act("loss.token_weight_col", {B, S, 1});
  Val wc = em_.op("reshape", {w}, reshapeTo(col), "loss", col);
  put(em_.op("mul", {diff, wc}, {}, "loss", vshard("output.out.grad")));
}

}  // namespace paraproof::models
