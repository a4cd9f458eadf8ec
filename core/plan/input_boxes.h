// A device input whose declared shape is not the extent of its lineage box, caught before the device graph
// is read: otherwise the first shape rule that meets it (a matmul, a sub) reports the symptom, not the cause
// (internal to the plan reader).
#pragma once

#include <string>

#include "core/ir/ir.h"

namespace paraproof::planjson {

// `device` is the device's JSON, `at` its pointer; malformed parts are skipped (reported by the reader).
// Throws ReadFailure at /devices/i/inputs/k/shape.
void checkInputBoxes(const Json& device, const std::string& at, const std::string& source,
                     const Graph& logical);

}  // namespace paraproof::planjson
