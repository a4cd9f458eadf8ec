// Opening a plan with a bug and verifying it: the failure is red in the stage table, marked in both views,
// and the counterexample panel shows the differing elements.
#include <QAbstractTextDocumentLayout>
#include <QDockWidget>
#include <QTableView>
#include <QTableWidget>
#include <QTextBlock>
#include <QTextLayout>

#include "inspector_test_support.h"
#include "ui/counterexample_panel.h"
#include "ui/model/op_variants.h"
#include "ui/properties_panel.h"
#include "ui/stage_table.h"
#include "ui/theme.h"
#include "ui/zoo_dialog.h"

using namespace paraproof;
using namespace paraproof::ui;
using namespace paraproof::ui::testing;

class TestInspectorVerify : public QObject {
  Q_OBJECT

  // Every expectation about a finished run with one failing stage.
  static void checkFailureShown(MainWindow& w, const verify::Report& report) {
    QCOMPARE(report.verdict, verify::Verdict::NotEquivalent);
    const int failing = w.firstFailingStage();
    QVERIFY(failing >= 0);

    // The stage table: status "failed", painted red, and selected.
    StageTableModel* model = w.stageModel();
    QModelIndex status = model->index(failing, StageTableModel::Status);
    QCOMPARE(status.data().toString(), QStringLiteral("failed"));
    QCOMPARE(status.data(Qt::DecorationRole).value<QColor>(), stateColor(StageState::Failed));
    QCOMPARE(status.data(Qt::BackgroundRole).value<QBrush>().color(), stateFillColor(StageState::Failed));
    QModelIndexList selected = w.stageTable()->selectionModel()->selectedRows();
    QCOMPARE(selected.size(), 1);
    QCOMPARE(selected.first().data(StageTableModel::kStageIndexRole).toInt(), failing);

    // Both views: the stage's nodes are selected and shown failed, whatever the collapse level.
    QVERIFY(waitForLayouts(w));
    QTRY_VERIFY(!w.logicalView()->selectedNodes().empty());
    QTRY_VERIFY(!w.parallelView()->selectedNodes().empty());
    for (GraphView* view : {w.logicalView(), w.parallelView()}) {
      bool anyFailed = false;
      for (int n : view->selectedNodes())
        anyFailed |= view->nodeState(n) == StageState::Failed;
      QVERIFY2(anyFailed, "a selected node of the failing stage shows the failed state");
    }
    // Collapsing everything keeps the failure visible on the top-level groups.
    w.parallelView()->collapseAll();
    QVERIFY(waitForLayouts(w));
    bool groupFailed = false;
    const GraphModel* pm = w.parallelView()->model();
    for (int c : pm->node(pm->root()).children)
      groupFailed |= w.parallelView()->nodeState(c) == StageState::Failed;
    QVERIFY2(groupFailed, "a collapsed top-level group shows the failure");
    w.parallelView()->expandAll();
    QVERIFY(waitForLayouts(w));

    // The counterexample panel lists the differing elements, marked.
    QVERIFY(w.counterexamplePanel()->shownDiffCount() > 0);
    const QString html = w.counterexamplePanel()->toHtml();
    QVERIFY(html.contains("Expected vs actual"));
    QVERIFY(html.contains("#ffcdd2"));  // the marked "actual" cells
  }

 private slots:
  void initTestCase() { isolateSettings(); }

  // A narrow dock never breaks a tensor name mid-word (it was "layers.\n1.attention_norm.o\nut#0").
  void counterexampleNamesAreNotBrokenMidWord() {
    CounterexamplePanel panel;
    panel.resize(160, 400);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    verify::StageInfo stage;
    stage.id = 7;
    verify::StageResult result;
    result.status = solver::Status::Failed;
    verify::CounterexampleReport cex;
    const std::string name = "layers.1.attention_norm.out#0";
    cex.diffs.push_back({2, name, "layers.1.attention_norm.out", {0, 3}, 1.0, 2.0, {}, {}});
    result.counterexample = cex;
    panel.showStage(stage, result, QString());
    const QTextCursor hit = panel.document()->find(QString::fromStdString(name));
    QVERIFY(!hit.isNull());
    panel.document()->documentLayout()->documentSize();  // lays the document out
    const QTextLayout* layout = hit.block().layout();
    QVERIFY(layout);
    const int at = hit.selectionStart() - hit.block().position();
    QCOMPARE(layout->lineForTextPosition(at).lineNumber(),
             layout->lineForTextPosition(at + static_cast<int>(name.size()) - 1).lineNumber());
  }

  // tv07-eps on rank 1, micro-batch 0: the norm there is its own variant, the eps row is the one that
  // differs, and every other copy of the op stays one variant.
  static Plan epsBugPlan() {
    ZooRequest r;
    r.model = "llama3-8b";
    r.parallel = "dp=2,tp=2,pp=2,mb=2";
    r.layers = 4;
    r.inject = "tv07-eps@layer=1,rank=1,mb=0";
    return generateFromZoo(r);
  }

  void propertiesSetTheDeviantCopyApart() {
    const Plan plan = epsBugPlan();
    const OpVariants v = opVariants(plan, "layers.1.attention_norm.out#1");
    QCOMPARE(v.name, std::string("layers.1.attention_norm.out"));
    QCOMPARE(v.variants.size(), size_t{2});
    QCOMPARE(v.variants[1].instances.size(), size_t{1});
    const OpInstance deviant = v.variants[1].instances[0];
    QCOMPARE(plan.devices[static_cast<size_t>(deviant.device)].rank, 1);
    QCOMPARE(deviant.microBatch, 0);
    QCOMPARE(describeInstances(plan, v.variants[1].instances), std::string("rank 1 \u00b7 mb 0"));
    QStringList differing;
    for (size_t r = 0; r < v.rows.size(); ++r)
      if (v.differs[r]) differing << QString::fromStdString(v.rows[r]);
    QCOMPARE(differing, QStringList{QStringLiteral("eps")});
    // A collective is the same op on every member: its group reads relative to the member.
    const OpVariants ar = opVariants(plan, "layers.0.attention.wo.out#0/ar");
    QVERIFY(!ar.empty());
    QCOMPARE(ar.variants.size(), size_t{1});
  }

  void failureShowsTheFailingOpOnEveryDevice() {
    MainWindow w;
    w.resize(1600, 1000);
    w.show();
    w.openPlan(epsBugPlan(), "llama3-8b dp=2,tp=2,pp=2,mb=2 L4 + tv07-eps@layer=1,rank=1,mb=0");
    QVERIFY(waitForLayouts(w));
    const verify::Report report = verifyAndWait(w);
    QCOMPARE(report.verdict, verify::Verdict::NotEquivalent);
    QTRY_VERIFY(!w.propertiesPanel()->shown().empty());
    const OpVariants& shown = w.propertiesPanel()->shown();
    QCOMPARE(shown.name, std::string("layers.1.attention_norm.out"));
    QCOMPARE(shown.variants.size(), size_t{2});
    QTableWidget* table = w.propertiesPanel()->table();
    QCOMPARE(table->columnCount(), 2);
    int epsRow = -1;
    for (int r = 0; r < table->rowCount(); ++r)
      if (table->verticalHeaderItem(r)->text().endsWith(QStringLiteral("eps"))) epsRow = r;
    QVERIFY(epsRow >= 0);
    QVERIFY(table->verticalHeaderItem(epsRow)->font().bold());
    QVERIFY(table->item(epsRow, 0)->text() != table->item(epsRow, 1)->text());
    QVERIFY(table->horizontalHeaderItem(1)->text().startsWith(QStringLiteral("rank 1 \u00b7 mb 0")));
    // Taken there: rank 1 is shown as itself (two replicas: nothing folds into a deviant), the failing op's
    // groups are open, it is selected, and the view is centred on it.
    QVERIFY(waitForLayouts(w));
    const GraphModel* pm = w.parallelView()->model();
    const int rank1 = w.plan()->deviceIndex(1);
    QCOMPARE(pm->representative(rank1), rank1);
    const int failingLeaf = pm->leafOf(pm->elementOfOp(rank1, "layers.1.attention_norm.out#0"));
    QVERIFY(pm->isVisible(failingLeaf));
    const std::vector<int> selected = w.parallelView()->selectedNodes();
    QVERIFY(std::count(selected.begin(), selected.end(), failingLeaf) == 1);
    QVERIFY(w.parallelView()->isNodeInViewport(failingLeaf));
    QCOMPARE(w.parallelView()->firstDifferenceNode(), failingLeaf);  // tagged apart from the stage's others
    qobject_cast<QDockWidget*>(w.propertiesPanel()->parentWidget())->raise();
    QVERIFY(waitForLayouts(w));
    saveScreenshot(w, "inspector-failure-properties");
  }

  // A communication stage fails (the all-reduce of fc2 is an identity): the logical op producing the tensor
  // its counterexample names is marked failed and selected, not left green.
  void communicationFailureMarksTheLogicalTensor() {
    MainWindow w;
    w.resize(1600, 1000);
    w.show();
    QVERIFY(w.openPlanFile(fixture("mlp_tp2_missing_allreduce.json")));
    QVERIFY(waitForLayouts(w));
    const verify::Report report = verifyAndWait(w);
    QCOMPARE(report.verdict, verify::Verdict::NotEquivalent);
    const int failing = w.firstFailingStage();
    QCOMPARE(report.stages[static_cast<size_t>(failing)].kind, verify::StageKind::Communication);
    QVERIFY(report.stages[static_cast<size_t>(failing)].logicalOps.empty());
    w.selectStage(failing);
    QVERIFY(waitForLayouts(w));
    const GraphModel* lm = w.logicalView()->model();
    const ValueId o = w.plan()->logical.findValue("o");
    QVERIFY(o != kNone);
    const int producer =
        lm->leafOf(lm->elementOfOp(kNone, w.plan()->logical.values[static_cast<size_t>(o)].producer));
    QTRY_COMPARE(w.logicalView()->nodeState(producer), StageState::Failed);
    const std::vector<int> selected = w.logicalView()->selectedNodes();
    QVERIFY(std::find(selected.begin(), selected.end(), producer) != selected.end());
    saveScreenshot(w, "inspector-communication-failure");
  }

  void fixtureWithWrongGroupFailsAndIsShown() {
    MainWindow w;
    w.resize(1600, 1000);
    w.show();
    QString error;
    QVERIFY2(w.openPlanFile(fixture("mlp_dp2tp2_wrong_group.json"), &error), qPrintable(error));
    QVERIFY(waitForLayouts(w));
    verify::Report report = verifyAndWait(w);
    checkFailureShown(w, report);
    // The fixture's own explanation is shown with the counterexample.
    QVERIFY(w.counterexamplePanel()->toPlainText().contains("all-reduced over the tp group"));
    w.selectStage(w.firstFailingStage());
    QVERIFY(waitForLayouts(w));
    saveScreenshot(w, "inspector-verify-fixture");
  }

  void generatedPlanWithInjectedBugFailsAndIsShown() {
    QString what;
    Plan plan = generatedPlanWithBug(&what);
    qInfo("injected: %s", qPrintable(what));
    MainWindow w;
    w.resize(1600, 1000);
    w.show();
    w.openPlan(std::move(plan), "generated mlp dp=2,tp=2 + " + what);
    QVERIFY(waitForLayouts(w));
    verify::Report report = verifyAndWait(w);
    checkFailureShown(w, report);
    QVERIFY(w.counterexamplePanel()->toPlainText().contains("Injected bug"));
    w.selectStage(w.firstFailingStage());
    QVERIFY(waitForLayouts(w));
    saveScreenshot(w, "inspector-verify-generated");
  }

  void correctPlanIsAllGreen() {
    MainWindow w;
    w.resize(1600, 1000);
    w.show();
    QVERIFY(w.openPlanFile(fixture("mlp_tp2.json")));
    verify::Report report = verifyAndWait(w);
    QCOMPARE(report.verdict, verify::Verdict::Equivalent);
    QCOMPARE(w.firstFailingStage(), -1);
    QCOMPARE(w.stageModel()->count(StageState::Verified), w.stageModel()->stageCount());
    QVERIFY(waitForLayouts(w));
    saveScreenshot(w, "inspector-verified");
  }

  void badFileIsAnErrorNotACrash() {
    MainWindow w;
    QString error;
    QVERIFY(!w.openPlanFile(QStringLiteral(PARAPROOF_FIXTURES "/does-not-exist.json"), &error));
    QVERIFY(!error.isEmpty());
    QVERIFY(w.plan() == nullptr);
  }
};

QTEST_MAIN(TestInspectorVerify)
#include "test_inspector_verify.moc"
