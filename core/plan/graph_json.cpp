#include "core/plan/graph_json.h"

#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "core/ir/limits.h"
#include "core/ops/attr_schema.h"
#include "core/ops/registry.h"
#include "core/plan/json_reader.h"

namespace paraproof::planjson {

namespace {

std::optional<std::string> declaredName(const Json& entry) {
  if (entry.is_string()) return entry.get<std::string>();
  if (entry.is_object()) {
    auto it = entry.find("name");
    if (it != entry.end() && it->is_string()) return it->get<std::string>();
  }
  return std::nullopt;
}

std::string arityText(const ops::OpDef& def) {
  auto n = [](int k) { return std::to_string(k) + (k == 1 ? " input" : " inputs"); };
  if (def.maxInputs < 0) return "at least " + n(def.minInputs);
  if (def.minInputs == def.maxInputs) return n(def.minInputs);
  return std::to_string(def.minInputs) + " to " + n(def.maxInputs);
}

// Counts JSON values up to `cap` (stops early: attrs are bounded before anything walks them).
int64_t valueCount(const Json& j, int64_t cap) {
  int64_t n = 1;
  if (j.is_structured())
    for (const Json& c : j) {
      if (n > cap) break;
      n += valueCount(c, cap - n);
    }
  return n;
}

void checkCount(size_t n, int64_t limit, const std::string& source, const std::string& ptr,
                const std::string& what) {
  if (static_cast<int64_t>(n) > limit)
    fail(source, ptr,
         what + " has " + std::to_string(n) + " entries, above the limit of " + std::to_string(limit));
}

// " (did you mean 'relu'?)" for an op kind that is a near miss of a registered one.
std::string opSuggestion(const std::string& kind) {
  std::vector<std::string> names;
  for (const ops::OpDef* d : ops::allOps())
    names.push_back(d->name);
  std::string near = ops::closestName(kind, names);
  return near.empty() ? " (`paraproof ops` lists the op kinds)"
                      : " (did you mean '" + near + "'? `paraproof ops` lists the op kinds)";
}

struct DeclaredOutput {
  std::string name;
  std::optional<Shape> shape;
  std::optional<DType> dtype;
};

class GraphReader {
 public:
  GraphReader(const Json& j, const std::string& ptr, const std::string& source, Graph& g)
      : source_(source), ptr_(ptr), g_(g) {
    if (!j.is_object()) fail(source_, ptr_, std::string("graph must be an object, got ") + jsonTypeName(j));
  }

  void read(const Json& j) {
    const Json& inputs = field(j, "inputs");
    checkCount(inputs.size(), limits::kMaxGraphOps, source_, ptr("inputs"), "graph inputs");
    for (size_t k = 0; k < inputs.size(); ++k)
      readInput(inputs[k], child(ptr("inputs"), k));
    const Json& opsJson = field(j, "ops");
    ops_ = &opsJson;
    checkCount(opsJson.size(), limits::kMaxGraphOps, source_, ptr("ops"), "graph ops");
    g_.ops.reserve(opsJson.size());
    g_.values.reserve(inputs.size() + opsJson.size());
    for (size_t i = 0; i < opsJson.size(); ++i)
      readOp(i);
    const Json& outputs = field(j, "outputs");
    checkCount(outputs.size(), limits::kMaxGraphOps, source_, ptr("outputs"), "graph outputs");
    for (size_t k = 0; k < outputs.size(); ++k) {
      std::string at = child(ptr("outputs"), k);
      std::string name = readString(outputs[k], source_, at, "graph output");
      ValueId v = g_.findValue(name);
      if (v == kNone) fail(source_, at, "graph output '" + name + "' is not defined by any input or op");
      g_.outputs.push_back(v);
    }
  }

 private:
  std::string ptr(std::string_view key) const { return child(ptr_, key); }

  const Json& field(const Json& j, const char* key) {
    auto it = j.find(key);
    if (it == j.end()) fail(source_, ptr_, std::string("missing field '") + key + "'");
    if (!it->is_array())
      fail(
          source_, ptr(key),
          std::string("field '") + key + "' must be a list, got " + jsonTypeName(*it) + " " + shortJson(*it));
    return *it;
  }

  // Where value `v` was defined, as a JSON pointer.
  std::string definitionSite(ValueId v) const {
    const Value& val = g_.values[v];
    if (val.producer == kNone) return child(ptr("inputs"), static_cast<size_t>(v));  // inputs come first
    return child(child(child(ptr("ops"), static_cast<size_t>(val.producer)), "outputs"),
                 static_cast<size_t>(val.producerOutput));
  }

  void checkFresh(const std::string& name, const std::string& at, const std::string& who) {
    if (name.empty()) fail(source_, at, who + "tensor name must not be empty");
    ValueId prev = g_.findValue(name);
    if (prev != kNone)
      fail(source_, at,
           who + "tensor '" + name + "' is defined twice (redefinition; first at " + definitionSite(prev) +
               ")");
  }

  void readInput(const Json& decl, const std::string& at) {
    ObjectReader r(decl, at, source_, "graph input", {"name", "shape", "dtype"});
    std::string name = r.string("name");
    checkFresh(name, r.ptr("name"), "");
    TensorType t{readShape(r.required("shape"), source_, r.ptr("shape")),
                 readDType(r.required("dtype"), source_, r.ptr("dtype"))};
    g_.addInput(name, std::move(t));
  }

  // First op (by index) that declares each tensor name as an output; built only when a name does not
  // resolve, so valid plans never pay for it.
  const std::unordered_map<std::string, size_t>& laterDefinitions() {
    if (!laterDefs_) {
      laterDefs_.emplace();
      for (size_t k = 0; k < ops_->size(); ++k) {
        const Json& op = (*ops_)[k];
        if (!op.is_object() || !op.contains("outputs") || !op["outputs"].is_array()) continue;
        for (const Json& e : op["outputs"])
          if (auto n = declaredName(e)) laterDefs_->emplace(*n, k);
      }
    }
    return *laterDefs_;
  }

  std::vector<std::string> inputNames(size_t k) const {
    std::vector<std::string> names;
    const Json& op = (*ops_)[k];
    if (!op.is_object() || !op.contains("inputs") || !op["inputs"].is_array()) return names;
    for (const Json& e : op["inputs"])
      if (e.is_string()) names.push_back(e.get<std::string>());
    return names;
  }

  // Tensor names along a dependency path from op `from` to op `to` (both listed at or after `from`), or
  // empty.
  std::vector<std::string> dependencyPath(size_t from, size_t to) {
    const auto& defs = laterDefinitions();
    // Backward search from `to` over producers; parent[k] = (consumer op, tensor it reads from k).
    std::unordered_map<size_t, std::pair<size_t, std::string>> parent;
    std::vector<size_t> stack{to};
    std::unordered_set<size_t> seen{to};
    while (!stack.empty()) {
      size_t q = stack.back();
      stack.pop_back();
      if (q == from) break;
      for (const std::string& n : inputNames(q)) {
        auto it = defs.find(n);
        if (it == defs.end() || it->second < from || !seen.insert(it->second).second) continue;
        parent[it->second] = {q, n};
        stack.push_back(it->second);
      }
    }
    if (!seen.count(from)) return {};
    std::vector<std::string> path;
    for (size_t k = from; k != to; k = parent[k].first)
      path.push_back(parent[k].second);
    return path;
  }

  ValueId resolve(const std::string& name, size_t opIndex, const std::string& at, const std::string& who) {
    ValueId v = g_.findValue(name);
    if (v != kNone) return v;
    const auto& defs = laterDefinitions();
    auto it = defs.find(name);
    if (it == defs.end() || it->second < opIndex)
      fail(source_, at, who + "undefined tensor '" + name + "' (no graph input or earlier op defines it)");
    size_t definer = it->second;
    std::string definerPtr = child(ptr("ops"), definer);
    std::vector<std::string> path = dependencyPath(opIndex, definer);
    if (definer == opIndex || !path.empty()) {
      // path: tensors from this op to the definer; closing the loop through `name` gives the cycle.
      std::string cycle;
      for (const std::string& t : path)
        cycle += t + " -> ";
      cycle += name + " -> " + (path.empty() ? name : path.front());
      fail(source_, at,
           who + "cycle: " + cycle + " (tensor '" + name + "' is defined at " + definerPtr + ")");
    }
    fail(source_, at,
         who + "tensor '" + name + "' is used before its definition at " + definerPtr +
             " (ops must be listed in definition order)");
  }

  DeclaredOutput readOutputDecl(const Json& e, const std::string& at, const std::string& who) {
    DeclaredOutput d;
    if (e.is_string()) {
      d.name = e.get<std::string>();
    } else {
      ObjectReader r(e, at, source_, "op output", {"name", "shape", "dtype"});
      d.name = r.string("name");
      if (const Json* s = r.find("shape")) d.shape = readShape(*s, source_, r.ptr("shape"));
      if (const Json* t = r.find("dtype")) d.dtype = readDType(*t, source_, r.ptr("dtype"));
    }
    checkFresh(d.name, at, who);
    return d;
  }

  void readOp(size_t i) {
    std::string at = child(ptr("ops"), i);
    ObjectReader r((*ops_)[i], at, source_, "op",
                   {"id", "op", "inputs", "outputs", "attrs", "scope", "origin"});
    Op op;
    op.id = r.string("id");
    if (op.id.empty()) r.fail(r.ptr("id"), "op id must not be empty");
    if (OpId prev = g_.findOp(op.id); prev != kNone)
      r.fail(r.ptr("id"), "duplicate op id '" + op.id + "' (first at " + child(ptr("ops"), prev) + ")");
    const std::string who = "op '" + op.id + "': ";
    op.kind = r.string("op");
    const ops::OpDef* def = ops::findOp(op.kind);
    if (!def) r.fail(r.ptr("op"), who + "unknown op kind '" + op.kind + "'" + opSuggestion(op.kind));
    if (const Json* a = r.find("attrs")) {
      if (!a->is_object()) r.fail(r.ptr("attrs"), who + "attrs must be an object, got " + jsonTypeName(*a));
      if (valueCount(*a, limits::kMaxAttrValues) > limits::kMaxAttrValues)
        r.fail(r.ptr("attrs"), who + "attrs hold more than " + std::to_string(limits::kMaxAttrValues) +
                                   " JSON values (the limit)");
      op.attrs = *a;
    }
    // The schema first: a misspelt or ill-typed attribute is named at its pointer, before any shape rule.
    if (auto problems = ops::checkAttrs(*def, op.attrs); !problems.empty()) {
      const ops::AttrProblem& p = problems.front();
      r.fail(p.key.empty() ? r.ptr("attrs") : child(r.ptr("attrs"), p.key), who + p.message);
    }
    op.scope = r.stringOr("scope", "");
    op.origin = r.stringOr("origin", "");

    const Json& ins = r.array("inputs");
    checkCount(ins.size(), limits::kMaxOpArity, source_, r.ptr("inputs"), who + "inputs");
    std::vector<TensorType> inTypes;
    inTypes.reserve(ins.size());
    for (size_t k = 0; k < ins.size(); ++k) {
      std::string inPtr = child(r.ptr("inputs"), k);
      ValueId v = resolve(readString(ins[k], source_, inPtr, who + "input"), i, inPtr, who);
      op.inputs.push_back(v);
      inTypes.push_back(g_.values[v].type);
    }
    int n = static_cast<int>(ins.size());
    if (n < def->minInputs || (def->maxInputs >= 0 && n > def->maxInputs))
      r.fail(r.ptr("inputs"),
             who + op.kind + " takes " + arityText(*def) + ", got " + std::to_string(n) + " (wrong arity)");

    const Json& outs = r.array("outputs");
    checkCount(outs.size(), limits::kMaxOpArity, source_, r.ptr("outputs"), who + "outputs");
    std::vector<DeclaredOutput> decls;
    std::unordered_set<std::string> ownNames;
    for (size_t k = 0; k < outs.size(); ++k) {
      decls.push_back(readOutputDecl(outs[k], child(r.ptr("outputs"), k), who));
      if (!ownNames.insert(decls.back().name).second)
        r.fail(child(r.ptr("outputs"), k),
               who + "tensor '" + decls.back().name + "' is defined twice (redefinition)");
    }

    if (!def->infer) r.fail(at, who + "op kind '" + op.kind + "' has no shape rule");
    std::vector<TensorType> outTypes;
    try {
      outTypes = ops::inferTypes(*def, inTypes, op.attrs);
    } catch (const ops::AttrError& e) {
      r.fail(op.attrs.contains(e.key) ? child(r.ptr("attrs"), e.key) : r.ptr("attrs"),
             who + "attribute error: " + e.what());
    } catch (const std::exception& e) {
      r.fail(at, who + "shape error: " + e.what());
    }
    if (outTypes.size() != decls.size())
      r.fail(r.ptr("outputs"), who + op.kind + " produces " + std::to_string(outTypes.size()) +
                                   " output(s) but " + std::to_string(decls.size()) + " are declared");
    std::vector<std::pair<std::string, TensorType>> named;
    named.reserve(decls.size());
    for (size_t k = 0; k < decls.size(); ++k) {
      const DeclaredOutput& d = decls[k];
      // Shape rules build output shapes from attributes: they obey the same limits as declared shapes.
      if (std::string why = limits::shapeLimitError(outTypes[k].shape); !why.empty())
        r.fail(child(r.ptr("outputs"), k), who + "output '" + d.name + "': " + why);
      if (d.shape && *d.shape != outTypes[k].shape)
        r.fail(child(r.ptr("outputs"), k), who + "shape mismatch: output '" + d.name + "' is declared " +
                                               shapeString(*d.shape) + " but " + op.kind + " infers " +
                                               shapeString(outTypes[k].shape));
      if (d.dtype && *d.dtype != outTypes[k].dtype)
        r.fail(child(r.ptr("outputs"), k), who + "dtype mismatch: output '" + d.name + "' is declared " +
                                               dtypeName(*d.dtype) + " but " + op.kind + " infers " +
                                               dtypeName(outTypes[k].dtype));
      named.emplace_back(d.name, outTypes[k]);
    }
    g_.addOp(std::move(op), named);
  }

  const std::string& source_;
  std::string ptr_;
  Graph& g_;
  const Json* ops_ = nullptr;
  std::optional<std::unordered_map<std::string, size_t>> laterDefs_;
};

}  // namespace

void readGraph(const Json& j, const std::string& ptr, const std::string& source, Graph& g) {
  GraphReader(j, ptr, source, g).read(j);
}

Json tensorDeclToJson(const Value& v) {
  return Json{{"name", v.name}, {"shape", v.type.shape}, {"dtype", dtypeName(v.type.dtype)}};
}

void writeGraph(const Graph& g, Json& j) {
  Json inputs = Json::array();
  for (ValueId v : g.inputs)
    inputs.push_back(tensorDeclToJson(g.values[v]));
  Json ops = Json::array();
  for (const Op& op : g.ops) {
    Json o{{"id", op.id}, {"op", op.kind}};
    Json ins = Json::array(), outs = Json::array();
    for (ValueId v : op.inputs)
      ins.push_back(g.values[v].name);
    for (ValueId v : op.outputs)
      outs.push_back(g.values[v].name);
    o["inputs"] = std::move(ins);
    o["outputs"] = std::move(outs);
    if (!op.attrs.empty()) o["attrs"] = op.attrs;
    if (!op.scope.empty()) o["scope"] = op.scope;
    if (!op.origin.empty()) o["origin"] = op.origin;
    ops.push_back(std::move(o));
  }
  Json outputs = Json::array();
  for (ValueId v : g.outputs)
    outputs.push_back(g.values[v].name);
  j["inputs"] = std::move(inputs);
  j["ops"] = std::move(ops);
  j["outputs"] = std::move(outputs);
}

}  // namespace paraproof::planjson
