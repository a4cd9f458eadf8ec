// Lineage links: selecting a logical op highlights the device ops implementing it, and the reverse.
#include <set>

#include "inspector_test_support.h"

using namespace paraproof;
using namespace paraproof::ui;
using namespace paraproof::ui::testing;

class TestInspectorLineage : public QObject {
  Q_OBJECT

  static std::set<std::string> linkedOrigins(GraphView* parallel) {
    std::set<std::string> origins;
    const GraphModel* m = parallel->model();
    for (int n : parallel->linkedNodes())
      for (int e : m->elementsUnder(n)) {
        const Element& el = m->element(e);
        if (el.kind == Element::Kind::Op) origins.insert(m->graphOf(el).ops[el.index].origin);
      }
    return origins;
  }

 private slots:
  void initTestCase() { isolateSettings(); }

  void logicalSelectionHighlightsParallelCounterparts() {
    MainWindow w;
    w.resize(1600, 1000);
    w.show();
    QVERIFY(w.openPlanFile(fixture("mlp_tp2.json")));
    w.setParallelSelection({ParallelSelection::Mode::AllDevices, 0});
    w.logicalView()->expandAll();
    w.parallelView()->expandAll();
    QVERIFY(waitForLayouts(w));

    const int fc1 = leafNamed(*w.logicalView()->model(), "fc1");
    QVERIFY(fc1 >= 0);
    clickNode(w.logicalView(), fc1);
    QCOMPARE(w.logicalView()->selectedNodes(), std::vector<int>{fc1});
    // One counterpart per tensor-parallel rank, each implementing fc1.
    QTRY_COMPARE(w.parallelView()->linkedNodes().size(), size_t(2));
    QCOMPARE(linkedOrigins(w.parallelView()), std::set<std::string>{"fc1"});
    saveScreenshot(w, "inspector-lineage-logical");

    // The reverse: a device op highlights its logical origin.
    const int deviceOp = w.parallelView()->linkedNodes().front();
    clickNode(w.parallelView(), deviceOp);
    QTRY_COMPARE(w.logicalView()->linkedNodes(), std::vector<int>{fc1});
    QVERIFY(w.parallelView()->linkedNodes().empty());  // the old links are gone
    saveScreenshot(w, "inspector-lineage-parallel");
  }

  void tensorSelectionFollowsLineage() {
    MainWindow w;
    w.show();
    QVERIFY(w.openPlanFile(fixture("mlp_tp2.json")));
    w.logicalView()->expandAll();
    w.parallelView()->expandAll();
    QVERIFY(waitForLayouts(w));
    // A logical weight input maps to the device inputs holding its shards.
    const GraphModel* lm = w.logicalView()->model();
    const Graph& g = w.plan()->logical;
    int weight = -1;
    for (ValueId v : g.inputs)
      if (g.values[v].type.shape.size() == 2 && weight < 0) weight = lm->elementOfInput(kNone, v);
    QVERIFY(weight >= 0);
    clickNode(w.logicalView(), lm->leafOf(weight));
    QTRY_VERIFY(!w.parallelView()->linkedNodes().empty());
    const GraphModel* pm = w.parallelView()->model();
    for (int n : w.parallelView()->linkedNodes()) {
      const Element& e = pm->element(pm->node(n).element);
      QVERIFY(e.kind == Element::Kind::Input);
      const Lineage& l = w.plan()->devices[e.device].lineage.at(e.index);
      QCOMPARE(QString::fromStdString(l.tensor), lm->elementName(weight));
    }
  }
};

QTEST_MAIN(TestInspectorLineage)
#include "test_inspector_lineage.moc"
