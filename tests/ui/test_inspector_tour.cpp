// The guided bug tour: for a catalog bug, five steps a teacher walks through (the bug, the correct plan
// proved, the injected plan refuted, the failing op with its counterexample, the difference in compare
// mode), each driving the real inspector; one screenshot per step under the build tree, and the headless
// `--tour` run that produces them.
#include <QItemSelectionModel>
#include <QLabel>
#include <QPushButton>
#include <QTableView>
#include <QTreeWidget>

#include "core/parallel/bugs.h"
#include "inspector_test_support.h"
#include "ui/bug_tour.h"
#include "ui/compare_window.h"
#include "ui/counterexample_panel.h"

using namespace paraproof;
using namespace paraproof::ui;
using namespace paraproof::ui::testing;

class TestInspectorTour : public QObject {
  Q_OBJECT

  // Runs the step the tour is at to its end (or failure); false on failure.
  static bool waitForStep(BugTour* tour, QSignalSpy& ready, QSignalSpy& failed) {
    QElapsedTimer clock;
    clock.start();
    while (tour->running() && failed.isEmpty() && clock.elapsed() < 300000)
      ready.wait(1000);
    return !tour->running() && failed.isEmpty();
  }

  // Tours one bug through every step, checking what each shows and saving it.
  static void tour(const QString& bug, const QString& failingScope) {
    MainWindow w;
    w.resize(1600, 1000);
    w.show();
    TourPanel* panel = w.openTour();
    BugTour* t = panel->tour();
    QSignalSpy ready(t, &BugTour::stepReady);
    QSignalSpy failed(t, &BugTour::failed);
    QVERIFY(panel->startBug(bug));

    // 1. The bug: its catalog entry, nothing generated yet.
    QCOMPARE(t->step(), TourStep::Bug);
    QVERIFY(!t->running());
    const parallel::BugEntry* entry = parallel::findBug(bug.toStdString());
    QVERIFY(t->explanation().contains(QString::fromStdString(entry->source).toHtmlEscaped()));
    QVERIFY(panel->nextButton()->isEnabled());
    saveScreenshot(w, QStringLiteral("tour_%1_1_bug").arg(bug));

    // 2. The correct plan, generated from the catalog's model and spec and proved equivalent.
    QTest::mouseClick(panel->nextButton(), Qt::LeftButton);
    QCOMPARE(t->step(), TourStep::CorrectPlan);
    QVERIFY(!panel->nextButton()->isEnabled());  // one step at a time
    QVERIFY(waitForStep(t, ready, failed));
    QCOMPARE(t->correctVerdict(), verify::Verdict::Equivalent);
    QVERIFY(w.plan());
    QVERIFY(!w.plan()->metadata.contains("injected"));
    QVERIFY(waitForLayouts(w, 120000));
    QVERIFY(t->explanation().contains("EQUIVALENT"));
    saveScreenshot(w, QStringLiteral("tour_%1_2_correct").arg(bug));

    // 3. The injected plan: refuted.
    t->next();
    QVERIFY(waitForStep(t, ready, failed));
    QCOMPARE(t->injectedVerdict(), verify::Verdict::NotEquivalent);
    QVERIFY(w.plan()->metadata.contains("injected"));
    QVERIFY(w.firstFailingStage() >= 0);
    QVERIFY(waitForLayouts(w, 120000));
    QVERIFY(t->explanation().contains("NOT EQUIVALENT"));
    saveScreenshot(w, QStringLiteral("tour_%1_3_injected").arg(bug));

    // 4. The failing stage is selected, its op in view, the counterexample shown.
    t->next();
    QVERIFY(waitForStep(t, ready, failed));
    QVERIFY(waitForLayouts(w, 120000));
    QVERIFY(w.stageTable()->selectionModel()->hasSelection());
    QVERIFY(!w.parallelView()->selectedNodes().empty());
    QVERIFY2(t->explanation().contains("<code>"), qPrintable(t->explanation()));  // the op it names first
    QVERIFY2(t->explanation().contains(failingScope), qPrintable(t->explanation()));
    saveScreenshot(w, QStringLiteral("tour_%1_4_failing-op").arg(bug));

    // 5. Compare mode on the same pair: the injected ops are among the differences, the first one shown.
    t->next();
    QVERIFY(waitForStep(t, ready, failed));
    CompareWindow* c = t->compareWindow();
    QVERIFY(c);
    QVERIFY(waitForLayouts(*c, 120000));
    QVERIFY(c->differenceCount() > 0);
    QCOMPARE(c->currentDifference(), 0);
    QVERIFY(t->atEnd());
    QVERIFY(!panel->nextButton()->isEnabled());
    QVERIFY(t->succeeded());
    QVERIFY(t->explanation().contains("difference"));
    saveScreenshot(*c, QStringLiteral("tour_%1_5_difference").arg(bug));
    c->close();
  }

 private slots:
  void initTestCase() { isolateSettings(); }

  void normEpsilonStepByStep() { tour("tv07-eps", "eps"); }  // step 4 names the differing attribute
  void expertDispatchStepByStep() { tour("rw18-ep-dispatch-permutation", "experts"); }

  // Next Bug starts the catalog's following bug from its first step; a restarted tour drops the older
  // one's late events (a verification still running when the teacher moved on).
  void nextBugRestartsAtTheBug() {
    MainWindow w;
    w.resize(1200, 800);
    w.show();
    TourPanel* panel = w.openTour();
    BugTour* t = panel->tour();
    QSignalSpy failed(t, &BugTour::failed);
    QVERIFY(panel->startBug("tv01-allreduce-missing"));
    t->next();  // generation and verification of the correct plan start
    panel->nextBug();
    QCOMPARE(QString::fromStdString(t->bug()->id), QString::fromStdString(parallel::bugCatalog()[1].id));
    QCOMPARE(t->step(), TourStep::Bug);
    QVERIFY(!t->running());
    QTest::qWait(200);
    QVERIFY(waitForLayouts(w, 120000));
    if (w.isVerifying()) QSignalSpy(&w, &MainWindow::verificationFinished).wait(120000);
    QCOMPARE(t->step(), TourStep::Bug);  // the first tour's verification did not move the second one
    QVERIFY(!t->correctVerdict());
    QVERIFY(failed.isEmpty());
  }

  void unknownBugIsRefused() {
    MainWindow w;
    TourPanel* panel = w.openTour();
    QSignalSpy failed(panel->tour(), &BugTour::failed);
    QVERIFY(!panel->startBug("no-such-bug"));
    QCOMPARE(failed.size(), 1);
    QVERIFY(failed.front().front().toString().contains("no-such-bug"));
  }

  // The command line's headless tour: a screenshot per step and the steps on stdout's behalf (exit 0).
  void headlessTourWritesAScreenshotPerStep() {
    MainWindow w;
    const QString dir = QStringLiteral(PARAPROOF_SCREENSHOTS "/headless_tour");
    QDir(dir).removeRecursively();
    QCOMPARE(runTourHeadless(w, "tv01-allreduce-missing", 2, dir), 0);
    const QStringList shots =
        QDir(dir).entryList({"tour-tv01-allreduce-missing-*.png"}, QDir::Files, QDir::Name);
    QCOMPARE(shots.size(), kTourSteps);
    QCOMPARE(shots.front(), QStringLiteral("tour-tv01-allreduce-missing-1-bug.png"));
    QCOMPARE(shots.back(), QStringLiteral("tour-tv01-allreduce-missing-5-difference.png"));
    QCOMPARE(runTourHeadless(w, "no-such-bug", 2, dir), 2);
  }
};

QTEST_MAIN(TestInspectorTour)
#include "test_inspector_tour.moc"
