// Opening big generated plans in the inspector (offscreen): the time to a shown window (window ms: the plan
// loads behind it), the time MainWindow::openPlan blocks the UI thread (open ms; the hierarchy itself is
// built on a background thread), from the open until both collapsed overviews are drawn (open->view), to
// expand one layer group in each view (expand-L logical, expand-P parallel), Expand All in both views (to
// its first progressive paint and to its end or bound), the longest UI-thread stall (gap between ticks of a
// 5 ms timer) from the open through Expand All, and the process's peak RSS so far. Median of 3 opens (or
// --runs N); each Expand All level is logged on stderr.
//
//   inspector_open                                       # L3 compact, llama3-405b dp=2 and pp=16
//   inspector_open [--runs N] MODEL:PARALLEL[:LAYERS[:compact]] ...  # e.g. llama3-8b:dp=2,tp=2,pp=2,mb=2:4
#include <sys/resource.h>
#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTimer>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/models/zoo.h"
#include "core/parallel/generate.h"
#include "ui/graph_view.h"
#include "ui/hierarchy_builder.h"
#include "ui/inspector_app.h"
#include "ui/main_window.h"
#include "ui/model/lineage_index.h"

using namespace paraproof;
using namespace paraproof::ui;

namespace {

struct Case {
  std::string model, parallel;
  int layers = 0;  // 0: the model's own depth
  bool compact = false;
};

double peakRssMb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

struct Sample {
  double windowMs = 0, expandAllFirstMs = 0, expandAllMs = 0;
  int expandAllNodes = 0;  // both views, at the end of Expand All
  double hierarchyMs = 0, overviewMs = 0, expandLogicalMs = 0, expandParallelMs = 0, stallMs = 0;
  double openStallMs = 0;         // of which from the open until the overviews are drawn
  double expandLogicalDotMs = 0;  // of which Graphviz on the layout thread
  int identicalLayers = 0;        // groups structurally identical to logical layers.1
  int expandLogicalNodes = 0;     // nodes drawn after the expansion
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Longest gap between ticks of a 5 ms timer on the UI thread while `wait` runs: how long the UI froze.
class StallMeter {
 public:
  StallMeter() {
    QObject::connect(&timer_, &QTimer::timeout, [this] { longest_ = std::max(longest_, clock_.restart()); });
    timer_.setInterval(5);
  }
  void start() {
    longest_ = 0;
    clock_.start();
    timer_.start();
  }
  double stop() {
    timer_.stop();
    return static_cast<double>(std::max(longest_, clock_.elapsed()));
  }

 private:
  QTimer timer_;
  QElapsedTimer clock_;
  qint64 longest_ = 0;
};

// The first group labelled `label` (a layer), revealed, then expanded through the view like a double-click.
double expandGroup(MainWindow& w, GraphView* view, const QString& label, StallMeter& stall,
                   double* worstStall) {
  GraphModel* m = view->model();
  int group = -1;
  for (int n = 0; n < m->size() && group < 0; ++n)
    if (m->node(n).isGroup() && m->node(n).parent >= 0 && m->node(n).label == label.toStdString()) group = n;
  if (group < 0) return -1;
  if (!m->isVisible(group)) {  // open its ancestors first, untimed: the measure is one group's expansion
    m->reveal(group);
    view->relayout(group);
    waitForLayouts(w, 600000);
  }
  QElapsedTimer t;
  t.start();
  stall.start();
  view->toggle(group);
  waitForLayouts(w, 600000);
  *worstStall = std::max(*worstStall, stall.stop());
  return static_cast<double>(t.nsecsElapsed()) / 1e6;
}

// Expand All as the View menu runs it (both views), to the first progressive paint and to the end.
void expandAll(MainWindow& w, Sample& s) {
  QElapsedTimer t;
  t.start();
  double first = -1;
  auto painted = [&] {
    if (first < 0) first = static_cast<double>(t.nsecsElapsed()) / 1e6;
  };
  const auto a = QObject::connect(w.logicalView(), &GraphView::layoutFinished, painted);
  const auto b = QObject::connect(w.parallelView(), &GraphView::layoutFinished, painted);
  // Each level as it is laid out, on stderr: where a bound is too loose, this says which view and size.
  auto say = [&t](const char* view) {
    return [&t, view](const QString& text) {
      std::fprintf(stderr, "  %7.1f s %s: %s\n", static_cast<double>(t.nsecsElapsed()) / 1e9, view,
                   qPrintable(text));
    };
  };
  const auto c = QObject::connect(w.logicalView(), &GraphView::statusMessage, say("logical"));
  const auto d = QObject::connect(w.parallelView(), &GraphView::statusMessage, say("parallel"));
  w.logicalView()->expandAll();
  w.parallelView()->expandAll();
  waitForLayouts(w, 1800000);
  s.expandAllMs = static_cast<double>(t.nsecsElapsed()) / 1e6;
  s.expandAllFirstMs = first;
  s.expandAllNodes = w.logicalView()->visibleNodeCount() + w.parallelView()->visibleNodeCount();
  for (const auto& connection : {a, b, c, d})
    QObject::disconnect(connection);
}

// The window as a person would see it, under build/screenshots (the first run of each plan).
void screenshot(MainWindow& w, const QString& name) {
  if (name.isEmpty()) return;
  QDir().mkpath(PARAPROOF_SCREENSHOTS);
  const QString path = QStringLiteral(PARAPROOF_SCREENSHOTS "/") + name + ".png";
  if (w.grab().save(path)) std::fprintf(stderr, "  screenshot: %s\n", qPrintable(path));
}

Sample openOnce(const Plan& plan, StallMeter& stall, const QString& shot) {
  Sample s;
  Plan copy = plan;  // openPlan takes ownership; the copy is not part of the measure
  QElapsedTimer t;
  t.start();
  // A fresh window each time: its layout thread has not seen (and cached) this plan's layouts.
  MainWindow w;
  w.resize(1600, 1000);
  w.show();
  QCoreApplication::processEvents();
  s.windowMs = static_cast<double>(t.nsecsElapsed()) / 1e6;
  // The stall meter runs across the open itself: whatever openPlan does on the UI thread is a stall.
  stall.start();
  t.start();
  w.openPlan(std::move(copy), QString::fromStdString(plan.name));
  s.hierarchyMs = static_cast<double>(t.nsecsElapsed()) / 1e6;
  waitForLayouts(w, 600000);
  s.stallMs = s.openStallMs = stall.stop();
  s.overviewMs = static_cast<double>(t.nsecsElapsed()) / 1e6;
  screenshot(w, shot.isEmpty() ? shot : shot + "-overview");
  const GraphModel* lm = w.logicalView()->model();
  for (int n = 0; n < lm->size(); ++n)
    if (lm->node(n).isGroup() && lm->node(n).parent >= 0 && lm->node(n).label == "layers.1")
      s.identicalLayers = lm->identity(n).count;
  s.expandLogicalMs = expandGroup(w, w.logicalView(), "layers.1", stall, &s.stallMs);
  s.expandLogicalDotMs = w.logicalView()->lastLayoutMilliseconds();
  s.expandLogicalNodes = w.logicalView()->visibleNodeCount();
  s.expandParallelMs = expandGroup(w, w.parallelView(), "layers.1", stall, &s.stallMs);
  stall.start();
  expandAll(w, s);
  s.stallMs = std::max(s.stallMs, stall.stop());
  screenshot(w, shot.isEmpty() ? shot : shot + "-expand-all");
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  QStandardPaths::setTestModeEnabled(true);
  std::vector<Case> cases;
  int runs = 3;
  for (int i = 1; i < argc; ++i) {
    if (QString::fromLocal8Bit(argv[i]) == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
      continue;
    }
    QStringList parts = QString::fromLocal8Bit(argv[i]).split(':');
    if (parts.size() < 2) {
      std::fprintf(stderr, "usage: inspector_open [--runs N] [MODEL:PARALLEL[:LAYERS[:compact]]]...\n");
      return 2;
    }
    cases.push_back({parts[0].toStdString(), parts[1].toStdString(), parts.size() > 2 ? parts[2].toInt() : 0,
                     parts.size() > 3 && parts[3] == "compact"});
  }
  if (cases.empty())
    cases = {{"llama3-405b", "dp=64,tp=8,pp=16,mb=16", 0, true},
             {"llama3-405b", "dp=2,tp=8,pp=8,mb=2", 0, false},
             {"llama3-405b", "dp=1,tp=8,pp=16,mb=2", 0, false}};

  std::printf("%-36s %7s %8s %9s %8s %10s %13s %11s %11s %9s\n", "plan", "layers", "ops", "devices", "gen s",
              "open ms", "open->view ms", "expand-L ms", "expand-P ms", "stall ms");
  for (const Case& c : cases) {
    const models::ModelConfig* model = models::findModel(c.model);
    if (!model) {
      std::fprintf(stderr, "unknown model %s\n", c.model.c_str());
      return 2;
    }
    parallel::GenerateOptions options;
    options.layers = c.layers;
    options.compact = c.compact;
    const auto g0 = std::chrono::steady_clock::now();
    Plan plan;
    try {
      plan = parallel::generatePlan(*model, parallel::parseParallel(c.parallel), options);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s %s: %s\n", c.model.c_str(), c.parallel.c_str(), e.what());
      continue;
    }
    const double genS = std::chrono::duration<double>(std::chrono::steady_clock::now() - g0).count();
    size_t ops = plan.logical.ops.size();
    for (const Device& d : plan.devices)
      ops += d.graph.ops.size();

    {
      // Where the hierarchy time goes, without a window.
      QElapsedTimer t;
      t.start();
      GraphModel logical = GraphModel::logical(plan);
      const double logicalMs = static_cast<double>(t.nsecsElapsed()) / 1e6;
      t.restart();
      GraphModel parallelModel = GraphModel::parallel(plan, {});
      const double parallelMs = static_cast<double>(t.nsecsElapsed()) / 1e6;
      t.restart();
      LineageIndex lineage(logical, parallelModel);
      const double lineageMs = static_cast<double>(t.nsecsElapsed()) / 1e6;
      std::printf(
          "%-36s hierarchy: logical %.0f ms (%d nodes), parallel %.0f ms (%d nodes), lineage %.0f ms\n", "",
          logicalMs, logical.size(), parallelMs, parallelModel.size(), lineageMs);
      // The whole build as the worker runs it (both hierarchies, overview expansion, lineage, stage map):
      // before it moved off the UI thread, openPlan stalled the UI for at least this long.
      HierarchyRequest request;
      request.plan = std::make_shared<const Plan>(plan);
      t.restart();
      std::shared_ptr<HierarchyBuild> build = HierarchyBuilder::build(request);
      std::printf("%-36s whole build on the worker thread: %.0f ms\n", "",
                  static_cast<double>(t.nsecsElapsed()) / 1e6);
    }
    StallMeter stall;
    std::vector<double> window, hier, overview, expandL, expandP, stalls, openStalls, dotL, allFirst, all;
    int nodesL = 0, identical = 0, nodesAll = 0;
    for (int rep = 0; rep < runs; ++rep) {
      const QString shot = QString::fromStdString("inspector-open-" + c.model + "-" + c.parallel +
                                                  (c.compact ? "-compact" : ""))
                               .replace(QRegularExpression("[=,]"), "_");
      Sample s = openOnce(plan, stall, rep == 0 ? shot : QString());
      window.push_back(s.windowMs);
      allFirst.push_back(s.expandAllFirstMs);
      all.push_back(s.expandAllMs);
      nodesAll = s.expandAllNodes;
      hier.push_back(s.hierarchyMs);
      overview.push_back(s.overviewMs);
      expandL.push_back(s.expandLogicalMs);
      expandP.push_back(s.expandParallelMs);
      stalls.push_back(s.stallMs);
      openStalls.push_back(s.openStallMs);
      dotL.push_back(s.expandLogicalDotMs);
      nodesL = s.expandLogicalNodes;
      identical = s.identicalLayers;
    }
    const std::string name = c.model + " " + c.parallel + (c.compact ? " compact" : "");
    std::printf("%-36s %7d %8zu %9zu %8.1f %10.0f %13.0f %11.0f %11.0f %9.0f\n", name.c_str(),
                c.layers ? c.layers : model->layers, ops, plan.devices.size(), genS, median(hier),
                median(overview), median(expandL), median(expandP), median(stalls));
    std::printf(
        "%-36s expanded logical view: %d nodes, Graphviz %.0f ms; layers.1 is one of %d identical groups; "
        "longest stall from the open to the overviews %.0f ms\n",
        "", nodesL, median(dotL), identical, median(openStalls));
    std::printf(
        "%-36s window %.0f ms; Expand All: first paint %.0f ms, end %.0f ms (%d nodes in both views); "
        "peak RSS so far %.0f MB\n",
        "", median(window), median(allFirst), median(all), nodesAll, peakRssMb());
    std::fflush(stdout);
  }
  return 0;
}
