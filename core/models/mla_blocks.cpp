// DeepSeek multi-head latent attention (MLA), forward and backward, under Megatron tensor parallelism:
// heads are sharded (wq / wq_b and wkv_b column-parallel, wo row-parallel), the down-projections wq_a, wkv_a
// and their norms are replicated over tp. Gradients flowing from head-sharded ops into the replicated part
// are partial over tp and all-reduced before the replicated backward, so replicated weights get full
// gradients on every tp rank.
//
// Forward (nh heads, dn = qkNope, dr = qkRope, dv = vHead):
//   n1 = rmsnorm(x); q = wq n1 | wq_b rmsnorm(wq_a n1); q -> [.., nh, dn + dr] -> (q_nope, rope(q_pe))
//   kv_a = wkv_a n1 -> (c_kv, k_pe); k_pe gets rope once and is shared by all heads (broadcast)
//   kv = wkv_b rmsnorm(c_kv) -> [.., nh, dn + dv] -> (k_nope, v)
//   o = attention(cat(q_nope, q_pe), cat(k_nope, k_pe), v), scale 1/sqrt(dn + dr); out = wo o.
//
// Sequence parallelism (as the GQA sublayer): x, the norm and the residual hold the tp rank's sequence
// shard; n1 is all-gathered before every projection, wo's partial output is reduce-scattered. Everything
// between - including the replicated down-projections and their norms - runs on the gathered sequence, so
// wq_a, wkv_a, q_a_norm and kv_a_norm see every token and their gradients are complete on each tp rank
// (not sequence-parallel parameters); only attention_norm sees a shard (sequenceParallel). Backward: the
// head-sharded wq's input gradient (partial over tp) is reduce-scattered, the replicated ones (wkv_a, and
// wq_a with q_lora, full on every rank) are sliced to the rank's shard.
//
// Context parallelism: the sublayer is split around its core (mlaInput / mlaCore / the shared attentionOutput
// and the backward parts) like the GQA one; context_parallel.cpp runs the core across both chunks with the
// all-gathered k_full / v (coreOperands()). The rope tables are [S, dr], sliced per chunk like GQA's.
#include <cmath>

#include "core/models/tp_layout.h"
#include "core/models/training_step.h"

namespace paraproof::models {

namespace {
using tp::partial;
using tp::reshapeTo;
using tp::sharded;
Json sliceOf(int dim, int64_t start, int64_t end) {
  return {{"dim", dim}, {"start", start}, {"end", end}};
}
}  // namespace

std::vector<ParamInfo> TrainingStep::mlaParams(int layer) const {
  const MlaConfig& m = cfg_.mla;
  const int64_t h = cfg_.hidden, nh = cfg_.heads, dq = m.qkNope + m.qkRope;
  const std::string l = "layers." + std::to_string(layer), at = l + ".attention";
  std::vector<ParamInfo> ps;
  auto add = [&](const std::string& scope, Shape s, int tpDim) {
    ps.push_back(ParamInfo{scope + ".weight", scope, std::move(s), tpDim, layer + 1});
  };
  add(l + ".attention_norm", {h}, -1);
  ps.back().sequenceParallel = true;  // sees only its sequence shard under sp; the rest the gathered one
  if (m.qLora == 0) {
    add(at + ".wq", {nh * dq, h}, 0);
  } else {
    add(at + ".wq_a", {m.qLora, h}, -1);
    add(at + ".q_a_norm", {m.qLora}, -1);
    add(at + ".wq_b", {nh * dq, m.qLora}, 0);
  }
  add(at + ".wkv_a", {m.kvLora + m.qkRope, h}, -1);
  add(at + ".kv_a_norm", {m.kvLora}, -1);
  add(at + ".wkv_b", {nh * (m.qkNope + m.vHead), m.kvLora}, 0);
  add(at + ".wo", {h, nh * m.vHead}, 1);
  return ps;
}

void TrainingStep::mlaForward(int l) {
  mlaInput(l);
  mlaCore(l);
  attentionOutput(l);
}

void TrainingStep::mlaInput(int l) {
  const MlaConfig& m = cfg_.mla;
  const std::string s = "layers." + std::to_string(l), at = s + ".attention";
  const int64_t B = shape_.batch, S = shape_.seq, H = cfg_.hidden, nh = cfg_.heads;
  const int64_t dn = m.qkNope, dr = m.qkRope, dv = m.vHead, dq = dn + dr, r = m.kvLora;
  const Json eps = {{"eps", cfg_.normEps}};
  const Val x = get(hiddenName(l));
  const Val &cos = get("rope.cos"), &sin = get("rope.sin");
  auto heads = [&](const std::string& name, Shape shape) {
    return sharded(act(name, std::move(shape)), 2, ctx_);
  };

  Val n1 = em_.op("rmsnorm", {x, get(s + ".attention_norm.weight")}, eps, s + ".attention_norm",
                  seqAct(s + ".attention_norm.out", {B, S, H}));
  n1 = gatherSeq(n1, s + ".attention_norm");
  put(n1);

  // Queries: column-parallel over heads, directly or through the replicated low-rank projection.
  std::string qw = at + ".wq";
  Val qIn = n1;
  if (m.qLora > 0) {
    Val qa = linear(at + ".wq_a", n1, at + ".wq_a.weight", act(at + ".wq_a.out", {B, S, m.qLora}));
    qIn = em_.op("rmsnorm", {qa, get(at + ".q_a_norm.weight")}, eps, at + ".q_a_norm",
                 act(at + ".q_a_norm.out", {B, S, m.qLora}));
    put(qa);
    put(qIn);
    qw = at + ".wq_b";
  }
  Val qf = linear(qw, qIn, qw + ".weight", heads(qw + ".out", {B, S, nh * dq}));
  Layout q4 = heads(at + ".q", {B, S, nh, dq});
  Val q = em_.op("reshape", {qf}, reshapeTo(q4), qw, q4);
  std::vector<Val> qs = em_.opN("split", {q}, {{"dim", 3}, {"sizes", {dn, dr}}}, qw,
                                {heads(at + ".q_nope", {B, S, nh, dn}), heads(at + ".q_pe", {B, S, nh, dr})});
  Val qpe = em_.op("rope", {qs[1], cos, sin}, {}, at + ".rope", heads(at + ".q_pe_rot", {B, S, nh, dr}));

  // Keys and values: the replicated down-projection, one rope key for all heads, the head-sharded
  // up-projection.
  Val kva = linear(at + ".wkv_a", n1, at + ".wkv_a.weight", act(at + ".wkv_a.out", {B, S, r + dr}));
  std::vector<Val> kvs = em_.opN("split", {kva}, {{"dim", 2}, {"sizes", {r, dr}}}, at + ".wkv_a",
                                 {act(at + ".c_kv", {B, S, r}), act(at + ".k_pe", {B, S, dr})});
  Layout kpe4 = act(at + ".k_pe4", {B, S, 1, dr});
  Val kpe = em_.op("reshape", {kvs[1]}, reshapeTo(kpe4), at + ".wkv_a", kpe4);
  Val kpeRot = em_.op("rope", {kpe, cos, sin}, {}, at + ".rope", act(at + ".k_pe_rot", {B, S, 1, dr}));
  Val ckvn = em_.op("rmsnorm", {kvs[0], get(at + ".kv_a_norm.weight")}, eps, at + ".kv_a_norm",
                    act(at + ".kv_a_norm.out", {B, S, r}));
  Val kvf =
      linear(at + ".wkv_b", ckvn, at + ".wkv_b.weight", heads(at + ".wkv_b.out", {B, S, nh * (dn + dv)}));
  Layout kv4 = heads(at + ".kv", {B, S, nh, dn + dv});
  Val kv = em_.op("reshape", {kvf}, reshapeTo(kv4), at + ".wkv_b", kv4);
  std::vector<Val> kvh = em_.opN("split", {kv}, {{"dim", 3}, {"sizes", {dn, dv}}}, at + ".wkv_b",
                                 {heads(at + ".k_nope", {B, S, nh, dn}), heads(at + ".v", {B, S, nh, dv})});

  Val qFull =
      em_.op("concat", {qs[0], qpe}, {{"dim", 3}}, at + ".core", heads(at + ".q_full", {B, S, nh, dq}));
  Layout kpeHeads = heads(at + ".k_pe_heads", {B, S, nh, dr});
  Val kpeB = em_.op("broadcast_to", {kpeRot}, reshapeTo(kpeHeads), at + ".core", kpeHeads);
  Val kFull =
      em_.op("concat", {kvh[0], kpeB}, {{"dim", 3}}, at + ".core", heads(at + ".k_full", {B, S, nh, dq}));
  for (const Val& t : {kvs[0], ckvn, kvh[1], qFull, kFull})
    put(t);
}

void TrainingStep::mlaCore(int l) {
  const std::string at = "layers." + std::to_string(l) + ".attention";
  const int64_t B = shape_.batch, S = shape_.seq, nh = cfg_.heads;
  const Val& pos = get("rope.positions");
  put(em_.op("attention", {get(at + ".q_full"), get(at + ".k_full"), get(at + ".v"), pos, pos},
             coreOperands().attrs, at + ".core",
             sharded(act(at + ".core.out", {B, S, nh, cfg_.mla.vHead}), 2, ctx_)));
}

void TrainingStep::mlaBackward(int l) {
  attentionOutputBackward(l);
  mlaCoreBackward(l);
  mlaInputBackward(l);
}

void TrainingStep::mlaCoreBackward(int l) {
  const MlaConfig& m = cfg_.mla;
  const std::string at = "layers." + std::to_string(l) + ".attention";
  const int64_t B = shape_.batch, S = shape_.seq, nh = cfg_.heads, dq = m.qkNope + m.qkRope;
  auto heads = [&](const std::string& name, Shape shape) {
    return sharded(act(name, std::move(shape)), 2, ctx_);
  };
  const Val& pos = get("rope.positions");
  std::vector<Val> dqkv = em_.opN(
      "attention_backward",
      {get(at + ".q_full"), get(at + ".k_full"), get(at + ".v"), pos, pos, get(at + ".core.out.grad")},
      coreOperands().attrs, at + ".core",
      {heads(at + ".q_full.grad", {B, S, nh, dq}), heads(at + ".k_full.grad", {B, S, nh, dq}),
       heads(at + ".v.grad", {B, S, nh, m.vHead})});
  for (const Val& t : dqkv)
    put(t);
}

void TrainingStep::mlaInputBackward(int l) {
  const MlaConfig& m = cfg_.mla;
  const std::string s = "layers." + std::to_string(l), at = s + ".attention";
  const int64_t B = shape_.batch, S = shape_.seq, H = cfg_.hidden, nh = cfg_.heads;
  const int64_t dn = m.qkNope, dr = m.qkRope, dv = m.vHead, dq = dn + dr, r = m.kvLora;
  const Json eps = {{"eps", cfg_.normEps}};
  const Group tp = ctx_.group(Axis::TP);
  const Val &cos = get("rope.cos"), &sin = get("rope.sin");
  auto heads = [&](const std::string& name, Shape shape) {
    return sharded(act(name, std::move(shape)), 2, ctx_);
  };
  // Under sp: this rank's sequence shard of an input gradient every tp rank holds in full.
  auto ownShard = [&](const Val& full, const std::string& scope) {
    if (!seqParallel()) return full;
    const int64_t n = em_.type(full).shape.at(1) / ctx_.deg().tp, start = ctx_.at().tp * n;
    return em_.op("slice", {full}, sliceOf(1, start, start + n), scope,
                  seqAct(full.lay.name, full.lay.shape).named(full.lay.name + ".shard"));
  };
  const Val dh1 = get(at + ".residual.grad");
  const Val n1 = get(s + ".attention_norm.out");
  const Val dqFull = get(at + ".q_full.grad"), dkFull = get(at + ".k_full.grad"), dV = get(at + ".v.grad");

  // Concat backward: slices of the query and key gradients.
  Val dqNope =
      em_.op("slice", {dqFull}, sliceOf(3, 0, dn), at + ".core", heads(at + ".q_nope.grad", {B, S, nh, dn}));
  Val dqPeRot = em_.op("slice", {dqFull}, sliceOf(3, dn, dq), at + ".core",
                       heads(at + ".q_pe_rot.grad", {B, S, nh, dr}));
  Val dkNope =
      em_.op("slice", {dkFull}, sliceOf(3, 0, dn), at + ".core", heads(at + ".k_nope.grad", {B, S, nh, dn}));
  Val dkPeHeads = em_.op("slice", {dkFull}, sliceOf(3, dn, dq), at + ".core",
                         heads(at + ".k_pe_heads.grad", {B, S, nh, dr}));

  // The shared rope key: broadcast backward sums over heads - over this rank's heads, a part of the sum
  // over tp - then the tp all-reduce makes it whole before the replicated backward.
  Val dkPeRot = em_.op("sum", {dkPeHeads}, {{"dims", {2}}, {"keepdim", true}}, at + ".core",
                       partial(act(at + ".k_pe_rot.grad", {B, S, 1, dr}), ctx_));
  dkPeRot = em_.allReduce(dkPeRot, tp, "sum", at + ".core");
  Val dkPe4 =
      em_.op("rope_backward", {dkPeRot, cos, sin}, {}, at + ".rope", act(at + ".k_pe4.grad", {B, S, 1, dr}));
  Layout dkPeLay = act(at + ".k_pe.grad", {B, S, dr});
  Val dkPe = em_.op("reshape", {dkPe4}, reshapeTo(dkPeLay), at + ".wkv_a", dkPeLay);

  // Query path back to n1: partial over tp through wq (reduced as a row output: all-reduce, or
  // reduce-scatter under sp), full on every rank through the replicated q_lora projection.
  Val dqPe = em_.op("rope_backward", {dqPeRot, cos, sin}, {}, at + ".rope",
                    heads(at + ".q_pe.grad", {B, S, nh, dr}));
  const std::string qw = m.qLora > 0 ? at + ".wq_b" : at + ".wq";
  Val dq4 = em_.op("concat", {dqNope, dqPe}, {{"dim", 3}}, qw, heads(at + ".q.grad", {B, S, nh, dq}));
  Layout dqfLay = heads(qw + ".out.grad", {B, S, nh * dq});
  Val dqf = em_.op("reshape", {dq4}, reshapeTo(dqfLay), qw, dqfLay);
  Val dn1q;
  if (m.qLora == 0) {
    dn1q = linearDx(qw, dqf, qw + ".weight", partial(act(qw + ".dx", {B, S, H}), ctx_));
    dn1q = reduceRowOutput(dn1q, qw);
    linearDw(qw, dqf, n1, qw + ".weight");
  } else {
    const Val qan = get(at + ".q_a_norm.out");
    Val dqan =
        linearDx(qw, dqf, qw + ".weight", partial(act(at + ".q_a_norm.out.grad", {B, S, m.qLora}), ctx_));
    dqan = em_.allReduce(dqan, tp, "sum", qw);
    linearDw(qw, dqf, qan, qw + ".weight");
    std::vector<Val> qb =
        em_.opN("rmsnorm_backward", {get(at + ".wq_a.out"), get(at + ".q_a_norm.weight"), dqan}, eps,
                at + ".q_a_norm",
                {act(at + ".wq_a.out.grad", {B, S, m.qLora}), grad(paramInfo(at + ".q_a_norm.weight"))});
    addGrad(at + ".q_a_norm.weight", qb[1]);
    dn1q = linearDx(at + ".wq_a", qb[0], at + ".wq_a.weight", act(at + ".wq_a.dx", {B, S, H}));
    dn1q = ownShard(dn1q, at + ".wq_a");
    linearDw(at + ".wq_a", qb[0], n1, at + ".wq_a.weight");
  }

  // Key/value path: split backward = concat; the up-projection's input gradient is partial over tp.
  Val dkv4 = em_.op("concat", {dkNope, dV}, {{"dim", 3}}, at + ".wkv_b",
                    heads(at + ".kv.grad", {B, S, nh, dn + dv}));
  Layout dkvfLay = heads(at + ".wkv_b.out.grad", {B, S, nh * (dn + dv)});
  Val dkvf = em_.op("reshape", {dkv4}, reshapeTo(dkvfLay), at + ".wkv_b", dkvfLay);
  Val dckvn = linearDx(at + ".wkv_b", dkvf, at + ".wkv_b.weight",
                       partial(act(at + ".kv_a_norm.out.grad", {B, S, r}), ctx_));
  dckvn = em_.allReduce(dckvn, tp, "sum", at + ".wkv_b");
  linearDw(at + ".wkv_b", dkvf, get(at + ".kv_a_norm.out"), at + ".wkv_b.weight");
  std::vector<Val> kb = em_.opN(
      "rmsnorm_backward", {get(at + ".c_kv"), get(at + ".kv_a_norm.weight"), dckvn}, eps, at + ".kv_a_norm",
      {act(at + ".c_kv.grad", {B, S, r}), grad(paramInfo(at + ".kv_a_norm.weight"))});
  addGrad(at + ".kv_a_norm.weight", kb[1]);
  Val dkva = em_.op("concat", {kb[0], dkPe}, {{"dim", 2}}, at + ".wkv_a",
                    act(at + ".wkv_a.out.grad", {B, S, r + dr}));
  Val dn1kv = linearDx(at + ".wkv_a", dkva, at + ".wkv_a.weight", act(at + ".wkv_a.dx", {B, S, H}));
  dn1kv = ownShard(dn1kv, at + ".wkv_a");
  linearDw(at + ".wkv_a", dkva, n1, at + ".wkv_a.weight");

  Val dn1 = em_.op("add", {dn1q, dn1kv}, {}, s + ".attention_norm",
                   seqAct(s + ".attention_norm.out.grad", {B, S, H}));
  std::vector<Val> na =
      em_.opN("rmsnorm_backward", {get(hiddenName(l)), get(s + ".attention_norm.weight"), dn1}, eps,
              s + ".attention_norm",
              {seqAct(s + ".attention_norm.dx", {B, S, H}), grad(paramInfo(s + ".attention_norm.weight"))});
  addGrad(s + ".attention_norm.weight", na[1]);
  put(em_.op("add", {dh1, na[0]}, {}, at + ".residual", hiddenGradLayout(l)));
}

}  // namespace paraproof::models
