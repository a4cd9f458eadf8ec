// The bug catalog: real distributed-training bugs (the 14 TrainVerify cases and one per class seen in
// public trackers) as mutations of a correct generated plan at a chosen layer, rank and micro-batch.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "core/plan/plan.h"

namespace paraproof::parallel {

struct BugEntry {
  std::string id;           // stable, e.g. "tv01-allreduce-missing"
  std::string cls;          // bug class
  std::string description;  // one or two sentences for an engineer
  std::string source;       // kind of real system where it happens
  std::string model;        // a zoo model on which it applies
  std::string parallel;     // a --parallel value on which it applies
};

const std::vector<BugEntry>& bugCatalog();
const BugEntry* findBug(const std::string& id);

// Where to inject; -1 lets the injector choose (the first place that applies).
struct InjectionSite {
  int layer = -1;
  int rank = -1;
  int microBatch = -1;
};

struct BugRequest {
  std::string id;
  InjectionSite site;
};

// A request that fails whatever form the plan is generated in (an unknown bug or key, a parallelism the bug
// needs, a layer, micro-batch or rank outside the plan, a rank that does not hold the layer): found before
// anything is mutated, so a caller need not retry on the explicit plan.
struct BadInjection : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// Parses "tv07-eps@layer=1,rank=2,mb=0" (the "@..." part optional). Throws BadInjection.
BugRequest parseInjection(const std::string& text);

// Whether the bug is placed in a layer (its site's layer counts), or is step-level (the layer is ignored).
// Throws BadInjection for an unknown id.
bool bugIsPerLayer(const std::string& id);

// What was changed: the ranks and op ids mutated, and the place actually chosen.
struct Injection {
  std::string id;
  InjectionSite site;
  std::vector<std::pair<int, std::string>> changedOps;  // (rank, op id) after the mutation
};

// What a plan says it breaks, for a reader: "tv07-eps: One rank's attention RMSNorm uses ..." from the
// record injectBug leaves in metadata["injected"] (or a hand-written "inject" / "bug" entry, a string or an
// object with id and description), else a hand-made fixture's metadata.expect.why when it expects
// not_equivalent; empty when it says nothing.
std::string injectedBugNote(const Json& metadata);

struct Generation;

// Mutates a plan produced by generatePlan, described by `generation`; records the injection in
// plan.metadata["injected"]. Throws BadInjection when the request does not fit the plan,
// std::invalid_argument when the bug finds no place to apply in it.
Injection injectBug(Plan& plan, const Generation& generation, const std::string& text);

}  // namespace paraproof::parallel
