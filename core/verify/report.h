// The verification report: the stable contract read by the CLI, the inspector and scripts
// (docs/report-format.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/ir/ir.h"
#include "core/plan/diagnostics.h"
#include "core/solver/problem.h"

namespace paraproof::verify {

enum class Verdict { Equivalent, NotEquivalent, Invalid, Inconclusive };
const char* verdictName(Verdict v);  // "equivalent", "not_equivalent", "invalid", "inconclusive"
int exitCode(Verdict v);             // 0, 1, 2, 3

// State: not a solver stage but the state contract of one device and one state tensor
// (core/plan/state_contract.h).
enum class StageKind { Compute, Communication, State };
const char* stageKindName(StageKind k);

struct ParallelOpRef {
  int rank = 0;
  std::string op;  // op id in that device's graph
};

// A communication op of a stage, for the reader (report_annotate.h): one entry per call instance.
struct CommunicationRef {
  std::string kind;      // all_reduce, send, ...
  std::string op;        // op id (of the first rank listed)
  std::string instance;  // empty if none
  std::vector<int> group;
  int peer = kNone;        // send/recv
  std::string reduce;      // all_reduce / reduce_scatter
  std::vector<int> ranks;  // the ranks issuing it in this stage
};

// What a stage covers; known before it is checked.
struct StageInfo {
  int id = 0;
  StageKind kind = StageKind::Compute;
  std::vector<std::string> logicalOps;  // op ids of the logical graph
  std::vector<ParallelOpRef> parallelOps;
  std::vector<int> devices;                     // ranks involved, sorted
  std::vector<std::string> scopes;              // distinct name scopes of its ops, sorted
  std::vector<std::string> outputs;             // logical tensors whose lineage it checks
  std::string hash;                             // canonical form; equal hashes => equal verdicts
  std::vector<CommunicationRef> communication;  // filled by annotateCommunication (report_annotate.h)
  // A failed stage: the device op whose value differs first in the counterexample (annotateFirstDifference);
  // `scopes` then lead with its scope and follow the device ops' order.
  struct FirstDifference {
    int rank = 0;
    std::string op, tensor, scope;
    std::string why;  // how it was chosen, in words (core/verify/first_difference.h)
  };
  std::optional<FirstDifference> firstDifference;
};

// Display-ready counterexample: concrete values, the element that differs, where.
struct TensorValues {
  std::string name;
  int device = kNone;  // kNone: logical
  Shape shape;
  std::vector<double> values;
};
struct ElementDiff {
  int device = kNone;  // kNone: a sum of value parts over several devices
  std::string tensor;  // the device tensor (or part group) that differs
  std::string logicalTensor;
  std::vector<int64_t> index;  // in the logical tensor at the shape checked (reduced when `fullIndex` is set)
  double expected = 0, actual = 0;
  // For a counterexample found at reduced shape: the [start, end) range per dim of the full-size logical
  // tensor that the reduced element stands for, and that tensor's full shape (empty: found at full size).
  std::vector<std::pair<int64_t, int64_t>> fullIndex;
  Shape fullShape;
};
struct CounterexampleReport {
  // Re-evaluated concretely with the real functions, and still different, at full size. A counterexample
  // found at reduced shape that could not be re-checked at full size is never `confirmed`: see
  // `reducedConfirmed`.
  bool confirmed = false;
  bool reducedConfirmed = false;  // confirmed at the reduced shape only (may be a reduction artefact)
  bool fullSize = true;           // values and indices are at full size
  std::vector<TensorValues> logicalInputs;
  std::vector<TensorValues> parallelInputs;
  std::vector<ElementDiff> diffs;
  // Devices holding a differing logical element whose own value agrees there (not serialised: the hints use
  // them, so "the ranks' values sum to the expected one" sees every holder, not only those that differ).
  std::vector<ElementDiff> agreeing;
  // The stage's computed values at this counterexample, logical and per rank (not serialised: the first
  // difference is found from them, core/verify/first_difference.h).
  std::vector<TensorValues> internals;
};

struct StageResult {
  int stage = 0;
  solver::Status status = solver::Status::Inconclusive;
  std::string reason;
  std::string engine;
  double seconds = 0;
  int reusedFrom = kNone;  // stage whose identical canonical form was checked instead
  bool ran = true;         // false: never checked (cancelled, or the deadline came first)
  std::optional<CounterexampleReport> counterexample;
  // A stage that failed at reduced shape is re-checked at full size when small enough (verify::Options::
  // fullSizeRecheckElements): "passed" (the reduced failure was a reduction artefact; the stage passes),
  // "failed" (the counterexample is the full-size one), "skipped: too large", "skipped: disabled",
  // "inconclusive" (the full-size check did not finish), or "not needed"
  // (the stage did not fail at reduced shape, or its shapes were not reduced).
  std::string fullSizeCheck = "not needed";
};

struct Report {
  Verdict verdict = Verdict::Inconclusive;
  std::string plan;                // plan name or path
  std::vector<Diagnostic> errors;  // for Invalid
  std::vector<std::string> notes;  // scope statements, coverage facts, shape reduction summary
  std::vector<StageInfo> stages;
  std::vector<StageResult> results;  // results[i] belongs to stages[i]
  double seconds = 0;
  // Wall time of each pipeline phase, in order (validate, state, reduce, cut, dedup, check, report; a plan
  // loaded or generated by the caller adds its own in front).
  std::vector<std::pair<std::string, double>> phases;
  size_t distinctStages = 0;  // stages lowered and checked (the others share a signature with one of them)
  bool cancelled = false;
  double deadlineSeconds = 0;    // the --deadline in force (0: none)
  bool deadlineReached = false;  // the run stopped at its deadline: a partial report
};

Json reportToJson(const Report& r);
std::string reportToText(const Report& r, bool verbose = false);
// Writes atomically (temporary file + rename).
void saveReportJson(const Report& r, const std::string& path);

}  // namespace paraproof::verify
