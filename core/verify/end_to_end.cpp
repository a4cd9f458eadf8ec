#include "core/verify/end_to_end.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <sstream>

#include "core/solver/engine.h"
#include "core/stage/fold.h"
#include "core/stage/microbatch_fold.h"
#include "core/stage/lower.h"
#include "core/stage/stage.h"

namespace paraproof::verify {

const char* effectName(Effect e) {
  switch (e) {
    case Effect::Unchanged:
      return "unchanged";
    case Effect::Changed:
      return "changed";
    case Effect::Undecided:
      return "undecided";
  }
  return "?";
}

namespace {

// The whole plan as one stage whose only obligations are the device graphs' outputs: what every device
// holds after the step. Intermediate lineage is not checked (it is the verifier's business, not the result).
stage::Stage wholePlan(const Plan& plan) {
  stage::Stage s;
  for (OpId o = 0; o < static_cast<OpId>(plan.logical.ops.size()); ++o)
    s.logicalOps.push_back(o);
  for (int d = 0; d < static_cast<int>(plan.devices.size()); ++d) {
    const Device& dev = plan.devices[d];
    for (OpId o = 0; o < static_cast<OpId>(dev.graph.ops.size()); ++o)
      s.deviceOps.push_back({d, o});
    std::set<ValueId> seen;
    for (ValueId v : dev.graph.outputs)
      if (dev.lineage.count(v) && seen.insert(v).second) s.checked.push_back({d, v});
  }
  return s;
}

std::string describe(const solver::Obligation& o, const solver::Mismatch& m) {
  std::ostringstream os;
  os << (o.device == kNone ? std::string("parts") : "rank " + std::to_string(o.device)) << " " << o.tensor
     << " vs " << o.logicalTensor << "[";
  for (size_t i = 0; i < o.index.size(); ++i)
    os << (i ? "," : "") << o.index[i];
  os << "]: expected " << m.expected << ", actual " << m.actual;
  return os.str();
}

// A copy of `plan` in which every device output whose lineage differs from the reference's output at the
// same position also feeds an identity carrying the reference lineage, appended as an extra output: the
// whole-plan problem then checks both claims.
bool withReferenceOutputs(const Plan& plan, const Plan& ref, Plan& out) {
  if (plan.devices.size() != ref.devices.size()) return false;
  out = plan;
  for (size_t d = 0; d < plan.devices.size(); ++d) {
    const Device &mine = plan.devices[d], &theirs = ref.devices[d];
    if (mine.rank != theirs.rank || mine.graph.outputs.size() != theirs.graph.outputs.size()) return false;
    Device& dev = out.devices[d];
    for (size_t k = 0; k < mine.graph.outputs.size(); ++k) {
      auto want = theirs.lineage.find(theirs.graph.outputs[k]);
      if (want == theirs.lineage.end()) continue;
      const ValueId v = mine.graph.outputs[k];
      auto have = mine.lineage.find(v);
      if (have != mine.lineage.end() && have->second == want->second) continue;
      Op op;
      op.id = "end_to_end.reference_output." + std::to_string(k);
      op.kind = "identity";
      op.inputs = {v};
      const OpId o = dev.graph.addOp(op, {{op.id, dev.graph.values[v].type}});
      const ValueId copy = dev.graph.ops[o].outputs.at(0);
      dev.lineage[copy] = want->second;
      dev.graph.outputs.push_back(copy);
    }
  }
  return true;
}

// Runs the field engine on a lowered whole-plan problem and turns its answer into an effect.
void decide(const solver::Problem& pb, const EndToEndOptions& opt, EndToEndResult& r) {
  r.obligations = pb.obligations.size();
  r.nodes = pb.pool.size();
  if (pb.obligations.empty()) {
    r.effect = Effect::Unchanged;
    r.reason = "every output is a term the correct plan computes and the oracle accepted";
    return;
  }
  solver::Budget budget{opt.timeoutSeconds, opt.cancel};
  solver::Result res;
  try {
    res = solver::makeFieldEngine(opt.trials, opt.seed, /*proveDivisors=*/false)->check(pb, budget);
  } catch (const std::exception& e) {
    r.reason = std::string("engine error: ") + e.what();
    return;
  }
  r.reason = res.reason;
  switch (res.status) {
    case solver::Status::Verified:
      r.effect = Effect::Unchanged;
      break;
    case solver::Status::Failed:
      r.effect = Effect::Changed;
      if (res.cex && !res.cex->mismatches.empty()) {
        const solver::Mismatch& m = res.cex->mismatches.front();
        r.where = describe(pb.obligations.at(m.obligation), m);
      }
      break;
    case solver::Status::Inconclusive:
      r.effect = Effect::Undecided;
      break;
  }
}

uint64_t pairKey(const solver::Obligation& o) {
  return uint64_t{o.expected} << 32 | o.actual;
}

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

bool isCompact(const Plan& plan) {
  return plan.replicas.has_value() || plan.microbatches.has_value();
}

}  // namespace

Plan explicitPlan(const Plan& plan) {
  if (!isCompact(plan)) return plan;
  return stage::expandMicroBatches(stage::expandReplicas(plan));
}

EndToEndResult checkEndToEnd(const Plan& given, const EndToEndOptions& opt) {
  const auto start = std::chrono::steady_clock::now();
  EndToEndResult r;
  Plan expanded, expandedRef;
  try {
    if (isCompact(given)) expanded = explicitPlan(given);
    if (opt.reference && isCompact(*opt.reference)) expandedRef = explicitPlan(*opt.reference);
  } catch (const std::exception& e) {
    r.reason = std::string("cannot write the compact plan out: ") + e.what();
    r.seconds = since(start);
    return r;
  }
  const Plan& plan = isCompact(given) ? expanded : given;
  const Plan* reference = opt.reference && isCompact(*opt.reference) ? &expandedRef : opt.reference;
  Plan checked;
  const bool withRef = reference && withReferenceOutputs(plan, *reference, checked);
  const Plan& target = withRef ? checked : plan;
  solver::Problem pb;
  try {
    pb = stage::lowerStage(target, wholePlan(target), opt.cancel, opt.limits);
  } catch (const std::exception& e) {
    r.reason = std::string("cannot run the plan end to end: ") + e.what();
    r.seconds = since(start);
    return r;
  }
  r.lowerSeconds = since(start);
  decide(pb, opt, r);
  r.seconds = since(start);
  return r;
}

EndToEndOracle::EndToEndOracle(const Plan& given, const EndToEndOptions& options) : options_(options) {
  const auto start = std::chrono::steady_clock::now();
  try {
    correct_ = explicitPlan(given);
  } catch (const std::exception& e) {
    base_.reason = std::string("cannot write the compact plan out: ") + e.what();
    base_.seconds = since(start);
    return;
  }
  const Plan& correct = correct_;
  const stage::Stage whole = wholePlan(correct);
  base_.elements = stage::stageElements(correct, whole);
  solver::Problem pb;
  try {
    pb = stage::lowerStageRecording(correct, whole, memo_, options_.cancel, options_.limits);
  } catch (const std::exception& e) {
    base_.reason = std::string("cannot run the plan end to end: ") + e.what();
    base_.seconds = since(start);
    memo_ = {};
    return;
  }
  base_.lowerSeconds = since(start);
  decide(pb, options_, base_);
  base_.seconds = since(start);
  if (base_.effect != Effect::Unchanged) return;
  for (const solver::Obligation& o : pb.obligations)
    passed_.push_back(pairKey(o));
  std::sort(passed_.begin(), passed_.end());
}

EndToEndResult EndToEndOracle::check(const Plan& given) const {
  const auto start = std::chrono::steady_clock::now();
  EndToEndResult r;
  if (base_.effect != Effect::Unchanged) {
    r.reason = "the oracle does not accept the correct plan: " + base_.reason;
    return r;
  }
  Plan expanded;
  try {
    if (isCompact(given)) expanded = explicitPlan(given);
  } catch (const std::exception& e) {
    r.reason = std::string("cannot write the compact plan out: ") + e.what();
    r.seconds = since(start);
    return r;
  }
  const Plan& variant = isCompact(given) ? expanded : given;
  Plan checked;
  const bool withRef = withReferenceOutputs(variant, correct_, checked);
  const Plan& target = withRef ? checked : variant;
  solver::Problem pb;
  try {
    pb = stage::lowerStageWithMemo(target, wholePlan(target), memo_, options_.cancel, options_.limits);
  } catch (const std::exception& e) {
    r.reason = std::string("cannot run the plan end to end: ") + e.what();
    r.seconds = since(start);
    return r;
  }
  r.lowerSeconds = since(start);
  std::erase_if(pb.obligations, [&](const solver::Obligation& o) {
    return std::binary_search(passed_.begin(), passed_.end(), pairKey(o));
  });
  decide(pb, options_, r);
  r.seconds = since(start);
  return r;
}

}  // namespace paraproof::verify
