// Parallel plan generation: a zoo model under a composition of strategies (dp, tp, pp with micro-batches,
// ...), emitted by the same builder for the logical graph and every device, optionally with an injected bug.
#pragma once

#include <string>

#include "core/models/zoo.h"
#include "core/plan/plan.h"

namespace paraproof::parallel {

struct ParallelSpec {
  int dp = 1, tp = 1, pp = 1, mb = 1, cp = 1, ep = 1, zero = 0;
  bool sp = false;
  std::string schedule = "1f1b";  // or "gpipe"
  std::string str() const;        // canonical "dp=2,tp=2,pp=2,mb=2" form (degrees != 1 only)
};

// Parses "dp=2,tp=2,pp=2,mb=2[,sp][,cp=2][,ep=2][,zero=1][,schedule=gpipe]". Throws std::invalid_argument.
ParallelSpec parseParallel(const std::string& text);

struct GenerateOptions {
  int layers = 0;           // 0: the model's own layer count
  int64_t seq = 0;          // 0: default (8)
  int64_t globalBatch = 0;  // 0: default (2 * dp * mb)
  std::string inject;       // bug id, optionally "@layer=..,rank=..,mb=.."; empty: none
  // Emit the compact form: only some data-parallel replicas are built (Plan::replicas: coordinates 0 and
  // 1, with an injected bug also 2, 3 and the injected rank's; from dp = 8 without ZeRO) and only some
  // micro-batch copies (Plan::microbatches: 0 and 1, with a bug 0-2 and the bug's; from mb = 4 without
  // cp); the others are their translates. Where it cannot, the plan is explicit.
  bool compact = false;
};

// Throws std::invalid_argument for impossible combinations (tp not dividing heads, pp > layers, ...) and
// unknown or inapplicable bugs.
Plan generatePlan(const models::ModelConfig& model, const ParallelSpec& spec,
                  const GenerateOptions& options = {});

}  // namespace paraproof::parallel
