// One SSA graph (logical or device) to and from plan JSON, with SSA, arity and shape checks (internal).
#pragma once

#include <string>

#include "core/ir/ir.h"

namespace paraproof::planjson {

// Reads the "inputs", "ops" and "outputs" fields of the graph object `j` at pointer `ptr` into `g`, inferring
// every op's output types with the registry. Throws ReadFailure at the first problem.
void readGraph(const Json& j, const std::string& ptr, const std::string& source, Graph& g);

// Sets the "inputs", "ops" and "outputs" fields of `j`.
void writeGraph(const Graph& g, Json& j);
Json tensorDeclToJson(const Value& v);

}  // namespace paraproof::planjson
