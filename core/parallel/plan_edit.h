// Small surgical edits of generated device graphs, used by bug injection. Lineage follows value names.
#pragma once

#include <string>
#include <vector>

#include "core/plan/plan.h"

namespace paraproof::parallel {

struct NewOp {
  std::string id, kind;
  std::vector<std::string> inputs;  // value names
  Json attrs = Json::object();
  std::vector<std::string> outputs;  // value names (types are inferred)
  std::string scope, origin;
};

// `op` as a NewOp of `dev` (its values by name), to edit and put back with replaceOp.
NewOp asNewOp(const Device& dev, const Op& op);

// Rebuilds the device graph with op `opId` replaced by `replacement` (in order). Throws std::logic_error
// when a name is unknown or shapes do not infer.
void replaceOp(Device& dev, const std::string& opId, const std::vector<NewOp>& replacement);

Op& opById(Device& dev, const std::string& opId);                 // throws std::invalid_argument when absent
ValueId valueByName(const Device& dev, const std::string& name);  // throws std::invalid_argument
Device& deviceByRank(Plan& plan, int rank);

}  // namespace paraproof::parallel
