// paraproof import-torch SCRIPT.py -o PLAN.json: trace a PyTorch training step and its distributed version.
#include <iostream>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "core/plan/torch_import.h"

namespace paraproof::cli {

namespace {

const char* kHelp =
    "usage: paraproof import-torch SCRIPT.py -o PLAN.json [--check-numerics]\n"
    "\n"
    "Traces SCRIPT.py's `logical` step once and its `parallel` step on every rank of MESH (make_fx, forward\n"
    "and backward to aten ops; torch.distributed calls become collectives) and writes the plan. SCRIPT.py\n"
    "defines MESH, INPUTS, logical, parallel and PLACEMENTS (docs/torch-import.md). `paraproof verify\n"
    "SCRIPT.py` imports and verifies in one step.\n"
    "\n"
    "  --check-numerics   also run SCRIPT.py's logical and parallel eagerly (every rank a thread, "
    "collectives\n"
    "                     on real tensors) on random inputs and say whether they agree: a differential test\n"
    "                     beside the proof, independent of the trace\n"
    "\n"
    "environment:\n"
    "  PARAPROOF_PYTHON          the interpreter with PyTorch (default /usr/bin/python3)\n"
    "  PARAPROOF_TORCH_PATH      the directory holding the paraproof_torch package (default: found next to\n"
    "                            the executable, in ../share/paraproof/python, or in the source tree)\n"
    "\n"
    "exit codes: 0 written, 2 an error naming the op or tensor and the SCRIPT.py line\n";

}  // namespace

int runImportTorch(const std::vector<std::string>& argv) {
  Args args(argv, {"o", "output"}, {"help", "check-numerics"});
  if (args.has("help")) {
    std::cout << kHelp;
    return 0;
  }
  if (args.positional().size() != 1) throw UsageError("expected exactly one SCRIPT.py");
  auto out = args.get("o");
  if (!out) out = args.get("output");
  if (!out) throw UsageError("missing -o PLAN.json");
  const TorchImport r = importTorch(args.positional()[0], *out, args.has("check-numerics"));
  // The importer's own lines pass through; a setup error found here is printed in the same form.
  std::cerr << r.stderrText;
  if (r.stderrText.empty())
    for (const auto& d : r.errors)
      std::cerr << "error: " << d.str() << "\n";
  return r.exitCode;
}

}  // namespace paraproof::cli
