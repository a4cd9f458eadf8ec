// Shared helpers of the inspector UI tests: fixtures, waiting for the background threads, screenshots.
#pragma once

#include <QDir>
#include <QElapsedTimer>
#include <QGraphicsView>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>
#include <QTimer>

#include "core/plan/json_io.h"
#include "ui/graph_view.h"
#include "ui/inspector_app.h"
#include "ui/main_window.h"
#include "ui/zoo_dialog.h"

namespace paraproof::ui::testing {

// Ticks every 2 ms on the UI thread; the longest gap between ticks is how long the UI froze.
class TickMeter {
 public:
  TickMeter() {
    QObject::connect(&timer_, &QTimer::timeout, [this] {
      longest_ = std::max(longest_, clock_.restart());
      ++ticks_;
    });
    timer_.setTimerType(Qt::PreciseTimer);
    timer_.setInterval(2);
    clock_.start();
    timer_.start();
  }
  int ticks() const { return ticks_; }
  qint64 longestGapMs() const { return std::max(longest_, clock_.elapsed()); }

 private:
  QTimer timer_;
  QElapsedTimer clock_;
  qint64 longest_ = 0;
  int ticks_ = 0;
};

inline QString fixture(const char* name) {
  return QStringLiteral(PARAPROOF_FIXTURES "/plans/") + name;
}

// Shows the window at the tests' size, opens a zoo plan in it and waits until both views are laid out.
inline bool showZooPlan(MainWindow& w, const char* model, const char* parallel, int layers,
                        int timeoutMs = 120000) {
  w.resize(1600, 1000);
  w.show();
  ZooRequest r;
  r.model = model;
  r.parallel = parallel;
  r.layers = layers;
  w.openPlan(generateFromZoo(r), describe(r));
  return waitForLayouts(w, timeoutMs);
}

// Keeps tests away from the user's settings and window layout.
inline void isolateSettings() {
  QStandardPaths::setTestModeEnabled(true);
}

// Saves the whole window under PARAPROOF_SCREENSHOTS for people to look at.
inline void saveScreenshot(QWidget& window, const QString& name) {
  QDir().mkpath(PARAPROOF_SCREENSHOTS);
  const QString path = QStringLiteral(PARAPROOF_SCREENSHOTS "/") + name + ".png";
  QVERIFY2(window.grab().save(path), qPrintable("cannot write " + path));
  qInfo("screenshot: %s", qPrintable(path));
}

// A hierarchy node's texts (UTF-8 in the Qt-free model) as Qt strings.
inline QString labelOf(const HierarchyNode& n) {
  return QString::fromStdString(n.label);
}
inline QString detailOf(const HierarchyNode& n) {
  return QString::fromStdString(n.detail);
}

// Leaf node of the op (or input) with this exact id/name in a view's model, -1 if none.
inline int leafNamed(const GraphModel& m, const QString& name) {
  for (int e = 0; e < static_cast<int>(m.elements().size()); ++e)
    if (QString::fromStdString(m.elementName(e)) == name) return m.leafOf(e);
  return -1;
}

// Clicks a drawn node the way a user does.
inline void clickNode(GraphView* view, int node) {
  QRectF r = view->nodeSceneRect(node);
  QVERIFY2(!r.isEmpty(), "node is not drawn");
  view->centerOn(r.center());
  QPoint at = view->mapFromScene(r.center());
  QTest::mouseClick(view->viewport(), Qt::LeftButton, Qt::NoModifier, at);
}

// Runs verification and waits for the finished signal.
inline verify::Report verifyAndWait(MainWindow& w, int timeoutMs = 300000) {
  QSignalSpy finished(&w, &MainWindow::verificationFinished);
  w.runVerification();
  if (!finished.wait(timeoutMs)) return {};
  return finished.takeFirst().at(0).value<verify::Report>();
}

}  // namespace paraproof::ui::testing

#include "core/parallel/bugs.h"
#include "ui/zoo_dialog.h"

namespace paraproof::ui::testing {

// A generated mlp plan (dp2 x tp2) with one bug: from the catalog when it has one for this plan, otherwise
// the classic "inconsistent scaling on one rank" mutation done here (catalog case 12).
inline Plan generatedPlanWithBug(QString* what) {
  ZooRequest r;
  r.model = "mlp";
  r.parallel = "dp=2,tp=2";
  r.layers = 2;
  for (const auto& bug : parallel::bugCatalog())
    if (bug.model == "mlp" && bug.parallel == r.parallel.toStdString()) {
      r.inject = QString::fromStdString(bug.id);
      *what = QString::fromStdString(bug.id);
      return generateFromZoo(r);
    }
  Plan plan = generateFromZoo(r);
  Device& dev = plan.devices.back();
  auto record = [&](const QString& text) {
    *what = text;
    plan.metadata["injected"] = {{"id", "test-mutation"}, {"description", text.toStdString()}};
  };
  // A constant that differs on one rank (catalog cases 7, 8, 12).
  for (const char* key : {"divisor", "factor", "value", "exponent"})
    for (Op& op : dev.graph.ops)
      if (op.attrs.contains(key) && op.attrs[key].is_number() && op.attrs[key].get<double>() != 0) {
        op.attrs.set(key, op.attrs[key].get<double>() * 2);
        record(QStringLiteral("rank %1 op %2 uses %3 twice as large as the other ranks")
                   .arg(dev.rank)
                   .arg(QString::fromStdString(op.id), key));
        return plan;
      }
  // Operands swapped in a non-commutative op.
  for (Op& op : dev.graph.ops)
    if ((op.kind == "sub" || op.kind == "div") && op.inputs.size() == 2 &&
        dev.graph.values[op.inputs[0]].type == dev.graph.values[op.inputs[1]].type) {
      std::swap(op.inputs[0], op.inputs[1]);
      record(QStringLiteral("rank %1 op %2 has its operands swapped")
                 .arg(dev.rank)
                 .arg(QString::fromStdString(op.id)));
      return plan;
    }
  *what = QStringLiteral("no mutation site");
  return plan;
}

}  // namespace paraproof::ui::testing
