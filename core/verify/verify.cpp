#include "core/verify/verify.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "core/plan/validate.h"
#include "core/solver/engine.h"
#include "core/solver/normalize.h"
#include "core/stage/canonical.h"
#include "core/stage/lower.h"
#include "core/stage/reduce.h"
#include "core/stage/stage.h"

namespace paraproof::verify {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

StageInfo describe(const Plan& plan, const stage::Stage& s) {
  StageInfo info;
  info.id = s.id;
  info.kind = s.communication ? StageKind::Communication : StageKind::Compute;
  std::set<std::string> scopes, outputs;
  std::set<int> devices;
  for (OpId o : s.logicalOps) {
    const Op& op = plan.logical.ops[o];
    info.logicalOps.push_back(op.id);
    if (!op.scope.empty()) scopes.insert(op.scope);
  }
  for (const auto& d : s.deviceOps) {
    const Device& dev = plan.devices[d.device];
    const Op& op = dev.graph.ops[d.op];
    info.parallelOps.push_back({dev.rank, op.id});
    devices.insert(dev.rank);
    if (!op.scope.empty()) scopes.insert(op.scope);
  }
  for (const auto& c : s.checked)
    outputs.insert(plan.devices[c.device].lineage.at(c.value).tensor);
  info.devices.assign(devices.begin(), devices.end());
  info.scopes.assign(scopes.begin(), scopes.end());
  info.outputs.assign(outputs.begin(), outputs.end());
  return info;
}

CounterexampleReport describeCounterexample(const solver::Problem& pb, const solver::Counterexample& cex) {
  std::vector<double> val = solver::evaluateReal(pb.pool, cex.vars);
  CounterexampleReport rep;
  rep.confirmed = cex.confirmed;
  auto values = [&](const solver::NamedTensor& t) {
    TensorValues tv{t.name, t.device, t.shape, {}};
    for (auto e : t.elems)
      tv.values.push_back(val[e]);
    return tv;
  };
  for (const auto& t : pb.logicalInputs)
    rep.logicalInputs.push_back(values(t));
  for (const auto& t : pb.parallelInputs)
    rep.parallelInputs.push_back(values(t));
  // Recompute the differing elements here so the report shows what concrete evaluation says.
  const size_t kMaxDiffs = 32;
  for (const auto& o : pb.obligations) {
    if (rep.diffs.size() >= kMaxDiffs) break;
    double e = val[o.expected], a = val[o.actual];
    if (!solver::nearlyEqual(e, a)) rep.diffs.push_back({o.device, o.tensor, o.logicalTensor, o.index, e, a});
  }
  if (rep.diffs.empty())
    for (const auto& m : cex.mismatches) {
      if (rep.diffs.size() >= kMaxDiffs) break;
      const auto& o = pb.obligations.at(m.obligation);
      rep.diffs.push_back({o.device, o.tensor, o.logicalTensor, o.index, m.expected, m.actual});
    }
  return rep;
}

// One worker's engines, created on and used by that worker's thread only.
struct Engines {
  std::unique_ptr<solver::Engine> field, z3;
};

StageResult cancelledResult(std::string engine) {
  StageResult res;
  res.status = solver::Status::Inconclusive;
  res.reason = "cancelled";
  res.engine = std::move(engine);
  return res;
}

StageResult checkProblem(const solver::Problem& pb, const Options& opt, Engines& eng,
                         const solver::Budget& budget) {
  StageResult res;
  if (pb.obligations.empty()) {
    res.status = solver::Status::Verified;
    res.engine = "none";
    res.reason = "no obligations";
    return res;
  }
  solver::Result fieldResult;
  if (opt.engine != EngineChoice::Z3) {
    if (!eng.field) eng.field = solver::makeFieldEngine();
    fieldResult = eng.field->check(pb, budget);
    if (fieldResult.status == solver::Status::Failed || opt.engine == EngineChoice::Random) {
      res.status = fieldResult.status;
      res.reason = fieldResult.reason;
      res.engine = fieldResult.engine;
      if (fieldResult.cex) res.counterexample = describeCounterexample(pb, *fieldResult.cex);
      return res;
    }
  }
  // Ring identities modulo congruence are proved by normal forms; Z3 decides the rest.
  solver::NormalisationResult nf = solver::proveByNormalisation(pb, budget);
  const std::string engineName = opt.engine == EngineChoice::Both ? "random+z3" : "z3";
  if (nf.provedCount == pb.obligations.size()) {
    res.status = solver::Status::Verified;
    res.engine = engineName;
    res.reason = "all " + std::to_string(nf.provedCount) + " obligations proved by polynomial normal form";
    return res;
  }
  // Normalisation stops early on cancel: starting a Z3 proof now (a copy of the problem, a fresh context and
  // a helper thread that then gets interrupted) would only delay the end of the run.
  if (budget.cancelled()) return cancelledResult(engineName);
  solver::Problem rest;
  const solver::Problem* toSolve = &pb;
  std::vector<size_t> restIndex;
  if (nf.provedCount > 0) {
    rest.pool = pb.pool;
    rest.logicalInputs = pb.logicalInputs;
    rest.parallelInputs = pb.parallelInputs;
    for (size_t i = 0; i < pb.obligations.size(); ++i)
      if (!nf.proved[i]) rest.obligations.push_back(pb.obligations[i]);
    toSolve = &rest;
  }
  if (!eng.z3) eng.z3 = solver::makeZ3Engine();
  solver::Result z = eng.z3->check(*toSolve, budget);
  if (nf.provedCount > 0) {
    z.reason = std::to_string(nf.provedCount) + " obligations proved by polynomial normal form, " +
               std::to_string(toSolve->obligations.size()) + " by z3: " + z.reason;
  }
  res.status = z.status;
  res.reason = z.reason;
  res.engine = engineName;
  if (z.status == solver::Status::Inconclusive && fieldResult.status == solver::Status::Verified)
    res.reason += "; the random-field engine found no difference (" + fieldResult.reason + ")";
  if (z.cex) res.counterexample = describeCounterexample(*toSolve, *z.cex);
  return res;
}

Verdict overall(const std::vector<StageResult>& results, bool cancelled) {
  bool failed = false, inconclusive = cancelled;
  for (const auto& r : results) {
    failed |= r.status == solver::Status::Failed;
    inconclusive |= r.status == solver::Status::Inconclusive;
  }
  if (failed) return Verdict::NotEquivalent;
  return inconclusive ? Verdict::Inconclusive : Verdict::Equivalent;
}

}  // namespace

Report verifyPlan(const Plan& plan, const Options& opt, Observer* observer, const std::atomic<bool>* cancel) {
  const auto start = Clock::now();
  Report rep;
  rep.plan = plan.name;
  try {
    rep.errors = validatePlan(plan);
  } catch (const std::exception& e) {
    rep.errors.push_back({"", std::string("validation failed: ") + e.what()});
  }
  if (!rep.errors.empty()) {
    rep.verdict = Verdict::Invalid;
    rep.seconds = since(start);
    return rep;
  }

  stage::ReducedPlan reduced;
  if (opt.reduceShapes) {
    reduced = stage::reducePlan(plan);
  } else {
    reduced.plan = plan;
    reduced.notes.push_back("shape reduction disabled: checking at full size");
  }
  for (auto& n : reduced.notes)
    rep.notes.push_back(n);
  rep.notes.push_back(
      "equivalence is over the reals: floating-point rounding and reassociation are out of scope");
  const Plan& work = reduced.plan;

  std::vector<stage::Stage> stages = stage::cutStages(work);
  const stage::IntDomains domains = stage::intDomains(work);
  for (const auto& s : stages)
    rep.stages.push_back(describe(work, s));
  rep.results.resize(stages.size());
  for (size_t i = 0; i < stages.size(); ++i) {
    rep.results[i].stage = static_cast<int>(i);
    rep.results[i].reason = "not checked";
  }
  if (observer) observer->onStagesPlanned(rep.stages);

  std::mutex mu;
  std::map<std::string, int> owner;         // canonical hash -> stage being / been checked
  std::map<int, std::vector<int>> waiting;  // owner stage -> identical stages waiting for it
  std::vector<bool> done(stages.size(), false);
  std::atomic<size_t> next{0};
  solver::Budget budget{opt.timeoutSeconds, cancel};
  auto cancelled = [&] { return cancel && cancel->load(); };

  auto finish = [&](int i, StageResult r) {  // call with mu held
    r.stage = i;
    rep.results[i] = std::move(r);
    done[i] = true;
    if (observer) observer->onStageFinished(rep.results[i]);
  };

  auto worker = [&] {
    Engines eng;
    while (!cancelled()) {
      size_t i = next.fetch_add(1);
      if (i >= stages.size()) break;
      if (observer) observer->onStageStarted(static_cast<int>(i));
      const auto t0 = Clock::now();
      StageResult res;
      solver::Problem pb;
      try {
        pb = stage::lowerStage(work, stages[i], domains, cancel);
      } catch (const stage::LoweringCancelled&) {
        break;
      } catch (const std::exception& e) {
        res.status = solver::Status::Inconclusive;
        res.reason = std::string("cannot encode stage: ") + e.what();
        res.engine = "none";
        res.seconds = since(t0);
        std::lock_guard lock(mu);
        finish(static_cast<int>(i), std::move(res));
        continue;
      }
      std::string hash = stage::canonicalHash(pb);
      if (cancelled()) break;  // do not start the engines after a cancel
      {
        std::lock_guard lock(mu);
        rep.stages[i].hash = hash;
        auto it = opt.dedupStages ? owner.find(hash) : owner.end();
        if (it != owner.end()) {
          int o = it->second;
          if (done[o]) {
            StageResult copy = rep.results[o];
            copy.reusedFrom = o;
            copy.seconds = since(t0);
            finish(static_cast<int>(i), std::move(copy));
          } else {
            waiting[o].push_back(static_cast<int>(i));
          }
          continue;
        }
        owner[hash] = static_cast<int>(i);
      }
      try {
        res = checkProblem(pb, opt, eng, budget);
      } catch (const std::exception& e) {
        res.status = solver::Status::Inconclusive;
        res.reason = std::string("engine error: ") + e.what();
      }
      res.seconds = since(t0);
      std::lock_guard lock(mu);
      finish(static_cast<int>(i), res);
      for (int w : waiting[static_cast<int>(i)]) {
        StageResult copy = rep.results[i];
        copy.reusedFrom = static_cast<int>(i);
        copy.seconds = 0;
        finish(w, std::move(copy));
      }
      waiting.erase(static_cast<int>(i));
    }
  };

  const int jobs = std::max(1, std::min<int>(opt.jobs, static_cast<int>(std::max<size_t>(stages.size(), 1))));
  std::vector<std::thread> threads;
  for (int t = 1; t < jobs; ++t)
    threads.emplace_back(worker);
  worker();
  for (auto& t : threads)
    t.join();

  rep.cancelled = cancelled();
  for (size_t i = 0; i < stages.size(); ++i)
    if (!done[i]) {
      rep.results[i].status = solver::Status::Inconclusive;
      rep.results[i].reason = rep.cancelled ? "cancelled" : "not checked";
    }
  rep.verdict = overall(rep.results, rep.cancelled);
  rep.seconds = since(start);
  return rep;
}

}  // namespace paraproof::verify
