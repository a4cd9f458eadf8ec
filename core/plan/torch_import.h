// Importing a PyTorch SCRIPT.py into a plan: runs the paraproof_torch Python package (resources/python) under
// /usr/bin/python3 in a child process (docs/torch-import.md). Shared by `paraproof import-torch` / `verify
// SCRIPT.py` and the inspector; Qt-free, so the child is started with posix_spawn.
#pragma once

#include <string>
#include <vector>

#include "core/plan/diagnostics.h"
#include "core/plan/plan.h"

namespace paraproof {

struct TorchImport {
  int exitCode = 2;                // 0 the plan is written, 2 an error (the importer's or a setup problem)
  std::vector<Diagnostic> errors;  // one per "error: WHERE: MESSAGE" line of the importer (WHERE = FILE:LINE)
  std::string stderrText;          // everything the importer wrote on stderr
};

// Imports `script` into the plan file `out`. Never throws for a user error; those are in `errors`. Blocks
// until the importer exits (the inspector calls it off the UI thread). With `checkNumerics` the importer also
// runs both steps on random inputs and prints whether they agree on stdout (or, `quiet`, only in the plan's
// metadata.check_numerics; docs/torch-import.md).
TorchImport importTorch(const std::string& script, const std::string& out, bool checkNumerics = false,
                        bool quiet = false);

// Imports `script` into a private temporary plan file and loads it (named after the script); throws PlanError
// with the importer's errors (exit 2), each naming the SCRIPT.py line. A traceback (an importer bug) is left
// in `*stderrText` when given.
Plan loadTorchPlan(const std::string& script, bool checkNumerics = false, std::string* stderrText = nullptr);

// A path the importer reads (SCRIPT.py) rather than a plan file.
bool isTorchScript(const std::string& path);

}  // namespace paraproof
