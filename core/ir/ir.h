// SSA dataflow graphs of tensor ops: the shared representation of logical and device programs.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/ir/attrs.h"
#include "core/ir/name.h"

namespace paraproof {

using Shape = std::vector<int64_t>;
using ValueId = int32_t;
using OpId = int32_t;
inline constexpr int32_t kNone = -1;

enum class DType { F32, BF16, F16, F64, I64, I32, Bool };

const char* dtypeName(DType t);
std::optional<DType> parseDType(const std::string& s);
inline bool isInteger(DType t) {
  return t == DType::I64 || t == DType::I32;
}
int64_t numElements(const Shape& s);
std::string shapeString(const Shape& s);

struct TensorType {
  Shape shape;
  DType dtype = DType::F32;
  bool operator==(const TensorType&) const = default;
};

// An SSA value: defined exactly once, by a graph input or by one output of one op.
struct Value {
  Name name;
  TensorType type;
  OpId producer = kNone;  // kNone for graph inputs
  int producerOutput = 0;
};

struct Op {
  Name id;    // unique within the graph
  Name kind;  // registry name, e.g. "matmul", "all_reduce"
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  Attrs attrs;  // shared with the ops whose attributes are equal (core/ir/attrs.h)
  Name scope;   // name scope for display, e.g. "layers.3.attention.wq"
  Name origin;  // id of the logical op this implements (device graphs), optional
};

// A DAG of ops in topological (definition) order. Values are referenced by dense ids.
class Graph {
 public:
  std::string name;
  std::vector<Value> values;
  std::vector<Op> ops;
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;

  ValueId findValue(std::string_view name) const;  // (a name looked up is not interned)
  OpId findOp(std::string_view id) const;
  // Adds a graph input; returns its id. Names must be unique (callers validate).
  ValueId addInput(const std::string& name, TensorType type);
  // Adds an op whose output values are created with the given names and types.
  OpId addOp(Op op, const std::vector<std::pair<std::string, TensorType>>& outs);
  // Consumers of every value, computed on demand.
  std::vector<std::vector<OpId>> consumers() const;
  void reindex();  // rebuild the name indexes after direct edits of values/ops

 private:
  struct Index {
    std::unordered_map<Name, ValueId, NameHash, std::equal_to<>> values;
    std::unordered_map<Name, OpId, NameHash, std::equal_to<>> ops;
  };
  // Shared by a graph and its copies until one of them adds a value or an op: the folds and the reduction
  // copy whole plans whose names they keep, and copying every name into a new index was a good part of that.
  std::shared_ptr<Index> index_;
  Index& ownIndex();  // this graph's index, unshared (created when there is none)
};

// Makes the graph's equal attribute objects one object, shared with the equal ones of the graphs interned in
// `pool` before: a plan's builder and loader intern every graph (docs/scale.md, "Memory per op").
void internAttrs(Graph& g, AttrsPool& pool);

}  // namespace paraproof
