// The fast path: evaluate both sides exactly in GF(2^61-1) on random inputs. Polynomial and rational parts
// obey Schwartz-Zippel; functions are keyed hashes (random oracles). Every node is also evaluated in double
// precision at an independent random real point, and comparisons, max/min and ite conditions follow those
// numeric values (with a margin): the branches taken are those of a real input, so a wrong min/max/relu is
// caught. A field mismatch is only a hint: it becomes a Failed verdict only after a concrete
// double-precision assignment reproduces it.
#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <optional>
#include <random>
#include <string>

#include "core/solver/concrete_check.h"
#include "core/solver/engine.h"
#include "core/solver/mersenne_field.h"
#include "core/solver/problem_scope.h"

namespace paraproof::solver {

namespace {

using Clock = std::chrono::steady_clock;
namespace f = field;

constexpr int kComparisonTrials = 16;
// Unbounded integer inputs (they index nothing) are sampled from [-kUnboundedWindow/2, kUnboundedWindow/2),
// or, on a fair coin, from [-kSmall, kSmall]: such an integer is mostly a flag or a mask compared with 0 or 1
// (a bool input is `r != 0`), and a wide window alone would leave every mask set.
constexpr uint64_t kUnboundedWindow = uint64_t{1} << 16;
constexpr int64_t kSmall = 2;

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
  FieldEngine(int trials, uint64_t seed, bool proveDivisors)
      : trials_(std::max(1, trials)), seed_(seed), proveDivisors_(proveDivisors) {}
  std::string name() const override { return "random"; }
  Result check(const Problem& problem, const Budget& budget) override;
  // A trial (inputs in their ranges) where every guarded obligation's logical side is defined, within
  // `attempts`: a witness that the premises and all definedness guards hold together.
  bool guardsHold(const Problem& problem, int attempts);

 private:
  // Degenerate: some obligation's logical side divides by zero in the field (redrawn). TooClose: a comparison
  // whose numeric operands are too close to call, with different field values (redrawn). Overflow: integer
  // arithmetic left int64 (no trial is exact then: the engine gives up).
  enum class TrialOutcome { Agree, Mismatch, Degenerate, TooClose, Overflow };
  TrialOutcome runTrial(const Problem& p, const ProblemScope& scope, uint64_t trialSeed, int intRound,
                        bool positive, size_t& mismatch);
  std::optional<Counterexample> concretise(const Problem& p, uint64_t seed) const;
  static uint64_t degreeBound(const Problem& p, const ProblemScope& scope);

  int trials_;
  uint64_t seed_;
  bool proveDivisors_;
  std::vector<uint64_t> val_;  // one field value per pool node, reused across trials
  std::vector<double> num_;    // the same node in double precision: decides comparisons
  std::vector<uint8_t> def_;   // the node's field value is defined (no zero divisor on the taken path)
  std::vector<double> point_;  // the trial's real inputs, as doubles (a first counterexample candidate)
};

// Numeric order with a margin: -1, 0 (a genuine tie: equal in the field too), 1, or nullopt (too close).
std::optional<int> numericOrder(double x, double y, uint64_t fx, uint64_t fy) {
  if (std::isfinite(x) && std::isfinite(y)) {
    const double scale = std::max({1.0, std::fabs(x), std::fabs(y)});
    if (std::fabs(x - y) > 1e-9 * scale) return x < y ? -1 : 1;
  }
  if (fx == fy) return 0;
  return std::nullopt;
}

FieldEngine::TrialOutcome FieldEngine::runTrial(const Problem& p, const ProblemScope& scope,
                                                uint64_t trialSeed, int intRound, bool positive,
                                                size_t& mismatch) {
  const sym::ExprPool& pool = p.pool;
  const auto& vars = pool.vars();
  uint64_t s = trialSeed;
  const uint64_t fnKey = splitmix(s), divKey = splitmix(s);
  std::mt19937_64 rng(splitmix(s));
  val_.assign(pool.size(), 0);
  num_.assign(pool.size(), 0.0);
  def_.assign(pool.size(), 1);
  point_.assign(vars.size(), 0.0);
  auto ival = [&](sym::ExprId e) { return static_cast<int64_t>(val_[e]); };
  auto asField = [&](sym::ExprId e) {
    return pool.sort(e) == sym::Sort::Int ? f::fromInt(ival(e)) : val_[e];
  };
  std::vector<double> args;
  for (sym::ExprId e : scope.order) {
    const sym::Node& n = pool.node(e);
    const bool isInt = n.sort == sym::Sort::Int;
    uint64_t& out = val_[e];
    double& num = num_[e];
    for (auto a : n.args)
      def_[e] &= def_[a];
    // Real operands of a comparison: ordered by their numeric values, never by field values.
    auto order = [&](sym::ExprId a, sym::ExprId b) -> std::optional<int> {
      if (pool.sort(a) == sym::Sort::Int && pool.sort(b) == sym::Sort::Int)
        return ival(a) < ival(b) ? -1 : ival(a) > ival(b) ? 1 : 0;
      return numericOrder(num_[a], num_[b], asField(a), asField(b));
    };
    switch (n.kind) {
      case sym::Kind::Const:
        if (n.sort != sym::Sort::Real)
          out = static_cast<uint64_t>(n.ivalue);
        else if (std::isfinite(n.value))
          out = f::fromDouble(n.value);
        else
          out = f::mix(std::bit_cast<uint64_t>(n.value) ^ fnKey) % f::kP;  // opaque constant
        num = n.sort == sym::Sort::Real ? n.value : static_cast<double>(n.ivalue);
        break;
      case sym::Kind::Var: {
        const sym::VarSlot& v = vars[n.var];
        if (v.sort == sym::Sort::Real) {
          // Independent points for the two worlds: the numeric one picks the branches, the field one then
          // tests the polynomial pieces of those branches (Schwartz-Zippel holds given the branches).
          out = uniformField(s);
          const double u = std::ldexp(static_cast<double>(rng() >> 11), -53);
          num = positive ? 0.25 + 1.75 * u : 4.0 * u - 2.0;
        } else if (v.sort == sym::Sort::Bool) {
          out = splitmix(s) & 1;
          num = static_cast<double>(out);
        } else {
          // Integers cycle through their whole range over the trials (a fixed random start per variable), so
          // an index-dependent difference on a small vocabulary is not left to luck. An unbounded integer
          // (it indexes nothing) takes random values in a window around 0.
          const bool bounded = v.hi > v.lo;
          uint64_t width = bounded ? static_cast<uint64_t>(v.hi - v.lo) : kUnboundedWindow;
          int64_t lo = bounded ? v.lo : -static_cast<int64_t>(kUnboundedWindow / 2);
          uint64_t shift = f::mix(seed_ ^ (uint64_t{n.var} * 0x9e3779b97f4a7c15ull)) % width;
          const uint64_t draw = bounded ? 0 : splitmix(s);
          if (!bounded && (draw & 1)) {
            width = 2 * kSmall + 1;
            lo = -kSmall;
          }
          out = static_cast<uint64_t>(
              lo + static_cast<int64_t>(bounded ? (shift + static_cast<uint64_t>(intRound)) % width
                                                : (draw >> 1) % width));
          num = static_cast<double>(ival(e));
        }
        point_[n.var] = num;
        break;
      }
      case sym::Kind::Add:
        if (isInt) {
          int64_t acc = 0;  // exact, or no trial: a wrapped sum would decide comparisons wrongly
          for (auto a : n.args)
            if (__builtin_add_overflow(acc, ival(a), &acc)) return TrialOutcome::Overflow;
          out = static_cast<uint64_t>(acc);
        } else {
          uint64_t acc = 0;
          for (auto a : n.args)
            acc = f::add(acc, asField(a));
          out = acc;
        }
        num = 0;
        for (auto a : n.args)
          num += num_[a];
        break;
      case sym::Kind::Mul:
        if (isInt) {
          int64_t acc = 1;
          for (auto a : n.args)
            if (__builtin_mul_overflow(acc, ival(a), &acc)) return TrialOutcome::Overflow;
          out = static_cast<uint64_t>(acc);
        } else {
          uint64_t acc = 1;
          for (auto a : n.args)
            acc = f::mul(acc, asField(a));
          out = acc;
        }
        num = 1;
        for (auto a : n.args)
          num *= num_[a];
        break;
      case sym::Kind::Div: {
        uint64_t nu = asField(n.args[0]), den = asField(n.args[1]);
        if (den != 0) {
          out = f::mul(nu, f::inverse(den));
        } else {
          out = f::mix(nu ^ divKey) % f::kP;  // x/0 as a function of x, as in Z3
          def_[e] = 0;
        }
        num = num_[n.args[0]] / num_[n.args[1]];
        break;
      }
      case sym::Kind::Apply: {
        uint64_t h = f::mix(fnKey ^ (static_cast<uint64_t>(n.fn) + 1));
        args.clear();
        for (auto a : n.args) {
          h = f::mix(h ^ asField(a));
          args.push_back(num_[a]);
        }
        out = h % f::kP;
        num = applyFunction(n.fn, args);
        break;
      }
      case sym::Kind::Lt:
      case sym::Kind::Le: {
        auto o = order(n.args[0], n.args[1]);
        if (!o) return TrialOutcome::TooClose;
        out = n.kind == sym::Kind::Lt ? *o < 0 : *o <= 0;
        num = static_cast<double>(out);
        break;
      }
      case sym::Kind::Eq: {
        sym::ExprId a = n.args[0], b = n.args[1];
        if (pool.sort(a) == sym::Sort::Bool) {
          out = val_[a] == val_[b];
        } else {
          auto o = order(a, b);
          if (!o) return TrialOutcome::TooClose;
          out = *o == 0;
        }
        num = static_cast<double>(out);
        break;
      }
      case sym::Kind::And:
        out = val_[n.args[0]] && val_[n.args[1]];
        num = static_cast<double>(out);
        break;
      case sym::Kind::Or:
        out = val_[n.args[0]] || val_[n.args[1]];
        num = static_cast<double>(out);
        break;
      case sym::Kind::Not:
        out = !val_[n.args[0]];
        num = static_cast<double>(out);
        break;
      case sym::Kind::Ite: {
        sym::ExprId pick = val_[n.args[0]] ? n.args[1] : n.args[2];
        out = n.sort == sym::Sort::Real ? asField(pick) : val_[pick];
        num = num_[pick];
        def_[e] = def_[n.args[0]] && def_[pick];  // the branch not taken is not evaluated
        break;
      }
      case sym::Kind::ToReal:
        out = f::fromInt(ival(n.args[0]));
        num = num_[n.args[0]];
        break;
      case sym::Kind::Max:
      case sym::Kind::Min: {
        sym::ExprId pick = n.args[0];
        for (auto a : n.args) {
          auto o = order(a, pick);
          if (!o) return TrialOutcome::TooClose;
          if (n.kind == sym::Kind::Max ? *o > 0 : *o < 0) pick = a;
        }
        out = val_[pick];
        num = num_[pick];
        break;
      }
    }
  }
  for (size_t i : scope.open)
    if (!def_[p.obligations[i].expected]) return TrialOutcome::Degenerate;  // the model is undefined here
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
  // First the numeric point that chose the mismatching trial's branches.
  if (auto mismatches = concreteMismatches(p, point_); !mismatches.empty())
    return Counterexample{point_, std::move(mismatches), true};
  std::mt19937_64 rng(seed);
  constexpr int kAttempts = 24;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    std::vector<double> x(vars.size());
    for (size_t v = 0; v < vars.size(); ++v) {
      const sym::VarSlot& info = vars[v];
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

// Divisions of the plan side that the obligation's logical side does not make: where such a divisor vanishes
// the plan is undefined and the model is not, on a set of measure zero that random points never hit. One is
// covered when it is a constant nonzero multiple (the same ratio in every trial: a polynomial identity, with
// the Schwartz-Zippel bound) of a divisor of the obligation's own logical side, hence has the same zeros;
// otherwise only the proof engine can decide the obligation.
class DivisorCover {
 public:
  DivisorCover(const Problem& p, const ProblemScope& scope) {
    const sym::ExprPool& pool = p.pool;
    std::vector<std::vector<sym::ExprId>> below(pool.size());
    std::vector<uint8_t> many(pool.size(), 0);
    constexpr size_t kMax = 64;
    for (sym::ExprId e : scope.order) {
      const sym::Node& n = pool.node(e);
      std::vector<sym::ExprId> d;
      for (auto a : n.args) {
        many[e] |= many[a];
        d.insert(d.end(), below[a].begin(), below[a].end());
      }
      if (n.kind == sym::Kind::Div && !(pool.isConst(n.args[1]) && !pool.isConst(n.args[1], 0.0)))
        d.push_back(n.args[1]);
      std::sort(d.begin(), d.end());
      d.erase(std::unique(d.begin(), d.end()), d.end());
      if (d.size() > kMax) many[e] = 1, d.clear();
      below[e] = std::move(d);
    }
    for (size_t i : scope.open) {
      const Obligation& ob = p.obligations[i];
      if (many[ob.actual] || many[ob.expected]) {
        unknown_ = true;
        continue;
      }
      const auto &g = below[ob.expected], &u = below[ob.actual];
      for (sym::ExprId d : u)
        if (!std::binary_search(g.begin(), g.end(), d)) {
          Divisor div{i, d, {}};
          for (sym::ExprId c : g)
            div.candidates.push_back({c, 0, true});
          open_.push_back(std::move(div));
        }
    }
  }
  // After every agreeing trial (every logical divisor is nonzero there).
  void observe(const std::vector<uint64_t>& val, bool first) {
    for (auto& d : open_)
      for (auto& c : d.candidates) {
        const uint64_t r = val[c.divisor] ? f::mul(val[d.divisor], f::inverse(val[c.divisor])) : 0;
        if (first) c.ratio = r;
        c.alive = c.alive && r != 0 && r == c.ratio;
      }
  }
  // Why the field engine cannot verify, or empty.
  std::string problem(const sym::ExprPool& pool) const {
    if (unknown_)
      return "too many distinct divisors to check that the plan divides only where the model does";
    for (const auto& d : open_)
      if (std::none_of(d.candidates.begin(), d.candidates.end(), [](const Candidate& c) { return c.alive; }))
        return "the plan divides by " + pool.str(d.divisor, 3) + " (obligation " +
               std::to_string(d.obligation) +
               ") where the logical model does not: random points never hit its zeros";
    return "";
  }

 private:
  struct Candidate {
    sym::ExprId divisor;
    uint64_t ratio;
    bool alive;
  };
  struct Divisor {
    size_t obligation;
    sym::ExprId divisor;
    std::vector<Candidate> candidates;
  };
  std::vector<Divisor> open_;
  bool unknown_ = false;
};

bool comparesReals(const sym::ExprPool& pool, const ProblemScope& scope) {
  for (sym::ExprId e : scope.order) {
    const sym::Node& n = pool.node(e);
    switch (n.kind) {
      case sym::Kind::Lt:
      case sym::Kind::Le:
      case sym::Kind::Eq:
        if (pool.sort(n.args[0]) == sym::Sort::Real || pool.sort(n.args[1]) == sym::Sort::Real) return true;
        break;
      case sym::Kind::Max:
      case sym::Kind::Min:
        if (n.sort == sym::Sort::Real) return true;
        break;
      default:
        break;
    }
  }
  return false;
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
  // Only the divisor-cover proof condition needs it (costly on a large pool: a sorted divisor list per node).
  std::optional<DivisorCover> cover;
  if (proveDivisors_) cover.emplace(problem, scope);
  // Integer inputs: run at least one trial per value of the widest integer range (bounded).
  int64_t widest = 1;
  for (const auto& v : problem.pool.vars())
    if (v.sort == sym::Sort::Int) widest = std::max<int64_t>(widest, v.hi - v.lo);
  // Comparisons: the branches come from random real points, so more points (still milliseconds).
  const bool compares = comparesReals(problem.pool, scope);
  const int64_t minimum = compares ? std::max(trials_, kComparisonTrials) : trials_;
  const int wanted = static_cast<int>(std::max<int64_t>(minimum, std::min<int64_t>(widest, 256)));
  const int maxAttempts = 4 * wanted + 8;
  int agreed = 0, degenerate = 0, tooClose = 0;
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
    // Numeric points alternate between signed and positive reals (relu, masks and log need both).
    TrialOutcome t = runTrial(problem, scope, splitmix(s), agreed, attempt % 2 == 1, bad);
    if (t == TrialOutcome::Overflow) {
      r.reason = "integer arithmetic beyond 64 bits in a random trial; needs the proof engine";
      return finish(r);
    }
    if (t == TrialOutcome::Degenerate) {
      ++degenerate;
      continue;
    }
    if (t == TrialOutcome::TooClose) {
      ++tooClose;
      continue;
    }
    if (t == TrialOutcome::Agree) {
      if (cover) cover->observe(val_, agreed == 0);
      ++agreed;
      continue;
    }
    if (auto cex = concretise(problem, splitmix(s))) {
      r.status = Status::Failed;
      r.reason = "random trial found a difference, reproduced in double precision";
      r.cex = std::move(cex);
      return finish(r);
    }
    r.reason = "field mismatch not reproduced in doubles (obligation " + std::to_string(bad) +
               (scope.functions.empty() ? "" : "; uses uninterpreted " + functionNames(scope.functions)) +
               "); needs the proof engine";
    return finish(r);
  }
  if (agreed < wanted) {
    r.reason = "only " + std::to_string(agreed) + " of " + std::to_string(wanted) +
               " random trials were usable (" + std::to_string(degenerate) +
               " hit a zero divisor of the model, " + std::to_string(tooClose) +
               " had a comparison too close to call)";
    return finish(r);
  }
  if (std::string why = cover ? cover->problem(problem.pool) : ""; !why.empty()) {
    r.reason = why + "; needs the proof engine";
    return finish(r);
  }
  r.status = Status::Verified;
  const uint64_t degree = degreeBound(problem, scope);
  const std::string bound = "error probability <= " + std::to_string(degree) + "/p per trial, p = 2^61-1";
  r.reason =
      compares ? "agreed on " + std::to_string(agreed) +
                     " random trials (random testing: comparisons decided numerically at random real points, "
                     "no probability bound over the branches; given the branches taken, " +
                     bound + ")"
               : "agreed on " + std::to_string(agreed) + " random field trials (" + bound + ")";
  return finish(r);
}

bool FieldEngine::guardsHold(const Problem& problem, int attempts) {
  const ProblemScope scope = guardScopeOf(problem);
  if (scope.open.empty()) return true;
  uint64_t s = seed_;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    size_t bad = 0;
    const TrialOutcome t = runTrial(problem, scope, splitmix(s), attempt, attempt % 2 == 1, bad);
    // Mismatch: defined, only the (unevaluated) plan sides differ.
    if (t == TrialOutcome::Agree || t == TrialOutcome::Mismatch) return true;
  }
  return false;
}

}  // namespace

bool guardsHoldSomewhere(const Problem& problem, int attempts) {
  return FieldEngine(1, 0x5eed, false).guardsHold(problem, attempts);
}

std::unique_ptr<Engine> makeFieldEngine(int trials, uint64_t seed, bool proveDivisors) {
  return std::make_unique<FieldEngine>(trials, seed, proveDivisors);
}

}  // namespace paraproof::solver
