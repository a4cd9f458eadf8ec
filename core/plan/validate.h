// Validation before any solving: SSA, arity, shapes, lineage bounds, collective matching, coverage.
#pragma once

#include <vector>

#include "core/plan/diagnostics.h"
#include "core/plan/plan.h"

namespace paraproof {

// Returns every problem found (empty = valid). `source` prefixes the places named.
std::vector<Diagnostic> validatePlan(const Plan& plan, const std::string& source = "");

// The checks of validatePlan whose outcome a shape reduction can change, for a reduction of a valid plan.
// A reduction changes extents, index-valued attributes and box ends only; it keeps every op, value and
// lineage entry, each communication op's instance, peer and group, and maps box ends injectively. So the
// value-part groups (keyed by tensor, box and parts) and the communication order (a simulation over ops,
// peers, instances and groups) are the valid plan's, and are not checked again (docs/soundness.md,
// "Reduction keeps the cut").
std::vector<Diagnostic> validateReducedPlan(const Plan& reduced, const std::string& source = "");

}  // namespace paraproof
