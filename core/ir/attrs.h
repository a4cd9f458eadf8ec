// An op's attributes: an immutable JSON object, shared by the ops whose attributes are equal.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace paraproof {

using Json = nlohmann::json;

// A generated plan repeats the same attribute objects across layers, micro-batches and devices (the same
// dim, group or shape), and verification copies ops over and over (fold, reduction, cut): a shared object
// makes those copies a reference count instead of a deep copy of a map (docs/scale.md, "Memory per op").
// Reads are those of a const JSON object; a write (set, erase, edit) copies the object first when another
// op shares it (copy on write), so no op sees another's edit. AttrsPool makes equal objects one.
class Attrs {
 public:
  Attrs() = default;  // the empty object
  Attrs(Json j);      // NOLINT(google-explicit-constructor): `op.attrs = json` reads as before
  Attrs(Json::initializer_list_t init) : Attrs(Json(init)) {}  // op.attrs = {{"dim", 0}}

  const Json& json() const { return object_ ? *object_ : emptyObject(); }
  operator const Json&() const { return json(); }  // NOLINT(google-explicit-constructor)

  // A key that is absent reads as null (and, unlike a mutable JSON object's operator[], is not inserted).
  template <class Key>
  const Json& operator[](const Key& key) const {
    const Json& o = json();
    const auto it = o.find(key);
    return it == o.end() ? null() : *it;
  }
  template <class Key>
  const Json& at(const Key& key) const {
    return json().at(key);
  }
  template <class Key>
  bool contains(const Key& key) const {
    return json().contains(key);
  }
  template <class Key>
  size_t count(const Key& key) const {
    return json().count(key);
  }
  template <class Key, class Default>
  auto value(const Key& key, const Default& otherwise) const {
    return json().value(key, otherwise);
  }
  template <class Key>
  Json::const_iterator find(const Key& key) const {
    return json().find(key);
  }
  Json::const_iterator begin() const { return json().begin(); }
  Json::const_iterator end() const { return json().end(); }
  auto items() const { return json().items(); }
  size_t size() const { return json().size(); }
  bool empty() const { return json().empty(); }
  bool is_object() const { return json().is_object(); }
  std::string dump(int indent = -1) const { return json().dump(indent); }

  // Writes: the object is copied first if another op shares it.
  Json& edit();
  template <class V>
  void set(const std::string& key, V&& v) {
    edit()[key] = std::forward<V>(v);
  }
  void erase(const std::string& key) {
    if (contains(key)) edit().erase(key);
  }

  // The same object (not only an equal one): what interning achieved.
  bool sharesWith(const Attrs& o) const { return object_ == o.object_; }

  friend bool operator==(const Attrs& a, const Attrs& b) {
    return a.object_ == b.object_ || a.json() == b.json();
  }
  friend bool operator==(const Attrs& a, const Json& b) { return a.json() == b; }

 private:
  friend class AttrsPool;
  static const Json& emptyObject();
  static const Json& null();
  std::shared_ptr<Json> object_;  // null: the empty object; never written while shared
};

// Attrs into JSON (`Json j = op.attrs`, an aggregate's JSON member): the object itself. Without it JSON's
// converting constructor would take Attrs for an array (it has begin and end) and write the values only.
inline void to_json(Json& j, const Attrs& a) {
  j = a.json();
}

// Interns attribute objects: equal objects come back as one shared object. Held while a plan is built or
// loaded; the objects outlive it (the ops share them).
class AttrsPool {
 public:
  void intern(Attrs& attrs);
  size_t distinct() const { return distinct_; }

 private:
  std::unordered_map<size_t, std::vector<std::shared_ptr<Json>>> byHash_;
  size_t distinct_ = 0;
};

}  // namespace paraproof
