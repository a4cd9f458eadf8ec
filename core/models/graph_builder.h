// Appends ops to a Graph, inferring output types with the operator registry so that a generated
// graph is shape-correct by construction (a wrong shape throws here, naming the op).
#pragma once

#include <string>
#include <vector>

#include "core/ir/ir.h"

namespace paraproof::models {

struct OpSpec {
  std::string id;    // op id (unique in the graph)
  std::string kind;  // registry name
  std::vector<ValueId> inputs;
  Json attrs = Json::object();
  std::vector<std::string> outputs;  // value names, one per op output
  std::string scope;
  std::string origin;
};

class GraphBuilder {
 public:
  explicit GraphBuilder(Graph& g) : g_(g) {}

  ValueId input(const std::string& name, const TensorType& type);
  // Emits the op and returns its output values. Throws std::logic_error when the kind is unknown,
  // the arity is wrong or type inference fails: those are generator bugs, never user errors.
  std::vector<ValueId> op(const OpSpec& spec);
  void output(ValueId v) { g_.outputs.push_back(v); }

  const TensorType& type(ValueId v) const { return g_.values[v].type; }
  const std::string& name(ValueId v) const { return g_.values[v].name; }
  Graph& graph() { return g_; }
  const Graph& graph() const { return g_; }

 private:
  Graph& g_;
};

}  // namespace paraproof::models
