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

// What a stage covers; known before it is checked.
struct StageInfo {
  int id = 0;
  StageKind kind = StageKind::Compute;
  std::vector<std::string> logicalOps;  // op ids of the logical graph
  std::vector<ParallelOpRef> parallelOps;
  std::vector<int> devices;          // ranks involved, sorted
  std::vector<std::string> scopes;   // distinct name scopes of its ops, sorted
  std::vector<std::string> outputs;  // logical tensors whose lineage it checks
  std::string hash;                  // canonical form; equal hashes => equal verdicts
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
  std::vector<int64_t> index;
  double expected = 0, actual = 0;
};
struct CounterexampleReport {
  bool confirmed = false;  // re-evaluated concretely with the real functions
  std::vector<TensorValues> logicalInputs;
  std::vector<TensorValues> parallelInputs;
  std::vector<ElementDiff> diffs;
};

struct StageResult {
  int stage = 0;
  solver::Status status = solver::Status::Inconclusive;
  std::string reason;
  std::string engine;
  double seconds = 0;
  int reusedFrom = kNone;  // stage whose identical canonical form was checked instead
  std::optional<CounterexampleReport> counterexample;
};

struct Report {
  Verdict verdict = Verdict::Inconclusive;
  std::string plan;                // plan name or path
  std::vector<Diagnostic> errors;  // for Invalid
  std::vector<std::string> notes;  // scope statements, coverage facts, shape reduction summary
  std::vector<StageInfo> stages;
  std::vector<StageResult> results;  // results[i] belongs to stages[i]
  double seconds = 0;
  bool cancelled = false;
};

Json reportToJson(const Report& r);
std::string reportToText(const Report& r, bool verbose = false);
// Writes atomically (temporary file + rename).
void saveReportJson(const Report& r, const std::string& path);

}  // namespace paraproof::verify
