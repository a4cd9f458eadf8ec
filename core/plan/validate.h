// Validation before any solving: SSA, arity, shapes, lineage bounds, collective matching, coverage.
#pragma once

#include <vector>

#include "core/plan/diagnostics.h"
#include "core/plan/plan.h"

namespace paraproof {

// Returns every problem found (empty = valid). `source` prefixes the places named.
std::vector<Diagnostic> validatePlan(const Plan& plan, const std::string& source = "");

}  // namespace paraproof
