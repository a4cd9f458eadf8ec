#include "core/verify/verify.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <string_view>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "core/ir/halves.h"
#include "core/plan/state_contract.h"
#include "core/plan/validate.h"
#include "core/solver/engine.h"
#include "core/solver/normalize.h"
#include "core/solver/z3_engine.h"
#include "core/stage/canonical.h"
#include "core/stage/count_degree.h"
#include "core/stage/fold.h"
#include "core/stage/lower.h"
#include "core/stage/microbatch_fold.h"
#include "core/stage/reduce.h"
#include "core/stage/signature.h"
#include "core/stage/stage.h"
#include "core/stage/stage_plan.h"
#include "core/verify/stage_share.h"

namespace paraproof::verify {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// f(0..n-1) on up to `jobs` threads; f must only touch its own index's data.
template <class F>
void parallelFor(size_t n, int jobs, F&& f) {
  std::atomic<size_t> next{0};
  auto run = [&] {
    for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1))
      f(i);
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < std::min<int>(jobs, static_cast<int>(n)); ++t)
    threads.emplace_back(run);
  run();
  for (auto& t : threads)
    t.join();
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

// `internals`: the stage's computed values (those of `pb`, or of the problem `pb` was cut from: the same
// pool).
CounterexampleReport describeCounterexample(const solver::Problem& pb, const solver::Counterexample& cex,
                                            const std::vector<solver::NamedTensor>& internals) {
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
  // Bounded: a report may hold many failing stages, and the first difference of a huge one is rarely read.
  const size_t kMaxInternalElements = size_t{1} << 18;
  size_t elements = 0;
  for (const auto& t : internals)
    elements += t.elems.size();
  if (elements <= kMaxInternalElements)
    for (const auto& t : internals)
      rep.internals.push_back(values(t));
  // Recompute the differing elements here so the report shows what concrete evaluation says.
  const size_t kMaxDiffs = 32;
  for (const auto& o : pb.obligations) {
    if (rep.diffs.size() >= kMaxDiffs) break;
    double e = val[o.expected], a = val[o.actual];
    if (!solver::nearlyEqual(e, a))
      rep.diffs.push_back({o.device, o.tensor, o.logicalTensor, o.index, e, a, {}, {}});
  }
  std::set<std::pair<std::string, std::vector<int64_t>>> differing;
  for (const ElementDiff& d : rep.diffs)
    differing.insert({d.logicalTensor, d.index});
  const size_t kMaxAgreeing = 256;
  for (const auto& o : pb.obligations) {
    if (rep.agreeing.size() >= kMaxAgreeing) break;
    if (o.device == kNone || !differing.count({o.logicalTensor, o.index})) continue;
    double e = val[o.expected], a = val[o.actual];
    if (solver::nearlyEqual(e, a))
      rep.agreeing.push_back({o.device, o.tensor, o.logicalTensor, o.index, e, a, {}, {}});
  }
  if (rep.diffs.empty())
    for (const auto& m : cex.mismatches) {
      if (rep.diffs.size() >= kMaxDiffs) break;
      const auto& o = pb.obligations.at(m.obligation);
      rep.diffs.push_back({o.device, o.tensor, o.logicalTensor, o.index, m.expected, m.actual, {}, {}});
    }
  return rep;
}

// A result reused for an identical stage: its values inside the stage name the checked stage's tensors.
StageResult withoutInternals(const StageResult& r) {
  StageResult copy = r;
  if (copy.counterexample) copy.counterexample->internals.clear();
  return copy;
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

StageResult decideProblem(const solver::Problem& pb, const Options& opt, Engines& eng,
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
      if (fieldResult.cex) res.counterexample = describeCounterexample(pb, *fieldResult.cex, pb.internals);
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
  if (!eng.z3) {
    solver::Z3Options z3opt;
    z3opt.maxMemoryMb = opt.z3MemoryMb;
    eng.z3 = solver::makeZ3Engine(z3opt);
  }
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
  if (z.cex) res.counterexample = describeCounterexample(*toSolve, *z.cex, pb.internals);
  return res;
}

// An engine's "verified" is a proof only if its premises and every obligation's definedness guard can hold
// (docs/soundness.md, "Engines"); otherwise the stage is inconclusive, the reason naming the obligation.
StageResult checkProblem(const solver::Problem& pb, const Options& opt, Engines& eng,
                         const solver::Budget& budget) {
  StageResult res = decideProblem(pb, opt, eng, budget);
  if (res.status != solver::Status::Verified) return res;
  solver::Z3Options z3opt;
  z3opt.maxMemoryMb = opt.z3MemoryMb;
  const solver::Result premises = solver::checkPremises(pb, budget, z3opt);
  if (premises.status == solver::Status::Verified) return res;
  res.status = solver::Status::Inconclusive;
  res.reason = premises.reason + "; the engines' verdict is withheld (" + res.reason + ")";
  return res;
}

// Identical stages are checked once, by whichever worker got there first; report the lowest-numbered one
// as checked and the others as reusing it, so the report does not depend on --jobs or thread timing.
void canonicalOwners(Report& rep) {
  std::map<std::string, std::vector<int>> groups;
  for (size_t i = 0; i < rep.stages.size(); ++i)
    if (!rep.stages[i].hash.empty()) groups[rep.stages[i].hash].push_back(static_cast<int>(i));
  for (auto& [hash, members] : groups) {
    if (members.size() < 2) continue;
    const int first = members.front();
    for (int m : members) {
      StageResult& r = rep.results[m];
      if (r.reusedFrom == kNone && m != first && rep.results[first].reusedFrom == m) {
        std::swap(r, rep.results[first]);
        std::swap(r.stage, rep.results[first].stage);
      }
    }
    for (int m : members)
      if (m != first && rep.results[m].reusedFrom != kNone) rep.results[m].reusedFrom = first;
  }
}

// Stages with equal canonical forms checked by different processes: one process would have checked the
// first and let the others reuse its result, so the shared report says the same.
void shareIdenticalAcrossProcesses(Report& rep) {
  std::map<std::string, int> checked;  // hash -> the first stage checked with it
  for (size_t i = 0; i < rep.stages.size(); ++i) {
    if (rep.stages[i].hash.empty() || rep.results[i].reusedFrom != kNone) continue;
    auto [it, fresh] = checked.emplace(rep.stages[i].hash, static_cast<int>(i));
    if (fresh) continue;
    StageResult copy = withoutInternals(rep.results[it->second]);
    copy.stage = static_cast<int>(i);
    copy.reusedFrom = it->second;
    copy.seconds = 0;
    rep.results[i] = std::move(copy);
  }
}

// Each violation of the state contract is reported as a failed check of its own. Returns true when the
// contract is violated.
bool addStateContract(const Plan& plan, Report& rep) {
  if (plan.state.empty()) {
    rep.notes.push_back(
        "no state declared (an inference-style plan): whether every device outputs the successor of the "
        "state it holds is not checked");
    return false;
  }
  std::vector<StateViolation> violations = checkStateContract(plan);
  if (violations.empty()) {
    rep.notes.push_back("state contract: every device holding a piece of one of the " +
                        std::to_string(plan.state.size()) +
                        " state tensors outputs that piece of its successor");
    return false;
  }
  for (const StateViolation& v : violations) {
    StageInfo info;
    info.id = static_cast<int>(rep.stages.size());
    info.kind = StageKind::State;
    info.devices = {v.rank};
    for (const std::string& op : v.ops)
      info.parallelOps.push_back({v.rank, op});
    std::set<std::string> scopes(v.scopes.begin(), v.scopes.end());
    ValueId succ = plan.logical.findValue(v.successor);
    if (succ != kNone && plan.logical.values[succ].producer != kNone) {
      const Op& op = plan.logical.ops[plan.logical.values[succ].producer];
      info.logicalOps.push_back(op.id);
      if (!op.scope.empty()) scopes.insert(op.scope);
    }
    info.scopes.assign(scopes.begin(), scopes.end());
    info.outputs = {v.successor};
    StageResult res;
    res.stage = info.id;
    res.status = solver::Status::Failed;
    res.engine = "none";
    res.reason = "state contract violated: " + v.message;
    rep.stages.push_back(std::move(info));
    rep.results.push_back(std::move(res));
  }
  rep.notes.push_back(
      "solver stages not checked: the state contract already makes the plan not equivalent (the devices' "
      "state after the step is not the logical one)");
  return true;
}

// Stages of a folded plan name folded ranks; the report names the ranks of the plan as given.
void unfoldRanks(const std::vector<int>& original, Report& rep) {
  auto orig = [&](int& r) {
    if (r >= 0 && static_cast<size_t>(r) < original.size()) r = original[static_cast<size_t>(r)];
  };
  for (StageInfo& s : rep.stages) {
    for (int& d : s.devices)
      orig(d);
    std::sort(s.devices.begin(), s.devices.end());
    for (auto& p : s.parallelOps)
      orig(p.rank);
  }
  for (StageResult& r : rep.results) {
    if (!r.counterexample) continue;
    for (auto& t : r.counterexample->parallelInputs)
      orig(t.device);
    for (auto& t : r.counterexample->internals)
      orig(t.device);
    for (auto& d : r.counterexample->diffs)
      orig(d.device);
    for (auto& d : r.counterexample->agreeing)
      orig(d.device);
  }
}

Verdict overall(const std::vector<StageResult>& results, bool stopped) {
  bool failed = false, inconclusive = stopped;
  for (const auto& r : results) {
    failed |= r.status == solver::Status::Failed;
    inconclusive |= r.status == solver::Status::Inconclusive;
  }
  if (failed) return Verdict::NotEquivalent;
  return inconclusive ? Verdict::Inconclusive : Verdict::Equivalent;
}

// Completeness, not soundness (the size points carry that): a stage that failed on a folded plan and holds
// a constant that could stand for a full-size count (FoldedPlan::countsMet) may be a correct hard-coded count
// checked at the folded one, so the plan is checked again unfolded (docs/soundness.md, "Size points").
std::optional<std::string> foldArtefactSuspect(const Plan& work, const std::vector<stage::Stage>& stages,
                                               const Report& rep, const std::set<int64_t>& countsMet) {
  if (countsMet.empty()) return std::nullopt;
  for (size_t i = 0; i < stages.size(); ++i) {
    if (rep.results[i].status != solver::Status::Failed) continue;
    std::vector<const Op*> ops;
    for (OpId o : stages[i].logicalOps)
      ops.push_back(&work.logical.ops[static_cast<size_t>(o)]);
    for (const stage::DeviceOp& d : stages[i].deviceOps)
      ops.push_back(&work.devices[static_cast<size_t>(d.device)].graph.ops[static_cast<size_t>(d.op)]);
    for (int64_t c : stage::countLikeConstants(ops, true, true, true))
      if (countsMet.count(c))
        return "stage " + std::to_string(i) +
               " failed folded and holds a constant that could stand for the count " + std::to_string(c) +
               " of the plan as given";
  }
  return std::nullopt;
}

// A counterexample found at reduced shape: not "confirmed" (that means at full size), and each diff names
// the full-size index range its reduced element stands for (extent ratios per dim of its logical tensor).
void markReduced(CounterexampleReport& c, const Plan& full, const Plan& reduced) {
  c.fullSize = false;
  c.reducedConfirmed = c.confirmed;
  c.confirmed = false;
  for (ElementDiff& d : c.diffs) {
    const ValueId fv = full.logical.findValue(d.logicalTensor),
                  rv = reduced.logical.findValue(d.logicalTensor);
    if (fv == kNone || rv == kNone) continue;
    const Shape& fs = full.logical.values[static_cast<size_t>(fv)].type.shape;
    const Shape& rs = reduced.logical.values[static_cast<size_t>(rv)].type.shape;
    if (fs.size() != rs.size() || d.index.size() != fs.size()) continue;
    d.fullIndex.clear();
    for (size_t a = 0; a < fs.size(); ++a) {
      const int64_t f = rs[a] > 0 && fs[a] % rs[a] == 0 ? fs[a] / rs[a] : 1;
      d.fullIndex.push_back({d.index[a] * f, d.index[a] * f + f});
    }
    d.fullShape = fs;
  }
}

// A folded plan moves kept replicas and micro-batch copies along the batch (fold.h): the full-size range of a
// diff found at reduced shape is in the folded plan's coordinates. Moves it to those of the plan as given by
// the lineage of the same device tensor on the original rank (`originalRank`: by device index of `folded`,
// empty when ranks are unchanged); a diff that cannot be matched (a sum of parts, a replica or copy the given
// plan leaves implied) keeps the folded plan's coordinates.
void unfoldFullIndex(CounterexampleReport& c, const Plan& folded, const std::vector<int>& originalRank,
                     const Plan& given) {
  auto deviceOf = [](const Plan& p, int rank) -> const Device* {
    for (const Device& d : p.devices)
      if (d.rank == rank) return &d;
    return nullptr;
  };
  auto lineageOf = [](const Device& d, const std::string& tensor) -> const Lineage* {
    const ValueId v = d.graph.findValue(tensor);
    auto it = v == kNone ? d.lineage.end() : d.lineage.find(v);
    return it == d.lineage.end() ? nullptr : &it->second;
  };
  for (ElementDiff& d : c.diffs) {
    if (d.fullIndex.empty() || d.device == kNone) continue;
    const Device* fd = deviceOf(folded, d.device);
    if (!fd) continue;
    const size_t index = static_cast<size_t>(fd - folded.devices.data());
    const int rank = index < originalRank.size() ? originalRank[index] : d.device;
    const Device* gd = deviceOf(given, rank);
    const Lineage* fl = lineageOf(*fd, d.tensor);
    const Lineage* gl = gd ? lineageOf(*gd, d.tensor) : nullptr;
    const ValueId gv = given.logical.findValue(d.logicalTensor);
    if (!fl || !gl || gv == kNone || fl->tensor != gl->tensor ||
        fl->box.ranges.size() != d.fullIndex.size() || gl->box.ranges.size() != d.fullIndex.size() ||
        fl->box.extent() != gl->box.extent())
      continue;
    for (size_t a = 0; a < d.fullIndex.size(); ++a) {
      const int64_t shift = gl->box.ranges[a].first - fl->box.ranges[a].first;
      d.fullIndex[a].first += shift;
      d.fullIndex[a].second += shift;
    }
    d.fullShape = given.logical.values[static_cast<size_t>(gv)].type.shape;
  }
}

// Condition D for reduction: a stage the two reductions do not prove is checked at full size up to this
// many elements (a fixture, a red-team recipe, a small model); larger ones keep their reduced proof, said in
// a note (docs/soundness.md, "Size points").
constexpr int64_t kSeveralClassesElements = int64_t{1} << 16;
// The words of the note that says some stage's proof rests on the two reductions alone (condition D for
// reduction's open case): a stage proved as a plan of its own is not taken when its run says this.
constexpr const char* kRestsOnTwoReductions = "their proof rests on the two reductions";
// A stage proved as a plan of its own is marked in the report by this and its full-size signature.
constexpr std::string_view kApart = "apart:";

// Where a run checks the plan (docs/soundness.md, "Size points"): the fold counts and the reduction, each at
// its first (0) or second (1) point.
struct SizePoint {
  int replicas = 0, copies = 0, shapes = 0;
};

// The plan at a point's fold counts, folded and validated, with what the folds recorded.
struct Prepared {
  stage::FoldedPlan folded, mbFolded;
  Plan expanded, expandedCopies;  // a compact plan written out, where it does not fold
  const Plan* input = nullptr;    // the plan to reduce: the given one or one of the above
};

// What a run did at its size point, for verifyPlan to choose the other points.
struct PointOutcome {
  bool replicasFolded = false, copiesFolded = false, reduced = false;
  std::optional<std::string> unfoldWhy;  // a failure that may be a correct hard-coded full count
  std::optional<std::string> tooCoarse;  // condition D fails: two fold counts do not prove every count
  // Condition D: the counts of each fold the plan's stages need (1: one count proves every count).
  int replicaCounts = 1, copyCounts = 1;
  // Condition D for reduction: by stage, whether a reduced class of it needs a second extent, and those
  // classes: the second reduction moves only them and checks only those stages.
  std::vector<bool> secondReduction;
  std::set<size_t> moveClasses;
  std::shared_ptr<const Prepared> prepared;  // the folded, validated plan, for the second reduction
  std::shared_ptr<stage::ReductionAnalysis> reduction;  // what the first reduction learnt of it, likewise
  // The cut and its descriptions, for the second reduction: reduction keeps the cut (docs/soundness.md,
  // "Reduction keeps the cut").
  std::shared_ptr<const std::vector<stage::Stage>> stages;
  std::shared_ptr<const std::vector<StageInfo>> described;
};

// Verified stages by signature, across the size points of one verification: a stage whose problem does not
// depend on the point (a replica's own compute) is checked once.
struct StageCache {
  std::unordered_map<std::string, StageResult> verified;
  // Stages tried as plans of their own, by signature at full size (equal signatures are equal problems):
  // the result where that proved them, none where it did not. `run` (numbered by `runs`) and `stage` name
  // the size point's run and the stage that tried.
  struct Apart {
    std::optional<StageResult> proved;
    int run = 0;
    int stage = kNone;
  };
  int runs = 0;
  std::mutex apartMu;
  std::unordered_map<std::string, Apart> apart;
};

// Fold, validate, check the state contract (docs/soundness.md, "Folds" and "State contract"): the plan the
// later passes reduce and check, at the point's fold counts. A compact plan is folded before validation, an
// explicit one after. Null when that decides the verdict (invalid input, a state violation), set in `rep`.
// It does not depend on the reduction: the second reduction reuses the first point's.
std::shared_ptr<Prepared> prepare(const Plan& given, const Options& opt, const SizePoint& at, Report& rep,
                                  const std::function<void(const char*)>& phase, Observer* observer) {
  auto prep = std::make_shared<Prepared>();
  stage::FoldedPlan& folded = prep->folded;
  stage::FoldedPlan& mbFolded = prep->mbFolded;
  Plan& expanded = prep->expanded;
  Plan& expandedCopies = prep->expandedCopies;
  // A compact plan (replicas implied) is checked folded, or else written out replica by replica; an explicit
  // one is validated as given and folded when its replicas are translates of each other.
  const Plan* checked = &given;
  if (given.replicas) {
    if (opt.fold) folded = stage::foldReplicas(given, "dp", at.replicas);
    if (folded.folded) {
      checked = &folded.plan;
    } else {
      try {
        expanded = stage::expandReplicas(given);
        checked = &expanded;
      } catch (const std::bad_alloc&) {
        throw;  // out of memory is no property of the plan
      } catch (const std::exception& e) {
        rep.errors.push_back({"/replicas", e.what()});
      }
    }
  }
  // Compact micro-batches likewise: folded, or written out copy by copy, before validation.
  if (checked->microbatches && rep.errors.empty()) {
    try {
      if (opt.fold) {
        // The replica fold's plan serves only as this fold's input: its graphs are taken, not copied.
        mbFolded = checked == &folded.plan
                       ? stage::foldMicroBatches(std::move(folded.plan), at.copies, &folded.parameter)
                       : stage::foldMicroBatches(*checked, at.copies, &folded.parameter);
        if (!mbFolded.folded) rep.errors.push_back({"/microbatches", mbFolded.notes.front()});
      } else {
        expandedCopies = stage::expandMicroBatches(*checked);
      }
    } catch (const std::bad_alloc&) {
      throw;  // out of memory is no property of the plan
    } catch (const std::exception& e) {
      rep.errors.push_back({"/microbatches", e.what()});
    }
    if (rep.errors.empty()) checked = mbFolded.folded ? &mbFolded.plan : &expandedCopies;
  }
  const Plan& plan = *checked;
  // A fold validates the plan it builds when that plan is whole: not twice.
  const bool validated =
      (checked == &folded.plan && folded.validated) || (checked == &mbFolded.plan && mbFolded.validated);
  try {
    if (rep.errors.empty() && !validated) rep.errors = validatePlan(plan);
  } catch (const std::bad_alloc&) {
    throw;  // out of memory is no property of the plan
  } catch (const std::exception& e) {
    rep.errors.push_back({"", std::string("validation failed: ") + e.what()});
  }
  phase("validate");
  if (!rep.errors.empty()) {
    rep.verdict = Verdict::Invalid;
    return nullptr;
  }

  // Structural, on the plan as given (full shapes), before any reduction or lowering: a violation decides
  // the verdict, so the plan is not equivalent at every size (and a full-size plan needs no lowering).
  const bool stateViolated = addStateContract(plan, rep);
  phase("state");
  if (stateViolated) {
    if (observer) {
      observer->onStagesPlanned(rep.stages);
      for (const StageResult& r : rep.results)
        observer->onStageFinished(r);
    }
    rep.verdict = Verdict::NotEquivalent;
    return nullptr;
  }

  if (!given.replicas && opt.fold) folded = stage::foldReplicas(plan, "dp", at.replicas);
  // (`plan` is already folded where the plan was compact.)
  const Plan& replicaFolded = !given.replicas && folded.folded ? folded.plan : plan;
  // Micro-batches are copies inside each device graph: folded after the replicas, ranks unchanged.
  if (!given.microbatches && opt.fold)
    mbFolded = stage::foldMicroBatches(replicaFolded, at.copies, &folded.parameter);
  prep->input = !given.microbatches && mbFolded.folded ? &mbFolded.plan : &replicaFolded;
  return prep;
}

// One verification at one size point (docs/soundness.md names the condition each pass relies on): the
// passes in `run`, each reading what the earlier ones left in the members.
class PointRun {
 public:
  PointRun(const Plan& given, const Options& opt, Observer* observer, const std::atomic<bool>* cancel,
           const SizePoint& at, PointOutcome* outcome, StageCache* cache, const PointOutcome* first)
      : given(given),
        opt(opt),
        observer(observer),
        cancel(cancel),
        at(at),
        outcome(outcome),
        cache(cache),
        first(first),
        runId(cache ? ++cache->runs : 0) {
    rep.plan = given.name;
  }

  Report run() {
    if (!foldAndValidate()) return decided();  // "Replica fold", "Micro-batch fold", "The theorem" (4)
    reduceAndCut();                            // "Shape reduction", "Reduction keeps the cut"
    if (!cut()) return decided();              // "Stages"; "Size points": condition D for the folds
    dedup();                                   // "Canonical stages": signatures, the cache of points
    conditionDForReduction();                  // "Size points": condition D for reduction
    check();                                   // "Engines", "Division"
    recheckAtFullSize();                       // "Full-size re-check"
    return finish();
  }

 private:
  const Plan& given;
  const Options& opt;
  Observer* observer;
  const std::atomic<bool>* cancel;
  const SizePoint at;
  PointOutcome* outcome;
  StageCache* cache;
  const PointOutcome* first;
  const int runId;  // among the runs sharing `cache`

  const Clock::time_point start = Clock::now();
  Clock::time_point phaseStart = start;
  Report rep;
  std::shared_ptr<const Prepared> prep;
  stage::ReducedPlan reduced;
  std::vector<stage::Stage> stages;
  stage::IntDomains domains;
  std::vector<int> toCheck;                            // signature owners, in stage order
  std::map<int, std::vector<int>> sameSigners;         // owner -> later stages with its signature
  std::vector<std::string> sigs;                       // by stage, when deduplicating
  std::vector<std::pair<int, StageResult>> fromCache;  // owners proved at an earlier size point
  std::vector<std::string> severalClasses;             // by stage: why condition D wants full size
  std::vector<bool> done;
  std::vector<Diagnostic> invalid;  // ops that lowering rejects (division by a constant zero)
  std::once_flag inputDomainsOnce;
  std::optional<stage::IntDomains> inputDomains;  // of input(): the full-size signatures of provedApart
  // One stop flag for everything below: the caller's cancel or the run's deadline, whichever comes first.
  std::atomic<bool> stop{false}, deadlineReached{false};
  solver::Budget budget{opt.timeoutSeconds, &stop};
  std::mutex watchMu;
  std::condition_variable watchCv;
  bool workersDone = false;
  std::thread watcher;

  const stage::FoldedPlan& folded() const { return prep->folded; }
  const stage::FoldedPlan& mbFolded() const { return prep->mbFolded; }
  const Plan& input() const { return *prep->input; }  // folded and validated, full shapes
  const Plan& work() const { return reduced.plan; }   // reduced
  bool cancelled() const { return stop.load(); }

  void phase(const char* name) {  // closes the phase that ran since the previous call
    const auto now = Clock::now();
    rep.phases.push_back({name, std::chrono::duration<double>(now - phaseStart).count()});
    phaseStart = now;
  }

  Report decided() {
    rep.seconds = since(start);
    return std::move(rep);
  }

  bool foldAndValidate() {
    if (at.shapes == 1 && first && first->prepared) {
      prep = first->prepared;  // the same fold counts: the same folded, validated plan
    } else {
      prep = prepare(
          given, opt, at, rep, [this](const char* name) { phase(name); }, observer);
      if (!prep) return false;
    }
    outcome->prepared = prep;
    for (const stage::FoldedPlan* f : {&folded(), &mbFolded()})
      for (auto& n : f->notes)
        rep.notes.push_back(n);
    phase("fold");
    return true;
  }

  // Reduction keeps the cut (docs/soundness.md): the stages of the reduced plan are those of the plan it
  // reduces, so the first reduction cuts that plan on a second thread while it reduces it. The second
  // reduction takes the first's stages.
  bool sameCut() const { return at.shapes == 1 && first && first->stages && first->described; }

  void reduceAndCut() {
    inTwoHalves(2, !sameCut() && largePlan(input()), [&](size_t begin, size_t end) {
      for (size_t task = begin; task < end; ++task)
        if (task == 0)
          reduce();
        else if (!sameCut())
          stages = stage::cutStages(input());
    });
    phase("reduce");
    for (auto& n : reduced.notes)
      rep.notes.push_back(n);
    rep.notes.push_back(
        "equivalence is over the reals: floating-point rounding and reassociation are out of scope");
  }

  void reduce() {
    // The axes the folds scaled keep their extents: the fold's two points must stay apart after reduction.
    std::vector<std::pair<ValueId, int>> foldScaled;
    for (const stage::FoldedPlan* f : {&folded(), &mbFolded()})
      if (f->folded) foldScaled.insert(foldScaled.end(), f->scaled.begin(), f->scaled.end());
    if (opt.reduceShapes) {
      const bool second = at.shapes == 1 && first;
      reduced = stage::reducePlan(input(), at.shapes, foldScaled, second ? &first->moveClasses : nullptr,
                                  second ? first->reduction : nullptr);
      outcome->reduction = reduced.analysis;
    } else {
      reduced.plan = input();
      reduced.notes.push_back("shape reduction disabled: checking at full size");
    }
  }

  // The second reduction checks only the stages a second extent serves (and a held stage); the others were
  // proved at the first point (condition D for reduction).
  bool secondReductionOnly() const {
    return first && at.shapes == 1 && first->secondReduction.size() == stages.size();
  }
  bool checkedHere(size_t i) const {
    return !secondReductionOnly() || first->secondReduction[i] || static_cast<int>(i) == opt.holdStage;
  }

  bool cut() {
    // Reduction keeps the cut (docs/soundness.md): the second reduction reduces the first's plan, so it has
    // the first's stages; the first's cut and descriptions serve it.
    const bool sameCut = this->sameCut();
    if (sameCut) stages = *first->stages;
    std::vector<size_t> here;
    for (size_t i = 0; i < stages.size(); ++i)
      if (checkedHere(i)) here.push_back(i);
    domains = stage::intDomains(work());
    // Condition D (docs/soundness.md, "Size points"): two fold counts prove every count only for stages whose
    // dependence on the count is a Laurent polynomial of width <= 1; otherwise the plan is checked unfolded.
    using Parameter = std::pair<const stage::FoldParameter*, const char*>;
    std::vector<Parameter> parameters;
    if (opt.fold) {
      const stage::FoldParameter& replicas = mbFolded().folded ? mbFolded().carried : folded().parameter;
      for (const Parameter& p :
           {Parameter{&replicas, "replica"}, Parameter{&mbFolded().parameter, "micro-batch"}})
        if (!p.first->empty()) parameters.push_back(p);
    }
    std::vector<stage::FoldIndex> indices;  // built once: every stage looks its ops and values up in them
    indices.reserve(parameters.size());
    std::vector<const stage::FoldIndex*> folds;
    for (const auto& [t, what] : parameters)
      folds.push_back(&indices.emplace_back(*t));
    const std::vector<std::vector<int>> counts = foldCountsNeeded(here, folds, sign(here, folds));
    for (size_t k = 0; k < parameters.size(); ++k) {
      const auto& [t, what] = parameters[k];
      const std::vector<int>& need = counts[k];
      const auto worst = std::max_element(need.begin(), need.end());
      if (worst == need.end()) continue;
      (t == &mbFolded().parameter ? outcome->copyCounts : outcome->replicaCounts) = *worst;
      if (*worst <= stage::kFoldPoints) continue;
      const size_t i = static_cast<size_t>(worst - need.begin());
      const std::vector<std::string> scopes = describe(work(), stages[i]).scopes;
      const std::string scope = scopes.empty() ? "" : " (" + scopes.front() + ")";
      outcome->tooCoarse = "stage " + std::to_string(i) + scope + " may depend on the " + what +
                           " count through " + std::to_string(*worst) + " powers of it, more than the " +
                           std::to_string(stage::kFoldPoints) +
                           " fold counts checked can pin down (condition D)";
      rep.verdict = Verdict::Inconclusive;
      return false;
    }
    const size_t described = rep.stages.size();
    if (sameCut) {
      rep.stages.insert(rep.stages.end(), first->described->begin(), first->described->end());
    } else {
      rep.stages.resize(described + stages.size());
      parallelFor(stages.size(), opt.jobs,
                  [&](size_t i) { rep.stages[described + i] = describe(work(), stages[i]); });
    }
    if (!at.replicas && !at.copies && !at.shapes) {
      outcome->stages = std::make_shared<const std::vector<stage::Stage>>(stages);
      outcome->described = std::make_shared<const std::vector<StageInfo>>(
          rep.stages.begin() + static_cast<std::ptrdiff_t>(described), rep.stages.end());
    }
    rep.results.resize(stages.size());
    for (size_t i = 0; i < stages.size(); ++i) {
      rep.results[i].stage = static_cast<int>(i);
      rep.results[i].reason = "not checked";
    }
    phase("cut");
    return true;
  }

  // Signs every stage checked here (signature.h, `markedSignature`) when deduplicating: the signatures go to
  // `sigs`, and each stage's digest of every fold parameter's marks is returned (empty: not deduplicating).
  std::vector<std::vector<std::string>> sign(const std::vector<size_t>& here,
                                             const std::vector<const stage::FoldIndex*>& folds) {
    std::vector<std::vector<std::string>> marks(opt.dedupStages ? stages.size() : 0);
    if (!opt.dedupStages) return marks;
    sigs.assign(stages.size(), {});
    parallelFor(here.size(), opt.jobs, [&](size_t j) {
      stage::MarkedSignature m = stage::markedSignature(work(), stages[here[j]], domains, folds);
      sigs[here[j]] = std::move(m.plain);
      marks[here[j]] = std::move(m.marks);
    });
    return marks;
  }

  // Condition D's count of each fold parameter (`folds`), by stage (1 where not checked here). Stages whose
  // signatures and fold marks are equal need the same counts: one of each is analysed (without
  // deduplication, every stage).
  std::vector<std::vector<int>> foldCountsNeeded(const std::vector<size_t>& here,
                                                 const std::vector<const stage::FoldIndex*>& folds,
                                                 const std::vector<std::vector<std::string>>& marks) {
    std::vector<std::vector<int>> need(folds.size(), std::vector<int>(stages.size(), 1));
    for (size_t k = 0; k < folds.size(); ++k) {
      std::vector<size_t> owners;                  // the stages analysed
      std::vector<size_t> ownerOf(stages.size());  // by stage: the stage whose count it takes
      std::unordered_map<std::string, size_t> firstWith;
      for (size_t i : here) {
        ownerOf[i] = opt.dedupStages ? firstWith.emplace(sigs[i] + marks[i][k], i).first->second : i;
        if (ownerOf[i] == i) owners.push_back(i);
      }
      parallelFor(owners.size(), opt.jobs, [&](size_t j) {
        need[k][owners[j]] = stage::countsNeeded(work(), stages[owners[j]], *folds[k]);
      });
      for (size_t i : here)
        need[k][i] = need[k][ownerOf[i]];
    }
    return need;
  }

  void dedup() {
    // Stages with equal signatures (signed by cut()) lower to the same problem (signature.h): only the first
    // of each is lowered and checked; the others take its result when it finishes.
    std::unordered_map<std::string, int> firstWith;
    for (size_t i = 0; i < stages.size(); ++i) {
      if (!checkedHere(i)) {
        StageResult r;
        r.status = solver::Status::Verified;
        r.engine = "none";
        r.reason = "no reduced class of it needs a second extent (condition D)";
        fromCache.push_back({static_cast<int>(i), std::move(r)});
        continue;
      }
      if (!opt.dedupStages) {
        toCheck.push_back(static_cast<int>(i));
        continue;
      }
      // The held stage (a testing gate) is always checked itself.
      auto [it, fresh] = static_cast<int>(i) == opt.holdStage
                             ? std::make_pair(firstWith.end(), true)
                             : firstWith.emplace(sigs[i], static_cast<int>(i));
      if (!fresh) {
        sameSigners[it->second].push_back(static_cast<int>(i));
      } else if (auto c = cache ? cache->verified.find(sigs[i]) : decltype(cache->verified.end()){};
                 cache && c != cache->verified.end() && static_cast<int>(i) != opt.holdStage) {
        fromCache.push_back({static_cast<int>(i), c->second});
      } else {
        toCheck.push_back(static_cast<int>(i));
      }
    }
    rep.distinctStages = toCheck.size();
  }

  void conditionDForReduction() {
    // Condition D for reduction (docs/soundness.md, "Size points"): the two reductions move every class
    // together, so a stage whose obligations depend on two reduced classes, or on one through more than two
    // powers, is also checked at full size where it is small enough.
    severalClasses.assign(stages.size(), {});
    std::vector<stage::ClassNeeds> needs(reduced.classes ? stages.size() : 0);
    if (reduced.classes) {
      parallelFor(toCheck.size(), opt.jobs, [&](size_t k) {
        const size_t i = static_cast<size_t>(toCheck[k]);
        const stage::ClassNeeds n = stage::reducedClassNeeds(work(), stages[i], *reduced.classes);
        needs[i] = n;
        if (n.provedByTwoPoints()) return;
        severalClasses[i] = n.more.empty()
                                ? "its obligations depend on " + std::to_string(n.twoCounts.size()) +
                                      " reduced axis classes, which the two reductions move together"
                                : "its obligations depend on a reduced axis class through more than "
                                  "two powers of its extent";
      });
      for (const auto& [o, same] : sameSigners)
        for (int m : same)
          severalClasses[static_cast<size_t>(m)] = severalClasses[static_cast<size_t>(o)];
    }
    // At the first size point: the stages a second extent serves and the classes it must move, those of every
    // stage whose signature owner depends on a class (its copies may hold other classes of the same shape).
    if (reduced.classes && !at.replicas && !at.copies && !at.shapes) {
      auto depends = [&](size_t i) { return !needs[i].twoCounts.empty() || !needs[i].more.empty(); };
      std::vector<size_t> copies;
      for (const auto& [o, same] : sameSigners)
        if (depends(static_cast<size_t>(o)))
          for (int m : same)
            copies.push_back(static_cast<size_t>(m));
      parallelFor(copies.size(), opt.jobs, [&](size_t k) {
        needs[copies[k]] = stage::reducedClassNeeds(work(), stages[copies[k]], *reduced.classes);
      });
      outcome->secondReduction.assign(stages.size(), false);
      for (size_t i = 0; i < stages.size(); ++i)
        if (depends(i)) {
          outcome->secondReduction[i] = true;
          outcome->moveClasses.insert(needs[i].twoCounts.begin(), needs[i].twoCounts.end());
          outcome->moveClasses.insert(needs[i].more.begin(), needs[i].more.end());
        }
    }
    if (opt.share) {  // dealt round-robin in stage order: every process computes the same deal
      std::vector<int> mine;
      for (size_t k = 0; k < toCheck.size(); ++k)
        if (static_cast<int>(k % static_cast<size_t>(opt.share->count())) == opt.share->index() ||
            toCheck[k] == opt.holdStage)
          mine.push_back(toCheck[k]);
      toCheck = std::move(mine);
    }
    largestFirst(toCheck);
    phase("dedup");
    if (observer) observer->onStagesPlanned(rep.stages);
  }

  // Largest stages (scalar elements) first: a stage as large as the rest together then starts at once
  // instead of last, and the workers share what is left (longest-processing-time-first scheduling).
  void largestFirst(std::vector<int>& list) {
    std::vector<int64_t> size(stages.size(), 0);
    parallelFor(list.size(), opt.jobs,
                [&](size_t k) { size[list[k]] = stage::stageElements(work(), stages[list[k]]); });
    std::stable_sort(list.begin(), list.end(), [&](int a, int b) { return size[a] > size[b]; });
    // A held stage (--hold-stage, for tests) goes first: it is held whatever else the run has done.
    std::stable_partition(list.begin(), list.end(), [&](int i) { return i == opt.holdStage; });
  }

  // A large stage verified as a plan of its own (docs/soundness.md, "A stage as a plan of its own"): the
  // stage's ops and the lineage of its values, taken from the folded plan at full size, whose axis classes
  // the verifier reduces apart from the rest of the plan's (a class another stage must keep whole, such as
  // the experts a top-k picks from, shrinks in the stages that only compute over it). Its result where that
  // run proves it equivalent with nothing left open; none otherwise, and the stage is checked as usual
  // (a failure is always found and reported by the usual check).
  // `hash` receives the stage's mark in the report: "apart:" and its full-size signature, which groups the
  // stages one proof serves (canonicalOwners) and keeps the result out of the reduced-signature cache.
  std::optional<StageResult> provedApart(size_t i, std::string& hash) {
    if (opt.apartElements <= 0 || !reduced.reduced || !cache || static_cast<int>(i) == opt.holdStage)
      return std::nullopt;
    if (stage::stageElements(work(), stages[i]) < opt.apartElements) return std::nullopt;
    std::call_once(inputDomainsOnce, [&] { inputDomains = stage::intDomains(input()); });
    const std::string sig = stage::stageSignature(input(), stages[i], *inputDomains);
    hash = std::string(kApart) + sig;
    auto reuse = [&](const StageCache::Apart& a) -> std::optional<StageResult> {
      if (!a.proved) return std::nullopt;
      StageResult r = *a.proved;
      r.reusedFrom = a.run == runId && a.stage != static_cast<int>(i) ? a.stage : kNone;
      return r;
    };
    {
      std::lock_guard lock(cache->apartMu);
      if (auto it = cache->apart.find(sig); it != cache->apart.end()) return reuse(it->second);
    }
    StageCache::Apart tried{std::nullopt, runId, static_cast<int>(i)};
    if (std::optional<Plan> own = stage::stageAsPlan(input(), stages[i])) {
      Options sub = opt;
      sub.jobs = 1;
      sub.fold = false;
      sub.apartElements = 0;
      sub.deadlineSeconds = 0;  // the run's own stop flag ends it
      sub.holdStage = -1;
      sub.share = nullptr;  // one process proves it: the processes exchange the stage's result as any other
      const Report r = verifyPlan(*own, sub, nullptr, &stop);
      const bool open = std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
        return n.find(kRestsOnTwoReductions) != std::string::npos;
      });
      if (r.verdict == Verdict::Equivalent && !open) {
        StageResult res;
        res.status = solver::Status::Verified;
        res.engine = r.results.empty() ? "none" : r.results.front().engine;
        res.reason = "proved as a plan of its own (" + std::to_string(r.stages.size()) +
                     " stages, its axis classes reduced apart from the plan's; docs/soundness.md, \"A stage "
                     "as a plan of its own\")";
        tried.proved = std::move(res);
      }
    }
    std::lock_guard lock(cache->apartMu);
    return reuse(cache->apart.emplace(sig, std::move(tried)).first->second);
  }

  void check() {
    std::mutex mu;
    std::map<std::string, int> owner;         // canonical hash -> stage being / been checked
    std::map<int, std::vector<int>> waiting;  // owner stage -> identical stages waiting for it
    done.assign(stages.size(), false);
    std::atomic<size_t> next{0};
    watcher = std::thread([&] {
      const auto until = opt.deadlineSeconds > 0
                             ? start + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(opt.deadlineSeconds))
                             : Clock::time_point::max();
      std::unique_lock lock(watchMu);
      while (!workersDone) {
        if (cancel && cancel->load()) {
          stop = true;
          break;
        }
        if (Clock::now() >= until) {
          deadlineReached = true;
          stop = true;
          break;
        }
        watchCv.wait_for(lock, std::chrono::milliseconds(20));
      }
    });

    std::vector<int> relowered;  // same-signature stages whose owner's lowering failed: each lowers itself
    auto finishOne = [&](int i, StageResult r) {  // call with mu held
      r.stage = i;
      if (deadlineReached && r.status == solver::Status::Inconclusive && r.reason.find("cancelled") == 0)
        r.reason = "deadline reached";
      rep.results[i] = std::move(r);
      done[i] = true;
      if (observer) observer->onStageFinished(rep.results[i]);
    };
    auto finish = [&](int i, StageResult r) {  // call with mu held
      finishOne(i, std::move(r));
      auto same = sameSigners.find(i);
      if (same == sameSigners.end()) return;
      // A lowering error names the op of one stage: each of the others lowers itself. A stage stopped by
      // cancel or deadline ran no check: the others stay not run.
      const bool stopped = stop && rep.results[i].status == solver::Status::Inconclusive;
      if (stopped) return;
      const bool lowered = !rep.stages[i].hash.empty();
      for (int m : same->second) {
        if (!lowered) {
          relowered.push_back(m);
          continue;
        }
        StageResult copy = withoutInternals(rep.results[i]);
        copy.reusedFrom = rep.results[i].reusedFrom == kNone ? i : rep.results[i].reusedFrom;
        copy.seconds = 0;
        rep.stages[m].hash = rep.stages[i].hash;
        finishOne(m, std::move(copy));
      }
      sameSigners.erase(same);
    };

    {
      std::lock_guard lock(mu);
      for (auto& [i, r] : fromCache) {
        r.seconds = 0;
        r.reusedFrom = kNone;
        r.reason += " (the same problem, proved at an earlier size point)";
        finish(i, std::move(r));
      }
    }
    const std::vector<int>* list = &toCheck;
    auto worker = [&] {
      Engines eng;
      while (!cancelled()) {
        const size_t k = next.fetch_add(1);
        if (k >= list->size()) break;
        const size_t i = static_cast<size_t>((*list)[k]);
        if (observer) observer->onStageStarted(static_cast<int>(i));
        const auto t0 = Clock::now();
        StageResult res;
        std::string apartHash;
        std::optional<StageResult> apart;
        try {
          apart = provedApart(i, apartHash);
        } catch (const std::exception&) {
          apart.reset();  // (out of memory, say) the stage is checked the usual way, which reports it
        }
        if (apart) {
          apart->seconds = since(t0);
          std::lock_guard lock(mu);
          // Its mark comes after finish: the stages of its reduced signature are not served by a proof of
          // the full-size problem, each is tried itself (and finds its proof by its full-size signature).
          finish(static_cast<int>(i), std::move(*apart));
          rep.stages[i].hash = std::move(apartHash);
          continue;
        }
        solver::Problem pb;
        try {
          const auto stageDeadline = opt.timeoutSeconds > 0
                                         ? t0 + std::chrono::duration_cast<Clock::duration>(
                                                    std::chrono::duration<double>(opt.timeoutSeconds))
                                         : Clock::time_point::max();
          pb = stage::lowerStage(work(), stages[i], domains, &stop, stageDeadline,
                                 {opt.maxStageElements, opt.maxStageExprNodes});
        } catch (const stage::LoweringCancelled&) {
          break;
        } catch (const stage::LoweringTimeout& e) {
          res.status = solver::Status::Inconclusive;
          res.reason = e.what();
          res.engine = "none";
          res.seconds = since(t0);
          std::lock_guard lock(mu);
          finish(static_cast<int>(i), std::move(res));
          continue;
        } catch (const stage::InvalidStage& e) {
          res.status = solver::Status::Inconclusive;
          res.reason = std::string("invalid plan: ") + e.op + " " + e.what();
          res.engine = "none";
          res.seconds = since(t0);
          std::lock_guard lock(mu);
          invalid.push_back({e.op, e.what()});
          finish(static_cast<int>(i), std::move(res));
          continue;
        } catch (const std::exception& e) {
          res.status = solver::Status::Inconclusive;
          const bool tooLarge = dynamic_cast<const stage::StageTooLarge*>(&e) != nullptr;
          res.reason = tooLarge ? std::string(e.what()) : std::string("cannot encode stage: ") + e.what();
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
        if (static_cast<int>(i) == opt.holdStage) {
          if (observer) observer->onStageHeld(static_cast<int>(i));
          while (!cancelled())
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
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

    auto runWorkers = [&] {
      const int jobs =
          std::max(1, std::min<int>(opt.jobs, static_cast<int>(std::max<size_t>(list->size(), 1))));
      std::vector<std::thread> threads;
      for (int t = 1; t < jobs; ++t)
        threads.emplace_back(worker);
      worker();
      for (auto& t : threads)
        t.join();
    };
    runWorkers();
    if (!relowered.empty() && !cancelled()) {
      std::sort(relowered.begin(), relowered.end());
      list = &relowered;
      next = 0;
      runWorkers();
    }
    if (opt.share) {
      SharedFindings found;
      for (size_t i = 0; i < stages.size(); ++i)
        if (done[i]) {
          found.results.push_back(rep.results[i]);
          found.hashes.push_back(rep.stages[i].hash);
        }
      found.invalid = invalid;
      const std::vector<std::string> all = opt.share->allGather(encodeFindings(found));
      for (size_t p = 0; p < all.size(); ++p) {
        if (static_cast<int>(p) == opt.share->index()) continue;
        SharedFindings theirs = decodeFindings(all[p]);
        for (size_t k = 0; k < theirs.results.size(); ++k) {
          const int i = theirs.results[k].stage;
          if (i < 0 || static_cast<size_t>(i) >= stages.size() || done[i]) continue;
          rep.stages[i].hash = theirs.hashes[k];
          rep.results[i] = std::move(theirs.results[k]);
          done[i] = true;
          if (observer) observer->onStageFinished(rep.results[i]);
        }
        invalid.insert(invalid.end(), theirs.invalid.begin(), theirs.invalid.end());
      }
      if (opt.dedupStages) shareIdenticalAcrossProcesses(rep);
    }
    canonicalOwners(rep);  // before the full-size re-check, which is per stage and must not be swapped
    phase("check");
  }

  void recheckAtFullSize() {
    // Full-size re-check of the stages that failed at reduced shape (docs/soundness.md, "Full-size
    // re-check").
    const bool shapesReduced = opt.reduceShapes && reduced.reduced;
    std::optional<stage::IntDomains> fullDomains;
    std::map<std::string, StageResult> fullByHash;  // identical full-size stages are checked once
    size_t severalChecked = 0, severalKept = 0;     // condition D for reduction: at full size, or not
    Engines fullEngines;
    for (size_t i = 0; i < stages.size() && shapesReduced; ++i) {
      StageResult& res = rep.results[i];
      const bool passed = res.status == solver::Status::Verified;  // re-checked for condition D
      if (!done[i] || !(res.status == solver::Status::Failed || (passed && !severalClasses[i].empty())))
        continue;
      auto keepReduced = [&](const std::string& check, const std::string& why) {
        if (passed) {
          ++severalKept;
          return;
        }
        res.fullSizeCheck = check;
        res.reason += "; failed at reduced shape only (full-size re-check " + why + ")";
        if (res.counterexample) markReduced(*res.counterexample, input(), work());
      };
      if (opt.fullSizeRecheckElements <= 0) {
        keepReduced("skipped: disabled", "disabled");
        continue;
      }
      // Reduction keeps the cut (docs/soundness.md): the stage is the same ops of the unreduced plan.
      const stage::Stage& full = stages[i];
      const int64_t elements = stage::stageElements(input(), full);
      if (elements == stage::stageElements(work(), stages[i])) {
        res.fullSizeCheck = "not needed";  // reduction left this stage's shapes as they are
        continue;
      }
      int64_t limit = std::min(opt.fullSizeRecheckElements, opt.maxStageElements);
      if (passed) limit = std::min(limit, kSeveralClassesElements);
      if (elements > limit) {
        keepReduced("skipped: too large", "skipped: " + std::to_string(elements) +
                                              " elements at full size, over " + std::to_string(limit));
        continue;
      }
      if (cancelled()) {
        keepReduced("inconclusive",
                    "not run: " + std::string(deadlineReached ? "deadline reached" : "cancelled"));
        continue;
      }
      if (!fullDomains) fullDomains = stage::intDomains(input());
      const auto t0 = Clock::now();
      StageResult fullRes;
      try {
        const auto stageDeadline = opt.timeoutSeconds > 0
                                       ? t0 + std::chrono::duration_cast<Clock::duration>(
                                                  std::chrono::duration<double>(opt.timeoutSeconds))
                                       : Clock::time_point::max();
        solver::Problem pb = stage::lowerStage(input(), full, *fullDomains, &stop, stageDeadline,
                                               {opt.maxStageElements, opt.maxStageExprNodes});
        const std::string hash = stage::canonicalHash(pb);
        if (auto it = fullByHash.find(hash); it != fullByHash.end()) {
          fullRes = it->second;
        } else {
          fullRes = checkProblem(pb, opt, fullEngines, budget);
          fullByHash.emplace(hash, fullRes);
        }
      } catch (const std::exception& e) {
        fullRes.status = solver::Status::Inconclusive;
        fullRes.reason = e.what();
      }
      const double secs = since(t0);
      if (passed && fullRes.status != solver::Status::Inconclusive) {
        ++severalChecked;
        fullRes.stage = res.stage;
        fullRes.seconds = res.seconds + secs;
        fullRes.reason = std::string(fullRes.status == solver::Status::Failed ? "failed" : "verified") +
                         " at full size (checked there: " + severalClasses[i] + "): " + fullRes.reason;
        fullRes.fullSizeCheck = fullRes.status == solver::Status::Failed ? "failed" : "passed";
        fullRes.reusedFrom = kNone;
        res = std::move(fullRes);
      } else if (fullRes.status == solver::Status::Failed) {
        fullRes.stage = res.stage;
        fullRes.seconds = res.seconds + secs;
        fullRes.reason = "failed at full size (re-checked: it failed at reduced shape): " + fullRes.reason;
        fullRes.fullSizeCheck = "failed";
        res = std::move(fullRes);
      } else if (fullRes.status == solver::Status::Verified) {
        rep.notes.push_back(
            "stage " + std::to_string(i) +
            " failed at reduced shape but passes at full size: the reduced failure was a "
            "reduction artefact (a count relation to the plan's constants that shape reduction "
            "does not see); the stage is verified at full size, the other stages at reduced "
            "shape as before (--no-reduce checks every stage at full size)");
        fullRes.stage = res.stage;
        fullRes.seconds = res.seconds + secs;
        fullRes.reason = "verified at full size (" + fullRes.reason +
                         "); the failure at reduced shape was a reduction artefact";
        fullRes.fullSizeCheck = "passed";
        fullRes.reusedFrom = kNone;
        res = std::move(fullRes);
      } else {
        keepReduced("inconclusive", "inconclusive: " + fullRes.reason);
      }
    }
    if (severalChecked + severalKept > 0)
      rep.notes.push_back(
          "condition D for reduction: " + std::to_string(severalChecked + severalKept) +
          " stages depend on several reduced axis classes (or on one through more than two powers), which "
          "the "
          "two reductions do not separate; " +
          std::to_string(severalChecked) + " checked at full size" +
          (severalKept
               ? ", " + std::to_string(severalKept) + " too large for that (over " +
                     std::to_string(kSeveralClassesElements) + " elements): " + kRestsOnTwoReductions +
                     " (docs/soundness.md, \"Size "
                     "points\"; --no-reduce checks them at full size)"
               : std::string()));
    phase("full-size");
  }

  Report finish() {
    {
      std::lock_guard lock(watchMu);
      workersDone = true;
    }
    watchCv.notify_all();
    watcher.join();

    rep.deadlineSeconds = opt.deadlineSeconds;
    rep.deadlineReached = deadlineReached;
    rep.cancelled = stop && !deadlineReached;
    for (size_t i = 0; i < stages.size(); ++i)
      if (!done[i]) {
        rep.results[i].ran = false;
        rep.results[i].status = solver::Status::Inconclusive;
        rep.results[i].reason = rep.deadlineReached ? "not run: deadline reached"
                                : rep.cancelled     ? "not run: cancelled"
                                                    : "not checked";
      }
    rep.verdict = overall(rep.results, stop);
    std::sort(invalid.begin(), invalid.end(),
              [](const Diagnostic& a, const Diagnostic& b) { return a.where < b.where; });
    if (!invalid.empty()) {
      rep.errors = std::move(invalid);
      rep.verdict = Verdict::Invalid;
    }
    if (opt.fold && rep.verdict == Verdict::NotEquivalent) {
      std::set<int64_t> met = folded().countsMet;
      met.insert(mbFolded().countsMet.begin(), mbFolded().countsMet.end());
      outcome->unfoldWhy = foldArtefactSuspect(work(), stages, rep, met);
    }
    // Stages proved here serve the other size points; a pass found by the full-size re-check is the full
    // stage's, not the reduced problem's.
    for (size_t i = 0; cache && i < sigs.size(); ++i)
      if (done[i] && !sigs[i].empty() && rep.results[i].status == solver::Status::Verified &&
          rep.results[i].fullSizeCheck.empty() && !rep.stages[i].hash.starts_with(kApart))
        cache->verified.emplace(sigs[i], rep.results[i]);
    outcome->replicasFolded = folded().folded && folded().count > 0;
    outcome->copiesFolded = mbFolded().folded && mbFolded().count > 0;
    outcome->reduced = opt.reduceShapes && reduced.reduced;
    // Compact plans leave replicas or copies implied: their diffs stay in the folded plan's coordinates.
    if ((folded().folded || mbFolded().folded) && !given.replicas && !given.microbatches)
      for (StageResult& r : rep.results)
        if (r.counterexample && !r.counterexample->fullSize)
          unfoldFullIndex(*r.counterexample, input(),
                          folded().folded ? folded().originalRank : std::vector<int>{}, given);
    if (folded().folded) unfoldRanks(folded().originalRank, rep);
    phase("report");
    return decided();
  }
};

}  // namespace

// `again` after `first`: the first run's phases kept with `prefix`, its time counted.
static Report following(Report first, Report again, const std::string& prefix, const std::string& note,
                        Clock::time_point start) {
  again.notes.insert(again.notes.begin(), note);
  for (auto& phase : first.phases)
    phase.first = prefix + phase.first;
  again.phases.insert(again.phases.begin(), first.phases.begin(), first.phases.end());
  again.seconds = since(start);
  return again;
}

Report verifyPlan(const Plan& given, const Options& opt, Observer* observer,
                  const std::atomic<bool>* cancel) {
  const auto start = Clock::now();
  auto remaining = [&](Options o) {
    if (opt.deadlineSeconds > 0) o.deadlineSeconds = std::max(0.001, opt.deadlineSeconds - since(start));
    return o;
  };
  auto stopped = [&] { return cancel && cancel->load(); };
  // The first size point; then, while the plan verifies, the second point of each fold and of the
  // reduction that applied (both folds: the four corners), each a coincidence would have to survive.
  StageCache cache;
  PointOutcome base;
  Report rep = PointRun(given, opt, observer, cancel, {}, &base, &cache, nullptr).run();
  // A fold whose stages all need one count (condition D, width 0: every obligation is t^a times a constant,
  // zero at one count exactly when at every count) is proved at its first point.
  const bool replicas = base.replicasFolded && base.replicaCounts > 1;
  const bool copies = base.copiesFolded && base.copyCounts > 1;
  std::vector<std::pair<SizePoint, std::string>> more;
  if (replicas) more.push_back({{1, 0, 0}, "the second replica count"});
  if (copies) more.push_back({{0, 1, 0}, "the second micro-batch count"});
  if (replicas && copies) more.push_back({{1, 1, 0}, "the second replica and micro-batch counts"});
  // Likewise a reduction no stage depends on beyond a common power of its extents.
  if (base.reduced && !base.moveClasses.empty()) more.push_back({{0, 0, 1}, "the second reduction"});
  std::optional<std::string> unfoldWhy = base.unfoldWhy;
  std::optional<std::string> tooCoarse = base.tooCoarse;
  std::string points = "the first size point";
  for (const auto& [at, what] : more) {
    if (rep.verdict != Verdict::Equivalent || tooCoarse || stopped()) break;
    PointOutcome o;
    Report again =
        PointRun(given, remaining(opt), observer, cancel, at, &o, &cache, at.shapes == 1 ? &base : nullptr)
            .run();
    if (o.tooCoarse) {
      tooCoarse = o.tooCoarse;
      break;
    }
    if (again.verdict == Verdict::Equivalent) {
      points += ", " + what;
      for (auto& phase : again.phases)
        rep.phases.push_back({"(" + what + ") " + phase.first, phase.second});
      rep.seconds = since(start);
      continue;
    }
    rep = following(std::move(rep), std::move(again), "(first size point) ",
                    "checked at " + what +
                        " after the first size point verified (docs/soundness.md, \"Size "
                        "points\")",
                    start);
    unfoldWhy = o.unfoldWhy;
  }
  base.prepared.reset();  // the folded plan is not needed past the size points
  base.reduction.reset();
  if (rep.verdict == Verdict::Equivalent && !more.empty())
    rep.notes.push_back("equivalent at every size point (" + points +
                        "): a size-dependent coincidence would have to hold at each (docs/soundness.md, "
                        "\"Size points\")");
  for (const auto& [folded, counts, what] : {std::tuple{base.replicasFolded, base.replicaCounts, "replica"},
                                             std::tuple{base.copiesFolded, base.copyCounts, "micro-batch"}})
    if (folded && counts == 1 && rep.verdict == Verdict::Equivalent && !stopped())
      rep.notes.push_back(std::string("one ") + what +
                          " count proves every count: no stage's obligations depend on it beyond a common "
                          "power (condition D, width 0; docs/soundness.md, \"Size points\")");
  if (base.reduced && rep.verdict == Verdict::Equivalent && !stopped()) {
    const auto n = std::count(base.secondReduction.begin(), base.secondReduction.end(), true);
    rep.notes.push_back(
        n == 0 ? std::string("one reduction proves every stage: no stage depends on the extent of a reduced "
                             "class beyond a common power (condition D for reduction; docs/soundness.md)")
               : "the second reduction moved the " + std::to_string(base.moveClasses.size()) +
                     " axis classes and checked the " + std::to_string(n) +
                     " stages that depend on their extents (condition D for reduction); the others are "
                     "proved by the first (docs/soundness.md, \"Size points\")");
  }
  if (tooCoarse && !stopped())
    unfoldWhy = *tooCoarse;
  else if (!unfoldWhy || stopped() || rep.verdict != Verdict::NotEquivalent || !opt.fold)
    return rep;
  Options unfolded = remaining(opt);
  unfolded.fold = false;
  Report again = verifyPlan(given, unfolded, observer, cancel);
  return following(std::move(rep), std::move(again), "folded ", "checked unfolded: " + *unfoldWhy, start);
}

}  // namespace paraproof::verify
