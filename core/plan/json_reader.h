// Typed, strict access to plan JSON: every error names the source file and the JSON pointer (internal).
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

#include "core/ir/ir.h"
#include "core/plan/diagnostics.h"

namespace paraproof::planjson {

// Aborts reading the current section of a plan; the caller records the diagnostic and moves on.
struct ReadFailure {
  Diagnostic diag;
};

// RFC 6901 escaping of one reference token ("~" -> "~0", "/" -> "~1").
std::string escapeToken(std::string_view token);
inline std::string child(const std::string& ptr, std::string_view key) {
  return ptr + "/" + escapeToken(key);
}
inline std::string child(const std::string& ptr, size_t index) {
  return ptr + "/" + std::to_string(index);
}
// "FILE:POINTER", or the pointer alone when there is no file.
std::string place(const std::string& source, const std::string& ptr);

const char* jsonTypeName(const Json& j);
std::string shortJson(const Json& j);  // compact, truncated for messages

// A JSON object whose keys are checked against an allowed set; accessors throw ReadFailure.
class ObjectReader {
 public:
  ObjectReader(const Json& j, std::string ptr, const std::string& source, std::string_view what,
               std::initializer_list<std::string_view> allowed);

  const std::string& ptr() const { return ptr_; }
  std::string ptr(std::string_view key) const { return child(ptr_, key); }
  const Json* find(const char* key) const;
  const Json& required(const char* key) const;
  std::string string(const char* key) const;
  std::string stringOr(const char* key, const std::string& fallback) const;
  int64_t integer(const char* key) const;
  int64_t integerOr(const char* key, int64_t fallback) const;
  const Json& array(const char* key) const;  // required
  [[noreturn]] void fail(const std::string& ptr, const std::string& message) const;

 private:
  const Json& j_;
  std::string ptr_;
  const std::string& source_;
};

[[noreturn]] void fail(const std::string& source, const std::string& ptr, const std::string& message);
// Field readers for values already located; `ptr` names the value itself.
int64_t readInteger(const Json& v, const std::string& source, const std::string& ptr, std::string_view what);
std::string readString(const Json& v, const std::string& source, const std::string& ptr,
                       std::string_view what);
// Checks non-negative entries and the rank, extent and element limits (core/ir/limits.h).
Shape readShape(const Json& v, const std::string& source, const std::string& ptr);

DType readDType(const Json& v, const std::string& source, const std::string& ptr);

}  // namespace paraproof::planjson
