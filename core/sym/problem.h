// A stage's verification condition in engine-neutral form: obligations "expected == actual" over one
// expression pool whose variables are the stage's free inputs. Stage lowering produces it and the solver
// engines decide it, so it lives below both.
#pragma once

#include <string>
#include <vector>

#include "core/ir/ir.h"
#include "core/sym/expr.h"

namespace paraproof::sym {

struct Obligation {
  ExprId expected;     // logical value of the element
  ExprId actual;       // the parallel plan's value (one device tensor, or a sum over value parts)
  int device = kNone;  // rank holding the checked tensor; kNone for a sum over parts on several devices
  std::string tensor;  // device tensor name, or a description of the part group
  std::string logicalTensor;
  std::vector<int64_t> index;  // element index in the logical tensor (reduced shape)
};

// A tensor of the stage built from variables, shown in counterexamples.
struct NamedTensor {
  std::string name;
  int device = kNone;  // kNone: logical
  Shape shape;
  std::vector<ExprId> elems;
};

struct Problem {
  ExprPool pool;
  std::vector<Obligation> obligations;
  std::vector<NamedTensor> logicalInputs;
  std::vector<NamedTensor> parallelInputs;
  // Every value the stage computes, logical (device kNone) and on each rank: a counterexample's values inside
  // the stage, from which the report names the first op that goes wrong (core/verify/first_difference.h).
  std::vector<NamedTensor> internals;
};

}  // namespace paraproof::sym
