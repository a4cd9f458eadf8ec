// MoE routing op: topk_indicator's semantics, its agreement with topk_mask, its axis structure (the expert
// axis is never shrunk), and the router backward the generator builds from it against finite differences.
#include <QtTest>

#include "test_ops_harness.h"

using namespace paraproof;
using namespace opstest;

class TestOpsMoe : public QObject {
  Q_OBJECT
 private slots:
  void indicatorMarksTheTopKWithTiesToTheLowerIndex() {
    Harness h;
    SymTensor x = h.input("x", {2, 4}, DType::F32, {1, 3, 3, 2, 5, 1, 4, 2});
    QVERIFY(allClose(h.eval(h.run1("topk_indicator", {x}, {{"k", 2}})), {0, 1, 1, 0, 1, 0, 1, 0}, 0, "k=2"));
    QVERIFY(allClose(h.eval(h.run1("topk_indicator", {x}, {{"k", 3}})), {0, 1, 1, 1, 1, 0, 1, 1}, 0, "k=3"));
  }

  void maskedValuesAreTheInputTimesTheIndicator() {
    Harness h;
    SymTensor x = h.input("x", {3, 6});
    SymTensor byIndicator = h.run1("mul", {x, h.run1("topk_indicator", {x}, {{"k", 2}})});
    QVERIFY(allClose(h.eval(byIndicator), h.eval(h.run1("topk_mask", {x}, {{"k", 2}})), 0, "topk_mask"));
  }

  void shapeRuleChecksK() {
    QCOMPARE(QString::fromStdString(shapeError("topk_indicator", {f32({2, 4})}, {{"k", 4}})), QString());
    QVERIFY(shapeError("topk_indicator", {f32({2, 4})}, {{"k", 5}}).find("must be in [1, 4]") !=
            std::string::npos);
    QVERIFY(shapeError("topk_indicator", {i64({2, 4})}, {{"k", 1}}) != "");
  }

  // Top-k over a reduced expert axis would select a different fraction: shape reduction must keep it.
  void expertAxisIsFixedForShapeReduction() {
    const ops::OpDef* d = ops::findOp("topk_indicator");
    ops::AxisInfo info = d->axes({f32({2, 3, 8})}, {f32({2, 3, 8})}, {{"k", 2}});
    QCOMPARE(info.ties.size(), size_t(2));
    QCOMPARE(info.fixed.size(), size_t(2));
    for (const ops::AxisRef& r : info.fixed)
      QCOMPARE(r.axis, 2);
  }

  // The generator's router: gates = scores * indicator (softmax scores, or sigmoid scores normalised to sum
  // 1), times a scaling factor. Its backward treats the selection as constant; at a generic point (no ties)
  // that is the true derivative, so it must match central differences.
  void routerBackwardMatchesFiniteDifferences() {
    for (bool sigmoid : {false, true}) {
      Harness h;
      SymTensor x = h.input("logits", {3, 6});
      const double scaling = 2.5;
      SymTensor scores = sigmoid ? h.run1("sigmoid", {x}) : h.run1("softmax", {x}, {{"dim", -1}});
      SymTensor sel = h.run1("topk_indicator", {scores}, {{"k", 2}});
      SymTensor g0 = h.run1("mul", {scores, sel});
      SymTensor sum = h.run1("sum", {g0}, {{"dims", {-1}}, {"keepdim", true}});
      SymTensor gn = sigmoid ? h.run1("div", {g0, sum}) : g0;
      SymTensor gates = h.run1("scale", {gn}, {{"factor", scaling}});

      SymTensor dgates = h.input("dgates", {3, 6});
      SymTensor dgn = h.run1("scale", {dgates}, {{"factor", scaling}});
      SymTensor dg0 = dgn;
      if (sigmoid) {  // d(g0 / sum g0) = (dgn - sum(dgn * gn)) / sum g0
        SymTensor t = h.run1("sum", {h.run1("mul", {dgn, gn})}, {{"dims", {-1}}, {"keepdim", true}});
        dg0 = h.run1("div", {h.run1("sub", {dgn, t}), sum});
      }
      SymTensor dscores = h.run1("mul", {dg0, sel});
      SymTensor dx = sigmoid ? h.run1("sigmoid_backward", {scores, dscores})
                             : h.run1("softmax_backward", {scores, dscores}, {{"dim", -1}});
      std::vector<double> numeric = h.numericGrad(h.weightedSum(gates, h.valuesOf(dgates)), x);
      QVERIFY2(allClose(h.eval(dx), numeric, 1e-5, sigmoid ? "sigmoid router" : "softmax router"),
               sigmoid ? "sigmoid" : "softmax");
    }
  }
};

QTEST_APPLESS_MAIN(TestOpsMoe)
#include "test_ops_moe.moc"
