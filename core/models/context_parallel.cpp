// Context parallelism (Megatron / TransformerEngine style, all-gathered keys and values, zig-zag load
// balancing). The sequence is split into 2cp chunks; cp rank r holds chunks r and 2cp-1-r as two separate
// values ("~c0", "~c1": a lineage is one box). Everything but attention runs chunk by chunk. Attention:
//   forward  - each chunk's K and V are all-gathered over cp: chunk 0 in rank order gives the first half of
//              the sequence, chunk 1 over the reversed group the second half, so both gathers and their
//              concatenation are boxes of the logical K/V; each chunk's queries attend over all keys with
//              their true positions (kpos = all positions, qpos = the chunk's slice).
//   backward - each chunk's attention_backward gives dQ for its queries and its queries' contribution to dK
//              and dV of every key (value part 2r+c of 2cp); the two chunks' contributions are added (part
//              r of cp) and each half is reduce-scattered back to the owner chunks (the transpose of the
//              two gathers).
// Every chunk attends over all keys, not only the unmasked ones (chunk r <= cp-1 could skip the second
// half): (1) `attention` masks with a finite fill (-1e9), so dropping masked keys (as flash-attention
// kernels with -inf do) is not exactly the logical computation over the reals; (2) positions are a stage
// input with lineage, so inside the attention stage they are arbitrary values and the verifier cannot know
// the skipped keys are masked at all (tried: the stage fails with a confirmed counterexample).
// The core's operands come from coreOperands(): GQA's q_rot / k_rot / v, or MLA's q_full / k_full / v.
#include <algorithm>
#include <tuple>

#include "core/models/tp_layout.h"
#include "core/models/training_step.h"

namespace paraproof::models {

namespace {
using tp::sharded;
}  // namespace

void TrainingStep::forEachChunk(bool reverse, const std::function<void()>& fn) {
  const int n = chunks();
  for (int i = 0; i < n; ++i) {
    setChunk(reverse ? n - 1 - i : i);
    fn();
  }
  setChunk(0);
}

Group TrainingStep::cpReversed() const {
  Group g = ctx_.group(Axis::CP);
  std::reverse(g.ranks.begin(), g.ranks.end());
  g.name = "cprev" + std::to_string(g.ranks.front());
  return g;
}

// Each chunk's RoPE tables and query positions: slices of the step-wide ones at the chunk's true offset,
// shared by every micro-batch (so the blocks read them as "rope.cos" etc. from the chunk's environment).
void TrainingStep::sliceRopeTables() {
  for (int c = 0; c < chunks(); ++c) {
    em_.setChunk(c, chunks());
    const int64_t start = chunkStart(c), len = chunkLength();
    for (const char* name : {"rope.cos", "rope.sin", "rope.positions"}) {
      const Val& whole = global_.at(name);
      Layout l = whole.lay;
      l.slice(0, start, len);
      const Val v = em_.op("slice", {whole}, {{"dim", 0}, {"start", start}, {"end", start + len}}, "rope", l);
      for (int m = 0; m < ctx_.deg().mb; ++m)
        env(m, c)[name] = v;
    }
  }
  em_.setChunk(-1, 1);
}

void TrainingStep::contextParallelAttentionForward(int l) {
  const std::string at = "layers." + std::to_string(l) + ".attention";
  const CoreOperands op = coreOperands();  // GQA or MLA
  const int64_t B = shape_.batch, S = shape_.seq, nh = cfg_.heads, nkv = op.kvHeads;
  forEachChunk(false, [&] { coreInput(l); });

  // The whole sequence's keys and values: first half from chunk 0 (rank order), second half from chunk 1
  // (reversed rank order: rank r's chunk 1 is chunk 2cp-1-r).
  const Group groups[2] = {ctx_.group(Axis::CP), cpReversed()};
  for (auto [name, d] : {std::pair{op.k, op.qkDim}, std::pair{op.v, op.vDim}}) {
    const Layout all = kvSharded(fullSeq(at + name, {B, S, nkv, d}), 2);
    std::vector<Val> halves;
    for (int c = 0; c < 2; ++c) {
      setChunk(c);
      Layout half = all;
      half.slice(1, c * S / 2, S / 2);
      halves.push_back(em_.allGather(get(at + name), groups[c], 1, half, at + ".core"));
    }
    em_.setChunk(-1, 1);
    const Val gathered =
        em_.op("concat", halves, {{"dim", 1}}, at + ".core", all.named(at + name + ".gathered"));
    for (int c = 0; c < 2; ++c)
      env(mb_, c)[at + name + ".gathered"] = gathered;
  }
  const Val& kpos = global_.at("rope.positions");
  forEachChunk(false, [&] {
    put(em_.op("attention",
               {get(at + op.q), get(at + op.k + ".gathered"), get(at + op.v + ".gathered"),
                get("rope.positions"), kpos},
               op.attrs, at + ".core", sharded(act(at + ".core.out", {B, S, nh, op.vDim}), 2, ctx_)));
    attentionOutput(l);
  });
}

void TrainingStep::contextParallelAttentionBackward(int l) {
  const std::string at = "layers." + std::to_string(l) + ".attention";
  const CoreOperands op = coreOperands();
  const int64_t B = shape_.batch, S = shape_.seq, nh = cfg_.heads, nkv = op.kvHeads;
  const int r = ctx_.at().cp, cp = ctx_.deg().cp;
  // With replicated kv heads a rank's dK/dV is also only its query heads' share: part k of the R replicas.
  const int R = kvReplicas(), k = ctx_.at().tp % R;
  forEachChunk(true, [&] { attentionOutputBackward(l); });

  // Per chunk: dQ of its queries; its queries' contribution to dK, dV of all keys (part 2r+c of 2cp, times
  // the kv replicas' split).
  const Val& kpos = global_.at("rope.positions");
  std::vector<Val> dk(2), dv(2);
  forEachChunk(true, [&] {
    auto contribution = [&](const std::string& name, int64_t d) {
      Layout g = kvSharded(fullSeq(at + name, {B, S, nkv, d}), 2).named(at + name + ".chunk");
      return g.partial((2 * r + chunk_) * R + k, 2 * cp * R);
    };
    std::vector<Val> dqkv =
        em_.opN("attention_backward",
                {get(at + op.q), get(at + op.k + ".gathered"), get(at + op.v + ".gathered"),
                 get("rope.positions"), kpos, get(at + ".core.out.grad")},
                op.attrs, at + ".core",
                {sharded(act(at + op.q + ".grad", {B, S, nh, op.qkDim}), 2, ctx_),
                 contribution(op.k + ".grad", op.qkDim), contribution(op.v + ".grad", op.vDim)});
    put(dqkv[0]);
    dk[chunk_] = dqkv[1];
    dv[chunk_] = dqkv[2];
  });

  // This rank's contribution (part r of cp), its halves reduce-scattered back to the chunks that own them
  // (still part k of R with replicated kv heads, as kvGrad on the non-cp path).
  const Group groups[2] = {ctx_.group(Axis::CP), cpReversed()};
  for (auto [name, parts, d] :
       {std::tuple{op.k + ".grad", dk, op.qkDim}, std::tuple{op.v + ".grad", dv, op.vDim}}) {
    em_.setChunk(-1, 1);
    Layout local = kvSharded(fullSeq(at + name, {B, S, nkv, d}), 2);
    local.partial(r * R + k, cp * R);
    const Val sum = em_.op("add", {parts[1], parts[0]}, {}, at + ".core", local.named(at + name + ".local"));
    for (int c = 0; c < 2; ++c) {
      em_.setChunk(-1, 1);
      Layout half = local;
      half.slice(1, c * S / 2, S / 2);
      const Val h = em_.op("slice", {sum}, {{"dim", 1}, {"start", c * S / 2}, {"end", (c + 1) * S / 2}},
                           at + ".core", half.named(at + name + ".half" + std::to_string(c)));
      setChunk(c);
      put(em_.reduceScatter(h, groups[c], 1, "sum", kvGrad(at + name, {B, S, nkv, d}), at + ".core"));
    }
  }
  setChunk(0);
  forEachChunk(true, [&] { coreInputBackward(l); });
}

}  // namespace paraproof::models
