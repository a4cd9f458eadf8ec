#include "core/models/training_step.h"

#include <stdexcept>

namespace paraproof::models {

TrainingStep::TrainingStep(const ModelConfig& cfg, StepShape shape, const ShardContext& ctx, Emitter& em)
    : cfg_(cfg), shape_(shape), ctx_(ctx), em_(em), env_(static_cast<size_t>(ctx.deg().mb)) {}

std::vector<ParamInfo> TrainingStep::params(int block) const {
  const int64_t h = cfg_.hidden, v = cfg_.vocab, f = cfg_.ffn;
  std::vector<ParamInfo> ps;
  auto add = [&](const std::string& scope, Shape s, int tpDim) {
    ps.push_back(ParamInfo{scope + ".weight", scope, std::move(s), tpDim, block});
  };
  if (block == 0) {
    add("embed", {v, h}, 0);
  } else if (block == headBlock()) {
    if (cfg_.family != Family::Mlp) add("norm", {h}, -1);
    add("output", {v, h}, 0);
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
  const int64_t h = cfg_.hidden, d = cfg_.headDim();
  const std::string l = "layers." + std::to_string(layer);
  std::vector<ParamInfo> ps;
  auto add = [&](const std::string& scope, Shape s, int tpDim) {
    ps.push_back(ParamInfo{scope + ".weight", scope, std::move(s), tpDim, layer + 1});
  };
  add(l + ".attention_norm", {h}, -1);
  add(l + ".attention.wq", {cfg_.heads * d, h}, 0);
  add(l + ".attention.wk", {cfg_.kvHeads * d, h}, 0);
  add(l + ".attention.wv", {cfg_.kvHeads * d, h}, 0);
  add(l + ".attention.wo", {h, cfg_.heads * d}, 1);
  return ps;
}

std::vector<ParamInfo> TrainingStep::ffnParams(int layer) const {
  const int64_t h = cfg_.hidden, f = cfg_.ffn;
  const std::string l = "layers." + std::to_string(layer);
  std::vector<ParamInfo> ps;
  auto add = [&](const std::string& scope, Shape s, int tpDim) {
    ps.push_back(ParamInfo{scope + ".weight", scope, std::move(s), tpDim, layer + 1});
  };
  add(l + ".ffn_norm", {h}, -1);
  add(l + ".mlp.w1", {f, h}, 0);
  add(l + ".mlp.w3", {f, h}, 0);
  add(l + ".mlp.w2", {h, f}, 1);
  return ps;
}

std::string TrainingStep::hiddenName(int block) const {
  return block == 0 ? "embed.out" : "layers." + std::to_string(block - 1) + ".out";
}

Layout TrainingStep::hiddenLayout(int block) const {
  return act(hiddenName(block), {shape_.batch, shape_.seq, cfg_.hidden});
}

Layout TrainingStep::hiddenGradLayout(int block) const {
  return act(hiddenName(block) + ".grad", {shape_.batch, shape_.seq, cfg_.hidden});
}

Layout TrainingStep::act(const std::string& name, Shape logical) const {
  const Degrees& d = ctx_.deg();
  const int64_t rows = shape_.batch / (d.dp * d.mb);
  Layout l = Layout::full(name, std::move(logical));
  l.slice(0, ctx_.at().dp * (shape_.batch / d.dp) + mb_ * rows, rows);
  return l;
}

Layout TrainingStep::tokens(const std::string& name, Shape logical) const {
  const Degrees& d = ctx_.deg();
  const int64_t rows = shape_.batch / (d.dp * d.mb);
  Layout l = Layout::full(name, std::move(logical));
  l.slice(0, (ctx_.at().dp * (shape_.batch / d.dp) + mb_ * rows) * shape_.seq, rows * shape_.seq);
  return l;
}

Layout TrainingStep::param(const ParamInfo& p) const {
  Layout l = Layout::full(p.name, p.shape);
  if (p.tpDim >= 0) l.shard(p.tpDim, ctx_.at().tp, ctx_.deg().tp);
  return l;
}

int TrainingStep::gradPart() const {
  const Degrees& d = ctx_.deg();
  return (ctx_.at().dp * d.cp + ctx_.at().cp) * d.mb + mb_;
}

int TrainingStep::gradParts() const {
  const Degrees& d = ctx_.deg();
  return d.dp * d.cp * d.mb;
}

Layout TrainingStep::grad(const ParamInfo& p) const {
  Layout l = param(p).renamed(p.name + ".grad");
  l.partial(gradPart(), gradParts());
  return l;
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

void TrainingStep::put(const Val& v) {
  env_.at(mb_)[v.lay.name] = v;
}

const Val& TrainingStep::get(const std::string& name) const {
  const auto& env = env_.at(mb_);
  if (auto it = env.find(name); it != env.end()) return it->second;
  if (auto it = global_.find(name); it != global_.end()) return it->second;
  throw std::logic_error("generator: value '" + name + "' is not available here");
}

void TrainingStep::setMicroBatch(int m) {
  mb_ = m;
  em_.setMicroBatch(m, ctx_.deg().mb);
}

namespace {
// Sums per-micro-batch parts into one value with layout `total` (a sum of parts is itself a part).
Val accumulate(Emitter& em, const std::vector<Val>& parts, const Layout& total, const std::string& scope) {
  Val acc = parts.front();
  for (size_t i = 1; i < parts.size(); ++i) {
    Layout l = i + 1 == parts.size() ? total : Layout::local(total.as + "." + std::to_string(i), total.shape);
    if (i + 1 != parts.size()) l.box = total.box;
    acc = em.op("add", {acc, parts[i]}, {}, scope, l, total.name);
  }
  return acc;
}

// The lineage part a device holds after accumulating its micro-batches: one of dp*cp.
Layout accumulated(Layout l, const ShardContext& ctx, const std::string& valueName) {
  const Degrees& d = ctx.deg();
  l.partial(ctx.at().dp * d.cp + ctx.at().cp, d.dp * d.cp);
  return l.named(valueName);
}
}  // namespace

void TrainingStep::begin(int firstBlock, int lastBlock) {
  firstBlock_ = firstBlock;
  lastBlock_ = lastBlock;
  setMicroBatch(0);
  em_.setMicroBatch(-1, 1);
  for (int b = firstBlock; b <= lastBlock; ++b)
    for (ParamInfo& p : params(b)) {
      owned_.push_back(p);
      global_[p.name] = em_.input(param(p));
      global_[p.name + ".m"] = em_.input(param(p).renamed(p.name + ".m"));
      global_[p.name + ".v"] = em_.input(param(p).renamed(p.name + ".v"));
    }
  const bool hasLayers = firstBlock <= shape_.layers && lastBlock >= 1;
  if (hasLayers && cfg_.family != Family::Mlp) {
    const int64_t d = cfg_.headDim();
    global_["rope.cos"] = em_.input(Layout::full("rope.cos", {shape_.seq, d}));
    global_["rope.sin"] = em_.input(Layout::full("rope.sin", {shape_.seq, d}));
    global_["rope.positions"] = em_.op("iota", {}, {{"n", shape_.seq}, {"dtype", "i64"}}, "rope",
                                       Layout::full("rope.positions", {shape_.seq}));
  }
  const bool hasHead = lastBlock == headBlock();
  std::vector<Val> validParts;
  for (int m = 0; m < ctx_.deg().mb; ++m) {
    setMicroBatch(m);
    if (firstBlock == 0) put(em_.input(act("tokens", {shape_.batch, shape_.seq}), DType::I64));
    if (hasHead) {
      put(em_.input(act("labels", {shape_.batch, shape_.seq}), DType::I64));
      Val mask = em_.input(act("loss_mask", {shape_.batch, shape_.seq}));
      put(mask);
      validParts.push_back(em_.op("sum", {mask}, {{"dims", {0, 1}}, {"keepdim", false}}, "loss",
                                  lossPart("loss.valid_tokens")));
    }
  }
  em_.setMicroBatch(-1, 1);
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

void TrainingStep::forward(int block) {
  if (block == 0)
    embeddingForward();
  else if (block == headBlock())
    headForward();
  else if (cfg_.family == Family::Mlp)
    mlpLayerForward(block - 1);
  else {
    attentionForward(block - 1);
    swigluForward(block - 1);
  }
}

void TrainingStep::backward(int block) {
  if (block == 0)
    embeddingBackward();
  else if (block == headBlock())
    headBackward();
  else if (cfg_.family == Family::Mlp)
    mlpLayerBackward(block - 1);
  else {
    swigluBackward(block - 1);
    attentionBackward(block - 1);
  }
}

void TrainingStep::addGrad(const std::string& param, const Val& g) {
  mbGrads_[param].push_back(g);
}

void TrainingStep::finishGradients(int block) {
  const int saved = mb_;
  em_.setMicroBatch(-1, 1);
  std::vector<Val> accs;
  std::vector<std::string> names;
  for (const ParamInfo& p : params(block)) {
    const std::vector<Val>& parts = mbGrads_.at(p.name);
    Layout total = accumulated(parts.front().lay, ctx_, p.name + ".grad.acc");
    accs.push_back(parts.size() == 1 ? parts.front() : accumulate(em_, parts, total, p.scope));
    names.push_back(p.name);
  }
  // One coalesced bucket per block, as data-parallel frameworks overlap reduction with backward.
  const std::string scope = block == 0             ? "embed"
                            : block == headBlock() ? "output"
                                                   : "layers." + std::to_string(block - 1);
  std::vector<Val> reduced = em_.allReduceBucket(accs, ctx_.group(Axis::DPCP), "sum", scope);
  for (size_t i = 0; i < names.size(); ++i)
    grads_[names[i]] = reduced[i];
  setMicroBatch(saved);
}

void TrainingStep::finish() {
  em_.setMicroBatch(-1, 1);
  if (lastBlock_ == headBlock()) {
    Layout total = accumulated(lossParts_.front().lay, ctx_, "loss.acc");
    Val loss = lossParts_.size() == 1 ? lossParts_.front() : accumulate(em_, lossParts_, total, "loss");
    loss = em_.allReduce(loss, ctx_.group(Axis::DPCP), "sum", "loss");
    em_.output(loss);
  }
  // Global grad-norm: each parameter element counted once over the model-parallel group (replicated
  // parameters only on tp rank 0), then summed over it.
  const Degrees& d = ctx_.deg();
  std::vector<Val> counted;
  for (const ParamInfo& p : owned_)
    if (p.tpDim >= 0 || ctx_.at().tp == 0) counted.push_back(grads_.at(p.name));
  Layout nsqLay = Layout::full("optimizer.grad_norm_sq", {});
  nsqLay.partial(ctx_.at().pp * d.tp + ctx_.at().tp, d.pp * d.tp);
  Val nsq = counted.empty()
                ? em_.op("constant", {}, {{"shape", Json::array()}, {"value", 0}}, "optimizer.clip", nsqLay)
                : em_.op("global_norm_sq", counted, {}, "optimizer.clip", nsqLay);
  nsq = em_.allReduce(nsq, ctx_.group(Axis::ModelParallel), "sum", "optimizer.clip");
  Val coef = em_.op("clip_coef", {nsq}, {{"max_norm", 1.0}}, "optimizer.clip",
                    Layout::full("optimizer.clip_coef", {}));
  const Json adamw = {{"lr", 1e-3},  {"beta1", 0.9},        {"beta2", 0.95},
                      {"eps", 1e-8}, {"weight_decay", 0.1}, {"step", 1}};
  for (const ParamInfo& p : owned_) {
    Val g = em_.op("mul", {grads_.at(p.name), coef}, {}, p.scope, param(p).renamed(p.name + ".grad_clipped"));
    std::vector<Val> out =
        em_.opN("adamw", {global_.at(p.name), g, global_.at(p.name + ".m"), global_.at(p.name + ".v")}, adamw,
                p.scope,
                {param(p).renamed(p.name + ".out"), param(p).renamed(p.name + ".m.out"),
                 param(p).renamed(p.name + ".v.out")});
    for (const Val& v : out)
      em_.output(v);
  }
}

}  // namespace paraproof::models
