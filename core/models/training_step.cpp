#include "core/models/training_step.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace paraproof::models {

TrainingStep::TrainingStep(const ModelConfig& cfg, StepShape shape, const ShardContext& ctx, Emitter& em)
    : cfg_(cfg), shape_(shape), ctx_(ctx), em_(em), env_(static_cast<size_t>(ctx.deg().mb * chunks())) {}

std::vector<ParamInfo> TrainingStep::params(int block) const {
  const int64_t h = cfg_.hidden, v = cfg_.vocab, f = cfg_.ffn;
  std::vector<ParamInfo> ps;
  auto add = [&](const std::string& scope, Shape s, int tpDim) {
    ps.push_back(ParamInfo{scope + ".weight", scope, std::move(s), tpDim, block});
  };
  if (block == 0) {
    add("embed", {v, h}, 0);
  } else if (block == headBlock()) {
    if (cfg_.family != Family::Mlp) {
      add("norm", {h}, -1);
      ps.back().sequenceParallel = true;
    }
    if (!cfg_.tiedEmbedding) add("output", {v, h}, 0);
  } else if (cfg_.family == Family::Mlp) {
    const std::string l = "layers." + std::to_string(block - 1);
    add(l + ".mlp.fc1", {f, h}, 0);
    add(l + ".mlp.fc2", {h, f}, 1);
  } else {
    ps = attentionParams(block - 1);
    for (ParamInfo& p : ffnParams(block - 1))
      ps.push_back(std::move(p));
  }
  return ps;
}

std::vector<ParamInfo> TrainingStep::attentionParams(int layer) const {
  if (cfg_.family == Family::DeepSeek) return mlaParams(layer);
  const int64_t h = cfg_.hidden, d = cfg_.headDim();
  const std::string l = "layers." + std::to_string(layer);
  std::vector<ParamInfo> ps;
  auto add = [&](const std::string& scope, Shape s, int tpDim) {
    ps.push_back(ParamInfo{scope + ".weight", scope, std::move(s), tpDim, layer + 1});
  };
  add(l + ".attention_norm", {h}, -1);
  ps.back().sequenceParallel = true;
  add(l + ".attention.wq", {cfg_.heads * d, h}, 0);
  add(l + ".attention.wk", {cfg_.kvHeads * d, h}, 0);
  ps.back().tpReplicas = kvReplicas();
  add(l + ".attention.wv", {cfg_.kvHeads * d, h}, 0);
  ps.back().tpReplicas = kvReplicas();
  add(l + ".attention.wo", {h, cfg_.heads * d}, 1);
  return ps;
}

std::vector<ParamInfo> TrainingStep::ffnParams(int layer) const {
  if (moeLayer(layer)) return moeParams(layer);
  const int64_t h = cfg_.hidden, f = cfg_.ffn;
  const std::string l = "layers." + std::to_string(layer);
  std::vector<ParamInfo> ps;
  auto add = [&](const std::string& scope, Shape s, int tpDim) {
    ps.push_back(ParamInfo{scope + ".weight", scope, std::move(s), tpDim, layer + 1});
  };
  add(l + ".ffn_norm", {h}, -1);
  ps.back().sequenceParallel = true;
  add(l + ".mlp.w1", {f, h}, 0);
  add(l + ".mlp.w3", {f, h}, 0);
  add(l + ".mlp.w2", {h, f}, 1);
  return ps;
}

std::string TrainingStep::hiddenName(int block) const {
  return block == 0 ? "embed.out" : "layers." + std::to_string(block - 1) + ".out";
}

Layout TrainingStep::hiddenLayout(int block) const {
  return seqAct(hiddenName(block), {shape_.batch, shape_.seq, cfg_.hidden});
}

Layout TrainingStep::hiddenGradLayout(int block) const {
  return seqAct(hiddenName(block) + ".grad", {shape_.batch, shape_.seq, cfg_.hidden});
}

Layout TrainingStep::act(const std::string& name, Shape logical) const {
  Layout l = fullSeq(name, std::move(logical));
  if (chunks() > 1) l.slice(1, chunkStart(chunk_), chunkLength());
  return l;
}

Layout TrainingStep::fullSeq(const std::string& name, Shape logical) const {
  const Degrees& d = ctx_.deg();
  const int64_t rows = shape_.batch / (d.dp * d.mb);
  Layout l = Layout::full(name, std::move(logical));
  l.slice(0, ctx_.at().dp * (shape_.batch / d.dp) + mb_ * rows, rows);
  return l;
}

// Zig-zag load balancing: of 2cp equal chunks, cp rank r holds r and 2cp-1-r (causal work evens out).
int64_t TrainingStep::chunkStart(int chunk) const {
  const int cp = ctx_.deg().cp, r = ctx_.at().cp;
  return (chunk == 0 ? r : 2 * cp - 1 - r) * chunkLength();
}

int64_t TrainingStep::chunkLength() const {
  return shape_.seq / (2 * ctx_.deg().cp);
}

Layout TrainingStep::param(const ParamInfo& p) const {
  Layout l = Layout::full(p.name, p.shape);
  if (p.tpDim >= 0) l.shard(p.tpDim, ctx_.at().tp / p.tpReplicas, ctx_.deg().tp / p.tpReplicas);
  if (p.epDim >= 0) l.shard(p.epDim, ctx_.epIndex(), ctx_.deg().ep);
  return l;
}

int TrainingStep::gradPart() const {
  const Degrees& d = ctx_.deg();
  return ((ctx_.at().dp * d.cp + ctx_.at().cp) * d.mb + mb_) * chunks() + chunk_;
}

int TrainingStep::gradParts() const {
  const Degrees& d = ctx_.deg();
  return d.dp * d.cp * d.mb * chunks();
}

Layout TrainingStep::grad(const ParamInfo& p) const {
  Layout l = param(p).renamed(p.name + ".grad");
  // A routed expert's contribution covers the tokens of this rank's whole expert-parallel group.
  if (p.epDim >= 0) return l.partial(expertGradPart(), expertGradParts());
  // Ranks of gradSumGroup each contribute a partial sum: a further split of this micro-batch's part.
  const Group g = gradSumGroup(p);
  l.partial(gradPart() * g.size() + std::max(0, g.indexOf(ctx_.rank())), gradParts() * g.size());
  return l;
}

Layout TrainingStep::gradUse(const std::string& weight, const std::string& scope) const {
  Layout l = grad(paramInfo(weight));
  // A tied weight's gradient is the sum of its uses; each use's contribution is a logical tensor of its own.
  if (cfg_.tiedEmbedding && weight == "embed.weight") l = l.renamed(weight + ".grad." + scope);
  return l;
}

std::string TrainingStep::outputWeight() const {
  return cfg_.tiedEmbedding ? "embed.weight" : "output.weight";
}

int TrainingStep::zeroStage() const {
  return ctx_.group(Axis::DPCP).size() > 1 ? ctx_.deg().zero : 0;
}

// Routed experts under ep: only the expert-data-parallel group holds the same experts (DeepSpeed-MoE /
// Megatron's expert-data-parallel distributed optimizer); with one such rank they are not sharded.
Group TrainingStep::zeroGroup(const ParamInfo& p) const {
  return ctx_.group(p.epDim >= 0 && ctx_.deg().ep > 1 ? Axis::EDP : Axis::DPCP);
}

int TrainingStep::zeroStage(const ParamInfo& p) const {
  return zeroGroup(p).size() > 1 ? zeroStage() : 0;
}

Layout TrainingStep::shardOf(Layout l, const ParamInfo& p) const {
  const Group g = zeroGroup(p);
  return l.shard(0, g.indexOf(ctx_.rank()), g.size());
}

Layout TrainingStep::optimizerLayout(const ParamInfo& p) const {
  return zeroStage(p) >= 1 ? shardOf(param(p), p) : param(p);
}

bool TrainingStep::tiedAcrossStages() const {
  return cfg_.tiedEmbedding && ctx_.deg().pp > 1 && (firstBlock_ == 0 || lastBlock_ == headBlock());
}

bool TrainingStep::tiedCopy(const ParamInfo& p) const {
  return cfg_.tiedEmbedding && p.name == "embed.weight" && p.block == headBlock();
}

// The first and the last pipeline stage's ranks with this rank's dp/cp/tp coordinate.
Group TrainingStep::embeddingGroup() const {
  MeshCoord first = ctx_.at(), last = ctx_.at();
  first.pp = 0;
  last.pp = ctx_.deg().pp - 1;
  Group g;
  g.ranks = {ctx_.rankOf(first), ctx_.rankOf(last)};
  g.name = "emb" + std::to_string(g.ranks.front());
  return g;
}

// The parameters whose gradients are complete after `block`'s backward on this stage.
std::vector<ParamInfo> TrainingStep::gradParams(int block) const {
  std::vector<ParamInfo> ps;
  for (const ParamInfo& p : owned_)
    if (p.block == block) ps.push_back(p);
  return ps;
}

Layout TrainingStep::lossPart(const std::string& name) const {
  Layout l = Layout::full(name, {});
  l.partial(gradPart(), gradParts());
  return l;
}

const ParamInfo& TrainingStep::paramInfo(const std::string& name) const {
  for (const ParamInfo& p : owned_)
    if (p.name == name) return p;
  throw std::logic_error("generator: parameter '" + name + "' is not owned by this stage");
}

std::map<std::string, Val>& TrainingStep::env(int mb, int chunk) {
  return env_.at(static_cast<size_t>(mb * chunks() + chunk));
}

void TrainingStep::put(const Val& v) {
  env(mb_, chunk_)[v.lay.name] = v;
}

const Val& TrainingStep::get(const std::string& name) const {
  const auto& env = env_.at(static_cast<size_t>(mb_ * chunks() + chunk_));
  if (auto it = env.find(name); it != env.end()) return it->second;
  if (auto it = global_.find(name); it != global_.end()) return it->second;
  throw std::logic_error("generator: value '" + name + "' is not available here");
}

void TrainingStep::setMicroBatch(int m) {
  mb_ = m;
  em_.setMicroBatch(m, ctx_.deg().mb);
  em_.setChunk(chunk_, chunks());
}

void TrainingStep::setChunk(int c) {
  chunk_ = c;
  em_.setChunk(c, chunks());
}

void TrainingStep::stepWide() {
  em_.setMicroBatch(-1, 1);
  em_.setChunk(-1, 1);
}

namespace {
// Sums per-micro-batch parts into one value with layout `total` (a sum of parts is itself a part).
Val accumulate(Emitter& em, const std::vector<Val>& parts, const Layout& total, const std::string& scope) {
  Val acc = parts.front();
  const std::string base = total.as.empty() ? total.name : total.as;
  for (size_t i = 1; i < parts.size(); ++i) {
    Layout l = i + 1 == parts.size() ? total : Layout::local(base + "." + std::to_string(i), total.shape);
    if (i + 1 != parts.size()) l.box = total.box;
    acc = em.op("add", {acc, parts[i]}, {}, scope, l, total.name);
  }
  return acc;
}

// The lineage part a device holds after accumulating its micro-batches (and context-parallel chunks).
// Per-micro-batch parts are numbered ((replica * mb + micro-batch) * chunks + chunk) * sub + k, where `sub`
// splits a gradient that is partial within a tp sub-group (see grad()); the sum is part replica * sub + k of
// replicas * sub (replicas: dp*cp, or the expert-data-parallel group for routed experts).
Layout accumulated(Layout l, const ShardContext& ctx, const std::string& valueName, int sub = 1) {
  const Degrees& d = ctx.deg();
  const int per = d.mb * (d.cp > 1 ? 2 : 1);  // chunks as TrainingStep::chunks()
  l.partial(l.part / (per * sub) * sub + l.part % sub, l.parts / per);
  return l.named(valueName);
}
}  // namespace

// ZeRO >= 1: m and v hold only this rank's shard; ZeRO-3: so does the parameter itself.
void TrainingStep::declareParam(const ParamInfo& p) {
  owned_.push_back(p);
  const Layout opt = optimizerLayout(p);
  if (zeroStage(p) >= 3)
    global_[p.name + ".shard"] = em_.input(opt);
  else
    global_[p.name] = em_.input(param(p));
  global_[p.name + ".m"] = em_.input(opt.renamed(p.name + ".m"));
  global_[p.name + ".v"] = em_.input(opt.renamed(p.name + ".v"));
}

// ZeRO-3: a block's parameters are all-gathered over the data-parallel group once, before the block's first
// forward (micro-batch 0), and the full copies are reused by every micro-batch's forward and backward (no
// second gather for backward: simpler, and equivalent - only memory differs).
void TrainingStep::gatherParams(int block) {
  if (zeroStage() < 3) return;
  const int saved = mb_;
  stepWide();
  for (const ParamInfo& p : owned_)
    if (p.block == block && !global_.count(p.name) && zeroStage(p) >= 3)
      global_[p.name] = em_.allGather(global_.at(p.name + ".shard"), zeroGroup(p), 0, param(p), p.scope);
  setMicroBatch(saved);
}

void TrainingStep::begin(int firstBlock, int lastBlock) {
  firstBlock_ = firstBlock;
  lastBlock_ = lastBlock;
  setMicroBatch(0);
  stepWide();
  for (int b = firstBlock; b <= lastBlock; ++b)
    for (ParamInfo& p : params(b))
      declareParam(p);
  if (tiedAcrossStages() && firstBlock != 0) {
    // The last stage's copy of the tied embedding: its gradient is complete after the head's backward.
    ParamInfo copy = params(0).front();
    copy.block = headBlock();
    declareParam(copy);
  }
  const bool hasLayers = firstBlock <= shape_.layers && lastBlock >= 1;
  if (hasLayers && cfg_.family != Family::Mlp) {
    // MLA rotates only the decoupled rope part of queries and keys.
    const int64_t d = cfg_.family == Family::DeepSeek ? cfg_.mla.qkRope : cfg_.headDim();
    global_["rope.cos"] = em_.input(Layout::full("rope.cos", {shape_.seq, d}));
    global_["rope.sin"] = em_.input(Layout::full("rope.sin", {shape_.seq, d}));
    global_["rope.positions"] = em_.op("iota", {}, {{"n", shape_.seq}, {"dtype", "i64"}}, "rope",
                                       Layout::full("rope.positions", {shape_.seq}));
    if (chunks() > 1) sliceRopeTables();
  }
  const bool hasHead = lastBlock == headBlock();
  std::vector<Val> validParts;
  for (int m = 0; m < ctx_.deg().mb; ++m) {
    if (!ctx_.deg().builds(m)) continue;
    setMicroBatch(m);
    forEachChunk(false, [&] {
      if (firstBlock == 0) put(em_.input(act("tokens", {shape_.batch, shape_.seq}), DType::I64));
      if (hasHead) {
        put(em_.input(act("labels", {shape_.batch, shape_.seq}), DType::I64));
        Val mask = em_.input(act("loss_mask", {shape_.batch, shape_.seq}));
        put(mask);
        validParts.push_back(em_.op("sum", {mask}, {{"dims", {0, 1}}, {"keepdim", false}}, "loss",
                                    lossPart("loss.valid_tokens")));
      }
    });
  }
  stepWide();
  if (hasHead) {
    Layout total = accumulated(validParts.front().lay, ctx_, "loss.valid_tokens.acc");
    Val n = validParts.size() == 1 ? validParts.front() : accumulate(em_, validParts, total, "loss");
    n = em_.allReduce(n, ctx_.group(Axis::DPCP), "sum", "loss");
    global_["loss.valid_tokens"] = n;
    global_["loss.inv_valid_tokens"] =
        em_.op("reciprocal", {n}, {}, "loss", Layout::full("loss.inv_valid_tokens", {}));
  }
  setMicroBatch(0);
}

// Blocks run chunk by chunk (one chunk unless cp > 1); only attention mixes the chunks.
void TrainingStep::forward(int block) {
  gatherParams(block);
  const bool layer = block > 0 && block < headBlock() && cfg_.family != Family::Mlp;
  if (layer && chunks() > 1) {  // context parallel: the chunks' attention shares gathered keys and values
    contextParallelAttentionForward(block - 1);
    forEachChunk(false, [&] { ffnForward(block - 1); });
    return;
  }
  forEachChunk(false, [&] {
    if (block == 0) {
      embeddingForward();
    } else if (block == headBlock()) {
      headForward();
    } else if (cfg_.family == Family::Mlp) {
      mlpLayerForward(block - 1);
    } else {
      if (cfg_.family == Family::DeepSeek)
        mlaForward(block - 1);
      else
        attentionForward(block - 1);
      ffnForward(block - 1);
    }
  });
}

TrainingStep::CoreOperands TrainingStep::coreOperands() const {
  if (cfg_.family != Family::DeepSeek)
    return {".q_rot", ".k_rot", ".v", cfg_.kvHeads, cfg_.headDim(), cfg_.headDim(), attentionAttrs()};
  // MLA: every head has its own key (k_nope and the broadcast rope key), values are vHead wide.
  const MlaConfig& m = cfg_.mla;
  const int64_t dq = m.qkNope + m.qkRope;
  return {".q_full",
          ".k_full",
          ".v",
          cfg_.heads,
          dq,
          m.vHead,
          Json{{"scale", 1.0 / std::sqrt(static_cast<double>(dq))}, {"causal", true}}};
}

void TrainingStep::coreInput(int layer) {
  cfg_.family == Family::DeepSeek ? mlaInput(layer) : attentionInput(layer);
}

void TrainingStep::coreInputBackward(int layer) {
  cfg_.family == Family::DeepSeek ? mlaInputBackward(layer) : attentionInputBackward(layer);
}

void TrainingStep::ffnForward(int layer) {
  if (moeLayer(layer))
    moeForward(layer);
  else
    swigluForward(layer);
}

void TrainingStep::ffnBackward(int layer) {
  if (moeLayer(layer))
    moeBackward(layer);
  else
    swigluBackward(layer);
}

void TrainingStep::backward(int block) {
  const bool layer = block > 0 && block < headBlock() && cfg_.family != Family::Mlp;
  if (layer && chunks() > 1) {
    forEachChunk(true, [&] { ffnBackward(block - 1); });
    contextParallelAttentionBackward(block - 1);
    return;
  }
  forEachChunk(true, [&] {
    if (block == 0) {
      embeddingBackward();
    } else if (block == headBlock()) {
      headBackward();
    } else if (cfg_.family == Family::Mlp) {
      mlpLayerBackward(block - 1);
    } else {
      ffnBackward(block - 1);
      if (cfg_.family == Family::DeepSeek)
        mlaBackward(block - 1);
      else
        attentionBackward(block - 1);
    }
  });
}

void TrainingStep::addGrad(const std::string& param, const Val& g) {
  mbGrads_[param].push_back(g);
}

// Sums the micro-batches' (and, for a tied weight, the uses') contributions on this rank.
Val TrainingStep::accumulatedGrad(const ParamInfo& p) {
  const std::vector<Val>& parts = mbGrads_.at(p.name);
  if (parts.size() == 1) return parts.front();
  const bool mixed = std::any_of(parts.begin(), parts.end(),
                                 [&](const Val& v) { return v.lay.name != parts.front().lay.name; });
  // Several uses: the sum is the parameter's gradient itself (named so in the logical graph).
  const Layout base = mixed ? grad(p) : parts.front().lay;
  const int sub = p.epDim >= 0 ? 1 : gradSumGroup(p).size();
  const Layout total = accumulated(base, ctx_, mixed && em_.logical() ? "" : base.name + ".acc", sub);
  return accumulate(em_, parts, total, p.scope);
}

void TrainingStep::finishGradients(int block) {
  const int saved = mb_;
  stepWide();
  std::vector<Val> accs;
  const std::vector<ParamInfo> ps = gradParams(block);
  for (const ParamInfo& p : ps)
    accs.push_back(accumulatedGrad(p));
  reduceGradOverShardReplicas(ps, accs);
  const std::string scope = block == 0             ? "embed"
                            : block == headBlock() ? "output"
                                                   : "layers." + std::to_string(block - 1);
  const Group dpcp = ctx_.group(Axis::DPCP);
  std::vector<Val> reduced;
  if (zeroStage() >= 2) {
    // ZeRO-2/3: each rank keeps only its shard of the reduced gradient (of its zeroGroup; routed experts
    // with a single expert-data-parallel rank are not sharded: the "reduction" over one rank is the sum).
    for (size_t i = 0; i < ps.size(); ++i)
      reduced.push_back(zeroStage(ps[i]) >= 2
                            ? em_.reduceScatter(accs[i], zeroGroup(ps[i]), 0, "sum",
                                                shardOf(accs[i].lay, ps[i]).whole(), ps[i].scope)
                            : accs[i]);
  } else {
    // One coalesced bucket per block and reduction group, as data-parallel frameworks overlap reduction
    // with backward: routed experts under ep reduce over the expert-data-parallel group only.
    std::vector<size_t> dense, experts;
    for (size_t i = 0; i < ps.size(); ++i)
      (ps[i].epDim >= 0 && ctx_.deg().ep > 1 ? experts : dense).push_back(i);
    reduced.resize(ps.size());
    auto bucket = [&](const std::vector<size_t>& idx, const Group& g, const std::string& sc) {
      std::vector<Val> in;
      for (size_t i : idx)
        in.push_back(accs[i]);
      std::vector<Val> out = em_.allReduceBucket(in, g, "sum", sc);
      for (size_t k = 0; k < idx.size(); ++k)
        reduced[idx[k]] = out[k];
    };
    bucket(dense, dpcp, scope);
    bucket(experts, ctx_.group(Axis::EDP), scope + ".mlp.experts");
    if (zeroStage() == 1)
      for (size_t i = 0; i < ps.size(); ++i) {
        if (zeroStage(ps[i]) < 1) continue;
        Val& g = reduced[i];
        const Group zg = zeroGroup(ps[i]);
        const int64_t rows = em_.type(g).shape.at(0) / zg.size(), start = zg.indexOf(ctx_.rank()) * rows;
        g = em_.op("slice", {g}, {{"dim", 0}, {"start", start}, {"end", start + rows}}, scope,
                   shardOf(g.lay, ps[i]).named(g.lay.name + ".shard"));
      }
  }
  for (size_t i = 0; i < ps.size(); ++i)
    grads_[ps[i].name] = reduced[i];
  setMicroBatch(saved);
}

void TrainingStep::finish() {
  stepWide();
  if (lastBlock_ == headBlock()) {
    Layout total = accumulated(lossParts_.front().lay, ctx_, "loss.acc");
    Val loss = lossParts_.size() == 1 ? lossParts_.front() : accumulate(em_, lossParts_, total, "loss");
    loss = em_.allReduce(loss, ctx_.group(Axis::DPCP), "sum", "loss");
    em_.output(loss);
  }
  const Degrees& d = ctx_.deg();
  const int z = zeroStage();
  if (tiedAcrossStages()) {
    // After the whole backward (Megatron's finalize step; earlier would deadlock the pipeline): the first
    // stage's embedding-use and the last stage's output-use contributions are summed over the embedding
    // group. The same device name on both members makes the collective's instance match.
    Val g = grads_.at("embed.weight");
    Val staged = em_.op("identity", {g}, {}, "embed", g.lay.named("embed.weight.grad.tied"));
    grads_["embed.weight"] =
        em_.allReduce(staged, embeddingGroup(), "sum", "embed", g.lay.renamed("embed.weight.grad"));
  }
  // Global grad-norm: each gradient element counted once - replicated-over-tp parameters only on tp rank 0,
  // the tied embedding only on its first stage, ZeRO shards once each - then summed over every rank that
  // holds distinct pieces: pp x tp, or with sharded gradients all ranks (pp x dp x cp x tp, rank order).
  // Under expert parallelism routed-expert shards differ along ep: they count on every ep rank, the other
  // parameters only on ep index 0, summed over pp x ep x tp (with ZeRO every rank's shards are distinct:
  // dense ones over dp x cp, experts over ep x the expert-data-parallel group).
  // Each gradient's squares are summed on their own first (torch's clip_grad_norm_ and Megatron's
  // multi-tensor l2norm do the same): the sum is a lineage point, a part of `<param>.grad_sq` per piece of
  // the gradient (names::kGradSquares), so the norm is checked as one small stage per gradient, alike across
  // layers, and one stage adding the scalars, not one stage squaring every gradient element at once.
  const bool ep = d.ep > 1;
  std::vector<Val> squares, unsplit;
  for (const ParamInfo& p : owned_) {
    if (!countedInGradNorm(p) || tiedCopy(p) || !(z >= 1 || p.epDim >= 0 || ctx_.epIndex() == 0)) continue;
    const Val& g = grads_.at(p.name);
    if (const std::optional<std::pair<int, int>> cell = g.lay.gridCell()) {
      Layout sq = Layout::full(p.name + std::string(names::kGradSquares), {});
      sq.partial(cell->first, cell->second);
      squares.push_back(em_.op("global_norm_sq", {g}, {}, "optimizer.clip", sq));
    } else {
      unsplit.push_back(g);
    }
  }
  if (!unsplit.empty())
    squares.push_back(em_.op("global_norm_sq", unsplit, {}, "optimizer.clip",
                             Layout::local("optimizer.grad_norm_sq.unsplit", {})));
  Layout nsqLay = Layout::full("optimizer.grad_norm_sq", {});
  if (z >= 1)
    nsqLay.partial(ctx_.rank(), d.devices());
  else if (ep)
    nsqLay.partial((ctx_.at().pp * d.ep + ctx_.epIndex()) * d.tp + ctx_.at().tp, d.pp * d.ep * d.tp);
  else
    nsqLay.partial(ctx_.at().pp * d.tp + ctx_.at().tp, d.pp * d.tp);
  Val nsq = squares.empty()
                ? em_.op("constant", {}, {{"shape", Json::array()}, {"value", 0}}, "optimizer.clip", nsqLay)
                : em_.op("add_n", squares, {}, "optimizer.clip", nsqLay);
  const Axis normGroup = z >= 1 ? Axis::All : ep ? Axis::ExpertModelParallel : Axis::ModelParallel;
  nsq = em_.allReduce(nsq, ctx_.group(normGroup), "sum", "optimizer.clip");
  Val coef = em_.op("clip_coef", {nsq}, {{"max_norm", 1.0}}, "optimizer.clip",
                    Layout::full("optimizer.clip_coef", {}));
  const Json adamw = {{"lr", 1e-3},  {"beta1", 0.9},        {"beta2", 0.95},
                      {"eps", 1e-8}, {"weight_decay", 0.1}, {"step", 1}};
  for (const ParamInfo& p : owned_) {
    // ZeRO: AdamW runs on this rank's shard; stages 1-2 slice it from the replicated parameter and
    // all-gather the updated shards, stage 3 keeps parameter and update sharded.
    const Layout opt = optimizerLayout(p);
    const int pz = zeroStage(p);
    const Group zg = zeroGroup(p);
    Val w = pz >= 3 ? global_.at(p.name + ".shard") : global_.at(p.name);
    if (pz == 1 || pz == 2) {
      const int64_t rows = opt.localShape().at(0), start = zg.indexOf(ctx_.rank()) * rows;
      w = em_.op("slice", {w}, {{"dim", 0}, {"start", start}, {"end", start + rows}}, p.scope,
                 opt.named(p.name + ".shard"));
    }
    Val g = em_.op("mul", {grads_.at(p.name), coef}, {}, p.scope, opt.renamed(p.name + ".grad_clipped"));
    std::vector<Val> out = em_.opN(
        "adamw", {w, g, global_.at(p.name + ".m"), global_.at(p.name + ".v")}, adamw, p.scope,
        {opt.renamed(p.name + ".out"), opt.renamed(p.name + ".m.out"), opt.renamed(p.name + ".v.out")});
    if (pz == 1 || pz == 2) out[0] = em_.allGather(out[0], zg, 0, param(p).renamed(p.name + ".out"), p.scope);
    for (const Val& v : out)
      em_.output(v);
  }
}

std::vector<StatePair> TrainingStep::state() const {
  std::vector<StatePair> out;
  std::set<std::string> seen;  // a tied copy shares its parameter's name
  for (const ParamInfo& p : owned_) {
    if (!seen.insert(p.name).second) continue;
    for (const std::string& s : {p.name, p.name + ".m", p.name + ".v"})
      out.push_back({s, s + ".out"});
  }
  return out;
}

}  // namespace paraproof::models
