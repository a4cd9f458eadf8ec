// The two engines on hand-built problems: identities are proved, bugs come with concrete counterexamples,
// and a difference that only exists in the uninterpreted abstraction is never reported as a bug.
#include <QtTest>

#include <atomic>
#include <chrono>
#include <thread>

#include "core/solver/engine.h"
#include "core/solver/normalize.h"
#include "core/solver/z3_engine.h"

using namespace paraproof;
using solver::Status;

namespace {

// A problem under construction: declare inputs, then add "expected == actual" obligations.
struct Builder {
  solver::Problem p;
  sym::ExprPool& e = p.pool;
  sym::ExprId real(const std::string& name) { return e.var({name, sym::Sort::Real}); }
  sym::ExprId integer(const std::string& name, int64_t lo, int64_t hi) {
    return e.var({name, sym::Sort::Int, lo, hi});
  }
  void expect(sym::ExprId expected, sym::ExprId actual) {
    solver::Obligation ob;
    ob.expected = expected;
    ob.actual = actual;
    p.obligations.push_back(ob);
  }
};

solver::Result runZ3(const solver::Problem& p, double timeout = 30) {
  return solver::makeZ3Engine()->check(p, {timeout, nullptr});
}
solver::Result runField(const solver::Problem& p) {
  return solver::makeFieldEngine(4, 42)->check(p, {30, nullptr});
}

// A confirmed counterexample must really separate the two sides when evaluated independently.
bool reallyDiffers(const solver::Problem& p, const solver::Counterexample& cex) {
  auto v = solver::evaluateReal(p.pool, cex.vars);
  if (cex.mismatches.empty()) return false;
  for (const auto& m : cex.mismatches) {
    const auto& ob = p.obligations[m.obligation];
    if (solver::nearlyEqual(v[ob.expected], v[ob.actual])) return false;
  }
  return true;
}

// sum_v [id == v] * w_v over a vocabulary [from, from + size), with the table entries w[offset + j].
sym::ExprId lookup(Builder& b, sym::ExprId id, const std::vector<sym::ExprId>& w, int64_t from, int64_t size,
                   int64_t offset) {
  std::vector<sym::ExprId> terms;
  for (int64_t j = 0; j < size; ++j)
    terms.push_back(
        b.e.ite(b.e.eq(id, b.e.integer(from + j)), w[static_cast<size_t>(offset + j)], b.e.zero()));
  return b.e.add(terms);
}

// prod_i (x_i + y_i) against the same product with its first two factors multiplied out, `copies` times over
// fresh inputs: each is true, and a proof by normalisation expands 2^n monomials per copy (seconds in total).
solver::Problem hardIdentities(int n, int copies) {
  Builder b;
  for (int c = 0; c < copies; ++c) {
    std::vector<sym::ExprId> factors, x, y;
    for (int i = 0; i < n; ++i) {
      x.push_back(b.real("x" + std::to_string(c) + "_" + std::to_string(i)));
      y.push_back(b.real("y" + std::to_string(c) + "_" + std::to_string(i)));
      factors.push_back(b.e.add(x[i], y[i]));
    }
    auto expanded =
        b.e.add({b.e.mul(x[0], x[1]), b.e.mul(x[0], y[1]), b.e.mul(y[0], x[1]), b.e.mul(y[0], y[1])});
    std::vector<sym::ExprId> rest(factors.begin() + 2, factors.end());
    rest.push_back(expanded);
    b.expect(b.e.mul(factors), b.e.mul(rest));
  }
  return std::move(b.p);
}

// "x^2 == 2 y^2 has no solution in positive integers": true (sqrt 2 is irrational), and beyond Z3's
// nonlinear integer arithmetic, which neither proves it nor finds a model. A problem that no machine decides,
// so tests of timeouts and cancellation do not depend on the machine's speed.
solver::Problem undecidable() {
  Builder b;
  const int64_t hi = int64_t{1} << 40;
  auto x = b.integer("x", 1, hi), y = b.integer("y", 1, hi);
  auto square = [&](sym::ExprId v) { return b.e.mul(v, v); };
  auto rational = b.e.eq(square(x), b.e.mul(b.e.integer(2), square(y)));
  b.expect(b.e.zero(), b.e.ite(rational, b.e.one(), b.e.zero()));
  return std::move(b.p);
}

}  // namespace

class TestEngines : public QObject {
  Q_OBJECT
 private slots:
  void polynomialIdentityIsProvedByBoth() {
    Builder b;
    auto x = b.real("x"), y = b.real("y");
    auto s = b.e.add(x, y);
    b.expect(b.e.mul(s, s), b.e.add({b.e.mul(x, x), b.e.mul({b.e.real(2), x, y}), b.e.mul(y, y)}));
    auto z3 = runZ3(b.p);
    QCOMPARE(z3.status, Status::Verified);
    QCOMPARE(z3.engine, std::string("z3"));
    auto field = runField(b.p);
    QCOMPARE(field.status, Status::Verified);
    QCOMPARE(field.engine, std::string("random"));
    QVERIFY2(field.reason.find("random field trials") != std::string::npos, field.reason.c_str());
  }

  void offByOneProductFailsWithConfirmedCounterexample() {
    Builder b;
    auto a = b.real("a"), c = b.real("c");
    b.expect(b.e.mul(a, c), b.e.add(b.e.mul(a, c), b.e.one()));
    for (auto r : {runZ3(b.p), runField(b.p)}) {
      QCOMPARE(r.status, Status::Failed);
      QVERIFY(r.cex && r.cex->confirmed);
      QCOMPARE(r.cex->vars.size(), size_t{2});
      QVERIFY(reallyDiffers(b.p, *r.cex));
    }
  }

  // A bool input is an integer read as `!= 0`; one that indexes nothing is unbounded. Masked where it is 0,
  // a difference shows only on elements drawn 0: the random engine must draw them (it drew from a window of
  // 2^16 values around 0 only, so every mask stayed set and a wrongly shifted padded sequence agreed).
  void unboundedMasksAreDrawnZeroToo() {
    Builder b;
    std::vector<sym::ExprId> expected, actual;
    for (int i = 0; i < 8; ++i) {
      auto keep = b.e.lnot(b.e.eq(b.integer("pad" + std::to_string(i), 0, 0), b.e.integer(0)));
      auto x = b.real("x" + std::to_string(i));
      expected.push_back(b.e.ite(keep, x, b.e.zero()));
      actual.push_back(b.e.ite(keep, x, b.e.scale(x, 0.5)));
    }
    b.expect(b.e.add(expected), b.e.add(actual));
    const solver::Result r = runField(b.p);
    QCOMPARE(r.status, Status::Failed);
    QVERIFY(r.cex && r.cex->confirmed);
    QVERIFY(reallyDiffers(b.p, *r.cex));
  }

  void functionsOfEqualArgumentsAreEqual() {
    // exp(2(x+y)) vs exp(2x+2y): different terms, equal arguments; congruence proves it.
    Builder b;
    auto x = b.real("x"), y = b.real("y");
    auto two = b.e.real(2);
    auto lhs = b.e.apply(sym::Fn::Exp, {b.e.mul(two, b.e.add(x, y))});
    auto rhs = b.e.apply(sym::Fn::Exp, {b.e.add(b.e.mul(two, x), b.e.mul(two, y))});
    QVERIFY(lhs != rhs);
    b.expect(lhs, rhs);
    QCOMPARE(runZ3(b.p).status, Status::Verified);
    QCOMPARE(runField(b.p).status, Status::Verified);
  }

  void identityOfTheRealFunctionIsInconclusiveNotAFailure() {
    // exp(x)*exp(y) == exp(x+y) holds for exp but not for every function: both engines see a "difference"
    // that concrete evaluation refutes, so neither may call it a bug.
    Builder b;
    auto x = b.real("x"), y = b.real("y");
    b.expect(b.e.apply(sym::Fn::Exp, {b.e.add(x, y)}),
             b.e.mul(b.e.apply(sym::Fn::Exp, {x}), b.e.apply(sym::Fn::Exp, {y})));
    auto z3 = runZ3(b.p);
    QCOMPARE(z3.status, Status::Inconclusive);
    QVERIFY2(z3.reason.find("spurious counterexample: relies on uninterpreted exp") != std::string::npos,
             z3.reason.c_str());
    QVERIFY(z3.cex && !z3.cex->confirmed);
    auto field = runField(b.p);
    QCOMPARE(field.status, Status::Inconclusive);
    QVERIFY2(field.reason.find("not reproduced in doubles") != std::string::npos, field.reason.c_str());
  }

  void maxIsAssociative() {
    Builder b;
    auto a = b.real("a"), c = b.real("c"), d = b.real("d");
    b.expect(b.e.max(b.e.max(a, c), d), b.e.max(a, b.e.max(c, d)));
    QCOMPARE(runZ3(b.p).status, Status::Verified);
    QCOMPARE(runField(b.p).status, Status::Verified);
  }

  // A vocab-sharded softmax row: each shard's local max, the all-reduced max of maxima, local sums of exp
  // shifted by it, an all-reduced sum. Proved by every engine; a shard dropping an element is caught.
  void shardedSoftmaxIsProvedAndItsBugCaught() {
    for (bool bug : {false, true}) {
      Builder b;
      std::vector<sym::ExprId> x;
      for (int i = 0; i < 6; ++i)
        x.push_back(b.real("x" + std::to_string(i)));
      auto softmax = [&](sym::ExprId m, const std::vector<sym::ExprId>& sum, int i) {
        return b.e.div(b.e.apply(sym::Fn::Exp, {b.e.sub(x[i], m)}), b.e.add(sum));
      };
      auto m = b.e.max(x);
      std::vector<sym::ExprId> all;
      for (int i = 0; i < 6; ++i)
        all.push_back(b.e.apply(sym::Fn::Exp, {b.e.sub(x[i], m)}));
      auto shardMax = b.e.max(b.e.max({x[0], x[1], x[2]}), b.e.max({x[3], x[4], x[5]}));
      std::vector<sym::ExprId> parts;
      for (int i = 0; i < 6; ++i)
        if (!(bug && i == 5)) parts.push_back(b.e.apply(sym::Fn::Exp, {b.e.sub(x[i], shardMax)}));
      for (int i = 0; i < 6; ++i)
        b.expect(softmax(m, all, i), softmax(shardMax, parts, i));
      auto nf = solver::proveByNormalisation(b.p, {10, nullptr});
      QCOMPARE(nf.provedCount, bug ? size_t{0} : b.p.obligations.size());
      auto z3 = runZ3(b.p);
      QCOMPARE(z3.status, bug ? Status::Failed : Status::Verified);
      QCOMPARE(runField(b.p).status, bug ? Status::Failed : Status::Verified);
      if (bug) QVERIFY(z3.cex && z3.cex->confirmed && reallyDiffers(b.p, *z3.cex));
    }
  }

  void fieldComparisonsFollowTheNumericOrder() {
    // max(a,b)+c == max(a+c,b+c) needs an order that respects addition: the numeric one does.
    Builder b;
    auto a = b.real("a"), c = b.real("c"), d = b.real("d");
    b.expect(b.e.add(b.e.max(a, c), d), b.e.max(b.e.add(a, d), b.e.add(c, d)));
    QCOMPARE(runZ3(b.p).status, Status::Verified);
    auto f = runField(b.p);
    QVERIFY2(f.status == Status::Verified, f.reason.c_str());
    QVERIFY2(f.reason.find("random testing") != std::string::npos, f.reason.c_str());
  }

  // Trust hole 6: min(a, a+3) is a. A keyed random order called it a+3 for some keys; whatever the seed,
  // the numeric order does not, and a wrong max operand is caught too.
  void wrongMinMaxIsCaughtForEverySeed() {
    for (uint64_t seed = 1; seed <= 64; ++seed) {
      Builder b;
      auto a = b.real("a"), c = b.real("c");
      auto a3 = b.e.add(a, b.e.real(3));
      b.expect(a3, b.e.min(a, a3));
      b.expect(b.e.max(a, c), b.e.max(a, b.e.sub(c, b.e.one())));
      auto r = solver::makeFieldEngine(2, seed)->check(b.p, {30, nullptr});
      QVERIFY2(r.status == Status::Failed, (std::to_string(seed) + ": " + r.reason).c_str());
      QVERIFY(r.cex && r.cex->confirmed && reallyDiffers(b.p, *r.cex));
      // The correct forms agree: max(a, b) = -min(-a, -b), relu(x) = max(x, 0) = ite(0 < x, x, 0).
      Builder g;
      auto x = g.real("x"), y = g.real("y");
      g.expect(g.e.max(x, y), g.e.neg(g.e.min(g.e.neg(x), g.e.neg(y))));
      g.expect(g.e.max(x, g.e.zero()), g.e.ite(g.e.lt(g.e.zero(), x), x, g.e.zero()));
      auto ok = solver::makeFieldEngine(2, seed)->check(g.p, {30, nullptr});
      QVERIFY2(ok.status == Status::Verified, (std::to_string(seed) + ": " + ok.reason).c_str());
    }
  }

  // Trust hole 4: the guard d != 0 of one obligation (a/d) must not make another one's d/d equal 1.
  void divisionGuardsArePerObligation() {
    Builder b;
    auto a = b.real("a"), c = b.real("c"), d = b.real("d");
    b.expect(b.e.div(a, d), b.e.div(b.e.add(a, a), b.e.add(d, d)));  // equal wherever the model is defined
    auto s = b.e.add(a, c);
    b.expect(s, b.e.mul(s, b.e.div(d, d)));  // undefined at d = 0, where the model is not
    auto z3 = runZ3(b.p);
    QCOMPARE(z3.status, Status::Failed);
    QVERIFY(z3.cex && z3.cex->confirmed && reallyDiffers(b.p, *z3.cex));
    QCOMPARE(z3.cex->vars[2], 0.0);
    // Random points never hit d = 0: the field engine must not claim the second obligation.
    auto f = runField(b.p);
    QVERIFY2(f.status == Status::Inconclusive, f.reason.c_str());
    QVERIFY2(f.reason.find("divides by") != std::string::npos, f.reason.c_str());
    // Without the second obligation both engines prove the first (a divisor 2d has the zeros of d).
    b.p.obligations.pop_back();
    QCOMPARE(runZ3(b.p).status, Status::Verified);
    auto g = runField(b.p);
    QVERIFY2(g.status == Status::Verified, g.reason.c_str());
  }

  // A logical side undefined for every input makes its obligation vacuous: the engines prove any device
  // value for it, so their "verified" counts only when the premises and each guard can hold.
  void vacuousGuardsAreNoProof() {
    Builder b;
    auto x = b.real("x"), y = b.real("y");
    auto never = b.e.div(x, b.e.sub(x, x));  // x / (x - x): undefined everywhere, not a constant divisor
    QVERIFY(!b.e.isConst(b.e.sub(x, x)));
    b.expect(never, b.e.mul(b.e.real(3), y));       // any device value
    QCOMPARE(runZ3(b.p).status, Status::Verified);  // vacuously: no input where the guard holds
    QVERIFY(solver::proveByNormalisation(b.p, {10, nullptr}).provedCount == 0);
    auto v = solver::checkPremises(b.p, {30, nullptr});
    QCOMPARE(v.status, Status::Inconclusive);
    QVERIFY2(v.reason.find("vacuous") != std::string::npos, v.reason.c_str());
    // Identical sides are no exception: nothing holds where nothing is defined.
    Builder same;
    auto z = same.real("z");
    auto q = same.e.div(z, same.e.sub(z, z));
    same.expect(q, q);
    QCOMPARE(solver::checkPremises(same.p, {30, nullptr}).status, Status::Inconclusive);
    // A guard that only the integer premises make unsatisfiable: 1 / (i - 3) with i in [3, 4).
    Builder ranged;
    auto i = ranged.integer("i", 3, 4);
    auto inv = ranged.e.div(ranged.e.one(), ranged.e.toReal(ranged.e.sub(i, ranged.e.integer(3))));
    ranged.expect(inv, ranged.e.zero());
    QCOMPARE(runZ3(ranged.p).status, Status::Verified);
    QCOMPARE(solver::checkPremises(ranged.p, {30, nullptr}).status, Status::Inconclusive);
    // Satisfiable guards (and obligations without division) pass; a guard of one obligation is checked
    // alone, not together with another's (1/x and 1/(x - 1) each can be defined, and are together too).
    Builder fine;
    auto u = fine.real("u"), w = fine.real("w");
    fine.expect(fine.e.div(u, w), fine.e.div(fine.e.add(u, u), fine.e.add(w, w)));
    fine.expect(fine.e.div(u, fine.e.sub(w, fine.e.one())), u);
    fine.expect(fine.e.add(u, w), fine.e.add(w, u));
    auto ok = solver::checkPremises(fine.p, {30, nullptr});
    QVERIFY2(ok.status == Status::Verified, ok.reason.c_str());
    // Guards that cannot hold together but each can: no obligation is vacuous.
    Builder apart;
    auto t = apart.real("t");
    auto pos = apart.e.lt(apart.e.zero(), t);
    apart.expect(apart.e.ite(pos, apart.e.div(t, t), apart.e.div(t, apart.e.sub(t, t))), apart.e.one());
    apart.expect(apart.e.ite(pos, apart.e.div(t, apart.e.sub(t, t)), apart.e.div(t, t)), apart.e.one());
    auto each = solver::checkPremises(apart.p, {30, nullptr});
    QVERIFY2(each.status == Status::Verified, each.reason.c_str());
  }

  // Integer constants beyond int64 are not folded (nor wrapped) by the pool; the field engine must not wrap
  // them either: i * 2^62 * 4 == 0 only at i = 0 over the integers, always with 64-bit wrap-around.
  // A token count all-reduced in parts and divided by: its real value is read by its normal form (integers
  // embed in the reals as a ring), so `loss / (count0 + count1)` is `loss / count` with no search; a count
  // that differs (one part only) is not proved equal, and the random engine shows it.
  void integerCountsInRealsAreNormalised() {
    Builder b;
    auto l = b.real("l");
    std::vector<sym::ExprId> ids;
    for (int k = 0; k < 4; ++k)
      ids.push_back(b.integer("t" + std::to_string(k), -1, 3));
    auto kept = [&](int from, int to) {  // how many of ids[from..to) are not the ignored -1
      std::vector<sym::ExprId> terms;
      for (int k = from; k < to; ++k)
        terms.push_back(b.e.ite(b.e.eq(ids[k], b.e.integer(-1)), b.e.integer(0), b.e.integer(1)));
      return b.e.add(terms);
    };
    auto whole = b.e.toReal(kept(0, 4));
    auto parts = b.e.add({b.e.toReal(kept(0, 2)), b.e.toReal(kept(2, 4))});
    b.expect(b.e.div(l, whole), b.e.div(l, parts));
    QCOMPARE(solver::proveByNormalisation(b.p, {10, nullptr}).provedCount, size_t{1});
    Builder c;
    auto l2 = c.real("l");
    auto i = c.integer("i", 0, 3), j = c.integer("j", 0, 3);
    c.expect(c.e.div(l2, c.e.toReal(c.e.add({i, j}))), c.e.div(l2, c.e.toReal(i)));
    QCOMPARE(solver::proveByNormalisation(c.p, {10, nullptr}).provedCount, size_t{0});
    QCOMPARE(runField(c.p).status, Status::Failed);
  }

  void integerArithmeticIsNeverWrapped() {
    Builder b;
    auto i = b.integer("i", 0, 8);
    auto a = b.real("a"), c = b.real("c");
    auto wrapsToZero = b.e.eq(b.e.mul({i, b.e.integer(int64_t{1} << 62), b.e.integer(4)}), b.e.integer(0));
    b.expect(b.e.ite(wrapsToZero, a, c), a);
    auto z3 = runZ3(b.p);
    QCOMPARE(z3.status, Status::Failed);
    auto f = runField(b.p);
    QVERIFY2(f.status != Status::Verified, f.reason.c_str());
  }

  void z3MemoryLimitIsInconclusive() {
    solver::Z3Options o;
    o.maxMemoryMb = 1;  // far below what any context needs: the solver gives up at once
    auto r = solver::makeZ3Engine(o)->check(undecidable(), {600, nullptr});
    QCOMPARE(r.status, Status::Inconclusive);
    QVERIFY2(r.reason.find("memory limit") != std::string::npos, r.reason.c_str());
  }

  // Abandoned proofs are joined, not detached: after the timeout tests every helper thread ends.
  void helperThreadsAreJoined() {
    for (int i = 0; i < solver::kMaxAbandonedProofs + 2; ++i) {
      auto r = solver::makeZ3Engine()->check(undecidable(), {0.05, nullptr});
      QCOMPARE(r.status, Status::Inconclusive);
    }
    QCOMPARE(solver::stopZ3Helpers(600), 0);
  }

  void vocabShardedEmbeddingMatchesOneHot() {
    for (int64_t wrongOffset : {0, 1}) {
      constexpr int64_t kVocab = 8, kShard = 4;
      Builder b;
      std::vector<sym::ExprId> w;
      for (int64_t v = 0; v < kVocab; ++v)
        w.push_back(b.real("w[" + std::to_string(v) + "]"));
      for (int t = 0; t < 2; ++t) {
        auto id = b.integer("id[" + std::to_string(t) + "]", 0, kVocab);
        // Shard k holds rows [k*4, k*4+4) and looks up the local id (id - offset) in its own rows.
        std::vector<sym::ExprId> parts;
        for (int64_t k = 0; k < 2; ++k) {
          int64_t offset = k * kShard + (k == 1 ? wrongOffset : 0);
          auto local = b.e.sub(id, b.e.integer(offset));
          std::vector<sym::ExprId> rows(w.begin() + k * kShard, w.begin() + (k + 1) * kShard);
          parts.push_back(lookup(b, local, rows, 0, kShard, 0));
        }
        b.expect(lookup(b, id, w, 0, kVocab, 0), b.e.add(parts));
      }
      for (auto r : {runZ3(b.p), runField(b.p)}) {
        if (wrongOffset == 0) {
          QVERIFY2(r.status == Status::Verified, (r.engine + ": " + r.reason).c_str());
        } else {
          QVERIFY2(r.status == Status::Failed, (r.engine + ": " + r.reason).c_str());
          QVERIFY(r.cex && r.cex->confirmed && reallyDiffers(b.p, *r.cex));
        }
      }
    }
  }

  // Z3's presimplification enumerates the integers an obligation reads when their ranges are small
  // (z3_proof.cpp, splitsToZero): each instance must fold to 0, and a difference at any one value, the
  // last included, leaves the obligation to the search, which finds it.
  void integerCaseSplitCoversTheWholeRange() {
    for (bool wrongAtLast : {false, true}) {
      Builder b;
      auto x = b.real("x"), y = b.real("y");
      auto i = b.integer("i", 0, 5), j = b.integer("j", 0, 3);
      auto pick = [&](sym::ExprId k) {  // a one-hot pick of x (k even) or y (k odd), written two ways
        return b.e.add(b.e.ite(b.e.eq(k, b.e.integer(0)), x, b.e.zero()),
                       b.e.add(b.e.ite(b.e.eq(k, b.e.integer(2)), x, b.e.zero()),
                               b.e.ite(b.e.eq(k, b.e.integer(4)), x, b.e.zero())));
      };
      auto odd = b.e.lor(b.e.eq(i, b.e.integer(1)), b.e.eq(i, b.e.integer(3)));
      auto last = wrongAtLast ? b.e.mul(b.e.real(2), x) : x;
      auto other = b.e.ite(b.e.eq(i, b.e.integer(4)), last, x);
      b.expect(b.e.add(pick(i), b.e.ite(odd, y, b.e.zero())), b.e.ite(odd, y, other));
      b.expect(b.e.mul(pick(j), y), b.e.mul(b.e.ite(b.e.eq(j, b.e.integer(1)), b.e.zero(), x), y));
      auto r = runZ3(b.p);
      if (!wrongAtLast) {
        QVERIFY2(r.status == Status::Verified, r.reason.c_str());
      } else {
        QVERIFY2(r.status == Status::Failed, r.reason.c_str());
        QVERIFY(r.cex && r.cex->confirmed && reallyDiffers(b.p, *r.cex));
      }
    }
  }

  // Past the enumeration bound, a difference that is a sum of terms each reading one integer (an embedding
  // table's gradient row: a term per token, reading that token's id) is checked integer by integer
  // (z3_proof.cpp, separableToZero): 8 ids of 6 values each are 6^8 assignments but 8 * 6 instances. The
  // vocabulary-parallel form proves; the same with the masked tokens' gradients not zeroed (they land on the
  // rank's row 0) is found by the search.
  void separableIntegerSumsAreCheckedPerInteger() {
    for (bool zeroed : {true, false}) {
      Builder b;
      sym::ExprId model = b.e.zero(), shard = b.e.zero();
      for (int t = 0; t < 8; ++t) {
        auto id = b.integer("id" + std::to_string(t), 0, 6);
        auto g = b.e.mul(b.real("x" + std::to_string(t)), b.real("y" + std::to_string(t)));
        model = b.e.add(model, b.e.ite(b.e.eq(id, b.e.integer(2)), g, b.e.zero()));  // row 2 of the table
        // The rank holding rows [2, 4): its local row 0, ids outside masked to 0 (and their gradient zeroed).
        auto outside = b.e.lor(b.e.lt(id, b.e.integer(2)), b.e.le(b.e.integer(4), id));
        auto local = b.e.ite(outside, b.e.integer(0), b.e.sub(id, b.e.integer(2)));
        auto grad = zeroed ? b.e.ite(outside, b.e.zero(), g) : g;
        shard = b.e.add(shard, b.e.ite(b.e.eq(local, b.e.integer(0)), grad, b.e.zero()));
      }
      b.expect(model, shard);
      auto r = runZ3(b.p);
      if (zeroed) {
        QVERIFY2(r.status == Status::Verified, r.reason.c_str());
      } else {
        QVERIFY2(r.status == Status::Failed, r.reason.c_str());
        QVERIFY(r.cex && r.cex->confirmed && reallyDiffers(b.p, *r.cex));
      }
    }
  }

  void divisionIsRealDivisionWhereTheModelIsDefined() {
    Builder b;
    auto a = b.real("a"), d = b.real("d");
    auto roundTrip = b.e.mul(b.e.div(a, d), d);
    // The model divides by d: the theorem only covers d != 0, where a/d*d == a.
    b.expect(roundTrip, a);
    QCOMPARE(runZ3(b.p).status, Status::Verified);
    QCOMPARE(runField(b.p).status, Status::Verified);
    // The plan divides by d where the model does not: at d = 0 the plan yields NaN, a real bug.
    Builder c;
    auto a2 = c.real("a"), d2 = c.real("d");
    c.expect(a2, c.e.mul(c.e.div(a2, d2), d2));
    auto z3 = runZ3(c.p);
    QCOMPARE(z3.status, Status::Failed);
    QVERIFY(z3.cex && z3.cex->confirmed);
    QCOMPARE(z3.cex->vars[1], 0.0);
    QCOMPARE(runField(c.p).status, Status::Inconclusive);  // measure zero: out of reach of random points
  }

  void counterexamplesAreMinimised() {
    // A dot product where one term reads the wrong element: only a few inputs matter.
    Builder b;
    std::vector<sym::ExprId> x, y;
    for (int i = 0; i < 8; ++i) {
      x.push_back(b.real("x" + std::to_string(i)));
      y.push_back(b.real("y" + std::to_string(i)));
    }
    std::vector<sym::ExprId> good, bad;
    for (int i = 0; i < 8; ++i) {
      good.push_back(b.e.mul(x[i], y[i]));
      bad.push_back(b.e.mul(x[i], y[i == 3 ? 4 : i]));
    }
    b.expect(b.e.add(good), b.e.add(bad));
    auto r = runZ3(b.p);
    QCOMPARE(r.status, Status::Failed);
    QVERIFY(r.cex && reallyDiffers(b.p, *r.cex));
    int small = 0;
    for (double v : r.cex->vars)
      small += (v == 0 || v == 1);
    QVERIFY2(small >= 14, QByteArray::number(small));
  }

  void timeoutIsInconclusive() {
    auto p = undecidable();
    auto engine = solver::makeZ3Engine();
    auto r = engine->check(p, {0.2, nullptr});
    QCOMPARE(r.status, Status::Inconclusive);
    QVERIFY2(r.reason.find("timeout") != std::string::npos, r.reason.c_str());
    // The same engine (a fresh context behind it) keeps working.
    Builder b;
    auto x = b.real("x");
    b.expect(b.e.add(x, x), b.e.mul(b.e.real(2), x));
    QCOMPARE(engine->check(b.p, {30, nullptr}).status, Status::Verified);
  }

  void cancellationIsPrompt() {
    auto p = undecidable();
    std::atomic<bool> cancel{false};
    std::thread canceller([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      cancel = true;
    });
    // The budget is 600 s, so "cancelled" (not "timeout", not a verdict) shows the flag stopped the solve.
    auto r = solver::makeZ3Engine()->check(p, {600, &cancel});
    canceller.join();
    QCOMPARE(r.status, Status::Inconclusive);
    QCOMPARE(r.reason, std::string("cancelled"));

    std::atomic<bool> already{true};
    auto f = solver::makeFieldEngine()->check(p, {600, &already});
    QCOMPARE(f.status, Status::Inconclusive);
  }

  void fieldEngineDecidesTheHardIdentityZ3FindsHard() {
    auto r = solver::makeFieldEngine()->check(hardIdentities(13, 40), {30, nullptr});
    QCOMPARE(r.status, Status::Verified);
  }
};

QTEST_APPLESS_MAIN(TestEngines)
#include "test_engines.moc"
