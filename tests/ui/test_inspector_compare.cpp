// Compare mode: the correct plan beside the injected one (or any two plan files), the differences counted,
// listed and stepped through; each step opens the graph the difference is in and shows the op in both plans,
// coloured as a diff (changed amber in both, added green in the second plan, removed red in the first).
#include <QTreeWidget>

#include "core/plan/plan_diff.h"
#include "inspector_test_support.h"
#include "ui/compare_window.h"

using namespace paraproof;
using namespace paraproof::ui;
using namespace paraproof::ui::testing;

class TestInspectorCompare : public QObject {
  Q_OBJECT

  static ZooRequest epsBug() {
    ZooRequest r;
    r.model = "llama3-8b";
    r.parallel = "dp=2,tp=2,pp=2,mb=2";
    r.layers = 4;
    r.inject = "tv07-eps@layer=1,rank=1,mb=0";
    return r;
  }

  static bool waitForComparison(CompareWindow& w) {
    QSignalSpy compared(&w, &CompareWindow::compared);
    QSignalSpy failed(&w, &CompareWindow::failed);
    if (compared.isEmpty() && failed.isEmpty() && w.pending()) compared.wait(120000);
    return !w.pending() && failed.isEmpty() && waitForLayouts(w, 120000);
  }

  // The selected node of a view stands for `element` (its leaf or a collapsed group holding it).
  static bool shows(GraphView* view, int element) {
    const std::vector<int> selected = view->selectedNodes();
    if (element < 0 || selected.empty()) return false;
    return view->model()->visibleNodeOf(view->model()->leafOf(element)) == selected.front();
  }

 private slots:
  void initTestCase() { isolateSettings(); }

  void injectedBugBesideItsCorrectPlan() {
    CompareWindow w;
    w.resize(1600, 1000);
    w.show();
    w.compareWithBug(epsBug());
    QVERIFY(waitForComparison(w));
    const Comparison* c = w.comparison();
    QVERIFY(c);
    // The window lists what core/plan/plan_diff finds, one row each, and counts it.
    const auto pair = generateComparisonFromZoo(epsBug());
    const PlanDiff expected = diffPlans(pair.correct, pair.injected);
    QVERIFY(!expected.elements.empty());
    QCOMPARE(w.differenceCount(), static_cast<int>(expected.elements.size()));
    QCOMPARE(w.differenceList()->topLevelItemCount(),
             static_cast<int>(expected.elements.size() + expected.plan.size()));
    QVERIFY2(w.summary().startsWith(QString::number(expected.elements.size()) + " difference"),
             qPrintable(w.summary()));
    // The first difference is the norm of layer 1 on rank 1, micro-batch 0: eps changed.
    const PlanElementDiff& first = c->diff.elements.front();
    QCOMPARE(first.rank, 1);
    QCOMPARE(QString::fromStdString(first.name()), QStringLiteral("layers.1.attention_norm.out#0"));
    QCOMPARE(first.change, PlanElementDiff::Change::Changed);
    QVERIFY(QString::fromStdString(describe(first)).contains("eps"));
    // Stepped to at once: both views show the parallel graph with the op selected, amber.
    QCOMPARE(w.currentDifference(), 0);
    const int ea = elementOfDifference(c->a, first, true), eb = elementOfDifference(c->b, first, false);
    QVERIFY(ea >= 0 && eb >= 0);
    QCOMPARE(w.viewA()->model(), c->a.parallel.get());
    QCOMPARE(w.viewB()->model(), c->b.parallel.get());
    QVERIFY(shows(w.viewA(), ea));
    QVERIFY(shows(w.viewB(), eb));
    QCOMPARE(w.viewA()->nodeState(w.viewA()->selectedNodes().front()), StageState::Inconclusive);
    QCOMPARE(w.viewB()->nodeState(w.viewB()->selectedNodes().front()), StageState::Inconclusive);
    QCOMPARE(w.viewB()->firstDifferenceNode(), w.viewB()->selectedNodes().front());
    saveScreenshot(w, "compare_tv07_eps");

    // F3 steps on (wrapping), Shift+F3 back; the list follows.
    QTest::keyClick(&w, Qt::Key_F3);
    const int expectedNext = w.differenceCount() > 1 ? 1 : 0;
    QCOMPARE(w.currentDifference(), expectedNext);
    QCOMPARE(w.differenceList()->currentItem(), w.differenceList()->topLevelItem(expectedNext));
    QTest::keyClick(&w, Qt::Key_F3, Qt::ShiftModifier);
    QCOMPARE(w.currentDifference(), 0);
    // A click in the list is a step too.
    const int last = w.differenceCount() - 1;
    w.differenceList()->setCurrentItem(w.differenceList()->topLevelItem(last));
    QCOMPARE(w.currentDifference(), last);
    QVERIFY(waitForLayouts(w, 60000));
    const PlanElementDiff& d = c->diff.elements[static_cast<size_t>(last)];
    if (int e = elementOfDifference(c->b, d, false); e >= 0) QVERIFY(shows(w.viewB(), e));
  }

  // A removed op is red in the first plan and absent from the second; an added one green in the second.
  void addedAndRemovedOpsAreColouredByTheirSide() {
    const auto pair = generateComparisonFromZoo(epsBug());
    auto a = std::make_shared<Plan>(pair.correct);
    auto b = std::make_shared<Plan>(pair.correct);
    // The second plan renames one logical op: the first's is removed, the second's added (same kind and
    // lineage would match them, so the renamed op also changes kind).
    Graph& g = b->logical;
    const OpId norm = g.findOp("layers.1.attention_norm.out");
    QVERIFY(norm != kNone);
    g.ops[static_cast<size_t>(norm)].id = "layers.1.attention_norm.renamed";
    g.ops[static_cast<size_t>(norm)].kind = "rmsnorm_renamed";
    g.reindex();
    CompareWindow w;
    w.resize(1600, 1000);
    w.show();
    w.comparePlans(a, "correct", b, "renamed");
    QVERIFY(waitForComparison(w));
    const Comparison* c = w.comparison();
    int removed = -1, added = -1;
    for (int i = 0; i < w.differenceCount(); ++i) {
      const PlanElementDiff& d = c->diff.elements[static_cast<size_t>(i)];
      if (d.rank != kNone || d.element != PlanElementDiff::Element::Op) continue;
      if (d.change == PlanElementDiff::Change::Removed) removed = i;
      if (d.change == PlanElementDiff::Change::Added) added = i;
    }
    QVERIFY(removed >= 0 && added >= 0);
    w.stepTo(removed);
    QVERIFY(waitForLayouts(w, 60000));
    QCOMPARE(w.viewA()->model(), c->a.logical.get());
    QCOMPARE(w.viewA()->nodeState(w.viewA()->selectedNodes().front()), StageState::Failed);
    QVERIFY(w.viewB()->selectedNodes().empty());  // not in the second plan
    w.stepTo(added);
    QVERIFY(waitForLayouts(w, 60000));
    QCOMPARE(w.viewB()->nodeState(w.viewB()->selectedNodes().front()), StageState::Verified);
    QVERIFY(w.viewA()->selectedNodes().empty());
  }

  void identicalFilesSayIdentical() {
    CompareWindow w;
    w.show();
    const QString plan = fixture("mlp_tp2.json");
    w.compareFiles(plan, plan);
    QVERIFY(waitForComparison(w));
    QCOMPARE(w.differenceCount(), 0);
    QCOMPARE(w.summary(), QStringLiteral("The plans are identical."));
  }

  void aBrokenFileIsAnErrorNamingIt() {
    CompareWindow w;
    w.show();
    QSignalSpy failed(&w, &CompareWindow::failed);
    w.compareFiles(fixture("mlp_tp2.json"), fixture("does_not_exist.json"));
    QVERIFY(failed.wait(60000));
    QVERIFY2(failed.front().front().toString().contains("does_not_exist.json"),
             qPrintable(failed.front().front().toString()));
    QVERIFY(!w.comparison());
  }
};

QTEST_MAIN(TestInspectorCompare)
#include "test_inspector_compare.moc"
