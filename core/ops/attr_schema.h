// Checking a plan's op attributes against the op's schema (OpDef::attrs, core/ops/op_schema.cpp): unknown
// keys (with a did-you-mean), missing required ones, wrong types and ranges. A misspelt attribute silently
// ignored would change what the plan means (`keepdims` for `keepdim`, `reduction` for `reduce`).
#pragma once

#include <string>
#include <vector>

#include "core/ops/registry.h"

namespace paraproof::ops {

struct AttrProblem {
  std::string key;  // the offending attribute; empty for the attrs object itself (a missing attribute)
  std::string message;
};

// Every problem of `attrs` (a JSON object, or null for none) for op kind `def`.
std::vector<AttrProblem> checkAttrs(const OpDef& def, const Json& attrs);

// "keepdim" for "keepdims": the closest candidate within a small edit distance, or empty.
std::string closestName(const std::string& word, const std::vector<std::string>& candidates);

const char* attrTypeName(AttrType t);         // "integer", "list of integers", ...
std::string attrTypeText(const AttrSpec& a);  // with the choices and the range

void attachSchemas(std::vector<OpDef>& defs);  // op_schema.cpp; throws std::logic_error on a gap

}  // namespace paraproof::ops
