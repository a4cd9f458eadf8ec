#include "core/solver/normalize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>
#include <unordered_map>

namespace paraproof::solver {

namespace {

__extension__ using Int128 = __int128;

Int128 gcd128(Int128 a, Int128 b) {
  while (b != 0) {
    Int128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}

struct GiveUp {};  // overflow or size budget: leave the obligation to Z3

// Exact rational with 64-bit parts; any overflow gives up rather than rounds.
struct Rational {
  int64_t num = 0, den = 1;
  static Rational make(Int128 n, Int128 d) {
    if (d < 0) n = -n, d = -d;
    Int128 g = gcd128(n < 0 ? -n : n, d);
    if (g > 1) n /= g, d /= g;
    if (n > INT64_MAX || n < -INT64_MAX || d > INT64_MAX) throw GiveUp{};
    return {static_cast<int64_t>(n), static_cast<int64_t>(d)};
  }
  Rational operator+(const Rational& o) const {
    return make(static_cast<Int128>(num) * o.den + static_cast<Int128>(o.num) * den,
                static_cast<Int128>(den) * o.den);
  }
  Rational operator*(const Rational& o) const {
    return make(static_cast<Int128>(num) * o.num, static_cast<Int128>(den) * o.den);
  }
  bool zero() const { return num == 0; }
  bool operator==(const Rational&) const = default;
  auto operator<=>(const Rational&) const = default;
};

// Exact binary rational of a double, if its parts fit.
std::optional<Rational> exactRational(double v) {
  if (!std::isfinite(v)) return std::nullopt;
  int e;
  double m = std::frexp(v, &e);  // v = m * 2^e, 0.5 <= |m| < 1
  // Scale the mantissa to an integer: at most 53 bits.
  int64_t mant = static_cast<int64_t>(std::ldexp(m, 53));
  int shift = e - 53;
  while (mant != 0 && (mant & 1) == 0 && shift < 0)
    mant >>= 1, ++shift;
  if (shift >= 0) {
    if (shift > 62 - 53) return std::nullopt;
    return Rational::make(static_cast<Int128>(mant) << shift, 1);
  }
  if (-shift > 62) return std::nullopt;
  return Rational::make(mant, static_cast<Int128>(1) << -shift);
}

using AtomId = uint32_t;
using Monomial = std::vector<std::pair<AtomId, uint32_t>>;  // sorted by atom, powers >= 1
using Poly = std::vector<std::pair<Monomial, Rational>>;    // sorted by monomial, nonzero coefficients
using Term = std::pair<Monomial, Rational>;
using PolyId = uint32_t;

class Normaliser {
 public:
  Normaliser(const sym::ExprPool& pool, size_t maxTerms) : pool_(pool), maxTerms_(maxTerms) {}

  std::optional<PolyId> normal(sym::ExprId e) {
    try {
      return polyOf(e);
    } catch (const GiveUp&) {
      return std::nullopt;
    }
  }

 private:
  // One copy of each polynomial: the index keeps ids under their hash, compared against polys_.
  PolyId intern(Poly p) {
    const size_t h = PolyHash{}(p);
    auto [first, last] = polyIndex_.equal_range(h);
    for (auto it = first; it != last; ++it)
      if (polys_[it->second] == p) return it->second;
    PolyId id = static_cast<PolyId>(polys_.size());
    polys_.push_back(std::move(p));
    polyIndex_.emplace(h, id);
    return id;
  }

  AtomId atom(std::vector<int64_t> key, bool indicator = false) {
    auto it = atomIndex_.find(key);
    if (it != atomIndex_.end()) return it->second;
    AtomId id = static_cast<AtomId>(indicator_.size());
    indicator_.push_back(indicator);
    atomIndex_.emplace(std::move(key), id);
    return id;
  }

  Poly constant(Rational r) const {
    if (r.zero()) return {};
    return {{Monomial{}, r}};
  }
  Poly ofAtom(AtomId a) const { return {{Monomial{{a, 1}}, Rational{1, 1}}}; }

  Poly add(const Poly& a, const Poly& b) const {
    Poly out;
    out.reserve(a.size() + b.size());
    size_t i = 0, j = 0;
    while (i < a.size() || j < b.size()) {
      if (j == b.size() || (i < a.size() && a[i].first < b[j].first)) {
        out.push_back(a[i++]);
      } else if (i == a.size() || b[j].first < a[i].first) {
        out.push_back(b[j++]);
      } else {
        Rational c = a[i].second + b[j].second;
        if (!c.zero()) out.push_back({a[i].first, c});
        ++i, ++j;
      }
    }
    if (out.size() > maxTerms_) throw GiveUp{};
    return out;
  }

  // The sum of many polynomials at once: their terms sorted by monomial and merged (a pairwise fold copies
  // the growing sum once per operand: quadratic in the operands of a wide sum, e.g. over 256 experts).
  Poly addAll(const std::vector<const Poly*>& ps) const {
    if (ps.empty()) return {};
    if (ps.size() == 1) return *ps[0];
    if (ps.size() == 2) return add(*ps[0], *ps[1]);
    std::vector<const Term*> terms;
    for (const Poly* p : ps)
      for (const Term& t : *p)
        terms.push_back(&t);
    return merged(terms);
  }

  // `terms` sorted by monomial, equal monomials' coefficients summed, zeros dropped.
  Poly merged(std::vector<const Term*>& terms) const {
    std::stable_sort(terms.begin(), terms.end(),
                     [](const Term* a, const Term* b) { return a->first < b->first; });
    Poly out;
    for (size_t i = 0; i < terms.size();) {
      Rational c{0, 1};
      size_t j = i;
      for (; j < terms.size() && terms[j]->first == terms[i]->first; ++j)
        c = c + terms[j]->second;
      if (!c.zero()) out.push_back({terms[i]->first, c});
      i = j;
    }
    if (out.size() > maxTerms_) throw GiveUp{};
    return out;
  }

  Poly scale(const Poly& a, Rational r) const {
    if (r.zero()) return {};
    Poly out = a;
    for (auto& t : out)
      t.second = t.second * r;
    return out;
  }

  Monomial mulMono(const Monomial& a, const Monomial& b) const {
    Monomial out;
    size_t i = 0, j = 0;
    while (i < a.size() || j < b.size()) {
      if (j == b.size() || (i < a.size() && a[i].first < b[j].first)) {
        out.push_back(a[i++]);
      } else if (i == a.size() || b[j].first < a[i].first) {
        out.push_back(b[j++]);
      } else {
        // Indicators are idempotent: [c]^2 = [c].
        uint32_t p = indicator_[a[i].first] ? 1 : a[i].second + b[j].second;
        out.push_back({a[i].first, p});
        ++i, ++j;
      }
    }
    return out;
  }

  Poly mul(const Poly& a, const Poly& b) const {
    if (a.empty() || b.empty()) return {};
    // A constant factor scales: no products of monomials to sort.
    if (a.size() == 1 && a[0].first.empty()) return scale(b, a[0].second);
    if (b.size() == 1 && b[0].first.empty()) return scale(a, b[0].second);
    if (a.size() * b.size() > maxTerms_ * 4) throw GiveUp{};
    Poly products;
    products.reserve(a.size() * b.size());
    for (const auto& [ma, ca] : a)
      for (const auto& [mb, cb] : b)
        products.push_back({mulMono(ma, mb), ca * cb});
    std::vector<const Term*> terms;
    terms.reserve(products.size());
    for (const Term& t : products)
      terms.push_back(&t);
    return merged(terms);
  }

  std::optional<Rational> asConstant(const Poly& p) const {
    if (p.empty()) return Rational{0, 1};
    if (p.size() == 1 && p[0].first.empty()) return p[0].second;
    return std::nullopt;
  }

  // Comparisons become indicator atoms keyed by the normal form of their difference.
  AtomId comparison(const sym::Node& n, sym::ExprId e) {
    const sym::ExprId a = n.args[0], b = n.args[1];
    if (pool_.sort(a) != sym::Sort::Real)
      return atom({-1, static_cast<int64_t>(e)}, true);  // integers: structural
    PolyId d = intern(add(polys_[polyOf(a)], scale(polys_[polyOf(b)], Rational{-1, 1})));
    return atom({-2, static_cast<int64_t>(n.kind), static_cast<int64_t>(d)}, true);
  }

  PolyId polyOf(sym::ExprId root) {
    // Iterative post-order: expression DAGs can be deep.
    std::vector<sym::ExprId> stack{root};
    while (!stack.empty()) {
      sym::ExprId e = stack.back();
      if (memo_.count(e)) {
        stack.pop_back();
        continue;
      }
      const sym::Node& n = pool_.node(e);
      bool ready = true;
      bool structural = (n.kind == sym::Kind::Lt || n.kind == sym::Kind::Le || n.kind == sym::Kind::Eq) &&
                        pool_.sort(n.args[0]) != sym::Sort::Real;
      if (!structural)
        for (sym::ExprId a : n.args)
          if (!memo_.count(a)) {
            stack.push_back(a);
            ready = false;
          }
      if (!ready) continue;
      stack.pop_back();
      memo_[e] = intern(build(n, e));
    }
    return memo_.at(root);
  }

  const Poly& P(sym::ExprId e) const { return polys_[memo_.at(e)]; }

  Poly build(const sym::Node& n, sym::ExprId e) {
    switch (n.kind) {
      case sym::Kind::Const: {
        if (n.sort != sym::Sort::Real) return constant(Rational{n.ivalue, 1});
        if (auto r = exactRational(n.value)) return constant(*r);
        int64_t bits;
        std::memcpy(&bits, &n.value, sizeof bits);
        return ofAtom(atom({-3, bits}));
      }
      case sym::Kind::Var:
        return ofAtom(atom({-4, static_cast<int64_t>(n.var)}));
      case sym::Kind::Add: {
        std::vector<const Poly*> ps;
        for (auto a : n.args)
          ps.push_back(&P(a));
        return addAll(ps);
      }
      case sym::Kind::Mul: {
        Poly p = constant(Rational{1, 1});
        for (auto a : n.args)
          p = mul(p, P(a));
        return p;
      }
      case sym::Kind::Div: {
        const Poly& den = P(n.args[1]);
        if (auto c = asConstant(den); c && !c->zero())
          return scale(P(n.args[0]), Rational::make(c->den, c->num));
        return mul(P(n.args[0]), ofAtom(atom({-5, static_cast<int64_t>(memo_.at(n.args[1]))})));
      }
      case sym::Kind::Apply: {
        std::vector<int64_t> key{-6, static_cast<int64_t>(n.fn)};
        for (auto a : n.args)
          key.push_back(memo_.at(a));
        return ofAtom(atom(std::move(key)));
      }
      case sym::Kind::Lt:
      case sym::Kind::Le:
      case sym::Kind::Eq:
        return ofAtom(comparison(n, e));
      case sym::Kind::Not:
        return add(constant(Rational{1, 1}), scale(P(n.args[0]), Rational{-1, 1}));
      case sym::Kind::And:
        return mul(P(n.args[0]), P(n.args[1]));
      case sym::Kind::Or: {
        const Poly &a = P(n.args[0]), &b = P(n.args[1]);
        return add(add(a, b), scale(mul(a, b), Rational{-1, 1}));
      }
      case sym::Kind::Ite: {
        if (n.sort != sym::Sort::Real) return ofAtom(atom({-7, static_cast<int64_t>(e)}));
        const Poly& c = P(n.args[0]);
        Poly notC = add(constant(Rational{1, 1}), scale(c, Rational{-1, 1}));
        return add(mul(c, P(n.args[1])), mul(notC, P(n.args[2])));
      }
      case sym::Kind::ToReal:
        // The integers embed in the reals as a ring (integer expressions have no division), so an integer
        // sum's real value is its normal form: a count all-reduced in parts equals the count taken whole.
        return P(n.args[0]);
      case sym::Kind::Max:
      case sym::Kind::Min: {
        // An atom over the normal forms of its (already flattened, deduplicated) arguments, sorted: equal
        // multisets of equal terms give one atom whatever the grouping was.
        std::vector<int64_t> args;
        for (auto a : n.args)
          args.push_back(static_cast<int64_t>(memo_.at(a)));
        std::sort(args.begin(), args.end());
        args.erase(std::unique(args.begin(), args.end()), args.end());
        if (args.size() == 1) return P(n.args[0]);
        args.insert(args.begin(), n.kind == sym::Kind::Max ? -9 : -10);
        return ofAtom(atom(std::move(args)));
      }
    }
    throw GiveUp{};
  }

  struct PolyHash {
    size_t operator()(const Poly& p) const {
      uint64_t h = 1469598103934665603ull;
      for (const auto& [m, c] : p) {
        for (auto [a, k] : m)
          h = (h ^ (a * 31ull + k)) * 1099511628211ull;
        h = (h ^ static_cast<uint64_t>(c.num)) * 1099511628211ull;
        h = (h ^ static_cast<uint64_t>(c.den)) * 1099511628211ull;
      }
      return h;
    }
  };
  struct KeyHash {
    size_t operator()(const std::vector<int64_t>& k) const {
      uint64_t h = 1469598103934665603ull;
      for (int64_t x : k)
        h = (h ^ static_cast<uint64_t>(x)) * 1099511628211ull;
      return h;
    }
  };

  const sym::ExprPool& pool_;
  size_t maxTerms_;
  std::vector<Poly> polys_;
  std::unordered_multimap<size_t, PolyId> polyIndex_;  // hash of a polynomial -> its ids
  std::unordered_map<std::vector<int64_t>, AtomId, KeyHash> atomIndex_;
  std::vector<bool> indicator_;
  std::unordered_map<sym::ExprId, PolyId> memo_;
};

}  // namespace

NormalisationResult proveByNormalisation(const Problem& pb, const Budget& budget, size_t maxTerms) {
  NormalisationResult r;
  r.proved.assign(pb.obligations.size(), false);
  Normaliser norm(pb.pool, maxTerms);
  for (size_t i = 0; i < pb.obligations.size(); ++i) {
    if (budget.cancelled()) break;
    const Obligation& o = pb.obligations[i];
    if (o.expected == o.actual) {
      r.proved[i] = true;
    } else if (pb.pool.sort(o.expected) == sym::Sort::Real) {
      auto a = norm.normal(o.expected);
      auto b = a ? norm.normal(o.actual) : std::nullopt;
      r.proved[i] = a && b && *a == *b;
    }
    r.provedCount += r.proved[i];
  }
  return r;
}

}  // namespace paraproof::solver
