// The op registry rendered for plan authors: `paraproof ops [--json]` and docs/operators.md (generated:
// scripts/gen-operators-doc.sh; tests/test_exporter.cpp fails when the committed page differs).
#pragma once

#include <string>

#include "core/ir/ir.h"

namespace paraproof::ops {

// [{name, family, summary, inputs, outputs, min_inputs, max_inputs (null: variadic), communication,
//   attrs: [{name, type, required, default?, choices?, min?, doc}]}]
Json opsToJson();
std::string opsToText();      // one block per op, for the terminal
std::string opsToMarkdown();  // the whole of docs/operators.md

}  // namespace paraproof::ops
