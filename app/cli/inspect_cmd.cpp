#include <iostream>
#include <map>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "core/plan/json_io.h"
#include "core/plan/state_contract.h"
#include "core/plan/validate.h"
#include "core/stage/fold.h"
#include "core/stage/microbatch_fold.h"
#include "core/stage/stage.h"

namespace paraproof::cli {

int runInspect(const std::vector<std::string>& argv) {
  Args args(argv, {}, {"help"});
  if (args.has("help")) {
    std::cout << "usage: paraproof inspect PLAN.json\n\nPrints a summary of the plan: mesh, devices, ops,\n"
                 "collectives, lineage and the stages it is cut into.\n";
    return 0;
  }
  if (args.positional().size() != 1) throw UsageError("expected exactly one PLAN.json");
  const std::string path = args.positional()[0];
  Plan plan;
  try {
    plan = loadPlan(path);
  } catch (const PlanError& e) {
    for (const auto& d : e.diagnostics())
      std::cerr << "error: " << d.str() << "\n";
    return 2;
  }
  std::cout << "plan:     " << (plan.name.empty() ? path : plan.name) << "\n";
  std::cout << "mesh:     ";
  for (size_t i = 0; i < plan.mesh.axes.size(); ++i)
    std::cout << (i ? " x " : "") << plan.mesh.axes[i] << "="
              << (i < plan.mesh.shape.size() ? plan.mesh.shape[i] : 0);
  std::cout << "\nlogical:  " << plan.logical.ops.size() << " ops, " << plan.logical.inputs.size()
            << " inputs, " << plan.logical.outputs.size() << " outputs, " << plan.state.size()
            << " state pairs\n";
  size_t ops = 0, lineage = 0;
  std::map<std::string, size_t> comm;
  for (const Device& d : plan.devices) {
    ops += d.graph.ops.size();
    lineage += d.lineage.size();
    for (const Op& op : d.graph.ops)
      if (isCommunication(op)) ++comm[op.kind];
  }
  std::cout << "devices:  " << plan.devices.size() << " (" << ops << " ops, " << lineage
            << " tensors with lineage)\n";
  std::cout << "communication:";
  if (comm.empty()) std::cout << " none";
  for (const auto& [k, n] : comm)
    std::cout << " " << k << "=" << n;
  std::cout << "\n";
  // A compact plan states some replicas or micro-batch copies and implies the others (docs/plan-format.md):
  // it is validated and cut written out; one too large for that is left to verify, which checks it folded.
  const Plan* checked = &plan;
  Plan written;
  if (plan.replicas || plan.microbatches) {
    const int64_t all = plan.meshDevices();
    std::cout << "compact:  ";
    if (plan.replicas)
      std::cout << plan.devices.size() << " of " << all << " devices stated (replicas along '"
                << plan.replicas->axis << "' implied)" << (plan.microbatches ? "; " : "");
    if (plan.microbatches) std::cout << plan.microbatches->count << " micro-batches, copies implied";
    std::cout << "\n";
    constexpr int64_t kWriteOut = 512;  // devices written out here
    if (all > kWriteOut) {
      std::cout << "checked:  not here (" << all << " devices to write out); 'paraproof verify' checks it "
                << "folded\n";
      return 0;
    }
    try {
      written = plan.replicas ? stage::expandReplicas(plan) : plan;
      if (written.microbatches) written = stage::expandMicroBatches(written);
    } catch (const std::exception& e) {
      std::cerr << "error: " << path << ": the compact plan cannot be written out: " << e.what() << "\n";
      return 2;
    }
    checked = &written;
  }
  const std::vector<Diagnostic> diags = validatePlan(*checked, path);
  if (!diags.empty()) {
    for (const auto& d : diags)
      std::cerr << "error: " << d.str() << "\n";
    return 2;
  }
  if (plan.state.empty()) {
    std::cout << "state:    none declared (inference-style: no state contract)\n";
  } else {
    const std::vector<StateViolation> v = checkStateContract(*checked);
    std::cout << "state:    "
              << (v.empty() ? "every holder outputs its successor piece"
                            : std::to_string(v.size()) + " violation(s) of the state contract")
              << "\n";
    for (const StateViolation& x : v)
      std::cout << "  " << x.message << "\n";
  }
  auto stages = stage::cutStages(*checked);
  size_t comms = 0;
  for (const auto& s : stages)
    comms += s.communication;
  std::cout << "stages:   " << stages.size() << " (" << stages.size() - comms << " compute, " << comms
            << " communication)\n";
  return 0;
}

}  // namespace paraproof::cli
