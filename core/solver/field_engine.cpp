// The fast path: evaluate both sides exactly in GF(2^61-1) on random inputs. Polynomial and rational parts
// obey Schwartz-Zippel; functions are keyed hashes (random oracles); comparisons of reals use a keyed random
// total order, so max/top-k/relu select consistently on both sides. A field mismatch is only a hint: it
// becomes a Failed verdict only after a concrete double-precision assignment reproduces it.
#include <algorithm>
#include <bit>
#include <chrono>
#include <random>

#include "core/solver/concrete_check.h"
#include "core/solver/engine.h"
#include "core/solver/mersenne_field.h"
#include "core/solver/problem_scope.h"

namespace paraproof::solver {

namespace {

using Clock = std::chrono::steady_clock;
namespace f = field;

// Unbounded integer inputs (they index nothing) are sampled from [-kUnboundedWindow/2, kUnboundedWindow/2).
constexpr uint64_t kUnboundedWindow = uint64_t{1} << 16;

uint64_t splitmix(uint64_t& s) {
  return f::mix(s += 0x9e3779b97f4a7c15ull);
}

uint64_t uniformField(uint64_t& s) {
  for (;;) {
    uint64_t x = splitmix(s) >> 3;
    if (x < f::kP) return x;
  }
}

// Saturating degree of a rational function: numerator and denominator degree in the real inputs, with
// function applications and comparison results counted as fresh random values.
struct Degree {
  uint64_t num = 0, den = 0;
};
uint64_t sat(uint64_t a, uint64_t b) {
  return a > UINT64_MAX / 4 - b ? UINT64_MAX / 4 : a + b;
}

class FieldEngine final : public Engine {
 public:
  FieldEngine(int trials, uint64_t seed) : trials_(std::max(1, trials)), seed_(seed) {}
  std::string name() const override { return "random"; }
  Result check(const Problem& problem, const Budget& budget) override;

 private:
  enum class TrialOutcome { Agree, Mismatch, Degenerate };
  TrialOutcome runTrial(const Problem& p, const ProblemScope& scope, uint64_t trialSeed, int intRound,
                        size_t& mismatch);
  std::optional<Counterexample> concretise(const Problem& p, uint64_t seed) const;
  static uint64_t degreeBound(const Problem& p, const ProblemScope& scope);

  int trials_;
  uint64_t seed_;
  std::vector<uint64_t> val_;  // one flat value per pool node, reused across trials
};

FieldEngine::TrialOutcome FieldEngine::runTrial(const Problem& p, const ProblemScope& scope,
                                                uint64_t trialSeed, int intRound, size_t& mismatch) {
  const sym::ExprPool& pool = p.pool;
  const auto& vars = pool.vars();
  uint64_t s = trialSeed;
  const uint64_t fnKey = splitmix(s), orderKey = splitmix(s), divKey = splitmix(s);
  val_.assign(pool.size(), 0);
  auto ival = [&](sym::ExprId e) { return static_cast<int64_t>(val_[e]); };
  auto asField = [&](sym::ExprId e) {
    return pool.sort(e) == sym::Sort::Int ? f::fromInt(ival(e)) : val_[e];
  };
  // Keyed total order on field elements: rank by hash, ties (never, in practice) by value.
  auto less = [&](uint64_t a, uint64_t b) {
    uint64_t ra = f::mix(a ^ orderKey), rb = f::mix(b ^ orderKey);
    return ra != rb ? ra < rb : a < b;
  };
  for (sym::ExprId e : scope.order) {
    const sym::Node& n = pool.node(e);
    const bool isInt = n.sort == sym::Sort::Int;
    uint64_t& out = val_[e];
    switch (n.kind) {
      case sym::Kind::Const:
        if (n.sort != sym::Sort::Real)
          out = static_cast<uint64_t>(n.ivalue);
        else if (std::isfinite(n.value))
          out = f::fromDouble(n.value);
        else
          out = f::mix(std::bit_cast<uint64_t>(n.value) ^ fnKey) % f::kP;  // opaque constant
        break;
      case sym::Kind::Var: {
        const sym::VarInfo& v = vars[n.var];
        if (v.sort == sym::Sort::Real) {
          out = uniformField(s);
        } else if (v.sort == sym::Sort::Bool) {
          out = splitmix(s) & 1;
        } else {
          // Integers cycle through their whole range over the trials (a fixed random start per variable), so
          // an index-dependent difference on a small vocabulary is not left to luck. An unbounded integer
          // (it indexes nothing) takes random values in a window around 0.
          const bool bounded = v.hi > v.lo;
          uint64_t width = bounded ? static_cast<uint64_t>(v.hi - v.lo) : kUnboundedWindow;
          int64_t lo = bounded ? v.lo : -static_cast<int64_t>(kUnboundedWindow / 2);
          uint64_t shift = f::mix(seed_ ^ (uint64_t{n.var} * 0x9e3779b97f4a7c15ull)) % width;
          out = static_cast<uint64_t>(
              lo + static_cast<int64_t>(bounded ? (shift + static_cast<uint64_t>(intRound)) % width
                                                : splitmix(s) % width));
        }
        break;
      }
      case sym::Kind::Add:
        if (isInt) {
          uint64_t acc = 0;  // two's complement wrap-around is exact for the small ints we see
          for (auto a : n.args)
            acc += val_[a];
          out = acc;
        } else {
          uint64_t acc = 0;
          for (auto a : n.args)
            acc = f::add(acc, asField(a));
          out = acc;
        }
        break;
      case sym::Kind::Mul:
        if (isInt) {
          uint64_t acc = 1;
          for (auto a : n.args)
            acc *= val_[a];
          out = acc;
        } else {
          uint64_t acc = 1;
          for (auto a : n.args)
            acc = f::mul(acc, asField(a));
          out = acc;
        }
        break;
      case sym::Kind::Div: {
        uint64_t num = asField(n.args[0]), den = asField(n.args[1]);
        if (den != 0) {
          out = f::mul(num, f::inverse(den));
        } else if (scope.logical[e]) {
          return TrialOutcome::Degenerate;  // the model itself is undefined here: draw again
        } else {
          out = f::mix(num ^ divKey) % f::kP;  // x/0 as a function of x, as in Z3
        }
        break;
      }
      case sym::Kind::Apply: {
        uint64_t h = f::mix(fnKey ^ (static_cast<uint64_t>(n.fn) + 1));
        for (auto a : n.args)
          h = f::mix(h ^ asField(a));
        out = h % f::kP;
        break;
      }
      case sym::Kind::Lt:
      case sym::Kind::Le: {
        sym::ExprId a = n.args[0], b = n.args[1];
        bool lt, eq;
        if (pool.sort(a) == sym::Sort::Int && pool.sort(b) == sym::Sort::Int) {
          lt = ival(a) < ival(b);
          eq = ival(a) == ival(b);
        } else {
          uint64_t x = asField(a), y = asField(b);
          lt = less(x, y);
          eq = x == y;
        }
        out = n.kind == sym::Kind::Lt ? lt : (lt || eq);
        break;
      }
      case sym::Kind::Eq: {
        sym::ExprId a = n.args[0], b = n.args[1];
        bool sameSort = pool.sort(a) == pool.sort(b);
        out = sameSort ? val_[a] == val_[b] : asField(a) == asField(b);
        break;
      }
      case sym::Kind::And:
        out = val_[n.args[0]] && val_[n.args[1]];
        break;
      case sym::Kind::Or:
        out = val_[n.args[0]] || val_[n.args[1]];
        break;
      case sym::Kind::Not:
        out = !val_[n.args[0]];
        break;
      case sym::Kind::Ite: {
        sym::ExprId pick = val_[n.args[0]] ? n.args[1] : n.args[2];
        out = n.sort == sym::Sort::Real ? asField(pick) : val_[pick];
        break;
      }
      case sym::Kind::ToReal:
        out = f::fromInt(ival(n.args[0]));
        break;
      case sym::Kind::Max:
      case sym::Kind::Min: {
        // The keyed order again: the pick is the argument max(a, b) = ite(b <= a, a, b) would make.
        sym::ExprId pick = n.args[0];
        for (auto a : n.args) {
          const uint64_t x = asField(a), y = asField(pick);
          const bool aLess = isInt ? ival(a) < ival(pick) : less(x, y);
          const bool pickLess = isInt ? ival(pick) < ival(a) : less(y, x);
          if (n.kind == sym::Kind::Max ? pickLess : aLess) pick = a;
        }
        out = val_[pick];
        break;
      }
    }
  }
  for (size_t i : scope.open) {
    const Obligation& ob = p.obligations[i];
    bool same = pool.sort(ob.expected) == pool.sort(ob.actual) ? val_[ob.expected] == val_[ob.actual]
                                                               : asField(ob.expected) == asField(ob.actual);
    if (!same) {
      mismatch = i;
      return TrialOutcome::Mismatch;
    }
  }
  return TrialOutcome::Agree;
}

// Small concrete inputs in double precision: small integers first (readable), then positive reals (inside
// the domain of log/sqrt), then signed reals.
std::optional<Counterexample> FieldEngine::concretise(const Problem& p, uint64_t seed) const {
  const auto& vars = p.pool.vars();
  std::mt19937_64 rng(seed);
  constexpr int kAttempts = 24;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    std::vector<double> x(vars.size());
    for (size_t v = 0; v < vars.size(); ++v) {
      const sym::VarInfo& info = vars[v];
      if (info.sort != sym::Sort::Real) {
        const bool bounded = info.hi > info.lo;
        int64_t width = bounded ? info.hi - info.lo : 7;  // unbounded: small integers around 0
        x[v] = static_cast<double>((bounded ? info.lo : -3) +
                                   static_cast<int64_t>(rng() % static_cast<uint64_t>(width)));
      } else if (attempt % 3 == 0) {
        x[v] = static_cast<double>(static_cast<int>(rng() % 7) - 3);
      } else if (attempt % 3 == 1) {
        x[v] = 0.25 + std::ldexp(static_cast<double>(rng() >> 11), -53) * 1.75;
      } else {
        x[v] = -2.0 + std::ldexp(static_cast<double>(rng() >> 11), -53) * 4.0;
      }
    }
    auto mismatches = concreteMismatches(p, x);
    if (!mismatches.empty()) return Counterexample{std::move(x), std::move(mismatches), true};
  }
  return std::nullopt;
}

uint64_t FieldEngine::degreeBound(const Problem& p, const ProblemScope& scope) {
  const sym::ExprPool& pool = p.pool;
  std::vector<Degree> d(pool.size());
  for (sym::ExprId e : scope.order) {
    const sym::Node& n = pool.node(e);
    Degree& r = d[e];
    switch (n.kind) {
      case sym::Kind::Var:
        r = {n.sort == sym::Sort::Real ? 1u : 0u, 0};
        break;
      case sym::Kind::Add:
        for (auto a : n.args) {
          r.num = std::max(sat(r.num, d[a].den), sat(d[a].num, r.den));
          r.den = sat(r.den, d[a].den);
        }
        break;
      case sym::Kind::Mul:
        for (auto a : n.args)
          r = {sat(r.num, d[a].num), sat(r.den, d[a].den)};
        break;
      case sym::Kind::Div: {
        const Degree &a = d[n.args[0]], &b = d[n.args[1]];
        r = {sat(a.num, b.den), sat(a.den, b.num)};
        break;
      }
      case sym::Kind::Apply:
        r = {1, 0};
        break;
      case sym::Kind::Ite:
        r = {std::max(d[n.args[1]].num, d[n.args[2]].num), std::max(d[n.args[1]].den, d[n.args[2]].den)};
        break;
      case sym::Kind::Max:
      case sym::Kind::Min:
        for (auto a : n.args)
          r = {std::max(r.num, d[a].num), std::max(r.den, d[a].den)};
        break;
      default:
        break;  // constants, booleans, integers: degree 0
    }
  }
  uint64_t bound = 0;
  for (size_t i : scope.open) {
    const Degree &a = d[p.obligations[i].expected], &b = d[p.obligations[i].actual];
    // expected - actual = (na*db - nb*da) / (da*db); a miss needs that numerator to vanish.
    bound = std::max(bound, std::max(sat(a.num, b.den), sat(b.num, a.den)));
  }
  return bound;
}

Result FieldEngine::check(const Problem& problem, const Budget& budget) {
  const auto start = Clock::now();
  Result r;
  r.engine = name();
  auto finish = [&](Result res) {
    res.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return res;
  };
  ProblemScope scope = scopeOf(problem);
  if (scope.open.empty()) {
    r.status = Status::Verified;
    r.reason = "every obligation is the same term on both sides";
    return finish(r);
  }
  // Integer inputs: run at least one trial per value of the widest integer range (bounded).
  int64_t widest = 1;
  for (const auto& v : problem.pool.vars())
    if (v.sort == sym::Sort::Int) widest = std::max<int64_t>(widest, v.hi - v.lo);
  const int wanted = static_cast<int>(std::max<int64_t>(trials_, std::min<int64_t>(widest, 256)));
  const int maxAttempts = 4 * wanted + 8;
  int agreed = 0;
  uint64_t s = seed_;
  for (int attempt = 0; attempt < maxAttempts && agreed < wanted; ++attempt) {
    if (budget.cancelled()) {
      r.reason = "cancelled";
      return finish(r);
    }
    if (budget.timeoutSeconds > 0 &&
        std::chrono::duration<double>(Clock::now() - start).count() > budget.timeoutSeconds) {
      r.reason = "timeout after " + std::to_string(agreed) + " field trials";
      return finish(r);
    }
    size_t bad = 0;
    TrialOutcome t = runTrial(problem, scope, splitmix(s), agreed, bad);
    if (t == TrialOutcome::Degenerate) continue;
    if (t == TrialOutcome::Agree) {
      ++agreed;
      continue;
    }
    if (auto cex = concretise(problem, splitmix(s))) {
      r.status = Status::Failed;
      r.reason = "random field trial found a difference, reproduced in double precision";
      r.cex = std::move(cex);
      return finish(r);
    }
    r.reason = "field mismatch not reproduced in doubles (obligation " + std::to_string(bad) +
               (scope.functions.empty() ? "" : "; uses uninterpreted " + functionNames(scope.functions)) +
               "); needs the proof engine";
    return finish(r);
  }
  if (agreed < wanted) {
    r.reason = "only " + std::to_string(agreed) + " field trials avoided a zero divisor in the model";
    return finish(r);
  }
  r.status = Status::Verified;
  uint64_t degree = degreeBound(problem, scope);
  r.reason = "agreed on " + std::to_string(agreed) +
             " random field trials (error probability <= " + std::to_string(degree) +
             "/p per trial, p = 2^61-1)";
  return finish(r);
}

}  // namespace

std::unique_ptr<Engine> makeFieldEngine(int trials, uint64_t seed) {
  return std::make_unique<FieldEngine>(trials, seed);
}

}  // namespace paraproof::solver
