#include "ui/inspector_app.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QDeadlineTimer>
#include <QDir>
#include <QFileInfo>
#include <QMessageBox>
#include <QPixmap>
#include <QTextStream>
#include <QTimer>
#include <cstdio>

#include "core/plan/torch_import.h"
#include "core/verify/report.h"
#include "ui/main_window.h"
#include "ui/verification_controller.h"
#include "ui/zoo_dialog.h"

namespace paraproof::ui {
namespace {

void printError(const QString& text) {
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
    window.runVerification();
    while (!done)
      QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);
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
      printError(QStringLiteral("cannot write screenshot %1").arg(screenshot));
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
    printError("expected one plan file or --model, not both");
    return 2;
  }
  if (parser.isSet(modelOpt)) {
    ZooRequest request;
    request.model = parser.value(modelOpt);
    request.parallel = parser.value(parallelOpt);
    request.layers = parser.value(layersOpt).toInt();
    request.inject = parser.value(injectOpt);
    try {
      window.openPlan(generateFromZoo(request), describe(request));
    } catch (const std::exception& e) {
      printError(QString::fromUtf8(e.what()));
      if (headless || parser.isSet(verifyOpt)) return 2;
      QMessageBox::warning(&window, QObject::tr("Cannot generate plan"), QString::fromUtf8(e.what()));
    }
  } else if (!args.isEmpty() && isTorchScript(args[0].toStdString())) {
    // The import takes seconds (a Python child): in the background, the window already up. Headless runs
    // wait for it here; an interactive one gets the dialog.
    const bool batch = headless || parser.isSet(verifyOpt);
    if (!batch) {
      window.openPlanFileInBackground(args[0]);
    } else {
      bool done = false;
      QString error;
      const QMetaObject::Connection opened =
          QObject::connect(&window, &MainWindow::planOpened, &window, [&done] { done = true; });
      const QMetaObject::Connection failed =
          QObject::connect(&window, &MainWindow::openFailed, &window, [&](const QString& e) {
            error = e;
            done = true;
          });
      window.openPlanFileInBackground(args[0], /*dialogOnError=*/false);
      while (!done)
        QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);
      QObject::disconnect(opened);
      QObject::disconnect(failed);
      if (!error.isEmpty()) {
        printError(error);
        return 2;
      }
    }
  } else if (!args.isEmpty()) {
    QString error;
    if (!window.openPlanFile(args[0], &error)) {
      printError(error);
      if (headless || parser.isSet(verifyOpt)) return 2;
      QMessageBox::warning(&window, QObject::tr("Cannot open plan"), error);
    }
  } else if (headless || parser.isSet(verifyOpt)) {
    printError("--verify and --screenshot need a plan");
    return 2;
  }
  if (headless) return runHeadless(window, parser.isSet(verifyOpt), screenshot);
  if (parser.isSet(verifyOpt)) QTimer::singleShot(0, &window, [&window] { window.runVerification(); });
  return app.exec();
}

}  // namespace paraproof::ui
