#include "ui/inspector_app.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QDeadlineTimer>
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QPixmap>
#include <QRegularExpression>
#include <QTextStream>
#include <QTimer>
#include <cstdio>

#include "core/parallel/bugs.h"
#include "core/verify/report.h"
#include "ui/bug_tour.h"
#include "ui/compare_window.h"
#include "ui/main_window.h"
#include "ui/theme.h"
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

// Runs the event loop until `sender` emits `done` or `failed(QString)`; returns the failure's text, empty
// when done. Background work reports from the event loop, so asking first and waiting here loses nothing.
template <typename Sender, typename Done, typename Failed>
QString awaitOutcome(Sender* sender, Done done, Failed failed) {
  QString error;
  bool settled = false;
  QObject listening;  // the connections end with this call
  QObject::connect(sender, done, &listening, [&settled] { settled = true; });
  QObject::connect(sender, failed, &listening, [&](const QString& e) {
    error = e;
    settled = true;
  });
  while (!settled)
    QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);
  return error;
}

}  // namespace

bool waitForLayouts(MainWindow& window, int timeoutMs) {
  QDeadlineTimer until(timeoutMs);
  while (window.layoutsPending() && !until.hasExpired())
    QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 20);
  return !window.layoutsPending();
}

bool waitForLayouts(CompareWindow& window, int timeoutMs) {
  QDeadlineTimer until(timeoutMs);
  while (window.layoutsPending() && !until.hasExpired())
    QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 20);
  return !window.layoutsPending();
}

int runHeadless(MainWindow& window, bool verify, const QString& screenshot, const QString& failureReport) {
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
  if (!failureReport.isEmpty()) {
    QString error;
    if (!window.exportFailureReport(failureReport, &error)) {
      printLine(error);
      return 2;
    }
  }
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

int runCompareHeadless(CompareWindow& window, const QString& screenshot) {
  QElapsedTimer clock;
  clock.start();
  const QString error =
      window.pending() ? awaitOutcome(&window, &CompareWindow::compared, &CompareWindow::failed) : QString();
  if (!error.isEmpty()) {
    printLine(error);
    return 2;
  }
  waitForLayouts(window, 120000);
  printLine(QStringLiteral("compared in %1 s").arg(clock.elapsed() / 1000.0, 0, 'f', 2));
  settle(100);
  QTextStream out(stdout);
  out << window.summary() << Qt::endl;
  QFileInfo info(screenshot);
  QDir().mkpath(info.absolutePath());
  if (!window.grab().save(screenshot)) {
    printLine(QStringLiteral("cannot write screenshot %1").arg(screenshot));
    return 2;
  }
  return window.differenceCount() > 0 || !window.comparison()->diff.plan.empty() ? 1 : 0;
}

int runTourHeadless(MainWindow& window, const QString& bugId, int layers, const QString& dir) {
  QDir().mkpath(dir);
  TourPanel* panel = window.openTour();
  BugTour* tour = panel->tour();
  QString error;
  bool ready = false;
  QObject listening;  // disconnects the lambdas below when this run returns
  QObject::connect(tour, &BugTour::stepReady, &listening, [&ready] { ready = true; });
  QObject::connect(tour, &BugTour::failed, &listening, [&](const QString& e) {
    error = e;
    ready = true;
  });
  ready = false;
  if (!panel->startBug(bugId, layers)) {
    printLine(error);
    return 2;
  }
  QTextStream out(stdout);
  QElapsedTimer clock;
  clock.start();
  for (int i = 0; i < kTourSteps; ++i) {
    if (i > 0) {
      ready = false;
      tour->next();
    }
    while (!ready)
      QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);
    if (!error.isEmpty()) {
      printLine(QStringLiteral("%1, step %2: %3").arg(bugId).arg(i + 1).arg(error));
      return 2;
    }
    const TourStep step = tour->step();
    QWidget* shown = &window;
    if (CompareWindow* compare = tour->compareWindow(); step == TourStep::Difference && compare) {
      waitForLayouts(*compare, 120000);
      shown = compare;
    } else {
      waitForLayouts(window, 120000);
    }
    settle(150);
    const QString file =
        QDir(dir).filePath(QStringLiteral("tour-%1-%2-%3.png").arg(bugId).arg(i + 1).arg(tourStepSlug(step)));
    if (!shown->grab().save(file)) {
      printLine(QStringLiteral("cannot write screenshot %1").arg(file));
      return 2;
    }
    QString text = tour->explanation();
    text.replace(QRegularExpression(QStringLiteral("<[^>]*>")), QStringLiteral(" "));
    text.replace(QStringLiteral("&middot;"), QStringLiteral("·"));
    out << bugId << " " << (i + 1) << " " << tourStepTitle(step) << ": " << text.simplified() << Qt::endl;
  }
  printLine(QStringLiteral("toured %1 in %2 s").arg(bugId).arg(clock.elapsed() / 1000.0, 0, 'f', 2));
  return tour->succeeded() ? 0 : 1;
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
  QCommandLineOption compareOpt("compare", "Compare the plan with this one, side by side.", "B.json");
  QCommandLineOption compareBugOpt(
      "compare-correct", "With --model and --inject: compare the correct plan with the injected one.");
  QCommandLineOption themeOpt(
      "theme", "Colour theme for this run: system, light or dark (default: View > Theme).", "THEME");
  QCommandLineOption reportOpt(
      "report", "With --verify: write a failure report to FILE (HTML, or Markdown for .md) and exit.",
      "FILE");
  QCommandLineOption tourOpt(
      "tour", "Start the guided tour of a catalog bug (`all`: each in turn, headless).", "BUG");
  QCommandLineOption shotsOpt("screenshots", "With --tour: run headless, one screenshot per step into DIR.",
                              "DIR");
  parser.addOptions({verifyOpt, shotOpt, jobsOpt, timeoutOpt, modelOpt, parallelOpt, layersOpt, injectOpt,
                     compareOpt, compareBugOpt, tourOpt, shotsOpt, themeOpt, reportOpt});
  parser.process(app);
  ThemeChoice theme = savedThemeChoice();
  if (parser.isSet(themeOpt)) {
    const QString t = parser.value(themeOpt).toLower();
    if (t != "system" && t != "light" && t != "dark") {
      printLine(
          QStringLiteral("--theme: expected system, light or dark, not '%1'").arg(parser.value(themeOpt)));
      return 2;
    }
    theme = t == "dark" ? ThemeChoice::Dark : t == "light" ? ThemeChoice::Light : ThemeChoice::System;
  }
  applyTheme(theme);

  const QString screenshot = parser.value(shotOpt);
  const QString failureReport = parser.value(reportOpt);
  if (!failureReport.isEmpty() && !parser.isSet(verifyOpt)) {
    printLine("--report needs --verify");
    return 2;
  }
  const bool headless = !screenshot.isEmpty() || !failureReport.isEmpty();
  const QStringList args = parser.positionalArguments();
  if (parser.isSet(compareOpt) || parser.isSet(compareBugOpt)) {
    CompareWindow window;
    if (headless) window.resize(1600, 1000);
    window.show();
    ZooRequest request;
    request.model = parser.value(modelOpt);
    request.parallel = parser.value(parallelOpt);
    request.layers = parser.value(layersOpt).toInt();
    request.inject = parser.value(injectOpt);
    if (parser.isSet(compareOpt) && args.size() == 1 && !parser.isSet(modelOpt)) {
      window.compareFiles(args[0], parser.value(compareOpt));
    } else if (parser.isSet(compareBugOpt) && args.isEmpty() && parser.isSet(modelOpt) &&
               !request.inject.isEmpty()) {
      window.compareWithBug(request);
    } else {
      printLine("compare needs PLAN.json --compare B.json, or --model ... --inject BUG --compare-correct");
      return 2;
    }
    if (!headless) return app.exec();
    return runCompareHeadless(window, screenshot);
  }
  MainWindow window;
  verify::Options options = window.verifyOptions();
  if (parser.isSet(jobsOpt)) options.jobs = std::max(1, parser.value(jobsOpt).toInt());
  if (parser.isSet(timeoutOpt)) options.timeoutSeconds = std::max(0.1, parser.value(timeoutOpt).toDouble());
  window.setVerifyOptions(options);
  if (headless || parser.isSet(shotsOpt)) window.resize(1600, 1000);
  window.show();

  if (parser.isSet(tourOpt)) {
    if (!args.isEmpty() || parser.isSet(modelOpt)) {
      printLine("--tour generates its own plans: give no plan file or --model");
      return 2;
    }
    const int layers = parser.isSet(layersOpt) ? parser.value(layersOpt).toInt() : 2;
    const QString bug = parser.value(tourOpt);
    if (!parser.isSet(shotsOpt)) {
      if (bug == "all") {
        printLine("--tour all needs --screenshots DIR (it runs headless)");
        return 2;
      }
      QTimer::singleShot(0, &window, [&window, bug, layers] { window.openTour()->startBug(bug, layers); });
      return app.exec();
    }
    if (bug != "all") return runTourHeadless(window, bug, layers, parser.value(shotsOpt));
    int worst = 0;
    for (const auto& b : parallel::bugCatalog())
      worst = std::max(worst,
                       runTourHeadless(window, QString::fromStdString(b.id), layers, parser.value(shotsOpt)));
    return worst;
  }
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
    if (const QString error = awaitOutcome(&window, &MainWindow::planOpened, &MainWindow::openFailed);
        !error.isEmpty()) {
      printLine(error);
      return 2;
    }
    const qint64 opened = clock.elapsed();
    waitForLayouts(window);
    printLine(QStringLiteral("plan opened in %1 s, both overviews laid out at %2 s")
                  .arg(opened / 1000.0, 0, 'f', 2)
                  .arg(clock.elapsed() / 1000.0, 0, 'f', 2));
  }
  if (headless) return runHeadless(window, parser.isSet(verifyOpt), screenshot, failureReport);
  if (parser.isSet(verifyOpt)) QTimer::singleShot(0, &window, [&window] { window.runVerification(); });
  return app.exec();
}

}  // namespace paraproof::ui
