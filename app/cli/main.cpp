// paraproof: prove that a distributed training plan computes what its single-device model computes.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "core/solver/z3_engine.h"

namespace {

const char* kUsage =
    "usage: paraproof <command> [options]\n"
    "\n"
    "commands:\n"
    "  verify PLAN.json [--jobs N] [--engine z3|random|both] [--json OUT] [--timeout S] [--deadline S]\n"
    "                  [--verbose] [--no-reduce] [--full-size-recheck N] [--no-fold] [--no-dedup] "
    "[--no-apart]\n"
    "                         prove the plan equivalent to its logical model, or show where it is not\n"
    "  verify SCRIPT.py [options]\n"
    "                         import a PyTorch script (as import-torch) and verify it\n"
    "  verify --model NAME --parallel dp=2,tp=2,pp=2,mb=2 [--layers L] [--inject "
    "BUG[@layer=..,rank=..,mb=..]]\n"
    "                         generate a plan in memory and verify it\n"
    "  import-torch SCRIPT.py -o PLAN.json\n"
    "                         trace a PyTorch training step and its torch.distributed version into a plan\n"
    "  generate --model NAME --parallel ... [--layers L] [--inject BUG] -o PLAN.json\n"
    "  models [--json]        the model zoo with the real configurations\n"
    "  bugs [--json]          the bug catalog\n"
    "  inspect PLAN.json      summary: devices, ops, collectives, stages\n"
    "  diff A.json B.json     what differs between two plans, op by op (or --model ... --inject BUG)\n"
    "  ops [--json]           the op kinds a plan may use: ports, attributes, meaning\n"
    "  mutate --model NAME --parallel ... --count N --seed S [--jobs J]\n"
    "                         mutation testing: random semantic mutations, an end-to-end oracle, the "
    "verifier\n"
    "\n"
    "exit codes: 0 equivalent, 1 not equivalent, 2 invalid input or usage, 3 inconclusive (or out of\n"
    "memory)\n"
    "run 'paraproof <command> --help' for a command's options\n";

// Z3 helper threads that outlive the run (abandoned proofs Z3 does not stop) must not meet static
// destructors: stop them, and if some still run after a grace period end the process without destructors.
int finish(int code) {
  if (paraproof::solver::stopZ3Helpers(2.0) > 0) {
    std::cout.flush();
    std::cerr.flush();
    std::_Exit(code);
  }
  return code;
}

// Out of memory ends in a message (main below), not an abort: unwinding after a failed allocation destroys
// large JSON documents and graphs, and destroying them allocates (nlohmann's destructor keeps a stack), which
// fails again inside a destructor and terminates. A reserve taken at start is given back the first time an
// allocation fails, so the unwinding has room; then the failure is thrown as usual.
char* gReserve = nullptr;

void giveBackReserve() {
  delete[] gReserve;
  gReserve = nullptr;
  std::set_new_handler(nullptr);
  throw std::bad_alloc();
}

}  // namespace

int main(int argc, char** argv) {
  gReserve = new char[size_t{64} << 20];
  std::set_new_handler(giveBackReserve);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  const std::string cmd = args[0];
  args.erase(args.begin());
  try {
    if (cmd == "verify") return finish(paraproof::cli::runVerify(args));
    if (cmd == "inspect") return paraproof::cli::runInspect(args);
    if (cmd == "diff") return paraproof::cli::runDiff(args);
    if (cmd == "generate") return paraproof::cli::runGenerate(args);
    if (cmd == "models") return paraproof::cli::runModels(args);
    if (cmd == "bugs") return paraproof::cli::runBugs(args);
    if (cmd == "mutate") return paraproof::cli::runMutate(args);
    if (cmd == "ops") return paraproof::cli::runOps(args);
    if (cmd == "import-torch") return paraproof::cli::runImportTorch(args);
  } catch (const paraproof::cli::UsageError& e) {
    std::cerr << "paraproof " << cmd << ": " << e.what() << "\n(see 'paraproof " << cmd << " --help')\n";
    return 2;
  } catch (const std::bad_alloc&) {
    // A resource limit, not a verdict and not bad input: no report is written.
    std::cerr << "paraproof " << cmd
              << ": out of memory: the plan needs more memory than this process may use (a plan with "
                 "expert parallelism is written device by device: docs/scale.md)\n";
    return 3;
  }
  std::cerr << "paraproof: unknown command '" << cmd << "'\n" << kUsage;
  return 2;
}
