#include "core/solver/z3_proof.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "core/solver/concrete_check.h"
#include "core/solver/z3_encoding.h"

namespace paraproof::solver {

namespace {

using Clock = std::chrono::steady_clock;

// Model values are exact rationals (or algebraic numbers); a decimal rendering is enough for doubles.
double toDouble(const z3::expr& v) {
  if (v.is_bool()) return v.is_true() ? 1.0 : 0.0;
  Z3_string s = Z3_get_numeral_decimal_string(v.ctx(), v, 24);
  if (v.ctx().check_error() != Z3_OK || !s) return 0.0;
  return std::strtod(s, nullptr);  // stops at the trailing '?' of a truncated expansion
}

// The integer inputs an obligation reads (each once), walking both sides' DAG.
std::vector<uint32_t> integerInputs(const sym::ExprPool& pool, const Obligation& ob) {
  std::vector<uint32_t> found;
  std::vector<sym::ExprId> stack = {ob.expected, ob.actual};
  std::unordered_set<sym::ExprId> seen;
  while (!stack.empty()) {
    sym::ExprId e = stack.back();
    stack.pop_back();
    if (!seen.insert(e).second) continue;
    const sym::Node& n = pool.node(e);
    if (n.kind == sym::Kind::Var && n.sort == sym::Sort::Int) found.push_back(n.var);
    for (sym::ExprId a : n.args)
      stack.push_back(a);
  }
  return found;
}

// Inputs no obligation depends on still need a value: 0, or the nearest value of an integer's range.
double defaultValue(const sym::VarSlot& v) {
  if (v.sort == sym::Sort::Int && v.hi > v.lo && (v.lo > 0 || v.hi <= 0)) return static_cast<double>(v.lo);
  return 0.0;
}

}  // namespace

Z3Proof::Z3Proof(z3::context& ctx, const Z3Options& options) : ctx_(&ctx), options_(options) {}

z3::solver Z3Proof::makeSolver() {
  z3::context& ctx = *ctx_;
  z3::solver s = [&] {
    if (options_.strategy != Z3Options::Strategy::SimplifyThenSmt) return z3::solver(ctx);
    z3::params p(ctx);
    p.set("som", true);
    return (z3::with(z3::tactic(ctx, "simplify"), p) & z3::tactic(ctx, "smt")).mk_solver();
  }();
  if (options_.maxMemoryMb > 0) {
    // A soft cap: the solver returns unknown ("max. memory exceeded") instead of Z3 aborting the process, as
    // the global memory_max_size may.
    z3::params p(ctx);
    p.set("max_memory", static_cast<unsigned>(options_.maxMemoryMb));
    s.set(p);
  }
  return s;
}

// Most obligations of a correct plan are polynomial identities: normalising expected - actual to a sum of
// monomials proves them without a search, one at a time.
std::vector<size_t> Z3Proof::presimplify(const Run& run, const Z3Encoding& enc, std::vector<size_t> pending) {
  z3::context& ctx = *ctx_;
  z3::params p(ctx);
  p.set("som", true);
  // The default blow-up bound (10) gives up on exactly the products we need expanded; 10^4 monomials keeps
  // one call under a few seconds and leaves bigger expansions to the solver.
  p.set("som_blowup", 10000u);
  // The Z3 constant of every bounded integer input, for the case split; empty (and the split skipped, with no
  // walk of any obligation) when the stage has none.
  std::unordered_map<uint32_t, z3::expr> bounded;
  const auto& slots = run.problem.pool.vars();
  for (const auto& [index, x] : enc.variables())
    if (slots[index].sort == sym::Sort::Int && slots[index].hi > slots[index].lo) bounded.emplace(index, x);
  std::vector<size_t> left;
  for (size_t k = 0; k < pending.size(); ++k) {
    if (run.stop()) return pending;
    const Obligation& ob = run.problem.obligations[pending[k]];
    if (run.problem.pool.sort(ob.expected) == sym::Sort::Bool) {
      left.push_back(pending[k]);
      continue;
    }
    // No "timeout" parameter anywhere: Z3's timer threads serialise concurrent proofs; the engine interrupts.
    z3::expr d = (enc.realTerm(ob.expected) - enc.realTerm(ob.actual)).simplify(p);
    bool proved = isZero(d) || (!bounded.empty() && splitsToZero(run, bounded, ob, d, p));
    if (!proved) left.push_back(pending[k]);
  }
  return left;
}

bool Z3Proof::isZero(const z3::expr& d) const {
  return d.is_numeral() && Z3_get_numeral_string(*ctx_, d) == std::string("0");
}

// A difference that reads a few integers of small ranges (a token's target id compared with a rank's
// vocabulary range, a position with a mask's row) is an identity iff it simplifies to 0 at every value they
// can take: the ranges are the inputs' whole domains (their side conditions), so enumerating them is the
// universal claim, and each instance's comparisons and selections fold away. Bounded by kMaxCases instances;
// past that, a difference separable by integer (separableToZero) is checked per integer; otherwise the
// search decides.
bool Z3Proof::splitsToZero(const Run& run, const std::unordered_map<uint32_t, z3::expr>& bounded,
                           const Obligation& ob, const z3::expr& d, const z3::params& p) {
  constexpr int64_t kMaxCases = 64;
  std::vector<uint32_t> ints = integerInputs(run.problem.pool, ob);
  if (ints.empty()) return false;
  const auto& slots = run.problem.pool.vars();
  int64_t cases = 1;
  z3::expr_vector src(*ctx_);
  for (uint32_t v : ints) {
    auto it = bounded.find(v);
    if (it == bounded.end()) return false;  // unbounded: an integer that indexes nothing
    src.push_back(it->second);
    cases = std::min(cases * (slots[v].hi - slots[v].lo), kMaxCases + 1);
  }
  if (cases > kMaxCases) return separableToZero(run, ints, src, d, p);
  std::vector<int64_t> at(ints.size());
  for (size_t i = 0; i < ints.size(); ++i)
    at[i] = slots[ints[i]].lo;
  for (int64_t c = 0; c < cases; ++c) {
    if (run.stop()) return false;
    z3::expr_vector dst(*ctx_);
    for (int64_t value : at)
      dst.push_back(ctx_->int_val(value));
    z3::expr instance = d;
    if (!isZero(instance.substitute(src, dst).simplify(p))) return false;
    for (size_t i = 0; i < ints.size(); ++i) {  // the next assignment, odometer order
      if (++at[i] < slots[ints[i]].hi) break;
      at[i] = slots[ints[i]].lo;
    }
  }
  return true;
}

// A difference that is a sum of terms each reading at most one of the integers, d = h + sum_v g_v(i_v) (an
// embedding table's gradient row: one term per token, each reading that token's id), is an identity if every
// g_v simplifies to one value g_v(lo_v) at each value of i_v's range, and h + sum_v g_v(lo_v) simplifies to
// 0: then d = h + sum_v g_v(lo_v) = 0 at every assignment. The check costs the sum of the ranges, not their
// product. Only ever proves (a term reading two integers, or an instance that does not fold, leaves it to the
// search).
bool Z3Proof::separableToZero(const Run& run, const std::vector<uint32_t>& ints, const z3::expr_vector& src,
                              const z3::expr& d, const z3::params& p) {
  constexpr int64_t kMaxInstances = 4096;
  constexpr size_t kMaxVisits = 1 << 20;
  const auto& slots = run.problem.pool.vars();
  std::unordered_map<unsigned, size_t> which;  // Z3 ast id of an integer's constant -> its index in ints
  int64_t instances = 1;
  for (size_t i = 0; i < ints.size(); ++i) {
    which.emplace(Z3_get_ast_id(*ctx_, src[static_cast<int>(i)]), i);
    instances += slots[ints[i]].hi - slots[ints[i]].lo;
  }
  if (instances > kMaxInstances) return false;
  std::vector<z3::expr> terms;
  if (d.is_app() && d.decl().decl_kind() == Z3_OP_ADD)
    for (unsigned k = 0; k < d.num_args(); ++k)
      terms.push_back(d.arg(k));
  else
    terms.push_back(d);
  // Group the terms by the one integer each reads (ints.size(): none); one vector each, as copies of a
  // z3::expr_vector share one Z3 vector.
  std::vector<z3::expr_vector> groups;
  for (size_t i = 0; i <= ints.size(); ++i)
    groups.emplace_back(*ctx_);
  size_t visits = 0;
  for (const z3::expr& t : terms) {
    size_t reads = ints.size();
    std::vector<z3::expr> stack = {t};
    std::unordered_set<unsigned> seen;
    while (!stack.empty()) {
      z3::expr e = stack.back();
      stack.pop_back();
      if (!seen.insert(Z3_get_ast_id(*ctx_, e)).second) continue;
      if (++visits > kMaxVisits || run.stop()) return false;
      if (!e.is_app()) continue;
      if (e.num_args() == 0) {
        auto it = which.find(Z3_get_ast_id(*ctx_, e));
        if (it == which.end()) continue;
        if (reads != ints.size() && reads != it->second) return false;  // two integers: not separable
        reads = it->second;
      }
      for (unsigned k = 0; k < e.num_args(); ++k)
        stack.push_back(e.arg(k));
    }
    groups[reads].push_back(t);
  }
  z3::expr rest = groups[ints.size()].empty() ? (d.is_int() ? ctx_->int_val(0) : ctx_->real_val(0))
                                              : z3::sum(groups[ints.size()]);
  for (size_t i = 0; i < ints.size(); ++i) {
    if (groups[i].empty()) continue;
    z3::expr g = z3::sum(groups[i]);
    z3::expr_vector from(*ctx_), lo(*ctx_);
    from.push_back(src[static_cast<int>(i)]);
    lo.push_back(ctx_->int_val(slots[ints[i]].lo));
    z3::expr atLo = g.substitute(from, lo);
    for (int64_t value = slots[ints[i]].lo + 1; value < slots[ints[i]].hi; ++value) {
      if (run.stop()) return false;
      z3::expr_vector at(*ctx_);
      at.push_back(ctx_->int_val(value));
      z3::expr instance = g;
      if (!isZero((instance.substitute(from, at) - atLo).simplify(p))) return false;
    }
    rest = rest + atLo;
  }
  return isZero(rest.simplify(p));
}

std::vector<double> Z3Proof::readModel(const Run& run, const z3::model& m, const Z3Encoding& enc) {
  const auto& vars = run.problem.pool.vars();
  std::vector<double> values(vars.size());
  for (size_t v = 0; v < vars.size(); ++v)
    values[v] = defaultValue(vars[v]);
  for (const auto& [index, x] : enc.variables())
    values[index] = toDouble(m.eval(x, true));
  return values;
}

// Pin inputs one by one to 0, 1, -1, 2 while the query stays sat, within a bounded number of checks.
void Z3Proof::minimise(const Run& run, z3::solver& s, const Z3Encoding& enc, std::vector<double>& values) {
  z3::context& ctx = *ctx_;
  const auto until =
      std::min(run.deadline, Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                std::chrono::duration<double>(options_.minimiseSeconds)));
  z3::model model = s.get_model();
  // A minimising check that runs long is interrupted by the engine; the values found so far remain a model.
  if (run.interruptAt) run.interruptAt->store(until.time_since_epoch().count());
  int checks = 0;
  for (const auto& [index, x] : enc.variables()) {
    if (checks >= options_.minimiseChecks || Clock::now() >= until || run.budget.cancelled()) break;
    const sym::VarSlot& info = run.problem.pool.vars()[index];
    std::vector<z3::expr> candidates;
    if (info.sort == sym::Sort::Bool) {
      candidates = {ctx.bool_val(false)};
    } else if (info.sort == sym::Sort::Int) {
      for (int64_t c : {int64_t{0}, int64_t{1}, int64_t{-1}, int64_t{2}})
        if (info.hi <= info.lo || (c >= info.lo && c < info.hi)) candidates.push_back(ctx.int_val(c));
      if (candidates.empty()) candidates.push_back(ctx.int_val(info.lo));
    } else {
      for (int c : {0, 1, -1, 2})
        candidates.push_back(ctx.real_val(c));
    }
    for (const z3::expr& c : candidates) {
      z3::expr pin = x == c;
      if (model.eval(pin, true).is_true()) {
        s.add(pin);  // the current model already satisfies it: free
        break;
      }
      if (checks >= options_.minimiseChecks || Clock::now() >= until) return;
      ++checks;
      s.push();
      s.add(pin);
      const z3::check_result res = s.check();
      if (res == z3::sat) {
        model = s.get_model();
        values = readModel(run, model, enc);
        break;
      }
      s.pop();
      // Interrupted (the engine fires once at `until`): every further check would run unbounded.
      if (res == z3::unknown) return;
    }
  }
}

Result Z3Proof::counterexample(const Run& run, z3::solver& s, const Z3Encoding& enc) {
  Result r;
  const std::vector<double> first = readModel(run, s.get_model(), enc);
  std::vector<double> small = first;
  try {
    minimise(run, s, enc, small);
  } catch (const z3::exception&) {
    // Interrupted while minimising: the values found so far are still a model.
  }
  for (const std::vector<double>* values : {&std::as_const(small), &first}) {
    auto mismatches = concreteMismatches(run.problem, *values);
    if (mismatches.empty()) continue;
    r.status = Status::Failed;
    r.reason = "counterexample: " + std::to_string(mismatches.size()) + " of " +
               std::to_string(run.problem.obligations.size()) +
               " outputs differ (confirmed in double precision)";
    r.cex = Counterexample{*values, std::move(mismatches), true};
    return r;
  }
  r.status = Status::Inconclusive;
  r.reason =
      run.scope.functions.empty()
          ? "counterexample not confirmed: re-evaluated in double precision, outputs agree up to rounding"
          : "spurious counterexample: relies on uninterpreted " + functionNames(run.scope.functions) +
                " (re-evaluated concretely, outputs agree)";
  r.cex = Counterexample{std::move(small), {}, false};
  return r;
}

namespace {
std::string describeObligation(const Obligation& ob) {
  std::string at;
  for (int64_t i : ob.index)
    at += (at.empty() ? "" : ",") + std::to_string(i);
  return ob.logicalTensor + "[" + at + "] (checked on " +
         (ob.device == kNone ? ob.tensor : "device " + std::to_string(ob.device) + " " + ob.tensor) + ")";
}
}  // namespace

Result Z3Proof::premises(const Run& run) {
  z3::context& ctx = *ctx_;
  Result r;
  Z3Encoding enc(ctx, run.problem.pool);
  if (!enc.translate(run.scope, [&] { return run.stop(); })) return r;
  // One guard per distinct term (rows of a softmax share theirs), with the first obligation it guards.
  std::vector<std::pair<z3::expr, size_t>> guards;
  std::vector<unsigned> seen;
  for (size_t i : run.scope.open) {
    z3::expr g = enc.defined(run.problem.obligations[i].expected);
    const unsigned id = Z3_get_ast_id(ctx, g);
    if (std::find(seen.begin(), seen.end(), id) != seen.end()) continue;
    seen.push_back(id);
    guards.push_back({g, i});
  }
  z3::solver s = makeSolver();
  for (const z3::expr& c : enc.sideConditions())
    s.add(c);
  auto check = [&](const z3::expr& g) {
    s.push();
    s.add(g);
    const z3::check_result res = s.check();
    s.pop();
    return res;
  };
  // All guards at once first: the common case (a model defined almost everywhere) costs one query.
  z3::expr_vector all(ctx);
  for (const auto& [g, i] : guards)
    all.push_back(g);
  if (guards.empty() || check(z3::mk_and(all)) != z3::sat)
    for (const auto& [g, i] : guards) {
      if (run.stop()) return r;
      const z3::check_result res = check(g);
      if (res == z3::sat) continue;
      const std::string what = describeObligation(run.problem.obligations[i]);
      r.reason = res == z3::unsat
                     ? "vacuous obligation: the logical value of " + what +
                           " is undefined for every input the premises allow (a divisor of the model is zero "
                           "wherever the integer inputs are in range): the model itself is broken there, and "
                           "no plan can be proved equal to it"
                     : "cannot tell whether the logical value of " + what +
                           " is defined for any input (z3 returned unknown: " + s.reason_unknown() + ")";
      return r;
    }
  r.status = Status::Verified;
  r.reason = "premises hold with each of " + std::to_string(guards.size()) + " distinct definedness guards";
  return r;
}

Result Z3Proof::decide(const Run& run) {
  z3::context& ctx = *ctx_;
  Result r;
  Z3Encoding enc(ctx, run.problem.pool);
  if (!enc.translate(run.scope, [&] { return run.stop(); })) return r;  // the caller names the cause
  std::vector<size_t> pending = run.scope.open;
  if (options_.strategy == Z3Options::Strategy::Presimplify)
    pending = presimplify(run, enc, std::move(pending));
  z3::solver s = makeSolver();
  for (const z3::expr& c : enc.sideConditions())
    s.add(c);
  const size_t chunk = std::max<size_t>(1, options_.chunk);
  for (size_t from = 0; from < pending.size(); from += chunk) {
    if (run.stop()) return r;
    z3::expr_vector differ(ctx);
    for (size_t k = from; k < std::min(pending.size(), from + chunk); ++k) {
      const Obligation& ob = run.problem.obligations[pending[k]];
      bool same = run.problem.pool.sort(ob.expected) == run.problem.pool.sort(ob.actual);
      // guard_i => expected_i == actual_i: a division guard weakens only its own obligation.
      differ.push_back(enc.defined(ob.expected) &&
                       (same ? enc.term(ob.expected) != enc.term(ob.actual)
                             : enc.realTerm(ob.expected) != enc.realTerm(ob.actual)));
    }
    s.push();
    s.add(z3::mk_or(differ));
    switch (s.check()) {
      case z3::unsat:
        s.pop();
        break;
      case z3::sat:
        return counterexample(run, s, enc);
      case z3::unknown:
        r.reason = "z3 returned unknown: " + s.reason_unknown();
        return r;
    }
  }
  r.status = Status::Verified;
  r.reason =
      "proved for all real inputs: " + std::to_string(run.scope.open.size()) + " obligations (" +
      std::to_string(run.problem.obligations.size() - run.scope.open.size()) +
      " more identical by construction" +
      (run.scope.functions.empty() ? "" : "; " + functionNames(run.scope.functions) + " uninterpreted") + ")";
  return r;
}

}  // namespace paraproof::solver
