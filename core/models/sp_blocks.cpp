// Megatron sequence parallelism and kv-head replication, as small pieces the dense blocks call.
//
// Sequence parallelism (sp, with tp > 1): outside the tensor-parallel blocks (norms, residual adds, the
// hidden state between layers and pipeline stages) activations [B, S, H] are sharded along the sequence (dim
// 1) over the tp group. A column-parallel block starts with an all-gather of the sequence; a row-parallel
// linear ends with a reduce-scatter of its partial output along the sequence instead of an all-reduce.
// Backward is the dual. Norm weights stay replicated, but each tp rank only sees its shard of the sequence,
// so their gradients are partial sums over tp and are all-reduced over tp before the data-parallel reduction
// (Megatron's allreduce of sequence-parallel norm gradients).
//
// kv replication (tp > kv heads): r = tp / kvHeads consecutive tp ranks hold the same kv head (rank t holds
// head t / r). Each of them only sees its own query heads' contribution to that head's gradients, so the
// wk/wv gradients are partial sums over those r ranks: all-reduced over that sub-group ("kv<first rank>")
// before the data-parallel reduction, exactly as the sequence-parallel norms are over tp. Both cases are one
// mechanism: gradSumGroup(p) names the ranks whose contributions are parts of one gradient shard.
#include "core/models/training_step.h"

namespace paraproof::models {

bool TrainingStep::seqParallel() const {
  return ctx_.deg().sp && ctx_.deg().tp > 1;
}

// Under cp, act() is the current zig-zag chunk and sp shards that chunk (gatherSeq and reduceRowOutput then
// work within the chunk), so the cp attention core still sees full-chunk q/k/v.
Layout TrainingStep::seqAct(const std::string& name, Shape logical) const {
  Layout l = act(name, std::move(logical));
  if (seqParallel()) l.shard(1, ctx_.at().tp, ctx_.deg().tp);
  return l;
}

// The all-gather of the sequence restores the logical tensor's full rows of this micro-batch.
Val TrainingStep::gatherSeq(const Val& x, const std::string& scope) {
  if (!seqParallel()) return x;
  return em_.allGather(x, ctx_.group(Axis::TP), 1, act(x.lay.name, x.lay.shape), scope);
}

Val TrainingStep::reduceRowOutput(const Val& partial, const std::string& scope) {
  const Group tp = ctx_.group(Axis::TP);
  if (!seqParallel()) return em_.allReduce(partial, tp, "sum", scope);
  return em_.reduceScatter(partial, tp, 1, "sum", seqAct(partial.lay.name, partial.lay.shape), scope);
}

int TrainingStep::kvReplicas() const {
  const int tp = ctx_.deg().tp;
  return cfg_.kvHeads > 0 && tp > cfg_.kvHeads ? tp / cfg_.kvHeads : 1;
}

Layout TrainingStep::kvSharded(Layout l, int dim) const {
  const int r = kvReplicas();
  return l.shard(dim, ctx_.at().tp / r, ctx_.deg().tp / r);
}

Group TrainingStep::gradSumGroup(const ParamInfo& p) const {
  const Group tp = ctx_.group(Axis::TP);
  if (p.sequenceParallel && seqParallel()) return tp;
  Group g;
  const int r = p.tpDim >= 0 ? p.tpReplicas : 1;
  const int first = tp.indexOf(ctx_.rank()) / r * r;
  for (int i = first; i < first + r; ++i)
    g.ranks.push_back(tp.ranks.at(static_cast<size_t>(i)));
  g.name = (r > 1 ? "kv" : "self") + std::to_string(g.ranks.front());
  return g;
}

// One all-reduce per such gradient, after micro-batch accumulation: the result is this rank's dp/cp part.
void TrainingStep::reduceGradOverShardReplicas(const std::vector<ParamInfo>& ps, std::vector<Val>& accs) {
  const Degrees& d = ctx_.deg();
  for (size_t i = 0; i < ps.size(); ++i) {
    const Group g = gradSumGroup(ps[i]);
    if (g.size() <= 1) continue;
    Layout whole = accs[i].lay;
    whole.partial(ctx_.at().dp * d.cp + ctx_.at().cp, d.dp * d.cp);
    accs[i] = em_.allReduce(accs[i], g, "sum", ps[i].scope, whole);
  }
}

// Each gradient element once: a tp-replicated parameter on tp rank 0, a replicated kv head on the first of
// the ranks sharing it.
bool TrainingStep::countedInGradNorm(const ParamInfo& p) const {
  return p.tpDim >= 0 ? ctx_.at().tp % p.tpReplicas == 0 : ctx_.at().tp == 0;
}

}  // namespace paraproof::models
