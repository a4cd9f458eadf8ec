// paraproof mutate: mutation testing of the verifier. Random semantic mutations of a correct generated plan;
// the end-to-end oracle (core/verify/end_to_end.h) says whether each changed the result, the verifier says
// whether it noticed. A changed mutant the verifier calls equivalent is a soundness hole (missed).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "core/parallel/mutate.h"
#include "core/plan/json_io.h"
#include "core/plan/validate.h"
#include "core/verify/end_to_end.h"
#include "core/verify/verify.h"

namespace paraproof::cli {

namespace {

const char* kHelp =
    "usage: paraproof mutate --model NAME --parallel dp=..,tp=..,pp=..,mb=.. [--layers L] [--seq S] [--batch "
    "B]\n"
    "                        --count N --seed S [--jobs J] [--operators a,b,..] [--timeout T] "
    "[--no-reduce]\n                        [--apart-elements N] [--explicit]\n"
    "\n"
    "Mutation testing of the verifier. Applies N random semantic mutations (one each) to the correct "
    "generated\n"
    "plan, decides with an exact end-to-end evaluation of the whole plan at full shape (random field, every\n"
    "device's outputs against the logical values their lineage names) whether each mutant changed the "
    "result,\n"
    "verifies each, and prints one line per mutant, then\n"
    "  unchanged: U false-alarms: F inconclusive: X undecided: D\n"
    "  mutants: N changed: C caught: K missed: M invalid: I\n"
    "missed = changed but verified equivalent (a soundness hole); false alarm = unchanged but not "
    "equivalent;\n"
    "invalid = rejected by the loader or validator; undecided = the oracle could not decide.\n"
    "\n"
    "options:\n"
    "  --count N             number of mutants (default 20)\n"
    "  --seed S              mutant i depends only on (plan, S, i) (default 1)\n"
    "  --jobs J              mutants checked in parallel (default: number of cores)\n"
    "  --operators a,b       only these mutation operators (default: all)\n"
    "  --timeout T           per-stage verifier time limit in seconds (default 30)\n"
    "  --no-reduce           verify at full shapes (the oracle always runs at full shape)\n"
    "  --apart-elements N    verify stages of at least N reduced elements as plans of their own first\n"
    "                        (1: every stage; default as verify's)\n"
    "  --explicit            mutate the explicit plan (every replica and micro-batch copy written out: a\n"
    "                        mutation hits one of them); default: the plan as generated, compact from dp=8\n"
    "                        or mb=4 (a mutation of a template hits every replica or copy it stands for).\n"
    "                        The oracle always judges the explicit plan a compact one stands for.\n"
    "  --index I             run only mutant I (of the same seed), to reproduce one line\n"
    "  --save FILE           with --index: also write the mutant plan (then 'paraproof verify FILE')\n"
    "\n"
    "exit codes: 0 no missed mutant, 1 some mutant missed, 2 usage, 3 the oracle rejects the correct plan "
    "or\n"
    "the plan is above its bound (it says so first, on stderr)\n";

// The oracle's bound, checked before any work (scalar elements), then while lowering (nodes). The micro
// models' plans have 60,000-120,000 elements and 140,000-280,000 nodes (a mutant: a fraction of a second);
// gpt-tiny's have ten times more (minutes per mutant).
constexpr int64_t kOracleElements = 500'000;
constexpr int64_t kOracleNodes = 2'000'000;

enum class Outcome {
  Invalid,
  Caught,
  Missed,
  ChangedInconclusive,
  FalseAlarm,
  Equivalent,
  UnchangedInconclusive,
  Undecided
};

struct MutantResult {
  std::string op, description, detail;
  Outcome outcome = Outcome::Invalid;
  double oracleSeconds = 0, verifySeconds = 0;
};

std::string outcomeText(Outcome o) {
  switch (o) {
    case Outcome::Invalid:
      return "invalid";
    case Outcome::Caught:
      return "changed, caught";
    case Outcome::Missed:
      return "changed, MISSED (verified equivalent)";
    case Outcome::ChangedInconclusive:
      return "changed, verifier inconclusive";
    case Outcome::FalseAlarm:
      return "unchanged, FALSE ALARM (not equivalent)";
    case Outcome::Equivalent:
      return "unchanged, equivalent";
    case Outcome::UnchangedInconclusive:
      return "unchanged, verifier inconclusive";
    case Outcome::Undecided:
      return "oracle undecided";
  }
  return "?";
}

std::string firstLine(const std::string& s) {
  return s.substr(0, s.find('\n'));
}

// The first failing or inconclusive stage, for the mutant line.
std::string stageSummary(const verify::Report& rep, solver::Status want) {
  for (size_t i = 0; i < rep.results.size(); ++i)
    if (rep.results[i].status == want) {
      const auto& info = rep.stages.at(i);
      std::string scope = info.scopes.empty() ? "" : " " + info.scopes.front();
      return "stage " + std::to_string(i) + scope + ": " + firstLine(rep.results[i].reason);
    }
  return "";
}

MutantResult runMutant(const Plan& correct, const verify::EndToEndOracle& oracleOf, uint64_t seed, int index,
                       const std::vector<std::string>& only, const verify::Options& vopt) {
  MutantResult r;
  Plan plan;
  try {
    parallel::Mutant m = parallel::makeMutant(correct, seed, index, only);
    r.op = m.mutationOperator;
    r.description = m.description;
    // Through the loader, as a user's plan would come: it re-infers every shape.
    plan = planFromJson(planToJson(m.plan), "<mutant>");
  } catch (const std::exception& e) {
    r.outcome = Outcome::Invalid;
    r.detail = firstLine(e.what());
    return r;
  }
  // The oracle judges the plan a compact mutant stands for; stated replicas or copies that no longer define
  // their translates make it invalid, as they make the verifier reject it.
  Plan expanded;
  try {
    expanded = verify::explicitPlan(plan);
  } catch (const std::exception& e) {
    r.outcome = Outcome::Invalid;
    r.detail = std::string(plan.replicas ? "/replicas" : "/microbatches") + ": " + firstLine(e.what());
    return r;
  }
  if (auto errors = validatePlan(expanded); !errors.empty()) {
    r.outcome = Outcome::Invalid;
    r.detail = errors.front().str();
    return r;
  }
  // Without the oracle nothing can be judged: verifying would only spend time (minutes on a real model).
  if (oracleOf.base().effect != verify::Effect::Unchanged) {
    r.outcome = Outcome::Undecided;
    r.detail = "not judged: the plan is above the oracle's bound (see above)";
    return r;
  }
  // Outputs must also hold what the correct plan's outputs hold (the oracle's reference).
  verify::EndToEndResult oracle = oracleOf.check(expanded);
  r.oracleSeconds = oracle.seconds;
  verify::Report rep = verify::verifyPlan(plan, vopt);
  r.verifySeconds = rep.seconds;
  const verify::Verdict v = rep.verdict;
  switch (oracle.effect) {
    case verify::Effect::Changed:
      r.outcome = v == verify::Verdict::NotEquivalent ? Outcome::Caught
                  : v == verify::Verdict::Equivalent  ? Outcome::Missed
                                                      : Outcome::ChangedInconclusive;
      r.detail = oracle.where;
      if (v == verify::Verdict::Inconclusive)
        r.detail += "; " + stageSummary(rep, solver::Status::Inconclusive);
      break;
    case verify::Effect::Unchanged:
      r.outcome = v == verify::Verdict::NotEquivalent ? Outcome::FalseAlarm
                  : v == verify::Verdict::Equivalent  ? Outcome::Equivalent
                                                      : Outcome::UnchangedInconclusive;
      if (v == verify::Verdict::NotEquivalent) r.detail = stageSummary(rep, solver::Status::Failed);
      if (v == verify::Verdict::Inconclusive) r.detail = stageSummary(rep, solver::Status::Inconclusive);
      break;
    case verify::Effect::Undecided:
      r.outcome = Outcome::Undecided;
      r.detail = firstLine(oracle.reason) + "; verifier: " + verify::verdictName(v);
      break;
  }
  if (v == verify::Verdict::Invalid) {  // the verifier validates too; it must agree with the check above
    r.outcome = Outcome::Invalid;
    r.detail = rep.errors.empty() ? "rejected by the verifier" : rep.errors.front().str();
  }
  return r;
}

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

int runMutate(const std::vector<std::string>& argv) {
  Args args(argv,
            {"model", "parallel", "layers", "seq", "batch", "count", "seed", "jobs", "operators", "timeout",
             "index", "save", "apart-elements"},
            {"help", "no-reduce", "explicit"});
  if (args.has("help")) {
    std::cout << kHelp << "\nmutation operators:\n";
    for (const auto& op : parallel::mutationOperators())
      std::cout << "  " << std::left << std::setw(20) << op.name << op.summary << "\n";
    return 0;
  }
  if (!args.positional().empty()) throw UsageError("unexpected argument '" + args.positional()[0] + "'");
  const int count = args.getInt("count", 20, 1, 1000000);
  const int seedArg = args.getInt("seed", 1, 0, 2147483647);
  const uint64_t seed = static_cast<uint64_t>(seedArg);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int jobs = args.getInt("jobs", cores, 1, 4096);
  const std::vector<std::string> only = splitList(args.getOr("operators", ""));
  for (const std::string& name : only) {
    const auto& ops = parallel::mutationOperators();
    if (std::none_of(ops.begin(), ops.end(), [&](const auto& o) { return o.name == name; }))
      throw UsageError("unknown mutation operator '" + name + "' (see 'paraproof mutate --help')");
  }
  verify::Options vopt;
  vopt.jobs = 1;  // parallelism is over mutants
  vopt.timeoutSeconds = args.getDouble("timeout", 30, 0.001);
  vopt.reduceShapes = !args.has("no-reduce");
  if (args.has("apart-elements")) vopt.apartElements = args.getInt("apart-elements", 0, 0, 1 << 30);

  Plan correct;
  try {
    correct = generateFromArgs(args);
  } catch (const std::invalid_argument& e) {
    std::cerr << "paraproof mutate: " << e.what() << "\n";
    return 2;
  }
  // The oracle must accept the correct plan, or it cannot judge its mutants. It runs the whole plan at full
  // shape, so its work is bounded up front: above the bound it says so and judges nothing (each mutant is
  // only validated, and counted undecided; exit 3).
  verify::EndToEndOptions oopt;
  oopt.limits = {kOracleElements, kOracleNodes};
  std::cerr << "paraproof mutate: end-to-end oracle: evaluating the correct plan at full shape...\n";
  // Over the correct plan as the loader numbers it, as every mutant is loaded (runMutant): the oracle reuses
  // the logical values by id.
  const Plan loaded = planFromJson(planToJson(correct), "<correct plan>");
  const verify::EndToEndOracle oracle(loaded, oopt);
  const verify::EndToEndResult& base = oracle.base();
  const std::string form =
      !correct.replicas && !correct.microbatches
          ? "explicit"
          : "compact: " + std::to_string(correct.devices.size()) + " of " +
                std::to_string(numElements(correct.mesh.shape)) + " devices stated" +
                (correct.microbatches
                     ? ", 2 of " + std::to_string(correct.microbatches->count) + " micro-batch copies stated"
                     : std::string()) +
                "; the oracle judges the explicit plan it stands for";
  std::cout << "plan " << correct.name << ": " << correct.devices.size() << " devices (" << form
            << "); oracle on the correct plan: " << verify::effectName(base.effect) << " ("
            << base.obligations << " output elements, " << base.elements << " scalar elements, " << base.nodes
            << " nodes, " << std::fixed << std::setprecision(2) << base.seconds << " s, of which lowering "
            << base.lowerSeconds << " s)\n"
            << std::flush;
  const bool outOfReach =
      base.effect == verify::Effect::Undecided && base.reason.find("stage too large") != std::string::npos;
  if (outOfReach) {
    std::cerr
        << "paraproof mutate: the plan is too large for the end-to-end oracle, which evaluates it whole "
           "at full shape: "
        << base.reason.substr(base.reason.find("stage too large")) << "; the oracle's bound is "
        << kOracleElements << " scalar elements and " << kOracleNodes
        << " expression nodes. No mutant can be judged (each is only loaded, validated and counted "
           "undecided); "
           "use fewer --layers, a smaller --seq/--batch, or a micro model (llama-micro, gpt-micro, "
           "dsv3-micro).\n";
  } else if (base.effect != verify::Effect::Unchanged) {
    std::cerr << "paraproof mutate: the end-to-end oracle does not accept the correct plan: " << base.reason
              << " " << base.where << "\n";
    return 3;
  }

  const int only1 = args.getInt("index", -1, 0, 1000000);
  if (args.has("save") && only1 < 0) throw UsageError("--save needs --index");
  if (only1 >= 0) {
    if (auto path = args.get("save")) {
      try {
        savePlan(parallel::makeMutant(correct, seed, only1, only).plan, *path);
      } catch (const std::exception& e) {
        std::cerr << "paraproof mutate: cannot write " << *path << ": " << e.what() << "\n";
        return 2;
      }
    }
  }
  const int first = std::max(only1, 0), total = only1 >= 0 ? 1 : count;
  std::vector<MutantResult> results(total);
  std::vector<bool> done(total, false);
  std::mutex mu;
  int printed = 0, finished = 0, missed = 0;
  const auto begun = std::chrono::steady_clock::now();
  std::atomic<int> next{0};
  auto print = [&](int i) {
    const MutantResult& r = results[i];
    std::cout << "mutant " << first + i << " " << (r.op.empty() ? "?" : r.op) << ": " << r.description
              << " => " << outcomeText(r.outcome);
    if (!r.detail.empty()) std::cout << " [" << r.detail << "]";
    if (r.outcome != Outcome::Invalid && !outOfReach)
      std::cout << " (oracle " << r.oracleSeconds << " s, verify " << r.verifySeconds << " s)";
    std::cout << "\n" << std::flush;
  };
  auto worker = [&] {
    for (int i = next.fetch_add(1); i < total; i = next.fetch_add(1)) {
      MutantResult r = runMutant(correct, oracle, seed, first + i, only, vopt);
      std::lock_guard lock(mu);
      results[i] = std::move(r);
      done[i] = true;
      ++finished;
      missed += results[i].outcome == Outcome::Missed;
      while (printed < total && done[printed])
        print(printed++);
      std::cerr << "paraproof mutate: " << finished << "/" << total << " mutants decided, " << missed
                << " missed, " << std::fixed << std::setprecision(1)
                << std::chrono::duration<double>(std::chrono::steady_clock::now() - begun).count() << " s\n";
    }
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < std::min(jobs, total); ++t)
    threads.emplace_back(worker);
  worker();
  for (auto& t : threads)
    t.join();

  struct Tally {
    int mutants = 0, changed = 0, caught = 0, missed = 0, invalid = 0, unchanged = 0, falseAlarms = 0,
        inconclusive = 0, undecided = 0;
    void add(Outcome o) {
      ++mutants;
      changed += o == Outcome::Caught || o == Outcome::Missed || o == Outcome::ChangedInconclusive;
      caught += o == Outcome::Caught;
      missed += o == Outcome::Missed;
      invalid += o == Outcome::Invalid;
      unchanged +=
          o == Outcome::Equivalent || o == Outcome::FalseAlarm || o == Outcome::UnchangedInconclusive;
      falseAlarms += o == Outcome::FalseAlarm;
      inconclusive += o == Outcome::ChangedInconclusive || o == Outcome::UnchangedInconclusive;
      undecided += o == Outcome::Undecided;
    }
  };
  Tally all;
  std::map<std::string, Tally> byOperator;
  double oracleTime = 0, verifyTime = 0;
  for (const MutantResult& r : results) {
    all.add(r.outcome);
    byOperator[r.op.empty() ? "?" : r.op].add(r.outcome);
    oracleTime += r.oracleSeconds;
    verifyTime += r.verifySeconds;
  }
  // Per operator: "kill" = caught / changed (what the closing notes of a campaign report per operator).
  std::cout << "operator               mutants changed  caught  missed invalid unchanged f-alarms undecided  "
               "kill\n";
  auto row = [](const std::string& name, const Tally& t) {
    std::ostringstream kill;
    if (t.changed > 0)
      kill << std::fixed << std::setprecision(0) << 100.0 * t.caught / t.changed << "%";
    else
      kill << "-";
    std::cout << "operator " << std::left << std::setw(22) << name << std::right << std::setw(6) << t.mutants
              << std::setw(8) << t.changed << std::setw(8) << t.caught << std::setw(8) << t.missed
              << std::setw(8) << t.invalid << std::setw(10) << t.unchanged << std::setw(9) << t.falseAlarms
              << std::setw(10) << t.undecided << std::setw(6) << kill.str() << "\n";
  };
  for (const auto& [name, t] : byOperator)
    row(name, t);
  std::cout << "time: oracle " << oracleTime << " s, verify " << verifyTime << " s (summed over mutants)\n";
  std::cout << "unchanged: " << all.unchanged << " false-alarms: " << all.falseAlarms
            << " inconclusive: " << all.inconclusive << " undecided: " << all.undecided << "\n";
  std::cout << "mutants: " << all.mutants << " changed: " << all.changed << " caught: " << all.caught
            << " missed: " << all.missed << " invalid: " << all.invalid << "\n";
  if (outOfReach) return 3;
  return all.missed > 0 ? 1 : 0;
}

}  // namespace paraproof::cli
