// Op attributes against the op schemas, for plans built in memory (the generator, mutations, shape
// reduction's rewrites): loading checks the same at the JSON pointer, so a file never gets here with one.
#include <map>

#include "core/ops/attr_schema.h"
#include "core/plan/json_reader.h"
#include "core/plan/validate_checks.h"

namespace paraproof::validation {

namespace {
// The problems of an attribute object under an op kind. Equal attribute objects are one shared object
// (core/ir/attrs.h), and its problems do not depend on the op: each (kind, object) is checked once.
using AttrsChecked = std::map<std::pair<const ops::OpDef*, const Json*>, std::vector<ops::AttrProblem>>;

void checkGraph(const Graph& g, const std::string& opsPtr, const std::string& who, Report& r,
                AttrsChecked& checked) {
  for (size_t k = 0; k < g.ops.size(); ++k) {
    const Op& op = g.ops[k];
    const ops::OpDef* def = ops::findOp(op.kind);
    if (!def) continue;  // reported by the graph checks
    auto [it, fresh] = checked.try_emplace({def, &op.attrs.json()});
    if (fresh) it->second = ops::checkAttrs(*def, op.attrs);
    if (it->second.empty()) continue;
    const std::string at = planjson::child(planjson::child(opsPtr, k), "attrs");
    for (const ops::AttrProblem& p : it->second)
      r.add(p.key.empty() ? at : planjson::child(at, p.key), who + "op '" + op.id + "': " + p.message);
  }
}
}  // namespace

void checkAttributes(const Plan& plan, Report& r) {
  AttrsChecked checked;
  checkGraph(plan.logical, "/logical/ops", "", r, checked);
  for (size_t i = 0; i < plan.devices.size(); ++i)
    checkGraph(plan.devices[i].graph, devicePtr(i) + "/ops", who(plan.devices[i]), r, checked);
}

}  // namespace paraproof::validation
