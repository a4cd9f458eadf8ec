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

// What generation knows about a plan it made, as types: the injector (and any other reader) takes it from
// here instead of re-parsing plan.metadata["generator"] (a record for people and other tools) or probing op
// names. Value names follow the emitters' rules (docs/models.md, "Value names").
struct Generation {
  models::ModelConfig model;
  ParallelSpec spec;
  int layers = 0;  // of the plan (GenerateOptions::layers or the model's)
  // Attention blocks with RMSNorm ("attention_norm", "mlp.w1/w2/w3": Llama, DeepSeek); else the MLP
  // family's blocks ("mlp.fc1/fc2").
  bool transformerBlocks() const { return model.family != models::Family::Mlp; }
  // The first layer with routed experts, or -1 when the plan has none.
  int firstMoeLayer() const;
};

// Throws std::invalid_argument for impossible combinations (tp not dividing heads, pp > layers, ...) and
// unknown or inapplicable bugs.
Plan generatePlan(const models::ModelConfig& model, const ParallelSpec& spec,
                  const GenerateOptions& options = {});

// A plan without its bug and with it (options.inject), generated so that only the bug differs: a compact
// plan states more replicas and micro-batch copies with a bug (the deviant's) than without, so up to
// kExplicitComparisonUpTo devices both plans are explicit. For `paraproof diff --model` and the inspector's
// compare mode. Throws as generatePlan.
constexpr int64_t kExplicitComparisonUpTo = 1024;
struct BugComparison {
  Plan correct, injected;
};
BugComparison generateBugComparison(const models::ModelConfig& model, const ParallelSpec& spec,
                                    GenerateOptions options);

}  // namespace paraproof::parallel
