// A stage's verification condition in engine-neutral form: obligations "expected == actual" over one
// expression pool whose variables are the stage's free inputs.
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "core/ir/ir.h"
#include "core/sym/expr.h"

namespace paraproof::solver {

struct Obligation {
  sym::ExprId expected;  // logical value of the element
  sym::ExprId actual;    // the parallel plan's value (one device tensor, or a sum over value parts)
  int device = kNone;    // rank holding the checked tensor; kNone for a sum over parts on several devices
  std::string tensor;    // device tensor name, or a description of the part group
  std::string logicalTensor;
  std::vector<int64_t> index;  // element index in the logical tensor (reduced shape)
};

// A tensor of the stage built from variables, shown in counterexamples.
struct NamedTensor {
  std::string name;
  int device = kNone;  // kNone: logical
  Shape shape;
  std::vector<sym::ExprId> elems;
};

struct Problem {
  sym::ExprPool pool;
  std::vector<Obligation> obligations;
  std::vector<NamedTensor> logicalInputs;
  std::vector<NamedTensor> parallelInputs;
};

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
