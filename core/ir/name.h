// A name of the IR (an op's id, kind, scope, origin; a value's name): an interned, immutable string.
#pragma once

#include <compare>
#include <cstddef>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace paraproof {

// Plans repeat the same names across devices, replicas and the copies verification makes (a generated
// llama3-405b plan states each op id on up to 64 devices; the fold, the reduction and the cut copy every op
// again): as std::string every copy was an allocation and a memcpy, about a fifth of verification's memory
// and, through first-touch page faults, of its time (docs/scale.md, "Interned names"). A Name is a pointer
// into a process-wide pool that keeps each distinct string once and never frees it: copying is a pointer
// copy, equality a pointer comparison, hashing a stored hash. Order is the strings' order, so maps and sorts
// keyed by names give the same results as with strings. The pool is safe to use from several threads.
class Name {
 public:
  Name() noexcept : entry_(&emptyEntry()) {}
  Name(std::string_view s) : entry_(&intern(s)) {}  // NOLINT(google-explicit-constructor): `op.id = "x"`
  Name(const std::string& s) : Name(std::string_view(s)) {}  // NOLINT(google-explicit-constructor)
  Name(const char* s) : Name(std::string_view(s)) {}         // NOLINT(google-explicit-constructor)

  const std::string& str() const noexcept { return entry_->text; }
  // NOLINTNEXTLINE(google-explicit-constructor): code that reads the text keeps reading it
  operator const std::string&() const noexcept { return entry_->text; }
  operator std::string_view() const noexcept { return entry_->text; }  // NOLINT(google-explicit-constructor)

  const char* c_str() const noexcept { return str().c_str(); }
  const char* data() const noexcept { return str().data(); }
  size_t size() const noexcept { return str().size(); }
  bool empty() const noexcept { return str().empty(); }
  bool starts_with(std::string_view p) const noexcept { return str().starts_with(p); }
  bool ends_with(std::string_view p) const noexcept { return str().ends_with(p); }
  size_t find(std::string_view s, size_t pos = 0) const noexcept { return str().find(s, pos); }
  size_t find(char c, size_t pos = 0) const noexcept { return str().find(c, pos); }
  size_t rfind(std::string_view s, size_t pos = std::string::npos) const noexcept {
    return str().rfind(s, pos);
  }
  size_t rfind(char c, size_t pos = std::string::npos) const noexcept { return str().rfind(c, pos); }
  std::string substr(size_t pos, size_t n = std::string::npos) const { return str().substr(pos, n); }
  size_t hash() const noexcept { return entry_->hash; }

  friend bool operator==(const Name& a, const Name& b) noexcept { return a.entry_ == b.entry_; }
  friend bool operator==(const Name& a, const std::string& b) noexcept { return a.str() == b; }
  friend bool operator==(const Name& a, std::string_view b) noexcept { return a.str() == b; }
  friend bool operator==(const Name& a, const char* b) noexcept { return a.str() == b; }
  friend std::strong_ordering operator<=>(const Name& a, const Name& b) noexcept {
    return a.entry_ == b.entry_ ? std::strong_ordering::equal : a.str().compare(b.str()) <=> 0;
  }
  friend std::strong_ordering operator<=>(const Name& a, const std::string& b) noexcept {
    return a.str().compare(b) <=> 0;
  }

  friend std::string operator+(const Name& a, const Name& b) { return a.str() + b.str(); }
  friend std::string operator+(const Name& a, const std::string& b) { return a.str() + b; }
  friend std::string operator+(const std::string& a, const Name& b) { return a + b.str(); }
  friend std::string operator+(std::string&& a, const Name& b) { return std::move(a) + b.str(); }
  friend std::string operator+(const Name& a, const char* b) { return a.str() + b; }
  friend std::string operator+(const char* a, const Name& b) { return a + b.str(); }
  friend std::string operator+(const Name& a, char b) { return a.str() + b; }
  friend std::string operator+(char a, const Name& b) { return a + b.str(); }
  friend std::ostream& operator<<(std::ostream& os, const Name& n) { return os << n.str(); }

  // How many distinct names the pool holds, and about how many bytes (tests, memory figures).
  static size_t pooled();
  static size_t pooledBytes();

 private:
  friend struct NamePool;
  struct Entry {
    std::string text;
    size_t hash;
  };
  static const Entry& intern(std::string_view s);
  static const Entry& emptyEntry();
  const Entry* entry_;
};

// Hashes a name or any string as the same text (the pool stores each name's hash as this computes it): maps
// keyed by names are looked up by string views without interning them (with std::equal_to<>).
struct NameHash {
  using is_transparent = void;
  size_t operator()(const Name& n) const noexcept { return n.hash(); }
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

void to_json(nlohmann::json& j, const Name& n);
void from_json(const nlohmann::json& j, Name& n);

}  // namespace paraproof

template <>
struct std::hash<paraproof::Name> {
  size_t operator()(const paraproof::Name& n) const noexcept { return n.hash(); }
};
