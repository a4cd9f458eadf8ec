// Themes and small windows: the colours follow the application palette (a dark system palette or View >
// Theme > Dark gives a dark canvas and light text, every text keeping a readable contrast), and a 900x600
// window keeps the graphs most of the height, the legend in sight and the status texts apart. Screenshots:
// theme_dark, theme_light, small_900x600.
#include <QDockWidget>
#include <QLabel>
#include <QProgressBar>
#include <QStatusBar>

#include "inspector_test_support.h"
#include "ui/counterexample_panel.h"
#include "ui/legend_widget.h"
#include "ui/theme.h"

using namespace paraproof;
using namespace paraproof::ui;
using namespace paraproof::ui::testing;

class TestInspectorTheme : public QObject {
  Q_OBJECT

  // Opens the missing all-reduce fixture and verifies it: failed, verified and not-run nodes all drawn.
  static void openAndVerify(MainWindow& w) {
    QVERIFY(w.openPlanFile(fixture("mlp_tp2_missing_allreduce.json")));
    QVERIFY(waitForLayouts(w));
    QSignalSpy done(&w, &MainWindow::verificationFinished);
    w.runVerification();
    QVERIFY(done.wait(120000));
    QVERIFY(waitForLayouts(w));
    QTest::qWait(150);  // coalesced colour updates
  }

  // The colour most pixels of a view's canvas have.
  static QColor canvasOf(GraphView* view) {
    const QImage image = view->viewport()->grab().toImage();
    return image.pixelColor(3, image.height() - 3);  // a corner: nodes are laid out centred
  }

 private slots:
  void initTestCase() { isolateSettings(); }
  void cleanup() { applyTheme(ThemeChoice::System); }

  // Every text the canvas and panels draw is readable on what it is drawn on, in both themes.
  void bothThemesKeepTextReadable() {
    for (const QPalette& palette : {QPalette(Qt::white), QPalette(QColor(0x2B, 0x2D, 0x30))}) {
      const Theme t = Theme::forPalette(palette);
      for (StageState s : {StageState::None, StageState::Pending, StageState::Running, StageState::Verified,
                           StageState::Failed, StageState::Inconclusive}) {
        QVERIFY2(contrastRatio(t.text, t.stateFill(s)) >= 7,
                 qPrintable(QStringLiteral("%1 %2").arg(t.dark).arg(stateName(s))));
        QVERIFY(contrastRatio(t.detailText, t.stateFill(s)) >= 4.5);
      }
      for (const QColor& fill : {t.opFill, t.groupFill, t.communicationFill, t.inputFill})
        QVERIFY(contrastRatio(t.text, fill) >= 7);
      QVERIFY(contrastRatio(t.communicationText, t.communicationFill) >= 4.5);
      QVERIFY(contrastRatio(t.clusterText, t.clusterFill) >= 4.5);
      QVERIFY(contrastRatio(t.dimText, t.header) >= 4.5);
      QVERIFY(contrastRatio(t.bad, t.badFill) >= 4.5);
      QVERIFY(contrastRatio(t.deviantText, t.deviantFill) >= 4.5);
      QVERIFY(contrastRatio(t.placeholder, t.canvas) >= 4.5);
      const QColor base = t.dark ? QColor(0x1E, 0x1F, 0x22) : QColor(Qt::white);
      for (StageState s : {StageState::Verified, StageState::Failed, StageState::Running})
        QVERIFY2(contrastRatio(t.stateText(s), base) >= 3, qPrintable(stateName(s)));
    }
  }

  // View > Theme > Dark turns the canvas, the headers and the panels dark; Light turns them back; the choice
  // is saved for the next start.
  void darkAndLightFromTheViewMenu() {
    MainWindow w;
    w.resize(1600, 1000);
    w.show();
    openAndVerify(w);
    w.setTheme(ThemeChoice::Dark);
    QTest::qWait(50);
    QVERIFY(theme().dark);
    QCOMPARE(savedThemeChoice(), ThemeChoice::Dark);
    QVERIFY(w.palette().color(QPalette::Window).lightness() < 80);
    QVERIFY2(canvasOf(w.logicalView()).lightness() < 60, qPrintable(canvasOf(w.logicalView()).name()));
    QVERIFY(canvasOf(w.parallelView()).lightness() < 60);
    // The counterexample panel was re-rendered with the dark style sheet: its text is light.
    QVERIFY(w.counterexamplePanel()->palette().color(QPalette::Text).lightness() > 180);
    QVERIFY(w.counterexamplePanel()->document()->defaultStyleSheet().contains(theme().dimText.name()));
    saveScreenshot(w, "theme_dark");

    w.setTheme(ThemeChoice::Light);
    QTest::qWait(50);
    QVERIFY(!theme().dark);
    QVERIFY(canvasOf(w.logicalView()).lightness() > 200);
    saveScreenshot(w, "theme_light");
    w.setTheme(ThemeChoice::System);
    QCOMPARE(savedThemeChoice(), ThemeChoice::System);
  }

  // A dark palette from the desktop (no View setting) is followed as well.
  void aDarkSystemPaletteIsFollowed() {
    MainWindow w;
    w.resize(1200, 800);
    w.show();
    QVERIFY(w.openPlanFile(fixture("mlp_tp2.json")));
    QVERIFY(waitForLayouts(w));
    QPalette dark(QColor(0x30, 0x30, 0x30));
    dark.setColor(QPalette::Window, QColor(0x30, 0x30, 0x30));
    QApplication::setPalette(dark);
    QTest::qWait(50);
    QVERIFY(theme().dark);
    QVERIFY(canvasOf(w.logicalView()).lightness() < 60);
  }

  // 900x600: the graphs keep most of the height, the bottom docks share one tab group, the legend is in
  // sight (not in the toolbar's overflow menu), the status bar's texts do not overlap.
  void smallWindowKeepsTheGraphs() {
    MainWindow w;
    w.resize(900, 600);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    openAndVerify(w);
    QTest::qWait(100);
    QVERIFY(w.isCompact());
    const int graphs = w.logicalView()->height();
    QVERIFY2(graphs >= w.height() / 2, qPrintable(QStringLiteral("%1 of %2").arg(graphs).arg(w.height())));
    auto* stages = w.findChild<QDockWidget*>("stagesDock");
    auto* cex = w.findChild<QDockWidget*>("counterexampleDock");
    QVERIFY(stages && cex);
    QVERIFY(w.tabifiedDockWidgets(stages).contains(cex));
    LegendWidget* legend = w.legend();
    QVERIFY(legend->isVisible());
    QVERIFY(legend->isCompact());
    QVERIFY(!legend->visibleRegion().isEmpty());
    QCOMPARE(legend->visibleRegion().boundingRect().width(), legend->width());
    // Permanent status widgets sit side by side inside the bar.
    const auto* progress = w.statusBar()->findChild<QProgressBar*>();
    QVERIFY(progress && progress->isVisible());
    auto inBar = [&](const QWidget* part) {
      return QRect(part->mapTo(w.statusBar(), QPoint(0, 0)), part->size());
    };
    QVERIFY(w.statusBar()->rect().contains(inBar(progress)));
    for (QLabel* label : w.statusBar()->findChildren<QLabel*>()) {
      if (!label->isVisible() || label->text().isEmpty()) continue;
      QVERIFY2(!inBar(label).intersects(inBar(progress)), qPrintable(label->text()));
    }
    saveScreenshot(w, "small_900x600");

    // Back to a large window: the docks split again.
    w.resize(1600, 1000);
    QTest::qWait(50);
    QVERIFY(!w.isCompact());
    QVERIFY(!w.tabifiedDockWidgets(stages).contains(cex));
    QVERIFY(!legend->isCompact());
  }
};

QTEST_MAIN(TestInspectorTheme)
#include "test_inspector_theme.moc"
