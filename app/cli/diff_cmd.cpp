// paraproof diff: what differs between two plans, op by op (core/plan/plan_diff.h).
#include <iostream>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "core/plan/json_io.h"
#include "core/plan/plan_diff.h"
#include "core/plan/validate.h"

namespace paraproof::cli {

namespace {

const char* kHelp =
    "usage: paraproof diff A.json B.json [--limit N]\n"
    "       paraproof diff --model NAME --parallel ... [--layers L] --inject BUG[@layer=..,rank=..,mb=..]\n\n"
    "Lists what differs between two plans: ops added, removed or changed (kind, attributes, groups, inputs,\n"
    "outputs, lineage) and graph inputs, in the logical graph and on every rank both plans state. Ops are\n"
    "matched by id, then by kind and output lineage. With --model the two plans are the generated plan\n"
    "and the same plan with the bug injected (both explicit up to 1,024 devices): where the bug is, op by\n"
    "op.\n\n"
    "exit codes: 0 identical, 1 different, 2 invalid input or usage\n";

// Loads and validates; prints the errors and returns false when the plan cannot be compared.
bool load(const std::string& path, Plan& plan) {
  try {
    plan = loadPlan(path);
  } catch (const PlanError& e) {
    for (const auto& d : e.diagnostics())
      std::cerr << "error: " << d.str() << "\n";
    return false;
  }
  const auto diags = validatePlan(plan, path);
  for (const auto& d : diags)
    std::cerr << "error: " << d.str() << "\n";
  return diags.empty();
}

}  // namespace

int runDiff(const std::vector<std::string>& argv) {
  Args args(argv, {"model", "parallel", "layers", "seq", "batch", "inject", "limit"}, {"help", "explicit"});
  if (args.has("help")) {
    std::cout << kHelp;
    return 0;
  }
  const int limit = args.getInt("limit", 200, 1, 1 << 30);
  Plan a, b;
  if (args.has("model")) {
    if (!args.positional().empty()) throw UsageError("give two PLAN.json files or --model, not both");
    if (!args.has("inject"))
      throw UsageError("--model needs --inject BUG: the plan is compared with its bug");
    try {
      const GenerateRequest request = generateRequestFromArgs(args);
      auto [correct, injected] =
          parallel::generateBugComparison(*request.model, request.spec, request.options);
      a = std::move(correct);
      b = std::move(injected);
    } catch (const std::invalid_argument& e) {
      std::cerr << "paraproof diff: " << e.what() << "\n";
      return 2;
    }
  } else {
    if (args.positional().size() != 2) throw UsageError("expected two plans: A.json B.json");
    if (!load(args.positional()[0], a) || !load(args.positional()[1], b)) return 2;
  }
  const PlanDiff diff = diffPlans(a, b);
  for (const std::string& line : diff.plan)
    std::cout << "plan: " << line << "\n";
  size_t counts[3] = {0, 0, 0};
  for (size_t i = 0; i < diff.elements.size(); ++i) {
    const PlanElementDiff& d = diff.elements[i];
    ++counts[static_cast<int>(d.change)];
    if (static_cast<int>(i) < limit) std::cout << describe(d) << "\n";
  }
  if (static_cast<int>(diff.elements.size()) > limit)
    std::cout << "... " << diff.elements.size() - static_cast<size_t>(limit) << " more (--limit)\n";
  if (diff.identical()) {
    std::cout << "identical\n";
    return 0;
  }
  std::cout << diff.elements.size()
            << " difference(s): " << counts[static_cast<int>(PlanElementDiff::Change::Changed)]
            << " changed, " << counts[static_cast<int>(PlanElementDiff::Change::Added)] << " added, "
            << counts[static_cast<int>(PlanElementDiff::Change::Removed)] << " removed";
  if (!diff.plan.empty()) std::cout << "; " << diff.plan.size() << " plan-level";
  std::cout << "\n";
  return 1;
}

}  // namespace paraproof::cli
