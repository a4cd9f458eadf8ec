#include "core/ir/ir.h"

#include <algorithm>
#include <limits>
#include <sstream>

namespace paraproof {

const char* dtypeName(DType t) {
  switch (t) {
    case DType::F32:
      return "f32";
    case DType::BF16:
      return "bf16";
    case DType::F16:
      return "f16";
    case DType::F64:
      return "f64";
    case DType::I64:
      return "i64";
    case DType::I32:
      return "i32";
    case DType::Bool:
      return "bool";
  }
  return "?";
}

std::optional<DType> parseDType(const std::string& s) {
  for (DType t : {DType::F32, DType::BF16, DType::F16, DType::F64, DType::I64, DType::I32, DType::Bool})
    if (s == dtypeName(t)) return t;
  return std::nullopt;
}

int64_t numElements(const Shape& s) {
  // Saturates instead of overflowing: loaded shapes are bounded (core/ir/limits.h), but a shape rule may
  // form a product before its result is checked.
  if (std::find(s.begin(), s.end(), 0) != s.end()) return 0;
  int64_t n = 1;
  for (int64_t d : s)
    if (__builtin_mul_overflow(n, d, &n)) return std::numeric_limits<int64_t>::max();
  return n;
}

std::string shapeString(const Shape& s) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < s.size(); ++i)
    os << (i ? "," : "") << s[i];
  os << ']';
  return os.str();
}

Graph::Index& Graph::ownIndex() {
  // A write through a shared index would show in the copies: they keep the names they were copied with.
  if (!index_)
    index_ = std::make_shared<Index>();
  else if (index_.use_count() > 1)
    index_ = std::make_shared<Index>(*index_);
  return *index_;
}

ValueId Graph::findValue(std::string_view n) const {
  if (!index_) return kNone;
  auto it = index_->values.find(n);
  return it == index_->values.end() ? kNone : it->second;
}

OpId Graph::findOp(std::string_view id) const {
  if (!index_) return kNone;
  auto it = index_->ops.find(id);
  return it == index_->ops.end() ? kNone : it->second;
}

ValueId Graph::addInput(const std::string& n, TensorType type) {
  ValueId id = static_cast<ValueId>(values.size());
  values.push_back(Value{n, std::move(type), kNone, 0});
  ownIndex().values[values.back().name] = id;
  inputs.push_back(id);
  return id;
}

OpId Graph::addOp(Op op, const std::vector<std::pair<std::string, TensorType>>& outs) {
  OpId id = static_cast<OpId>(ops.size());
  Index& index = ownIndex();
  op.outputs.clear();
  for (size_t i = 0; i < outs.size(); ++i) {
    ValueId v = static_cast<ValueId>(values.size());
    values.push_back(Value{outs[i].first, outs[i].second, id, static_cast<int>(i)});
    index.values[values.back().name] = v;
    op.outputs.push_back(v);
  }
  index.ops[op.id] = id;
  ops.push_back(std::move(op));
  return id;
}

std::vector<std::vector<OpId>> Graph::consumers() const {
  std::vector<std::vector<OpId>> c(values.size());
  for (OpId o = 0; o < static_cast<OpId>(ops.size()); ++o)
    for (ValueId v : ops[o].inputs)
      c[v].push_back(o);
  return c;
}

void Graph::reindex() {
  auto index = std::make_shared<Index>();
  index->values.reserve(values.size());
  index->ops.reserve(ops.size());
  for (ValueId v = 0; v < static_cast<ValueId>(values.size()); ++v)
    index->values[values[v].name] = v;
  for (OpId o = 0; o < static_cast<OpId>(ops.size()); ++o)
    index->ops[ops[o].id] = o;
  index_ = std::move(index);
}

void internAttrs(Graph& g, AttrsPool& pool) {
  for (Op& op : g.ops)
    pool.intern(op.attrs);
}

}  // namespace paraproof
