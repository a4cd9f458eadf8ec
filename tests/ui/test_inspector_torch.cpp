// Opening a PyTorch SCRIPT.py in the inspector as a plan (docs/torch-import.md): the import runs in the
// background, the plan is shown and its check finds the bug the example states; an import error names the
// SCRIPT.py line in the status bar and in openFailed. Skipped when /usr/bin/python3 cannot import torch.
#include <QFile>
#include <QProcess>
#include <QStatusBar>

#include "../torch_scripts.h"
#include "inspector_test_support.h"

using namespace paraproof;
using namespace paraproof::ui;
using namespace paraproof::ui::testing;

namespace {

const QString kExamples =
    QDir::cleanPath(QStringLiteral(PARAPROOF_FIXTURES "/../../resources/examples/torch"));

}  // namespace

class TestInspectorTorch : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    isolateSettings();
    if (!torchAvailable()) QSKIP("/usr/bin/python3 cannot import torch (apt-get install python3-torch)");
  }

  void opensAScriptAndFindsItsBug() {
    const QString script = kExamples + "/mlp_tp2_missing_allreduce.py";
    MainWindow w;
    w.resize(1600, 1000);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QSignalSpy failed(&w, &MainWindow::openFailed);
    w.openPlanFileInBackground(script, /*dialogOnError=*/false);
    // The import is a child process on a pool thread: the call returns at once, the UI still turns.
    QVERIFY(w.plan() == nullptr);
    QVERIFY(w.statusBar()->currentMessage().contains("Importing"));
    QTRY_VERIFY_WITH_TIMEOUT(w.plan() != nullptr || !failed.isEmpty(), 120000);
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.first().at(0).toString()));
    QVERIFY(waitForLayouts(w, 120000));
    QCOMPARE(QString::fromStdString(w.plan()->name), script);
    QVERIFY(w.logicalView()->model() != nullptr);
    QVERIFY(w.parallelView()->visibleNodeCount() > 0);

    const verify::Report report = verifyAndWait(w);
    QCOMPARE(report.verdict, verify::Verdict::NotEquivalent);
    QVERIFY(w.firstFailingStage() >= 0);
    QVERIFY(waitForLayouts(w));
    saveScreenshot(w, "inspector-torch-mlp_tp2_missing_allreduce");
  }

  void anImportErrorNamesTheScriptLine() {
    const QString script = QStringLiteral(PARAPROOF_FIXTURES "/torch/not_in_group.py");
    const int line = markedLine(script);
    QVERIFY(line > 0);
    MainWindow w;
    w.show();
    QSignalSpy failed(&w, &MainWindow::openFailed);
    w.openPlanFileInBackground(script, /*dialogOnError=*/false);
    QTRY_VERIFY_WITH_TIMEOUT(!failed.isEmpty(), 120000);
    const QString where = QStringLiteral("not_in_group.py:%1").arg(line);
    const QString error = failed.first().at(0).toString();
    QVERIFY2(error.contains(where), qPrintable(error));
    QVERIFY2(w.statusBar()->currentMessage().contains(where), qPrintable(w.statusBar()->currentMessage()));
    QVERIFY(w.plan() == nullptr);
  }
};

QTEST_MAIN(TestInspectorTorch)
#include "test_inspector_torch.moc"
