// The paraproof subcommands. Each returns the process exit code.
#pragma once

#include <string>
#include <vector>

#include "core/models/zoo.h"
#include "core/parallel/generate.h"
#include "core/plan/plan.h"

namespace paraproof::cli {

int runVerify(const std::vector<std::string>& args);
int runInspect(const std::vector<std::string>& args);
int runGenerate(const std::vector<std::string>& args);
int runModels(const std::vector<std::string>& args);
int runBugs(const std::vector<std::string>& args);
int runMutate(const std::vector<std::string>& args);
int runOps(const std::vector<std::string>& args);
int runImportTorch(const std::vector<std::string>& args);
int runDiff(const std::vector<std::string>& args);

class Args;
// A zoo plan as --model/--parallel/--layers/--seq/--batch/--inject/--explicit ask for it.
struct GenerateRequest {
  const models::ModelConfig* model = nullptr;
  parallel::ParallelSpec spec;
  parallel::GenerateOptions options;
  Plan generate() const;  // throws std::invalid_argument
};
// Reads the request; throws UsageError without --model, std::invalid_argument for an unknown model or spec.
GenerateRequest generateRequestFromArgs(const Args& args);
// Builds a plan from --model/--parallel/--layers/--seq/--batch/--inject; throws std::invalid_argument.
Plan generateFromArgs(const Args& args);

}  // namespace paraproof::cli
