// paraproof ops: the op registry for plan authors (ports, attributes with types and defaults, semantics).
#include <iostream>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "core/ops/op_catalog.h"

namespace paraproof::cli {

int runOps(const std::vector<std::string>& argv) {
  Args args(argv, {}, {"help", "json", "markdown"});
  if (args.has("help")) {
    std::cout << "usage: paraproof ops [--json | --markdown]\n\n"
                 "Lists every op kind a plan may use: its inputs and outputs, its attributes (type, range,\n"
                 "required or default) and its meaning. --markdown prints docs/operators.md.\n";
    return 0;
  }
  if (!args.positional().empty()) throw UsageError("ops takes no arguments");
  if (args.has("json"))
    std::cout << ops::opsToJson().dump(2) << "\n";
  else if (args.has("markdown"))
    std::cout << ops::opsToMarkdown();
  else
    std::cout << ops::opsToText();
  return 0;
}

}  // namespace paraproof::cli
