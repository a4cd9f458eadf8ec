// Cancelling a running verification stops the workers within a second and leaves the UI usable.
#include <QElapsedTimer>

#include "inspector_test_support.h"
#include "ui/stage_table.h"
#include "ui/verification_controller.h"

using namespace paraproof;
using namespace paraproof::ui;
using namespace paraproof::ui::testing;

class TestInspectorCancel : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { isolateSettings(); }

  void cancelStopsWithinASecond() {
    MainWindow w;
    w.resize(1600, 1000);
    w.show();
    // Many layers, no reuse of identical stages, one worker: a run that takes long enough to cancel.
    ZooRequest r;
    r.model = "mlp";
    r.parallel = "dp=2,tp=2";
    r.layers = 24;
    w.openPlan(generateFromZoo(r), describe(r));
    verify::Options o;
    o.jobs = 1;
    o.dedupStages = false;
    o.engine = verify::EngineChoice::Z3;
    w.setVerifyOptions(o);
    QVERIFY(waitForLayouts(w));

    QSignalSpy finished(&w, &MainWindow::verificationFinished);
    w.runVerification();
    QVERIFY(w.isVerifying());
    QTRY_VERIFY_WITH_TIMEOUT(w.stageModel()->stageCount() > 0, 60000);
    QTest::qWait(300);
    if (!finished.isEmpty()) QSKIP("the run finished before it could be cancelled; use a bigger plan");

    QElapsedTimer clock;
    clock.start();
    w.cancelVerification();
    QVERIFY(finished.wait(5000));
    const qint64 ms = clock.elapsed();
    qInfo("cancel took %lld ms", static_cast<long long>(ms));
    QVERIFY2(ms < 1000, "cancel must stop the workers within a second");
    const auto report = finished.takeFirst().at(0).value<verify::Report>();
    QVERIFY(report.cancelled);
    QVERIFY(!w.isVerifying());
    QCOMPARE(w.stageModel()->count(StageState::Running), 0);
    QVERIFY(waitForLayouts(w));
    saveScreenshot(w, "inspector-cancelled");

    // Still usable: the views respond and a new run on a small plan completes.
    QVERIFY(w.search("fc1"));
    QVERIFY(waitForLayouts(w));
    QVERIFY(w.openPlanFile(fixture("mlp_tp2.json")));
    o.dedupStages = true;
    w.setVerifyOptions(o);
    verify::Report again = verifyAndWait(w);
    QCOMPARE(again.verdict, verify::Verdict::Equivalent);
  }
};

QTEST_MAIN(TestInspectorCancel)
#include "test_inspector_cancel.moc"
