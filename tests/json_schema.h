// A minimal JSON Schema check for the subset docs/report.schema.json uses: type (one or a list), enum,
// required, properties, items, minimum, minItems, maxItems and local "$ref": "#/$defs/NAME". Returns the
// first violation.
#pragma once

#include <string>

#include "core/ir/ir.h"

namespace schema_check {

using paraproof::Json;

inline bool hasType(const Json& v, const std::string& t) {
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "string") return v.is_string();
  if (t == "boolean") return v.is_boolean();
  if (t == "null") return v.is_null();
  if (t == "integer") return v.is_number_integer();
  if (t == "number") return v.is_number();
  return false;
}

// Empty when `v` satisfies `s`; else "POINTER: what".
inline std::string check(const Json& v, const Json& s, const Json& root, const std::string& at = "") {
  if (s.contains("$ref")) {
    const std::string ref = s["$ref"].get<std::string>();
    const std::string prefix = "#/$defs/";
    if (ref.rfind(prefix, 0) != 0) return at + ": unsupported $ref " + ref;
    return check(v, root["$defs"][ref.substr(prefix.size())], root, at);
  }
  if (s.contains("type")) {
    bool ok = false;
    if (s["type"].is_array()) {
      for (const Json& t : s["type"])
        ok = ok || hasType(v, t.get<std::string>());
    } else {
      ok = hasType(v, s["type"].get<std::string>());
    }
    if (!ok) return at + ": expected type " + s["type"].dump() + ", got " + v.dump().substr(0, 80);
  }
  if (s.contains("enum")) {
    bool ok = false;
    for (const Json& e : s["enum"])
      ok = ok || e == v;
    if (!ok) return at + ": " + v.dump() + " is not one of " + s["enum"].dump();
  }
  if (s.contains("minimum") && v.is_number() && v.get<double>() < s["minimum"].get<double>())
    return at + ": " + v.dump() + " is below the minimum " + s["minimum"].dump();
  if (v.is_object()) {
    if (s.contains("required"))
      for (const Json& k : s["required"])
        if (!v.contains(k.get<std::string>())) return at + ": missing required field " + k.dump();
    if (s.contains("properties"))
      for (const auto& [k, sub] : s["properties"].items())
        if (v.contains(k))
          if (std::string e = check(v[k], sub, root, at + "/" + k); !e.empty()) return e;
  }
  if (v.is_array() && s.contains("minItems") && v.size() < s["minItems"].get<size_t>())
    return at + ": fewer than " + s["minItems"].dump() + " items";
  if (v.is_array() && s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>())
    return at + ": more than " + s["maxItems"].dump() + " items";
  if (v.is_array() && s.contains("items"))
    for (size_t i = 0; i < v.size(); ++i)
      if (std::string e = check(v[i], s["items"], root, at + "/" + std::to_string(i)); !e.empty()) return e;
  return "";
}

}  // namespace schema_check
