// The verification pipeline: validate -> cut stages -> reduce shapes -> check stages on N workers -> report.
#pragma once

#include <atomic>
#include <functional>

#include "core/ir/limits.h"
#include "core/plan/plan.h"
#include "core/verify/report.h"

namespace paraproof::verify {

enum class EngineChoice {
  Z3,
  Random,
  Both
};  // Both: random field first (fast counterexample), then Z3 proof

class StageShare;  // stage_share.h

struct Options {
  int jobs = 1;
  double timeoutSeconds = 60;  // per stage
  double deadlineSeconds = 0;  // whole run (0: none); stages not done by then are reported not run
  size_t z3MemoryMb = 0;       // Z3's soft memory cap (0: Z3's default, none); exceeding it is inconclusive
  // Testing: this stage (kNone: none) waits, before its engines run, until the run is stopped (deadline or
  // cancel); a gate that makes "cannot finish before the signal" certain without timing assumptions.
  int holdStage = -1;
  EngineChoice engine = EngineChoice::Both;
  bool reduceShapes = true;
  // A stage that fails at reduced shape may be a reduction artefact (a hard-coded count constant relating to
  // a full-size extent): it is re-checked unreduced when its tensors hold at most this many elements in all
  // (0: never; the failure is then reported as found at reduced shape only, never "confirmed").
  int64_t fullSizeRecheckElements = int64_t{1} << 20;
  bool dedupStages = true;
  // A stage whose reduced tensors hold at least this many elements is first verified as a plan of its own
  // (stage/stage_plan.h): its axis classes then reduce apart from the rest of the plan's. 0: never.
  int64_t apartElements = int64_t{1} << 15;
  // Check symmetric copies as a few: replicas along a data-parallel axis (stage/fold.h) and micro-batches
  // (stage/microbatch_fold.h). Off with --no-fold.
  bool fold = true;
  // A stage past these bounds is inconclusive ("stage too large") instead of exhausting memory.
  int64_t maxStageElements = limits::kMaxStageElements;
  int64_t maxStageExprNodes = limits::kMaxStageExprNodes;
  // Many processes (--mpi): this one checks its share of the distinct stages and exchanges the results
  // with the others; every process returns the whole report. Null: one process checks everything.
  StageShare* share = nullptr;
};

// Callbacks arrive on worker threads; implementations must be thread-safe and quick.
class Observer {
 public:
  virtual ~Observer() = default;
  virtual void onStagesPlanned(const std::vector<StageInfo>& /*stages*/) {}
  virtual void onStageStarted(int /*stage*/) {}
  virtual void onStageHeld(int /*stage*/) {}  // Options::holdStage reached its gate
  virtual void onStageFinished(const StageResult& /*result*/) {}
};

// Verifies a plan. Never throws on bad input: an invalid plan yields Verdict::Invalid with its errors.
// `cancel` is polled; a cancelled run (or one past `deadlineSeconds`) returns promptly with the stages done
// so far and verdict Inconclusive.
Report verifyPlan(const Plan& plan, const Options& options, Observer* observer = nullptr,
                  const std::atomic<bool>* cancel = nullptr);

}  // namespace paraproof::verify
