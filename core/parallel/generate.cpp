#include "core/parallel/generate.h"

#include <algorithm>
#include <functional>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/models/training_step.h"
#include "core/parallel/bugs.h"
#include "core/parallel/schedule.h"

namespace paraproof::parallel {

using models::Degrees;
using models::Emitter;
using models::Family;
using models::MeshCoord;
using models::ModelConfig;
using models::ShardContext;
using models::StepShape;
using models::TrainingStep;

std::string ParallelSpec::str() const {
  std::ostringstream os;
  auto item = [&](const char* k, int v) {
    if (v != 1) os << (os.tellp() > 0 ? "," : "") << k << "=" << v;
  };
  item("dp", dp);
  item("tp", tp);
  item("pp", pp);
  item("mb", mb);
  item("cp", cp);
  item("ep", ep);
  if (zero) os << (os.tellp() > 0 ? "," : "") << "zero=" << zero;
  if (sp) os << (os.tellp() > 0 ? "," : "") << "sp";
  if (pp > 1 && schedule != "1f1b") os << ",schedule=" << schedule;
  std::string s = os.str();
  return s.empty() ? "dp=1" : s;
}

ParallelSpec parseParallel(const std::string& text) {
  ParallelSpec s;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    if (item == "sp") {
      s.sp = true;
      continue;
    }
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      throw std::invalid_argument("--parallel: '" + item + "' is not of the form key=value (or 'sp')");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "schedule") {
      if (value != "1f1b" && value != "gpipe")
        throw std::invalid_argument("--parallel: schedule must be 1f1b or gpipe, not '" + value + "'");
      s.schedule = value;
      continue;
    }
    int n = 0;
    try {
      size_t used = 0;
      n = std::stoi(value, &used);
      if (used != value.size()) throw std::invalid_argument(value);
    } catch (const std::exception&) {
      throw std::invalid_argument("--parallel: '" + key + "' needs an integer, got '" + value + "'");
    }
    int* slot = key == "dp"     ? &s.dp
                : key == "tp"   ? &s.tp
                : key == "pp"   ? &s.pp
                : key == "mb"   ? &s.mb
                : key == "cp"   ? &s.cp
                : key == "ep"   ? &s.ep
                : key == "zero" ? &s.zero
                                : nullptr;
    if (!slot)
      throw std::invalid_argument("--parallel: unknown key '" + key +
                                  "' (known: dp, tp, pp, mb, cp, ep, zero, sp, schedule)");
    if (key == "zero" ? (n < 0 || n > 3) : n < 1)
      throw std::invalid_argument("--parallel: " + key + "=" + value +
                                  (key == "zero" ? " is not a ZeRO stage (0..3)" : " must be at least 1"));
    *slot = n;
  }
  return s;
}

namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument(message);
}

std::string divides(const char* what, int degree, const char* of, int64_t n) {
  return std::string(what) + "=" + std::to_string(degree) + " does not divide the " + of + " (" +
         std::to_string(n) + ")";
}

void checkCombination(const ModelConfig& m, const ParallelSpec& s, const StepShape& shape) {
  if (s.ep > 1) {
    require(m.family == Family::DeepSeek && m.moe.routedExperts > 0,
            "ep (expert parallel) needs a MoE model (dsv3-16b, dsv3-236b, dsv3-671b)");
    require(s.dp % s.ep == 0, "ep=" + std::to_string(s.ep) + " must divide dp (" + std::to_string(s.dp) +
                                  "): an expert-parallel group is ep consecutive data-parallel ranks");
    require(m.moe.routedExperts % s.ep == 0,
            divides("ep", s.ep, "number of routed experts", m.moe.routedExperts));
  }
  if (m.family == Family::DeepSeek && shape.layers > m.moe.denseLayers) {
    require(m.moe.expertFfn % s.tp == 0, divides("tp", s.tp, "expert FFN width", m.moe.expertFfn));
    require(m.moe.routedExperts % m.moe.groups == 0 && m.moe.topkGroups <= m.moe.groups,
            m.name + ": routed experts must split evenly into the routing groups");
  }
  require(shape.layers >= 1, "the model needs at least one layer");
  require(s.pp <= shape.layers, "pp=" + std::to_string(s.pp) + " exceeds the number of layers (" +
                                    std::to_string(shape.layers) + "): every pipeline stage needs a layer");
  require(shape.batch % (s.dp * s.mb) == 0, "the global batch (" + std::to_string(shape.batch) +
                                                ") is not divisible by dp*mb (" +
                                                std::to_string(s.dp * s.mb) + ")");
  require(shape.seq % (2 * s.cp) == 0, "cp=" + std::to_string(s.cp) + ": the sequence length (" +
                                           std::to_string(shape.seq) + ") must be divisible by 2*cp (" +
                                           std::to_string(2 * s.cp) +
                                           "): context parallel splits it into 2*cp zig-zag chunks");
  require(m.vocab % s.tp == 0, divides("tp", s.tp, "vocabulary size", m.vocab));
  require(m.ffn % s.tp == 0, divides("tp", s.tp, "FFN width", m.ffn));
  if (m.family != Family::Mlp) {
    require(m.heads % s.tp == 0, divides("tp", s.tp, "number of attention heads", m.heads));
    if (s.tp > m.kvHeads)  // kv heads replicated over tp / kvHeads consecutive tp ranks
      require(s.tp % m.kvHeads == 0, "tp=" + std::to_string(s.tp) + " exceeds the " +
                                         std::to_string(m.kvHeads) +
                                         " kv heads and is not a multiple of them (kv heads are replicated)");
    else
      require(m.kvHeads % s.tp == 0, divides("tp", s.tp, "number of kv heads", m.kvHeads));
  }
  // Sequence parallelism shards the sequence over tp outside the tensor-parallel blocks.
  // Under cp each of a rank's two zig-zag chunks is sharded over tp.
  const int64_t seqPiece = s.cp > 1 ? shape.seq / (2 * s.cp) : shape.seq;
  if (s.sp)
    require(seqPiece % s.tp == 0,
            divides("sp: tp", s.tp, s.cp > 1 ? "sequence chunk (seq / 2cp)" : "sequence length", seqPiece));
  if (s.zero > 0 && s.dp * s.cp > 1) {
    // ZeRO shards every (tp-sharded) parameter along dim 0 over the data-parallel group.
    Graph g;
    Emitter em(g, nullptr);
    Degrees d;
    d.tp = s.tp;
    const ShardContext device(d, MeshCoord{});  // tp matters: kv heads may be replicated
    const TrainingStep step(m, shape, device, em);
    for (int b = 0; b < step.blockCount(); ++b)
      for (const models::ParamInfo& p : step.params(b)) {
        // Routed experts under ep: E/ep experts per rank, sharded over the expert-data-parallel group.
        const bool expert = p.epDim == 0 && s.ep > 1;
        const int64_t rows = p.shape.at(0) / (p.tpDim == 0 ? s.tp / p.tpReplicas : 1) / (expert ? s.ep : 1);
        const int group = expert ? s.dp / s.ep * s.cp : s.dp * s.cp;
        require(rows % group == 0,
                "zero=" + std::to_string(s.zero) + ": parameter " + p.name + " has " + std::to_string(rows) +
                    " rows per tp" + (expert ? "/ep" : "") + " rank, not divisible by the " +
                    (expert ? "expert-data-parallel group (dp/ep*cp = " : "data-parallel group (dp*cp = ") +
                    std::to_string(group) + ")");
      }
  }
}

// Blocks of a pipeline stage: stage 0 owns the embedding, the last stage the head; layers are split evenly.
std::pair<int, int> stageBlocks(int stage, int stages, int layers) {
  auto layerStart = [&](int p) { return p * (layers / stages) + std::min(p, layers % stages); };
  const int first = stage == 0 ? 0 : 1 + layerStart(stage);
  const int last = stage == stages - 1 ? layers + 1 : layerStart(stage + 1);
  return {first, last};
}

// An injection site that cannot apply, found from the spec alone before any graph is built (a rank outside
// the mesh, a micro-batch or layer the plan does not have, a rank on a pipeline stage without the layer),
// with what would apply. injectBug checks the plan again; this only makes the answer immediate.
void checkInjectionSite(const std::string& inject, const Degrees& d, int layers) {
  const BugRequest req = parseInjection(inject);
  const InjectionSite& at = req.site;
  if (at.rank >= d.devices())
    throw BadInjection("--inject: rank=" + std::to_string(at.rank) +
                       " is not a device of the plan (ranks 0.." + std::to_string(d.devices() - 1) + ")");
  if (at.microBatch >= d.mb)
    throw BadInjection("--inject: mb=" + std::to_string(at.microBatch) + " but the plan has " +
                       std::to_string(d.mb) + " micro-batches");
  if (at.layer < 0 || !bugIsPerLayer(req.id)) return;
  if (at.layer >= layers)
    throw BadInjection("--inject: layer=" + std::to_string(at.layer) + " but the plan has " +
                       std::to_string(layers) + " layers");
  int holder = 0;  // the pipeline stage whose blocks hold the layer (block layer + 1)
  while (stageBlocks(holder, d.pp, layers).second < at.layer + 1)
    ++holder;
  if (at.rank < 0 || ShardContext::coordOf(d, at.rank).pp == holder) return;
  std::vector<int> ranks;
  for (int r = 0; r < d.devices(); ++r)
    if (ShardContext::coordOf(d, r).pp == holder) ranks.push_back(r);
  std::string which;
  if (ranks.back() - ranks.front() + 1 == static_cast<int>(ranks.size())) {
    which = "ranks " + std::to_string(ranks.front()) + "-" + std::to_string(ranks.back());
  } else {
    for (size_t i = 0; i < ranks.size() && i < 8; ++i)
      which += (i ? ", " : "ranks ") + std::to_string(ranks[i]);
    if (ranks.size() > 8) which += ", ... (" + std::to_string(ranks.size()) + " ranks)";
  }
  throw BadInjection("--inject: rank " + std::to_string(at.rank) + " does not hold layer " +
                     std::to_string(at.layer) + ": pipeline stage " + std::to_string(holder) + " of " +
                     std::to_string(d.pp) + " does, on " + which);
}

// Returns the program's state pairs (on the logical graph: the plan's state declaration).
std::vector<StatePair> buildProgram(const ModelConfig& cfg, const StepShape& shape, const ShardContext& ctx,
                                    const std::string& schedule, Graph& g,
                                    std::map<ValueId, Lineage>* lineage) {
  Emitter em(g, lineage);
  TrainingStep step(cfg, shape, ctx, em);
  const Degrees& d = ctx.deg();
  const int stage = ctx.at().pp;
  // Plain variables, not a structured binding: the lambdas below capture them (clang 14 cannot).
  const std::pair<int, int> blocks = stageBlocks(stage, d.pp, shape.layers);
  const int first = blocks.first, last = blocks.second;
  const int self = ctx.rank();
  MeshCoord prevAt = ctx.at(), nextAt = ctx.at();
  --prevAt.pp;
  ++nextAt.pp;
  const int prev = stage > 0 ? ctx.rankOf(prevAt) : -1, next = stage + 1 < d.pp ? ctx.rankOf(nextAt) : -1;
  step.begin(first, last);
  const int lastBuilt = d.builtMb.empty() ? d.mb - 1 : *d.builtMb.rbegin();
  for (const PipelineStep& ps : pipelineOrder(schedule, stage, d.pp, d.mb)) {
    if (!d.builds(ps.microBatch)) continue;  // an implied copy (compact micro-batches)
    step.setMicroBatch(ps.microBatch);
    // Hidden states and their gradients travel per sequence chunk (two chunks per rank under cp).
    auto eachChunk = [&](const std::function<void()>& fn) {
      for (int c = 0; c < step.chunks(); ++c) {
        step.setChunk(c);
        fn();
      }
      step.setChunk(0);
    };
    if (ps.forward) {
      if (prev >= 0)
        eachChunk(
            [&] { step.put(em.recv(step.hiddenLayout(first - 1), DType::F32, self, prev, "pipeline")); });
      for (int b = first; b <= last; ++b)
        step.forward(b);
      if (next >= 0) eachChunk([&] { em.send(step.get(step.hiddenName(last)), self, next, "pipeline"); });
    } else {
      if (next >= 0)
        eachChunk(
            [&] { step.put(em.recv(step.hiddenGradLayout(last), DType::F32, self, next, "pipeline")); });
      for (int b = last; b >= first; --b) {
        step.backward(b);
        if (ps.microBatch == lastBuilt) step.finishGradients(b);
      }
      if (prev >= 0)
        eachChunk([&] { em.send(step.get(step.hiddenName(first - 1) + ".grad"), self, prev, "pipeline"); });
    }
  }
  step.finish();
  return step.state();
}

Mesh meshOf(const Degrees& d) {
  Mesh m;
  // dp splits into (dp/ep, ep): an expert-parallel group is ep consecutive dp coordinates.
  for (auto [name, n] :
       {std::pair{"pp", d.pp}, {"dp", d.dp / d.ep}, {"ep", d.ep}, {"cp", d.cp}, {"tp", d.tp}})
    if (n > 1) {
      m.axes.push_back(name);
      m.shape.push_back(n);
    }
  if (m.axes.empty()) {
    m.axes = {"dp"};
    m.shape = {1};
  }
  return m;
}

std::vector<int64_t> coordOf(const Mesh& mesh, const Degrees& d, const MeshCoord& c) {
  std::vector<int64_t> out;
  for (const std::string& a : mesh.axes)
    out.push_back(a == "pp"   ? c.pp
                  : a == "dp" ? c.dp / d.ep
                  : a == "ep" ? c.dp % d.ep
                  : a == "cp" ? c.cp
                              : c.tp);
  return out;
}

}  // namespace

Plan generatePlan(const ModelConfig& model, const ParallelSpec& spec, const GenerateOptions& options) {
  StepShape shape;
  shape.layers = options.layers > 0 ? options.layers : model.layers;
  shape.seq = options.seq > 0 ? options.seq : 8;
  shape.batch = options.globalBatch > 0 ? options.globalBatch : 2 * spec.dp * spec.mb;
  require(options.layers >= 0, "--layers must be positive");
  checkCombination(model, spec, shape);

  Degrees d;
  d.dp = spec.dp;
  d.tp = spec.tp;
  d.pp = spec.pp;
  d.cp = spec.cp;
  d.ep = spec.ep;
  d.mb = spec.mb;
  d.zero = spec.zero;
  d.sp = spec.sp;
  if (!options.inject.empty()) checkInjectionSite(options.inject, d, shape.layers);
  // Compact micro-batches: only copies 0 and 1 are built (with an injected bug also the bug's, or 0-3 when
  // the bug's is 0 or 1 or left to the injector, which then picks 0: the template moves to 1 and 2); the
  // others are their translates (Plan::microbatches). Every stated copy is checked, so stating no more than
  // the template and the bug keeps the folded count small. Not under cp, whose chunks the fold does not take.
  if (options.compact && spec.mb >= 4 && spec.cp == 1) {
    d.builtMb = {0, 1};
    if (!options.inject.empty()) {
      const BugRequest req = parseInjection(options.inject);
      const int at = req.site.microBatch;
      d.builtMb = at >= 2 && at < spec.mb ? std::set<int>{0, 1, at} : std::set<int>{0, 1, 2, 3};
    }
    if (static_cast<int>(d.builtMb.size()) == spec.mb) d.builtMb.clear();
  }
  auto explicitPlan = [&] {
    GenerateOptions explicitOptions = options;
    explicitOptions.compact = false;
    return generatePlan(model, spec, explicitOptions);
  };

  Plan plan;
  plan.name = model.name + "-" + spec.str();
  std::replace(plan.name.begin(), plan.name.end(), ',', '-');
  std::replace(plan.name.begin(), plan.name.end(), '=', '_');
  plan.mesh = meshOf(d);
  plan.logical.name = model.name;
  plan.state = buildProgram(model, shape, ShardContext(), spec.schedule, plan.logical, nullptr);
  // Every graph's attribute objects are interned as it is built: the devices repeat the logical graph's and
  // each other's (the same dims, shapes and groups), and the peak stays one device's unshared objects.
  AttrsPool attrsPool;
  internAttrs(plan.logical, attrsPool);
  // The compact form states whole replicas along the mesh axis dp (dp / ep coordinates).
  const auto dpAxis = std::find(plan.mesh.axes.begin(), plan.mesh.axes.end(), "dp");
  const int64_t replicas =
      dpAxis == plan.mesh.axes.end() ? 1 : plan.mesh.shape[dpAxis - plan.mesh.axes.begin()];
  std::set<int64_t> stated;
  // ZeRO shards optimizer state by the dp coordinate in op attributes (slice offsets), which a translate
  // does not move: those plans stay explicit.
  const bool compact = options.compact && replicas >= 8 && spec.zero == 0;
  if (compact) {  // the template pair, and the bug's replica (0-3 when it is 0 or 1 or not given)
    stated = {0, 1};
    if (!options.inject.empty()) {
      stated = {0, 1, 2, 3};
      const BugRequest req = parseInjection(options.inject);
      if (req.site.rank >= 0 && req.site.rank < d.devices()) {
        const int64_t at = ShardContext::coordOf(d, req.site.rank).dp / d.ep;
        if (at >= 2) stated = {0, 1, at};
      }
    }
  }
  for (int r = 0; r < d.devices(); ++r) {
    if (compact && !stated.count(ShardContext::coordOf(d, r).dp / d.ep)) continue;
    Device dev;
    dev.rank = r;
    const MeshCoord at = ShardContext::coordOf(d, r);
    dev.coord = coordOf(plan.mesh, d, at);
    dev.graph.name = "rank" + std::to_string(r);
    buildProgram(model, shape, ShardContext(d, at), spec.schedule, dev.graph, &dev.lineage);
    internAttrs(dev.graph, attrsPool);
    plan.devices.push_back(std::move(dev));
  }
  hintLineage(plan);
  const Generation generation{model, spec, shape.layers};
  plan.metadata["generator"] = {{"model", model.name},         {"parallel", spec.str()},
                                {"layers", shape.layers},      {"seq", shape.seq},
                                {"global_batch", shape.batch}, {"schedule", spec.schedule}};
  std::vector<std::pair<int, std::string>> changedOps;
  if (!options.inject.empty()) {
    try {
      changedOps = injectBug(plan, generation, options.inject).changedOps;
    } catch (const BadInjection&) {
      throw;  // the explicit plan would fail alike
    } catch (const std::exception&) {
      if (!compact && d.builtMb.empty()) throw;
      return explicitPlan();  // the bug needs a replica or a micro-batch the compact form does not build
    }
  }
  if (!d.builtMb.empty()) {
    // The template pair: two consecutive built copies the injection did not touch.
    std::set<int> touched;
    for (const auto& [rank, op] : changedOps)
      touched.insert(copyTagOf(op).mb);
    // A bug in a step-wide op (the accumulation, the gradient reduction) may read the built copies in a way
    // the implied ones cannot follow (a reduction of the sum so far): such plans are explicit.
    if (touched.count(-1)) return explicitPlan();
    int from = -1;
    for (int a : d.builtMb)
      if (d.builtMb.count(a + 1) && !touched.count(a) && !touched.count(a + 1)) {
        from = a;
        break;
      }
    if (from < 0) return explicitPlan();
    plan.microbatches = MicroBatches{spec.mb, from};
  }
  if (!compact) return plan;
  std::set<int64_t> changed;  // replicas the injection touched: not a template
  for (const auto& [rank, op] : changedOps)
    changed.insert(ShardContext::coordOf(d, rank).dp / d.ep);
  std::vector<int64_t> clean;
  for (int64_t k : stated)
    if (!changed.count(k)) clean.push_back(k);
  if (clean.size() < 2) return explicitPlan();
  plan.replicas = Replicas{"dp", clean[0], clean[1]};
  return plan;
}

int Generation::firstMoeLayer() const {
  return model.moe.routedExperts > 0 && model.moe.denseLayers < layers ? model.moe.denseLayers : -1;
}

BugComparison generateBugComparison(const ModelConfig& model, const ParallelSpec& spec,
                                    GenerateOptions options) {
  BugComparison c;
  c.injected = generatePlan(model, spec, options);
  int64_t devices = 1;
  for (int64_t n : c.injected.mesh.shape)
    devices *= n;
  if ((c.injected.replicas || c.injected.microbatches) && devices <= kExplicitComparisonUpTo) {
    options.compact = false;
    c.injected = generatePlan(model, spec, options);
  }
  options.inject.clear();
  c.correct = generatePlan(model, spec, options);
  return c;
}

}  // namespace paraproof::parallel
