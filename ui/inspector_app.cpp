#include "ui/inspector_app.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QDeadlineTimer>
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QPixmap>
#include <QTextStream>
#include <QTimer>
#include <cstdio>

#include "core/verify/report.h"
#include "ui/main_window.h"
#include "ui/verification_controller.h"
#include "ui/zoo_dialog.h"

namespace paraproof::ui {
namespace {

// Errors and, in batch runs, timings: on stderr, so stdout keeps the report alone.
void printLine(const QString& text) {
  QTextStream err(stderr);
  err << "paraproof-inspector: " << text << Qt::endl;
}

void settle(int ms) {
  QDeadlineTimer until(ms);
  while (!until.hasExpired())
    QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
}

}  // namespace

bool waitForLayouts(MainWindow& window, int timeoutMs) {
  QDeadlineTimer until(timeoutMs);
  while (window.layoutsPending() && !until.hasExpired())
    QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 20);
  return !window.layoutsPending();
}

int runHeadless(MainWindow& window, bool verify, const QString& screenshot) {
  waitForLayouts(window);
  int code = 0;
  if (verify) {
    bool done = false;
    verify::Report report;
    QObject::connect(&window, &MainWindow::verificationFinished, &window, [&](const verify::Report& r) {
      report = r;
      done = true;
    });
    QElapsedTimer clock;
    clock.start();
    window.runVerification();
    while (!done)
      QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);
    printLine(QStringLiteral("verified in %1 s").arg(clock.elapsed() / 1000.0, 0, 'f', 2));
    code = verify::exitCode(report.verdict);
    QTextStream out(stdout);
    out << QString::fromStdString(verify::reportToText(report)) << Qt::flush;
  }
  settle(150);  // coalesced colour updates and the stage selection
  waitForLayouts(window);
  settle(100);
  if (!screenshot.isEmpty()) {
    QFileInfo info(screenshot);
    QDir().mkpath(info.absolutePath());
    if (!window.grab().save(screenshot)) {
      printLine(QStringLiteral("cannot write screenshot %1").arg(screenshot));
      return 2;
    }
  }
  return code;
}

int runInspector(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName("ParaProof");
  QApplication::setApplicationName("paraproof-inspector");
  QApplication::setApplicationVersion(PARAPROOF_VERSION_STRING);
  QApplication::setWindowIcon(QIcon(":/icons/paraproof.svg"));

  QCommandLineParser parser;
  parser.setApplicationDescription("ParaProof Inspector: explore a parallel training plan and verify it.");
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument("plan", "Plan file (JSON), or PyTorch SCRIPT.py to import, to open.",
                               "[PLAN.json|SCRIPT.py]");
  QCommandLineOption verifyOpt("verify", "Run verification after opening.");
  QCommandLineOption shotOpt("screenshot", "Save a screenshot of the window to FILE and exit (headless use).",
                             "FILE");
  QCommandLineOption jobsOpt("jobs", "Worker threads for this run.", "N");
  QCommandLineOption timeoutOpt("timeout", "Per-stage timeout in seconds for this run.", "S");
  QCommandLineOption modelOpt("model", "Generate a plan for this zoo model instead of opening a file.",
                              "NAME");
  QCommandLineOption parallelOpt("parallel", "Parallel degrees for --model, e.g. dp=2,tp=2,pp=2,mb=2.",
                                 "SPEC", "dp=2");
  QCommandLineOption layersOpt("layers", "Layers for --model (default: the model's own).", "L", "0");
  QCommandLineOption injectOpt("inject", "Catalog bug to inject into the generated plan.", "BUG[@WHERE]");
  parser.addOptions({verifyOpt, shotOpt, jobsOpt, timeoutOpt, modelOpt, parallelOpt, layersOpt, injectOpt});
  parser.process(app);

  const QString screenshot = parser.value(shotOpt);
  const bool headless = !screenshot.isEmpty();
  MainWindow window;
  verify::Options options = window.verifyOptions();
  if (parser.isSet(jobsOpt)) options.jobs = std::max(1, parser.value(jobsOpt).toInt());
  if (parser.isSet(timeoutOpt)) options.timeoutSeconds = std::max(0.1, parser.value(timeoutOpt).toDouble());
  window.setVerifyOptions(options);
  if (headless) window.resize(1600, 1000);
  window.show();

  const QStringList args = parser.positionalArguments();
  if (args.size() > 1 || (!args.isEmpty() && parser.isSet(modelOpt))) {
    printLine("expected one plan file or --model, not both");
    return 2;
  }
  const bool batch = headless || parser.isSet(verifyOpt);
  if (batch && args.isEmpty() && !parser.isSet(modelOpt)) {
    printLine("--verify and --screenshot need a plan");
    return 2;
  }
  // Loading, importing or generating takes seconds on a frontier plan: it runs in the background behind the
  // window shown above. An interactive failure gets a dialog; a batch run waits here and exits 2.
  QString error;
  bool settled = false;
  QObject::connect(&window, &MainWindow::planOpened, &window, [&settled] { settled = true; });
  QObject::connect(&window, &MainWindow::openFailed, &window, [&](const QString& e) {
    error = e;
    settled = true;
  });
  if (parser.isSet(modelOpt)) {
    ZooRequest request;
    request.model = parser.value(modelOpt);
    request.parallel = parser.value(parallelOpt);
    request.layers = parser.value(layersOpt).toInt();
    request.inject = parser.value(injectOpt);
    window.generatePlanInBackground(request, !batch);
  } else if (!args.isEmpty()) {
    window.openPlanFileInBackground(args[0], !batch);
  }
  if (batch) {
    QElapsedTimer clock;
    clock.start();
    while (!settled)
      QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);
    if (!error.isEmpty()) {
      printLine(error);
      return 2;
    }
    const qint64 opened = clock.elapsed();
    waitForLayouts(window);
    printLine(QStringLiteral("plan opened in %1 s, both overviews laid out at %2 s")
                  .arg(opened / 1000.0, 0, 'f', 2)
                  .arg(clock.elapsed() / 1000.0, 0, 'f', 2));
  }
  if (headless) return runHeadless(window, parser.isSet(verifyOpt), screenshot);
  if (parser.isSet(verifyOpt)) QTimer::singleShot(0, &window, [&window] { window.runVerification(); });
  return app.exec();
}

}  // namespace paraproof::ui
