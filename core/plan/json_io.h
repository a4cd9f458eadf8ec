// Plan format v1 (docs/plan-format.md): loading, writing, lossless round trip.
#pragma once

#include <string>

#include "core/plan/diagnostics.h"
#include "core/plan/plan.h"

namespace paraproof {

// Parses and builds a plan; throws PlanError naming the file and JSON pointer on malformed input.
// Structural checks that need the whole plan are done by validatePlan().
Plan planFromJson(const Json& j, const std::string& source = "<json>");
Plan loadPlan(const std::string& path);
Json planToJson(const Plan& plan);
// Writes atomically (temporary file + rename); a PATH ending in .gz is written gzip-compressed, and loadPlan
// reads a gzip-compressed file whatever its name (docs/plan-format.md, "Compressed plans").
void savePlan(const Plan& plan, const std::string& path);

}  // namespace paraproof
