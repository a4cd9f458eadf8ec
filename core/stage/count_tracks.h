// The abstract values of condition D's dataflow (docs/soundness.md, "Size points"): for three kinds of
// monomials of a stage's inputs, the range of exponents of the parameter t their coefficients can have.
//   own    - monomials holding a member's own data (a row of the batch, a replica's or a copy's input, an
//            element along a reduced class): they differ from member to member, so a sum over the t members
//            adds no factor t;
//   shared - monomials holding member data but the same on every member (a sum already taken, broadcast
//            back): a sum over the members multiplies them by t;
//   plain  - monomials with no member data (weights, constants): likewise multiplied by t.
#pragma once

#include <algorithm>
#include <climits>
#include <map>
#include <optional>
#include <string>

namespace paraproof::stage::counts {

struct Range {
  int lo = INT_MAX, hi = INT_MIN;
  bool empty() const { return lo > hi; }
  static Range at(int e) { return {e, e}; }
  Range operator|(const Range& o) const {
    if (empty()) return o;
    if (o.empty()) return *this;
    return {std::min(lo, o.lo), std::max(hi, o.hi)};
  }
  Range operator+(const Range& o) const {  // the exponents of a product
    if (empty() || o.empty()) return {};
    return {lo + o.lo, hi + o.hi};
  }
  Range shift(int k) const { return empty() ? Range{} : Range{lo + k, hi + k}; }
  Range mirrored() const { return empty() ? Range{} : *this | Range{-hi, -lo}; }
  int width() const { return empty() ? 0 : hi - lo; }
  bool operator==(const Range&) const = default;
};

struct Tracks {
  Range own, shared, plain;
  Range any() const { return own | shared | plain; }
  Tracks operator|(const Tracks& o) const { return {own | o.own, shared | o.shared, plain | o.plain}; }
  bool operator==(const Tracks&) const = default;
  // The widest span of one kind of monomial ("own" and "shared" are compared together: a sum turns one
  // into the other).
  int width() const { return std::max((own | shared).width(), plain.width()); }
};

inline Tracks constant() {
  return {{}, {}, Range::at(0)};
}

inline Tracks product(const Tracks& a, const Tracks& b) {
  Tracks r;
  r.own = (a.own + b.any()) | (a.any() + b.own);
  r.shared = (a.shared + b.shared) | (a.shared + b.plain) | (a.plain + b.shared);
  r.plain = a.plain + b.plain;
  return r;
}

// A sum over the t members: own monomials become shared ones (a sum already taken), the others gain t.
inline Tracks summed(const Tracks& a) {
  return {{}, a.own | a.shared | a.shared.shift(1), a.plain.shift(1)};
}

inline Tracks divided(const Tracks& a) {  // by t
  return {a.own.shift(-1), a.shared.shift(-1), a.plain.shift(-1)};
}

// Any map that is not a polynomial in its inputs and has no count model: it may turn member data into a
// plain monomial (y / y = 1) or invert a count, so its result is widened to both signs and every kind.
inline Tracks widened(const Tracks& a) {
  const Range all = a.any().mirrored();
  return {a.own.empty() ? Range{} : all, a.own.empty() && a.shared.empty() ? Range{} : all, all};
}

// 1 / y for a y whose coefficients are one power of t (a count, a count times data): the same monomials
// inverted, t to the opposite power. Otherwise not a Laurent polynomial: nullopt.
inline std::optional<Tracks> inverse(const Tracks& y) {
  const Range all = y.any();
  if (all.empty() || all.lo != all.hi) return std::nullopt;
  auto neg = [](const Range& r) { return r.empty() ? Range{} : Range::at(-r.lo); };
  return Tracks{neg(y.own), neg(y.shared), neg(y.plain)};
}

inline Tracks quotient(const Tracks& x, const Tracks& y) {
  std::optional<Tracks> inv = inverse(y);
  if (!inv) return widened(x | y | product(x, y));
  Tracks q = product(x, *inv);
  q.plain = q.plain | q.own | q.shared;  // y / y = 1: member data may cancel
  return q;
}

// The uninterpreted functions of the proof (exp, log, sqrt, ..., comparisons, extrema), by name. Two
// applications of one function are the same term exactly when their arguments are equal, so the proof at
// one size identifies the same applications as at every size only if, per function and kind, every
// argument in the stage carries one power of t (width 0). An application is then a fresh monomial of its
// argument's kind at exponent 0.
class Atoms {
 public:
  Tracks apply(const char* fn, const Tracks& arg) {
    Tracks& a = args_[fn];
    a = a | arg;
    if (!arg.own.empty()) return {Range::at(0), {}, {}};
    if (!arg.shared.empty()) return {{}, Range::at(0), {}};
    return constant();
  }
  // The widest argument span of one function (an op without a model counts against every function).
  int width() const {
    int w = 0;
    const auto star = args_.find("*");
    const Tracks any = star == args_.end() ? Tracks{} : star->second;
    for (const auto& [fn, a] : args_)
      w = std::max(w, (a | any).width());
    return w;
  }

 private:
  std::map<std::string, Tracks> args_;
};

}  // namespace paraproof::stage::counts
