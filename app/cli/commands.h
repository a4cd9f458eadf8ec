// The paraproof subcommands. Each returns the process exit code.
#pragma once

#include <string>
#include <vector>

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
// Builds a plan from --model/--parallel/--layers/--seq/--batch/--inject; throws std::invalid_argument.
Plan generateFromArgs(const Args& args);

}  // namespace paraproof::cli
