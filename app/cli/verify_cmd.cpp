#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <new>
#include <thread>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/keep_until_exit.h"
#include "app/cli/mpi_share.h"
#include "core/plan/json_io.h"
#include "core/plan/torch_import.h"
#include "core/verify/report_annotate.h"
#include "core/verify/verify.h"

namespace paraproof::cli {

namespace {

const char* kHelp =
    "usage: paraproof verify PLAN.json [options]\n"
    "       paraproof verify SCRIPT.py [options]   (a PyTorch script: imported as by import-torch)\n"
    "       paraproof verify --model NAME --parallel dp=..,tp=..,pp=..,mb=.. [--layers L] [--seq S] [--batch "
    "B]\n"
    "                        [--inject BUG[@layer=..,rank=..,mb=..]] [options]\n"
    "\n"
    "Proves, stage by stage, that the parallel plan computes exactly what its logical model computes\n"
    "(over the reals), or reports the failing stage with a concrete counterexample.\n"
    "\n"
    "options:\n"
    "  --jobs N              worker threads (default: number of cores)\n"
    "  --engine E            z3 (proof), random (fast exact randomized check), both (default: random first,\n"
    "                        then a Z3 proof)\n"
    "  --timeout S           per-stage time limit in seconds (default 60)\n"
    "  --deadline S          time limit for the whole run: stages not done by then are reported not run,\n"
    "                        the partial report is written and the exit code is 3\n"
    "  --memory MB           Z3's memory cap (soft, process-wide; exceeding it is inconclusive; default "
    "none)\n"
    "  --json OUT            also write the report as JSON (atomically)\n"
    "  --verbose             list every stage, not only the failing ones\n"
    "  --no-reduce           check at full shapes (no shape reduction)\n"
    "  --full-size-recheck N a stage failing at reduced shape is re-checked at full size when its tensors\n"
    "                        hold at most N elements (default 1048576; 0: never, the failure is then\n"
    "                        reported as found at reduced shape only)\n"
    "  --no-fold             check every data-parallel replica (no replica fold)\n"
    "  --explicit            with --model: generate every device (not the compact form)\n"
    "  --no-dedup            check identical stages separately\n"
    "  --apart-elements N    a stage whose reduced tensors hold at least N elements is first verified as\n"
    "                        a plan of its own, its axis classes reduced apart from the plan's (default\n"
    "                        32768; docs/soundness.md, \"A stage as a plan of its own\")\n"
    "  --no-apart            never (as --apart-elements 0)\n"
    "  --mpi                 run under mpirun: the processes share the stages, rank 0 writes the report\n"
    "                        (the same report as one process), e.g. mpirun -n 4 paraproof verify P --mpi\n"
    "  --check-numerics      with SCRIPT.py: also run both steps eagerly on random inputs (a differential "
    "test)\n"
    "  --hold-stage N        (testing) stage N waits for the deadline or an interrupt before it is checked\n"
    "\n"
    "exit codes: 0 equivalent, 1 not equivalent, 2 invalid input, 3 inconclusive (timeout, cancelled, ...)\n";

std::atomic<bool> gCancel{false};  // set from the SIGINT handler only (async-signal-safe)
extern "C" void onInterrupt(int) {
  gCancel.store(true);
}

// Progress on stderr: one updating line on a terminal, nothing otherwise (logs stay clean).
class Progress : public verify::Observer {
 public:
  explicit Progress(bool tty) : tty_(tty) {}
  void onStagesPlanned(const std::vector<verify::StageInfo>& s) override {
    std::lock_guard lock(mu_);
    total_ = s.size();
    if (tty_) std::cerr << "paraproof: " << total_ << " stages\n";
  }
  void onStageHeld(int stage) override {
    std::lock_guard lock(mu_);
    std::cerr << "paraproof: stage " << stage << " held until the deadline or an interrupt (--hold-stage)"
              << std::endl;
  }
  void onStageFinished(const verify::StageResult& r) override {
    std::lock_guard lock(mu_);
    ++done_;
    failed_ += r.status == solver::Status::Failed;
    if (tty_)
      std::cerr << "\r[" << done_ << "/" << total_ << "] " << failed_ << " failed"
                << (done_ == total_ ? "\n" : "") << std::flush;
  }

 private:
  std::mutex mu_;
  bool tty_;
  size_t total_ = 0, done_ = 0, failed_ = 0;
};

}  // namespace

int runVerify(const std::vector<std::string>& argv) {
  Args args(argv,
            {"jobs", "engine", "timeout", "deadline", "memory", "json", "model", "parallel", "layers", "seq",
             "batch", "inject", "hold-stage", "full-size-recheck", "apart-elements"},
            {"help", "verbose", "no-reduce", "no-dedup", "no-apart", "no-fold", "explicit", "mpi",
             "check-numerics"});
  if (args.has("help")) {
    std::cout << kHelp;
    return 0;
  }
  const bool generated = args.has("model");
  if (args.positional().size() != (generated ? 0u : 1u))
    throw UsageError(generated ? "give either PLAN.json or --model, not both"
                               : "expected exactly one PLAN.json");
  verify::Options opt;
  int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  opt.jobs = args.getInt("jobs", cores, 1, 4096);
  opt.timeoutSeconds = args.getDouble("timeout", 60, 0.001);
  if (args.has("deadline")) opt.deadlineSeconds = args.getDouble("deadline", 0, 0.001);
  if (args.has("memory")) opt.z3MemoryMb = static_cast<size_t>(args.getInt("memory", 0, 1, 1 << 30));
  std::string engine = args.getOr("engine", "both");
  if (engine == "z3")
    opt.engine = verify::EngineChoice::Z3;
  else if (engine == "random")
    opt.engine = verify::EngineChoice::Random;
  else if (engine == "both")
    opt.engine = verify::EngineChoice::Both;
  else
    throw UsageError("--engine must be z3, random or both, got '" + engine + "'");
  if (args.has("hold-stage")) opt.holdStage = args.getInt("hold-stage", -1, 0, 1 << 30);
  opt.reduceShapes = !args.has("no-reduce");
  if (args.has("full-size-recheck"))
    opt.fullSizeRecheckElements = args.getInt("full-size-recheck", 0, 0, 1 << 30);
  opt.fold = !args.has("no-fold");
  opt.dedupStages = !args.has("no-dedup");
  if (args.has("apart-elements")) opt.apartElements = args.getInt("apart-elements", 0, 0, 1 << 30);
  if (args.has("no-apart")) opt.apartElements = 0;
  std::unique_ptr<verify::StageShare> share;
  if (args.has("mpi")) share = joinMpi();
  opt.share = share.get();
  const bool writer = !share || share->index() == 0;  // the process that prints and writes the report
  if (share && writer)
    std::cerr << "paraproof: --mpi: " << share->count() << " processes share the distinct stages\n";

  const std::string path = generated ? "<generated>" : args.positional()[0];
  Plan plan;
  const auto loadStart = std::chrono::steady_clock::now();
  verify::Report report;
  bool loaded = false;
  const bool script = !generated && isTorchScript(path);
  try {
    if (script) {
      // Imported into a private temporary plan, then verified as any plan (the report names the script).
      std::string stderrText;
      try {
        plan = loadTorchPlan(path, args.has("check-numerics"), &stderrText);
      } catch (const PlanError&) {
        // A traceback (an importer bug) goes to stderr as it came; the errors go to the report.
        if (stderrText.find("Traceback") != std::string::npos) std::cerr << stderrText;
        throw;
      }
    } else {
      plan = generated ? generateFromArgs(args) : loadPlan(path);
    }
    loaded = true;
  } catch (const PlanError& e) {
    report.errors = e.diagnostics();
  } catch (const std::bad_alloc&) {
    throw;  // out of memory is no property of the plan (main.cpp says so)
  } catch (const std::exception& e) {
    report.errors = {Diagnostic{path, e.what()}};
  }
  if (loaded) {
    if (plan.name.empty()) plan.name = path;
    std::signal(SIGINT, onInterrupt);
    Progress progress(writer && isatty(STDERR_FILENO));
    const double loadSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - loadStart).count();
    report = verify::verifyPlan(plan, opt, &progress, &gCancel);
    report.phases.insert(report.phases.begin(), {generated ? "generate" : "load", loadSeconds});
    report.seconds += loadSeconds;
    verify::annotateCommunication(report, plan);
    verify::annotateFirstDifference(report, plan);
    // The differential test of an imported script (--check-numerics) is reported beside the proof.
    // The importer words it (SCRIPT.py's functions run eagerly, or why they could not run: no verdict).
    if (auto it = plan.metadata.find("check_numerics"); it != plan.metadata.end() && it->is_object())
      report.notes.push_back(it->contains("note") && (*it)["note"].is_string()
                                 ? (*it)["note"].get<std::string>()
                                 : std::string("check-numerics: logical and parallel ") +
                                       (it->value("agree", false)
                                            ? "agree"
                                            : "DISAGREE: " + it->value("detail", std::string())) +
                                       " on random inputs (float64; a test, not a proof)");
  } else {
    // A plan that does not load still gets a report (docs/report-format.md): verdict invalid, the errors.
    report.verdict = verify::Verdict::Invalid;
    report.plan = path;
  }
  if (!writer) return verify::exitCode(report.verdict);
  if (report.verdict == verify::Verdict::Invalid) {
    // Every error names its file (FILE:/json/pointer), is printed once, on stderr; stdout has the verdict.
    for (Diagnostic& d : report.errors)
      if (d.where.rfind(path, 0) != 0) d.where = path + (d.where.empty() ? "" : ":" + d.where);
    for (const auto& d : report.errors)
      std::cerr << "error: " << d.str() << "\n";
    std::cout << "ParaProof report for " << report.plan << "\nverdict: INVALID INPUT ("
              << report.errors.size() << " error" << (report.errors.size() == 1 ? "" : "s")
              << ", on stderr)\n";
  } else {
    std::cout << verify::reportToText(report, args.has("verbose"));
  }
  if (auto out = args.get("json")) {
    try {
      verify::saveReportJson(report, *out);
    } catch (const std::exception& e) {
      std::cerr << "error: cannot write report: " << e.what() << "\n";
      return 2;
    }
  }
  const int code = verify::exitCode(report.verdict);
  keepUntilExit(std::move(plan));  // the process exits next (keep_until_exit.h)
  keepUntilExit(std::move(report));
  return code;
}

}  // namespace paraproof::cli
