#include "core/ops/registry.h"

#include <unordered_map>

#include "core/ops/attr_schema.h"
#include "core/ops/families.h"

namespace paraproof::ops {

namespace {
struct Registry {
  std::vector<OpDef> defs;
  std::unordered_map<std::string, size_t> index;
  Registry() {
    registerElementwise(defs);
    registerSelection(defs);
    registerShapeOps(defs);
    registerLinalg(defs);
    registerReductions(defs);
    registerNN(defs);
    registerCommunication(defs);
    attachSchemas(defs);
    for (size_t i = 0; i < defs.size(); ++i)
      index[defs[i].name] = i;
  }
};
// Immutable after construction (thread-safe static init): no mutable global state.
const Registry& registry() {
  static const Registry r;
  return r;
}
}  // namespace

const OpDef* findOp(const std::string& name) {
  const Registry& r = registry();
  auto it = r.index.find(name);
  return it == r.index.end() ? nullptr : &r.defs[it->second];
}

std::vector<const OpDef*> allOps() {
  std::vector<const OpDef*> out;
  for (const OpDef& d : registry().defs)
    out.push_back(&d);
  return out;
}

const AttrSpec* OpDef::findAttr(const std::string& key) const {
  for (const AttrSpec& a : attrs)
    if (a.name == key) return &a;
  return nullptr;
}

namespace {
thread_local const OpDef* tReading = nullptr;
}

AttrReadScope::AttrReadScope(const OpDef& def) : saved_(tReading) {
  tReading = &def;
}
AttrReadScope::~AttrReadScope() {
  tReading = saved_;
}
void checkAttrRead(const char* key) {
  if (tReading && !tReading->findAttr(key))
    throw std::logic_error("internal: op " + tReading->name + " reads attribute '" + key +
                           "', which its schema (core/ops/op_schema.cpp) does not declare");
}

std::vector<TensorType> inferTypes(const OpDef& def, const std::vector<TensorType>& in, const Json& attrs) {
  AttrReadScope scope(def);
  try {
    return def.infer(in, attrs);
  } catch (const AttrError& e) {
    throw AttrError(e.key, def.name + ": " + e.what());
  } catch (const ShapeError& e) {
    throw ShapeError(def.name + ": " + e.what());
  } catch (const Json::exception& e) {
    throw ShapeError(def.name + ": bad attributes: " + e.what());
  }
}

int64_t flatIndex(const Shape& shape, const std::vector<int64_t>& index) {
  int64_t f = 0;
  for (size_t i = 0; i < shape.size(); ++i)
    f = f * shape[i] + index[i];
  return f;
}

std::vector<int64_t> unflatIndex(const Shape& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    idx[i] = flat % shape[i];
    flat /= shape[i];
  }
  return idx;
}

}  // namespace paraproof::ops
