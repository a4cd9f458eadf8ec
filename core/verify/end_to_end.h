// The end-to-end oracle: does a (valid) plan leave every device holding what its output lineage names?
// One problem for the whole plan at full shape: every logical op, every device op executed with its
// collectives and send/recv, and obligations only for the device graphs' outputs (value-part groups
// summed). It shares the op semantics and the lowering with the verifier but nothing of its method
// (no stage cutting, no shape reduction, no lineage of intermediate tensors), so it can judge the verifier:
// mutation testing (`paraproof mutate`) calls a mutant "changed" when this oracle finds a difference.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "core/plan/plan.h"
#include "core/stage/lower.h"

namespace paraproof::verify {

enum class Effect {
  Unchanged,  // every device output agreed with its lineage on every random-field trial
  Changed,    // a difference, reproduced in double precision with the real functions
  Undecided,  // a field difference that doubles did not reproduce, a timeout, or a plan it cannot run
};
const char* effectName(Effect e);  // "unchanged", "changed", "undecided"

struct EndToEndResult {
  Effect effect = Effect::Undecided;
  std::string reason;
  std::string where;  // for Changed: the first differing output element
  size_t obligations = 0;
  size_t nodes = 0;      // expression nodes of the whole-plan problem
  int64_t elements = 0;  // scalar elements of its tensors (known before lowering: the bound checked first)
  double seconds = 0;
  double lowerSeconds = 0;  // of which building the problem
};

struct EndToEndOptions {
  double timeoutSeconds = 120;
  int trials = 2;
  uint64_t seed = 0x0e2e0e2e;  // differs from the verifier's engines on purpose
  const std::atomic<bool>* cancel = nullptr;
  // The correct plan a mutant came from: output k of every device must also hold what output k of the same
  // device holds there (by its lineage). A device that outputs its old state instead of the step's result
  // satisfies its own (input) lineage but not the reference's. Ignored when the devices or output counts
  // differ.
  const Plan* reference = nullptr;
  // Bounds the whole-plan problem (scalar elements, expression nodes): above them the result is Undecided
  // with a reason that starts "stage too large".
  stage::LoweringLimits limits = {};
};

// The explicit plan a compact one stands for: every implied replica (stage::expandReplicas), then every
// implied micro-batch copy (stage::expandMicroBatches) written out; the plan itself when it is explicit.
// The oracle judges this plan: a compact plan is the full plan it stands for, never its stated part.
// Throws std::invalid_argument when the stated replicas or copies do not define their translates.
Plan explicitPlan(const Plan& plan);

// The plan (explicit, or compact: judged as explicitPlan(plan)) must have passed validatePlan (the oracle
// relies on matched communication and well-formed lineage). Never throws for a plan it cannot encode: that
// is Undecided with the reason.
EndToEndResult checkEndToEnd(const Plan& plan, const EndToEndOptions& options = {});

// The same oracle for many variants of one correct plan (mutation testing). The constructor lowers and
// checks the correct plan once; check(variant) then lowers the variant reusing every op whose kind,
// attributes and inputs did not change and the logical model's values (stage::LoweringMemo), and evaluates
// only the obligations whose two terms are not a pair the correct plan already passed (the same terms in the
// same pool: the same identity). So a mutant costs what lies downstream of its change, on every device its
// data reaches. It answers what checkEndToEnd(variant, {reference = correct}) answers. A compact correct
// plan or variant is judged as the explicit plan it stands for (explicitPlan; the oracle keeps its own copy
// of the correct one), so a variant of a compact plan whose mutated template changes every implied replica
// or copy is compared with the full correct plan. check() is safe to call from several threads.
class EndToEndOracle {
 public:
  explicit EndToEndOracle(const Plan& correct, const EndToEndOptions& options = {});
  const EndToEndResult& base() const { return base_; }
  EndToEndResult check(const Plan& variant) const;

 private:
  Plan correct_;  // explicit
  EndToEndOptions options_;
  EndToEndResult base_;
  stage::LoweringMemo memo_;
  std::vector<uint64_t> passed_;  // sorted (expected << 32 | actual) of the correct plan's obligations
};

}  // namespace paraproof::verify
