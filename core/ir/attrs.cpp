#include "core/ir/attrs.h"

#include <bit>
#include <cstdint>

namespace paraproof {

namespace {

// Equal as written, not only as JSON values: JSON's == holds for 1 and 1.0, 0.0 and -0.0, and for a signed
// and an unsigned 1, which a plan writes differently (and an integer attribute is not a float one).
bool identical(const Json& a, const Json& b) {
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case Json::value_t::object: {
      if (a.size() != b.size()) return false;
      for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j)
        if (i.key() != j.key() || !identical(*i, *j)) return false;
      return true;
    }
    case Json::value_t::array: {
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i)
        if (!identical(a[i], b[i])) return false;
      return true;
    }
    case Json::value_t::number_float:
      return std::bit_cast<uint64_t>(a.get<double>()) == std::bit_cast<uint64_t>(b.get<double>());
    default:
      return a == b;
  }
}

}  // namespace

Attrs::Attrs(Json j) {
  // The empty object needs no allocation: most ops of some kinds have no attributes.
  if (!(j.is_object() && j.empty())) object_ = std::make_shared<Json>(std::move(j));
}

const Json& Attrs::emptyObject() {
  static const Json empty = Json::object();
  return empty;
}

const Json& Attrs::null() {
  static const Json none;
  return none;
}

Json& Attrs::edit() {
  if (!object_)
    object_ = std::make_shared<Json>(Json::object());
  else if (object_.use_count() > 1)
    object_ = std::make_shared<Json>(*object_);
  return *object_;
}

void AttrsPool::intern(Attrs& attrs) {
  if (!attrs.object_) return;
  auto& bucket = byHash_[std::hash<Json>{}(*attrs.object_)];
  for (const std::shared_ptr<Json>& o : bucket)
    if (o == attrs.object_ || identical(*o, *attrs.object_)) {
      attrs.object_ = o;
      return;
    }
  bucket.push_back(attrs.object_);
  ++distinct_;
}

}  // namespace paraproof
