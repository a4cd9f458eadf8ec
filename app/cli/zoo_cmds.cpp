// generate / models / bugs, and the plan source shared with verify (--model ... --parallel ...).
#include <iostream>
#include <stdexcept>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "core/models/zoo.h"
#include "core/parallel/bugs.h"
#include "core/parallel/generate.h"
#include "core/plan/json_io.h"

namespace paraproof::cli {

GenerateRequest generateRequestFromArgs(const Args& args) {
  auto name = args.get("model");
  if (!name) throw UsageError("--model is required (see 'paraproof models')");
  GenerateRequest r;
  r.model = models::findModel(*name);
  if (!r.model) throw std::invalid_argument("unknown model '" + *name + "' (see 'paraproof models')");
  r.spec = parallel::parseParallel(args.getOr("parallel", ""));
  r.options.layers = args.getInt("layers", 0, 1, 100000);
  r.options.seq = args.getInt("seq", 0, 1, 1 << 30);
  r.options.globalBatch = args.getInt("batch", 0, 1, 1 << 30);
  r.options.inject = args.getOr("inject", "");
  r.options.compact = !args.has("explicit");
  return r;
}

Plan GenerateRequest::generate() const {
  return parallel::generatePlan(*model, spec, options);
}

Plan generateFromArgs(const Args& args) {
  return generateRequestFromArgs(args).generate();
}

int runGenerate(const std::vector<std::string>& argv) {
  Args args(argv, {"model", "parallel", "layers", "seq", "batch", "inject", "o", "output"},
            {"help", "explicit"});
  if (args.has("help")) {
    std::cout
        << "usage: paraproof generate --model NAME --parallel dp=..,tp=..,pp=..,mb=..[,schedule=gpipe]\n"
           "                          [--layers L] [--seq S] [--batch B] [--inject "
           "BUG[@layer=..,rank=..,mb=..]]\n"
           "                          [--explicit] -o PLAN.json[.gz]\n\n"
           "Generates a full training-step plan (forward, loss, backward, grad accumulation, clipping, "
           "AdamW)\n"
           "for a zoo model under the given parallelism, optionally with a catalogued bug injected.\n"
           "The plan is compact: from dp=8 a few data-parallel replicas are written, from mb=4 a few\n"
           "micro-batch copies, and the others are their translates (docs/plan-format.md, \"Replicas\",\n"
           "\"Micro-batches\"); --explicit writes every device and every copy. A PLAN.json.gz is written\n"
           "gzip-compressed (\"Compressed plans\"); every command loads either form.\n";
    return 0;
  }
  auto out = args.get("o") ? args.get("o") : args.get("output");
  if (!out) throw UsageError("-o PLAN.json is required");
  Plan plan;
  try {
    plan = generateFromArgs(args);
  } catch (const std::invalid_argument& e) {
    std::cerr << "paraproof generate: " << e.what() << "\n";
    return 2;
  }
  savePlan(plan, *out);
  std::cout << "wrote " << *out << ": " << plan.devices.size() << " devices";
  if (plan.replicas)
    std::cout << " written of " << plan.meshDevices() << " (the other " << plan.replicas->axis
              << " replicas are translates)";
  std::cout << ", " << plan.logical.ops.size() << " logical ops, " << plan.deviceOps() << " device ops\n";
  return 0;
}

int runModels(const std::vector<std::string>& argv) {
  Args args(argv, {}, {"help", "json"});
  if (args.has("help")) {
    std::cout << "usage: paraproof models [--json]\n\nLists the model zoo with the real configurations.\n";
    return 0;
  }
  Json all = Json::array();
  for (const auto& m : models::modelZoo()) {
    Json j{{"name", m.name},     {"family", models::familyName(m.family)},
           {"layers", m.layers}, {"hidden", m.hidden},
           {"heads", m.heads},   {"kv_heads", m.kvHeads},
           {"ffn", m.ffn},       {"vocab", m.vocab},
           {"note", m.note}};
    all.push_back(j);
    if (!args.has("json"))
      std::cout << m.name << ": " << m.layers << " layers, hidden " << m.hidden << ", heads " << m.heads
                << "/" << m.kvHeads << ", ffn " << m.ffn << ", vocab " << m.vocab
                << (m.note.empty() ? "" : "  - ") << m.note << "\n";
  }
  if (args.has("json")) std::cout << all.dump(2) << "\n";
  return 0;
}

int runBugs(const std::vector<std::string>& argv) {
  Args args(argv, {}, {"help", "json"});
  if (args.has("help")) {
    std::cout
        << "usage: paraproof bugs [--json]\n\nLists the bug catalog: id, class, description, real-world "
           "source, and a --model/--parallel on which it applies.\n";
    return 0;
  }
  Json all = Json::array();
  for (const auto& b : parallel::bugCatalog()) {
    all.push_back({{"id", b.id},
                   {"class", b.cls},
                   {"description", b.description},
                   {"source", b.source},
                   {"model", b.model},
                   {"parallel", b.parallel}});
    if (!args.has("json"))
      std::cout << b.id << "  [" << b.cls << "]\n    " << b.description << "\n    seen in: " << b.source
                << "\n    try: paraproof verify --model " << b.model << " --parallel " << b.parallel
                << " --inject " << b.id << "\n";
  }
  if (args.has("json")) std::cout << all.dump(2) << "\n";
  return 0;
}

}  // namespace paraproof::cli
