// What an engine returns for a stage's verification condition (core/sym/problem.h), and its budget.
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "core/sym/problem.h"

namespace paraproof::solver {

// The engines' input; defined in sym so that stage lowering can build it without depending on the solver.
using sym::NamedTensor;
using sym::Obligation;
using sym::Problem;

enum class Status { Verified, Failed, Inconclusive };
const char* statusName(Status s);

struct Mismatch {
  size_t obligation = 0;
  double expected = 0, actual = 0;
};

struct Counterexample {
  std::vector<double> vars;  // one value per pool variable (Int vars hold integers)
  std::vector<Mismatch> mismatches;
  bool confirmed = false;  // re-evaluated with the real functions in double precision, and still differs
};

struct Result {
  Status status = Status::Inconclusive;
  std::string reason;  // for Inconclusive (timeout, unknown, spurious counterexample) and Failed
  std::optional<Counterexample> cex;
  std::string engine;
  double seconds = 0;
};

struct Budget {
  double timeoutSeconds = 60;
  const std::atomic<bool>* cancel = nullptr;  // cooperative; engines poll it
  bool cancelled() const { return cancel && cancel->load(std::memory_order_relaxed); }
};

}  // namespace paraproof::solver
