// libFuzzer target over everything a plan file reaches before the engines: JSON text -> load -> write out
// or fold the compact dimensions -> validate -> write back -> fold replicas and micro-batches -> reduce
// shapes -> cut stages -> lower every stage (reduced, and at full size under a small budget) -> canonical
// hash. A documented rejection (PlanError, a validation diagnostic, an
// unsupported or too large stage) is a fine outcome; anything else (another exception, a crash, a
// sanitizer report, a leak, a hang, running out of memory) is a finding. See docs/hardening.md.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "core/plan/json_io.h"
#include "core/plan/json_text.h"
#include "core/plan/validate.h"
#include "core/stage/canonical.h"
#include "core/stage/fold.h"
#include "core/stage/lower.h"
#include "core/stage/microbatch_fold.h"
#include "core/stage/reduce.h"
#include "core/stage/stage.h"

using namespace paraproof;

namespace {

// Tiny budgets: a fuzz input must finish in milliseconds (under the sanitizers, one stage of 20,000 nodes
// takes tens of them); every path of the lowering is reached on tiny stages, and the limits themselves are
// what a larger one tests.
constexpr stage::LoweringLimits kBudget{2000, 20000};

[[noreturn]] void finding(const char* where, const std::exception& e) {
  std::fprintf(stderr, "fuzz_plan: unexpected exception in %s: %s\n", where, e.what());
  std::abort();
}

void lowerAll(const Plan& plan) {
  std::vector<stage::Stage> stages;
  try {
    stages = stage::cutStages(plan);
  } catch (const std::exception& e) {
    finding("cutStages", e);
  }
  stage::IntDomains domains;
  try {
    domains = stage::intDomains(plan);  // once per plan, as the verifier does (not once per stage)
  } catch (const std::exception& e) {
    finding("intDomains", e);
  }
  for (const stage::Stage& s : stages) {
    try {
      sym::Problem pb =
          stage::lowerStage(plan, s, domains, nullptr, std::chrono::steady_clock::time_point::max(), kBudget);
      (void)stage::canonicalHash(pb);
    } catch (const stage::UnsupportedStage&) {  // includes StageTooLarge
    } catch (const stage::InvalidStage&) {      // a division by a constant zero: the plan is invalid
    } catch (const std::exception& e) {
      finding("lowerStage", e);
    }
  }
}

// Shape reduction, then every stage lowered reduced and (the --no-reduce path) at full size.
void reduceAndLower(const Plan& plan) {
  stage::ReducedPlan reduced;
  try {
    reduced = stage::reducePlan(plan);
  } catch (const std::exception& e) {
    finding("reducePlan", e);
  }
  lowerAll(reduced.plan);
  if (reduced.reduced) lowerAll(plan);
}

// What was loaded writes back and reloads to the same plan.
void roundTrip(const Plan& plan) {
  try {
    const Json written = planToJson(plan);
    Json again = planToJson(planFromJson(written));
    if (again != written) {
      std::fprintf(stderr, "fuzz_plan: planToJson/planFromJson round trip differs\n");
      std::abort();
    }
    (void)planjson::formatJson(again);
  } catch (const std::exception& e) {
    finding("planToJson round trip", e);
  }
}

// A compact plan as verify takes it: each compact dimension folded where it folds, else written out (a
// plan whose stated parts do not define their translates is rejected with std::invalid_argument). Any
// outcome that validates is reduced and lowered.
void checkCompact(const Plan& compact) {
  Plan plan;
  try {
    stage::FoldedPlan replicas;
    if (compact.replicas) replicas = stage::foldReplicas(compact);
    plan = replicas.folded ? std::move(replicas.plan)
           : compact.replicas ? stage::expandReplicas(compact)
                              : compact;
    if (plan.microbatches) {
      stage::FoldedPlan copies = stage::foldMicroBatches(plan);
      plan = copies.folded ? std::move(copies.plan) : stage::expandMicroBatches(plan);
    }
  } catch (const std::invalid_argument&) {
    return;
  } catch (const std::exception& e) {
    finding("compact fold or write-out", e);
  }
  try {
    if (!validatePlan(plan, "fuzz.json").empty()) return;
  } catch (const std::exception& e) {
    finding("validatePlan (compact)", e);
  }
  reduceAndLower(plan);
}

// The folds of a valid plan: a fold either declines (notes say why) or yields a plan that validates.
void checkFolds(const Plan& plan) {
  stage::FoldedPlan replicas, copies;
  try {
    replicas = stage::foldReplicas(plan);
    copies = stage::foldMicroBatches(replicas.folded ? replicas.plan : plan);
  } catch (const std::exception& e) {
    finding("foldReplicas/foldMicroBatches", e);
  }
  if (!copies.folded && !replicas.folded) return;
  const Plan& folded = copies.folded ? copies.plan : replicas.plan;
  if (!validatePlan(folded, "folded").empty()) {
    std::fprintf(stderr, "fuzz_plan: a folded plan does not validate\n");
    std::abort();
  }
  reduceAndLower(folded);
}

void run(const std::string& text) {
  Plan plan;
  try {
    plan = planFromJson(planjson::parseJsonText(text, "fuzz.json"), "fuzz.json");
  } catch (const PlanError&) {
    return;
  }
  if (plan.replicas || plan.microbatches) {
    roundTrip(plan);
    return checkCompact(plan);
  }
  std::vector<Diagnostic> diags;
  try {
    diags = validatePlan(plan, "fuzz.json");
  } catch (const std::exception& e) {
    finding("validatePlan", e);
  }
  if (!diags.empty()) return;
  roundTrip(plan);
  checkFolds(plan);
  reduceAndLower(plan);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  run(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
