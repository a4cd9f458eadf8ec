// The expression pool: hash-consing, exact folding, and concrete evaluation.
#include <QtTest>

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
  void foldsOnlyExactConstants() {
    sym::ExprPool p;
    QCOMPARE(p.mul(p.real(0.5), p.real(0.25)), p.real(0.125));
    // 0.1 * 0.1 is not exactly representable: kept as a product, never rounded.
    QVERIFY(p.mul(p.real(0.1), p.real(0.1)) != p.real(0.1 * 0.1));
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
