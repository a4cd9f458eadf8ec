// The expression pool: hash-consing, exact folding, and concrete evaluation.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/solver/engine.h"
#include "core/sym/expr.h"

using namespace paraproof;

class TestExpr : public QObject {
  Q_OBJECT
 private slots:
  void structurallyEqualTermsShareAnId() {
    sym::ExprPool p;
    auto x = p.var({"x", sym::Sort::Real});
    auto y = p.var({"y", sym::Sort::Real});
    QCOMPARE(p.add(x, y), p.add(y, x));
    QCOMPARE(p.mul(p.add(x, y), x), p.mul(x, p.add(y, x)));
    QVERIFY(p.add(x, y) != p.sub(x, y));
  }
  void sumsOfEveryWidthKeepTheirArgumentsAsThePoolGrows() {
    // A node keeps up to three arguments inline and more on the heap (NodeArgs); both survive the copies
    // and moves of the pool's growth, and equal sums of every width are one node.
    sym::ExprPool p;
    const std::vector<sym::ExprId> x = p.vars("x", {8}, sym::Sort::Real, 0, 0);
    std::vector<sym::ExprId> sums;
    for (size_t n = 2; n <= x.size(); ++n)
      sums.push_back(p.add(std::vector<sym::ExprId>(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(n))));
    for (int i = 0; i < 100000; ++i)  // many new nodes: the node array moves several times
      p.mul(x[0], p.real(i + 2.0));
    for (size_t n = 2; n <= x.size(); ++n) {
      const sym::Node& sum = p.node(sums[n - 2]);
      QCOMPARE(sum.args.size(), n);
      QVERIFY(std::equal(sum.args.begin(), sum.args.end(), x.begin()));
      std::vector<sym::ExprId> reversed(x.rend() - static_cast<std::ptrdiff_t>(n), x.rend());
      QCOMPARE(p.add(reversed), sums[n - 2]);
    }
    sym::Node copy = p.node(sums.back()), small = p.node(sums.front());
    copy.args = small.args;  // heap to inline
    QCOMPARE(copy.args.size(), size_t(2));
    small.args = p.node(sums.back()).args;  // inline to heap
    QVERIFY(std::equal(small.args.begin(), small.args.end(), x.begin(), x.end()));
  }
  void foldsOnlyExactConstants() {
    sym::ExprPool p;
    QCOMPARE(p.mul(p.real(0.5), p.real(0.25)), p.real(0.125));
    // 0.1 * 0.1 is not exactly representable: kept as a product, never rounded.
    QVERIFY(p.mul(p.real(0.1), p.real(0.1)) != p.real(0.1 * 0.1));
  }
  // A fold is exact over the reals or does not happen: a product or quotient that underflows (to 0 or to a
  // rounded subnormal) is kept as a term, so a term nonzero over the reals never vanishes.
  void foldsNeverUnderflow() {
    sym::ExprPool p;
    auto x = p.var({"x", sym::Sort::Real});
    const double tiny = std::ldexp(1.0, -600), least = std::ldexp(1.0, -1074);
    QVERIFY(p.mul(p.real(tiny), p.real(tiny)) != p.zero());
    QVERIFY(!p.isConst(p.mul(p.real(tiny), p.real(tiny))));
    QVERIFY(p.mul({p.real(tiny), p.real(tiny), x}) != p.zero());
    QVERIFY(!p.isConst(p.mul(p.real(tiny), p.mul(p.real(tiny), x)), 0.0));
    QVERIFY(!p.isConst(p.div(p.real(least), p.real(2))));
    // A result below the normal range whose low bits are lost is no fold either.
    const double a = std::ldexp(1.0 + std::ldexp(1.0, -52), -600),
                 b = std::ldexp(1.0 + std::ldexp(1.0, -52), -400);
    QVERIFY(!p.isConst(p.mul(p.real(a), p.real(b))));
    // An exact subnormal result is a fold like any other.
    QCOMPARE(p.mul(p.real(std::ldexp(1.0, -1070)), p.real(std::ldexp(1.0, -4))), p.real(least));
    QCOMPARE(p.div(p.real(std::ldexp(1.0, -1073)), p.real(2)), p.real(least));
    // x / 2^-1074 is x * 2^1074, not x * inf.
    const auto q = p.div(x, p.real(least));
    for (auto a : p.node(q).args)
      QVERIFY(!p.isConst(a) || std::isfinite(p.node(a).value));
    QVERIFY(p.add(p.real(0.1), p.real(0.2)) != p.real(0.1 + 0.2));
    QVERIFY(!p.isConst(p.add(p.real(0.1), p.real(0.2))));
    QCOMPARE(p.add(p.real(0.5), p.real(0.25)), p.real(0.75));
  }
  // Integer constants fold only without overflow, convert to reals only when exact, and compare as integers.
  void integerFoldsAreExact() {
    sym::ExprPool p;
    const int64_t big = int64_t{1} << 62;
    auto i = p.var({"i", sym::Sort::Int});
    QVERIFY(!p.isConst(p.add(p.integer(big), p.integer(big))));
    QCOMPARE(p.node(p.mul({p.integer(big), p.integer(4), i})).args.size(), size_t{3});  // big * 4 kept apart
    QVERIFY(!p.isConst(p.mul(p.integer(big), p.integer(4))));
    QCOMPARE(p.add(p.integer(3), p.integer(4)), p.integer(7));
    const int64_t odd = (int64_t{1} << 53) + 1;  // no double holds it
    QVERIFY(!p.isConst(p.toReal(p.integer(odd))));
    QCOMPARE(p.toReal(p.integer(1 << 20)), p.real(1 << 20));
    QCOMPARE(p.max(p.integer(odd), p.integer(odd - 1)), p.integer(odd));
    QCOMPARE(p.min(p.integer(odd), p.integer(odd - 1)), p.integer(odd - 1));
    QVERIFY(!p.isConst(p.integer(odd), static_cast<double>(odd - 1)));
  }
  void maxAndMinAreFlattenedSortedAndIdempotent() {
    sym::ExprPool p;
    auto a = p.var({"a", sym::Sort::Real}), b = p.var({"b", sym::Sort::Real});
    auto c = p.var({"c", sym::Sort::Real}), d = p.var({"d", sym::Sort::Real});
    // The max of shard maxima is the global max, whatever the grouping: one node.
    QCOMPARE(p.max(p.max(a, b), p.max(c, d)), p.max(p.max(p.max(d, c), b), a));
    QCOMPARE(p.max(a, a), a);
    QCOMPARE(p.max(p.max(a, b), a), p.max(a, b));
    QCOMPARE(p.max(p.max(a, p.real(1)), p.real(3)), p.max(a, p.real(3)));
    QCOMPARE(p.min(p.real(1), p.real(3)), p.real(1));
    QVERIFY(p.max(a, b) != p.min(a, b));
    QVERIFY(p.max(a, b) != p.max(a, c));
    auto hi = p.max({a, b, c, d}), lo = p.min({a, b, c, d});
    auto v = solver::evaluateReal(p, {1.0, 4.0, -2.0, 3.0});  // evaluates the nodes made so far
    QCOMPARE(v[hi], 4.0);
    QCOMPARE(v[lo], -2.0);
  }
  // A large sum (the gradient norm's partials flattened: past the counting sort's threshold) is one node
  // whatever the order of its terms, its arguments ascending with repeated terms kept.
  void largeSumsAreOneNodeInAnyOrder() {
    sym::ExprPool p;
    std::vector<sym::ExprId> xs = p.vars("x", {70000}, sym::Sort::Real), squares;
    for (sym::ExprId x : xs)
      squares.push_back(p.mul(x, x));
    std::vector<sym::ExprId> terms = squares;
    terms.insert(terms.end(), squares.begin(), squares.begin() + 1000);  // 1,000 terms twice
    const sym::ExprId inOrder = p.add(terms);
    std::vector<sym::ExprId> shuffled = terms;
    std::reverse(shuffled.begin(), shuffled.end());
    for (size_t i = 0; i + 7 < shuffled.size(); i += 7)
      std::swap(shuffled[i], shuffled[i + 3]);
    std::vector<sym::ExprId> parts;  // runs summed apart, then together: flattened into one sum
    for (size_t i = 0; i < shuffled.size(); i += 5000)
      parts.push_back(p.add(std::vector<sym::ExprId>(
          shuffled.begin() + static_cast<std::ptrdiff_t>(i),
          shuffled.begin() + static_cast<std::ptrdiff_t>(std::min(i + 5000, shuffled.size())))));
    std::reverse(parts.begin(), parts.end());
    QCOMPARE(p.add(shuffled), inOrder);
    QCOMPARE(p.add(parts), inOrder);
    std::vector<sym::ExprId> expected = terms;
    std::sort(expected.begin(), expected.end());
    QVERIFY(std::ranges::equal(p.node(inOrder).args, expected));
  }
  // 0/b folds to 0 only for a nonzero constant b: 0/d is undefined at d = 0 and 0/0 must stay visible.
  void zeroOverADivisorFoldsOnlyForNonzeroConstants() {
    sym::ExprPool p;
    auto d = p.var({"d", sym::Sort::Real});
    QVERIFY(p.div(p.zero(), p.real(3)) == p.zero());
    QVERIFY(p.node(p.div(p.zero(), d)).kind == sym::Kind::Div);
    QVERIFY(p.node(p.div(p.zero(), p.zero())).kind == sym::Kind::Div);
  }

  // A stop request is seen inside one long construction, not only between ops.
  void growthCheckCanAbandonAConstruction() {
    sym::ExprPool p;
    int calls = 0;
    p.setGrowthCheck([&] {
      if (++calls == 2) throw std::runtime_error("stop");
    });
    bool stopped = false;
    try {
      for (int i = 0; i < 200000; ++i)
        p.var({"x" + std::to_string(i), sym::Sort::Real});
    } catch (const std::runtime_error&) {
      stopped = true;
    }
    QVERIFY(stopped);
    QVERIFY(p.size() < 200000);
  }

  void evaluatesWithRealFunctions() {
    sym::ExprPool p;
    auto x = p.var({"x", sym::Sort::Real});
    auto e = p.add(p.apply(sym::Fn::Exp, {x}), p.max(x, p.real(3)));
    auto v = solver::evaluateReal(p, {2.0});
    QVERIFY(solver::nearlyEqual(v[e], std::exp(2.0) + 3.0));
  }
};

QTEST_APPLESS_MAIN(TestExpr)
#include "test_expr.moc"
