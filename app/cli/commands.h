// The paraproof subcommands. Each returns the process exit code.
#pragma once

#include <string>
#include <vector>

namespace paraproof::cli {

int runVerify(const std::vector<std::string>& args);
int runInspect(const std::vector<std::string>& args);

}  // namespace paraproof::cli
