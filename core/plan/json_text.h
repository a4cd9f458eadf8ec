// JSON text for plan files: parsing with positioned errors, and a readable layout (internal).
#pragma once

#include <string>

#include "core/ir/ir.h"

namespace paraproof::planjson {

// Parses `text`; throws PlanError whose place is "SOURCE:LINE:COLUMN" on malformed JSON.
Json parseJsonText(const std::string& text, const std::string& source);

// Indented JSON where every value whose compact form is short stays on one line (one op per line).
std::string formatJson(const Json& j);
// The same layout for a value nested `indent` spaces deep, appended to `out` (no final newline): a plan is
// written one device at a time, never as one document (json_io.cpp).
void formatJsonAt(const Json& j, int indent, std::string& out);

}  // namespace paraproof::planjson
