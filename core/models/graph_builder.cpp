#include "core/models/graph_builder.h"

#include <stdexcept>

#include "core/ops/registry.h"

namespace paraproof::models {

ValueId GraphBuilder::input(const std::string& name, const TensorType& type) {
  if (g_.findValue(name) != kNone) throw std::logic_error("duplicate value name '" + name + "'");
  return g_.addInput(name, type);
}

std::vector<ValueId> GraphBuilder::op(const OpSpec& spec) {
  const ops::OpDef* def = ops::findOp(spec.kind);
  if (!def) throw std::logic_error("op '" + spec.id + "': unknown op kind '" + spec.kind + "'");
  const int n = static_cast<int>(spec.inputs.size());
  if (n < def->minInputs || (def->maxInputs >= 0 && n > def->maxInputs))
    throw std::logic_error("op '" + spec.id + "': " + spec.kind + " takes " + std::to_string(def->minInputs) +
                           ".." + std::to_string(def->maxInputs) + " inputs, got " + std::to_string(n));
  std::vector<TensorType> in;
  in.reserve(spec.inputs.size());
  for (ValueId v : spec.inputs)
    in.push_back(g_.values.at(v).type);
  std::vector<TensorType> out;
  try {
    out = ops::inferTypes(*def, in, spec.attrs);
  } catch (const std::exception& e) {
    std::string shapes;
    for (const TensorType& t : in)
      shapes += (shapes.empty() ? "" : ", ") + shapeString(t.shape);
    throw std::logic_error("op '" + spec.id + "': " + e.what() + " (input shapes " + shapes + ")");
  }
  if (out.size() != spec.outputs.size())
    throw std::logic_error("op '" + spec.id + "': " + spec.kind + " has " + std::to_string(out.size()) +
                           " outputs, " + std::to_string(spec.outputs.size()) + " names given");
  if (g_.findOp(spec.id) != kNone) throw std::logic_error("duplicate op id '" + spec.id + "'");
  std::vector<std::pair<std::string, TensorType>> outs;
  for (size_t i = 0; i < out.size(); ++i) {
    if (g_.findValue(spec.outputs[i]) != kNone)
      throw std::logic_error("op '" + spec.id + "': duplicate value name '" + spec.outputs[i] + "'");
    outs.emplace_back(spec.outputs[i], out[i]);
  }
  Op o;
  o.id = spec.id;
  o.kind = spec.kind;
  o.inputs = spec.inputs;
  o.attrs = spec.attrs;
  o.scope = spec.scope;
  o.origin = spec.origin;
  OpId id = g_.addOp(std::move(o), outs);
  return g_.ops[id].outputs;
}

}  // namespace paraproof::models
