// paraproof import-torch: runs the paraproof_torch Python package (resources/python) under /usr/bin/python3
// to trace a PyTorch SCRIPT.py into a plan (docs/import-torch.md).
#pragma once

#include <string>
#include <vector>

#include "core/plan/diagnostics.h"

namespace paraproof::cli {

struct TorchImport {
  int exitCode = 2;                // 0 the plan is written, 2 an error (the importer's or a setup problem)
  std::vector<Diagnostic> errors;  // one per "error: WHERE: MESSAGE" line of the importer
  std::string stderrText;          // everything the importer wrote on stderr
};

// Imports `script` into the plan file `out`. Never throws for a user error; those are in `errors`.
// With `checkNumerics` the importer also runs both steps on random inputs and prints whether they agree on
// stdout (or, `quiet`, only in the plan's metadata.check_numerics; docs/import-torch.md).
TorchImport importTorch(const std::string& script, const std::string& out, bool checkNumerics = false,
                        bool quiet = false);

}  // namespace paraproof::cli
