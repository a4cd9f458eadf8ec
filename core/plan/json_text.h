// JSON text for plan files: parsing with positioned errors, and a readable layout (internal).
#pragma once

#include <string>

#include "core/ir/ir.h"

namespace paraproof::planjson {

// Parses `text`; throws PlanError whose place is "SOURCE:LINE:COLUMN" on malformed JSON.
Json parseJsonText(const std::string& text, const std::string& source);

// Indented JSON where every value whose compact form is short stays on one line (one op per line).
std::string formatJson(const Json& j);

}  // namespace paraproof::planjson
