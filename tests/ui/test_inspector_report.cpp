// File > Export Failure Report: one self-contained HTML or Markdown file with the verdict, the stages not
// proved, each failing stage's counterexample, the views as drawn and the text report.
#include <QFile>
#include <QTemporaryDir>

#include "inspector_test_support.h"
#include "ui/verification_controller.h"

using namespace paraproof;
using namespace paraproof::ui;
using namespace paraproof::ui::testing;

class TestInspectorReport : public QObject {
  Q_OBJECT

  static QString read(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return QString::fromUtf8(f.readAll());
  }

  static bool openAndVerify(MainWindow& w, const char* fixtureName) {
    w.resize(1400, 900);
    w.show();
    if (!w.openPlanFile(fixture(fixtureName)) || !waitForLayouts(w)) return false;
    QSignalSpy done(&w, &MainWindow::verificationFinished);
    w.runVerification();
    return done.wait(120000) && waitForLayouts(w);
  }

 private slots:
  void initTestCase() { isolateSettings(); }

  void htmlReportOfAMissingAllReduce() {
    MainWindow w;
    QTemporaryDir dir;
    QString error;
    QVERIFY(!w.exportFailureReport(dir.filePath("early.html"), &error));  // nothing verified yet
    QVERIFY(error.contains("verification"));
    QVERIFY(openAndVerify(w, "mlp_tp2_missing_allreduce.json"));
    const int failing = w.firstFailingStage();
    QVERIFY(failing >= 0);
    const QString path = dir.filePath("failure.html");
    QVERIFY2(w.exportFailureReport(path, &error), qPrintable(error));
    const QString html = read(path);
    QVERIFY(html.startsWith("<!DOCTYPE html>"));
    QVERIFY(html.contains("Verdict: <span"));
    QVERIFY(html.contains("NOT EQUIVALENT"));
    QVERIFY(html.contains("Stages not proved"));
    QVERIFY(html.contains("Expected vs actual"));  // the counterexample section
    QVERIFY(html.count("<svg") >= 2);              // both views inline
    QVERIFY(html.contains("<pre>"));               // the text report
    QVERIFY(!html.contains("src=\"http"));         // self-contained
    // The stage table names the failing stage, and the op the counterexample names first when there is one.
    const verify::StageInfo& stage = w.controller()->lastReport().stages[static_cast<size_t>(failing)];
    QVERIFY(html.contains(QStringLiteral("<a href='#stage-%1'>").arg(stage.id)));
    QVERIFY(html.contains(QStringLiteral("<section id='stage-%1'>").arg(stage.id)));
    if (stage.firstDifference)
      QVERIFY(html.contains(QString::fromStdString(stage.firstDifference->tensor.empty()
                                                       ? stage.firstDifference->op
                                                       : stage.firstDifference->tensor)
                                .toHtmlEscaped()));
  }

  void markdownReportEmbedsTheViews() {
    MainWindow w;
    QVERIFY(openAndVerify(w, "mlp_tp2_missing_allreduce.json"));
    QTemporaryDir dir;
    const QString path = dir.filePath("failure.md");
    QString error;
    QVERIFY2(w.exportFailureReport(path, &error), qPrintable(error));
    const QString md = read(path);
    QVERIFY(md.contains("## Verdict: NOT EQUIVALENT"));
    QVERIFY(md.contains("| stage | status |"));
    QCOMPARE(md.count("](data:image/png;base64,"), 2);
    QVERIFY(md.contains("```"));
    QVERIFY(!w.exportFailureReport(dir.filePath("no/such/dir/report.md"), &error));
    QVERIFY(error.contains("cannot write"));
  }

  // The command line's --verify --report: written headless, with the exit code of `paraproof verify`.
  void headlessRunWritesTheReport() {
    MainWindow w;
    w.resize(1400, 900);
    w.show();
    QVERIFY(w.openPlanFile(fixture("mlp_tp2.json")));
    QTemporaryDir dir;
    const QString path = dir.filePath("ok.html");
    QCOMPARE(runHeadless(w, true, QString(), path), 0);
    const QString html = read(path);
    QVERIFY(html.contains("EQUIVALENT"));
    QVERIFY(!html.contains("Stages not proved"));
  }
};

QTEST_MAIN(TestInspectorReport)
#include "test_inspector_report.moc"
