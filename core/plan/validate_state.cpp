// The state declaration of the logical graph: each pair names a logical input and a logical output of the
// same type, and no input or output is declared twice. (Whether the devices honour it is the state
// contract, core/plan/state_contract.h: a verdict, not a validity question.)
#include <map>

#include "core/plan/validate_checks.h"

namespace paraproof::validation {

namespace {

std::string typeString(const TensorType& t) {
  return shapeString(t.shape) + " " + dtypeName(t.dtype);
}

}  // namespace

void checkStateDeclaration(const Plan& plan, Report& r) {
  const Graph& g = plan.logical;
  std::map<std::string, size_t> inputAt, outputAt;
  for (size_t k = 0; k < plan.state.size(); ++k) {
    const StatePair& s = plan.state[k];
    const std::string at = "/logical/state/" + std::to_string(k);
    ValueId in = g.findValue(s.input), out = g.findValue(s.output);
    bool ok = true;
    if (in == kNone || g.values[in].producer != kNone) {
      r.add(at + "/input", "state input '" + s.input + "' is not a logical graph input" +
                               (in == kNone ? " (no such tensor)" : " (an op computes it)"));
      ok = false;
    }
    bool isOutput = false;
    for (ValueId o : g.outputs)
      isOutput |= o == out;
    if (out == kNone || !isOutput) {
      r.add(at + "/output", "state successor '" + s.output + "' of '" + s.input +
                                "' is not a logical graph output" +
                                (out == kNone ? " (no such tensor)" : ""));
      ok = false;
    }
    if (auto [it, fresh] = inputAt.emplace(s.input, k); !fresh) {
      r.add(at + "/input", "state input '" + s.input + "' is declared twice (first at /logical/state/" +
                               std::to_string(it->second) + ")");
      ok = false;
    }
    if (auto [it, fresh] = outputAt.emplace(s.output, k); !fresh) {
      r.add(at + "/output", "state successor '" + s.output + "' is declared twice (first at /logical/state/" +
                                std::to_string(it->second) + ")");
      ok = false;
    }
    if (ok && g.values[in].type != g.values[out].type)
      r.add(at, "state input '" + s.input + "' is " + typeString(g.values[in].type) + " but its successor '" +
                    s.output + "' is " + typeString(g.values[out].type) +
                    " (a successor has its input's type)");
  }
}

}  // namespace paraproof::validation
