#include "core/plan/json_reader.h"

#include <algorithm>
#include <limits>

#include "core/ir/limits.h"

namespace paraproof::planjson {

std::string escapeToken(std::string_view token) {
  std::string s;
  s.reserve(token.size());
  for (char c : token) {
    if (c == '~')
      s += "~0";
    else if (c == '/')
      s += "~1";
    else
      s += c;
  }
  return s;
}

std::string place(const std::string& source, const std::string& ptr) {
  if (source.empty()) return ptr.empty() ? "/" : ptr;
  return ptr.empty() ? source : source + ":" + ptr;
}

const char* jsonTypeName(const Json& j) {
  if (j.is_number_integer()) return "integer";
  if (j.is_number()) return "number";
  return j.type_name();
}

std::string shortJson(const Json& j) {
  std::string s = j.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

void fail(const std::string& source, const std::string& ptr, const std::string& message) {
  throw ReadFailure{Diagnostic{place(source, ptr), message}};
}

ObjectReader::ObjectReader(const Json& j, std::string ptr, const std::string& source, std::string_view what,
                           std::initializer_list<std::string_view> allowed)
    : j_(j), ptr_(std::move(ptr)), source_(source) {
  if (!j.is_object())
    fail(ptr_, std::string(what) + " must be an object, got " + jsonTypeName(j) + " " + shortJson(j));
  // Unknown keys are errors: a misspelt "attr" silently ignored would change what the plan means.
  for (const auto& [key, value] : j.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string list;
      for (std::string_view a : allowed)
        list += (list.empty() ? "" : ", ") + std::string(a);
      fail(child(ptr_, key),
           "unknown field '" + key + "' in " + std::string(what) + " (expected " + list + ")");
    }
  }
}

void ObjectReader::fail(const std::string& ptr, const std::string& message) const {
  planjson::fail(source_, ptr, message);
}

const Json* ObjectReader::find(const char* key) const {
  auto it = j_.find(key);
  return it == j_.end() ? nullptr : &*it;
}

const Json& ObjectReader::required(const char* key) const {
  const Json* v = find(key);
  if (!v) fail(ptr_, std::string("missing field '") + key + "'");
  return *v;
}

std::string ObjectReader::string(const char* key) const {
  return readString(required(key), source_, ptr(key), std::string("field '") + key + "'");
}

std::string ObjectReader::stringOr(const char* key, const std::string& fallback) const {
  const Json* v = find(key);
  return v ? readString(*v, source_, ptr(key), std::string("field '") + key + "'") : fallback;
}

int64_t ObjectReader::integer(const char* key) const {
  return readInteger(required(key), source_, ptr(key), std::string("field '") + key + "'");
}

int64_t ObjectReader::integerOr(const char* key, int64_t fallback) const {
  const Json* v = find(key);
  return v ? readInteger(*v, source_, ptr(key), std::string("field '") + key + "'") : fallback;
}

const Json& ObjectReader::array(const char* key) const {
  const Json& v = required(key);
  if (!v.is_array())
    fail(ptr(key),
         std::string("field '") + key + "' must be a list, got " + jsonTypeName(v) + " " + shortJson(v));
  return v;
}

int64_t readInteger(const Json& v, const std::string& source, const std::string& ptr, std::string_view what) {
  if (v.is_number_unsigned() &&
      v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    fail(source, ptr, std::string(what) + " is too large: " + v.dump());
  if (!v.is_number_integer())
    fail(source, ptr, std::string(what) + " must be an integer, got " + jsonTypeName(v) + " " + shortJson(v));
  return v.get<int64_t>();
}

std::string readString(const Json& v, const std::string& source, const std::string& ptr,
                       std::string_view what) {
  if (!v.is_string())
    fail(source, ptr, std::string(what) + " must be a string, got " + jsonTypeName(v) + " " + shortJson(v));
  return v.get<std::string>();
}

Shape readShape(const Json& v, const std::string& source, const std::string& ptr) {
  if (!v.is_array())
    fail(source, ptr,
         std::string("shape must be a list of non-negative integers, got ") + jsonTypeName(v) + " " +
             shortJson(v));
  if (static_cast<int64_t>(v.size()) > limits::kMaxRank)
    fail(source, ptr,
         "shape has rank " + std::to_string(v.size()) + ", above the limit of " +
             std::to_string(limits::kMaxRank));
  Shape s;
  s.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t d = readInteger(v[i], source, child(ptr, i), "shape entry");
    if (d < 0) fail(source, child(ptr, i), "shape entry must be non-negative, got " + std::to_string(d));
    s.push_back(d);
  }
  if (std::string why = limits::shapeLimitError(s); !why.empty()) fail(source, ptr, why);
  return s;
}

DType readDType(const Json& v, const std::string& source, const std::string& ptr) {
  std::string name = readString(v, source, ptr, "dtype");
  auto t = parseDType(name);
  if (!t) fail(source, ptr, "unknown dtype '" + name + "' (expected f32, bf16, f16, f64, i64, i32 or bool)");
  return *t;
}

}  // namespace paraproof::planjson
