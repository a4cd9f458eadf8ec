// The layout thread: a job with the same structure as an earlier one (other ids, same sizes, nesting and
// edges) reuses the earlier Graphviz result; a different structure is laid out afresh.
#include <map>

#include "inspector_test_support.h"
#include "ui/layout_worker.h"

using namespace paraproof;
using namespace paraproof::ui;
using namespace paraproof::ui::testing;

class TestInspectorLayout : public QObject {
  Q_OBJECT

  // a -> b -> c inside one cluster, plus a -> c; node ids start at `base`.
  static LayoutJob chain(LayoutWorker& worker, int base) {
    LayoutJob job;
    job.id = worker.nextJobId();
    job.clusters.push_back({base + 100, -1, QStringLiteral("layers.%1").arg(base)});
    for (int i = 0; i < 3; ++i)
      job.nodes.push_back({base + i, 96, 38, i == 2 ? -1 : 0});
    job.edges = {{base, base + 1, 1}, {base + 1, base + 2, 1}, {base, base + 2, 1}};
    return job;
  }

  static LayoutResult run(LayoutWorker& worker, LayoutJob job) {
    QSignalSpy done(&worker, &LayoutWorker::finished);
    const uint64_t id = job.id;
    worker.submit(std::move(job));
    while (done.isEmpty() || done.last().at(0).value<LayoutResult>().id != id)
      if (!done.wait(10000)) return {};
    return done.last().at(0).value<LayoutResult>();
  }

 private slots:
  void initTestCase() { isolateSettings(); }

  void identicalStructureReusesTheLayout() {
    LayoutWorker worker;
    const LayoutResult first = run(worker, chain(worker, 0));
    QVERIFY(first.error.isEmpty());
    QVERIFY(!first.reused);
    QCOMPARE(first.nodes.size(), size_t(3));

    // Same shape, other ids (layers.1 instead of layers.0): the same drawing, under the new ids.
    const LayoutResult second = run(worker, chain(worker, 10));
    QVERIFY(second.reused);
    QCOMPARE(second.nodes.size(), first.nodes.size());
    for (size_t i = 0; i < first.nodes.size(); ++i) {
      QCOMPARE(second.nodes[i].id, first.nodes[i].id + 10);
      QCOMPARE(second.nodes[i].x, first.nodes[i].x);
      QCOMPARE(second.nodes[i].y, first.nodes[i].y);
    }
    QCOMPARE(second.clusters.front().id, 110);
    QCOMPARE(second.edges.front().from, first.edges.front().from + 10);

    // One edge different: laid out again.
    LayoutJob rewired = chain(worker, 20);
    rewired.edges.back() = {21, 20, 1};
    QVERIFY(!run(worker, std::move(rewired)).reused);
    // A node of another size: laid out again.
    LayoutJob wider = chain(worker, 30);
    wider.nodes[1].width = 200;
    QVERIFY(!run(worker, std::move(wider)).reused);
  }

  void switchingToAnIdenticalDeviceReusesTheLayout() {
    MainWindow w;
    w.resize(1600, 1000);
    w.show();
    QVERIFY(w.openPlanFile(fixture("mlp_tp2.json")));
    w.setParallelSelection({ParallelSelection::Mode::Device, 0});
    QVERIFY(waitForLayouts(w));  // the hierarchy is built in the background, then laid out
    QVERIFY(!w.parallelView()->lastLayoutReused());
    w.parallelView()->expandAll();
    QVERIFY(waitForLayouts(w));
    // The two tensor-parallel ranks run the same program on different shards.
    w.setParallelSelection({ParallelSelection::Mode::Device, 1});
    QVERIFY(waitForLayouts(w));
    QVERIFY(w.parallelView()->lastLayoutReused());
    w.parallelView()->expandAll();
    QVERIFY(waitForLayouts(w));
    QVERIFY(w.parallelView()->lastLayoutReused());
    QVERIFY(w.parallelView()->visibleNodeCount() > 5);
    saveScreenshot(w, "inspector-layout-reused");
  }

  // dot's cost: every box, plus a virtual node per rank a long edge crosses; a cycle does not loop.
  // Devices are drawn in rank order: two devices side by side (their boxes or frames share a row) have the
  // lower rank on the left, collapsed and expanded, with or without pipeline stages stacked by the dataflow;
  // and the same plan is drawn the same way every time.
  void devicesAreDrawnInRankOrderAndStably_data() {
    QTest::addColumn<QString>("parallel");
    QTest::addColumn<int>("layers");
    QTest::newRow("tp=8") << "tp=8" << 1;
    QTest::newRow("tp=4,pp=2") << "tp=4,pp=2" << 2;
  }

  void devicesAreDrawnInRankOrderAndStably() {
    QFETCH(QString, parallel);
    QFETCH(int, layers);
    auto deviceRects = [](GraphView* view) {
      std::map<int, QRectF> out;  // rank -> drawn box or frame
      const GraphModel& m = *view->model();
      for (int n = 0; n < m.size(); ++n)
        if (m.node(n).kind == HierarchyNode::Kind::Device)
          if (const QRectF r = view->groupSceneRect(n); !r.isEmpty())
            out[std::stoi(m.node(n).label.substr(5))] = r;
      return out;
    };
    auto rowsInRankOrder = [](const std::map<int, QRectF>& rects) {
      for (auto a = rects.begin(); a != rects.end(); ++a)
        for (auto b = std::next(a); b != rects.end(); ++b) {
          const bool sameRow = a->second.top() < b->second.bottom() && b->second.top() < a->second.bottom();
          if (sameRow && a->second.left() >= b->second.left()) return false;
        }
      return true;
    };
    std::map<int, QRectF> first;
    for (int run = 0; run < 2; ++run) {
      MainWindow w;
      QVERIFY(showZooPlan(w, "llama3-8b", qPrintable(parallel), layers));
      GraphView* view = w.parallelView();
      GraphModel& m = *view->model();
      std::map<int, QRectF> rects = deviceRects(view);
      QCOMPARE(rects.size(), size_t(8));
      QVERIFY2(rowsInRankOrder(rects), "collapsed devices out of rank order");
      for (int n = 0; n < m.size(); ++n)
        if (m.node(n).kind == HierarchyNode::Kind::Device) m.setExpanded(n, true);
      view->relayout();
      QVERIFY(waitForLayouts(w, 120000));
      rects = deviceRects(view);
      QCOMPARE(rects.size(), size_t(8));
      QVERIFY2(rowsInRankOrder(rects), "expanded devices out of rank order");
      if (run == 0)
        first = rects;
      else
        QCOMPARE(rects, first);
    }
  }

  void layoutCostCountsTheRanksLongEdgesCross() {
    VisibleGraph g;
    g.nodes = {1, 2, 3, 4};
    g.edges = {{1, 2, 1}, {2, 3, 1}, {3, 4, 1}};
    QCOMPARE(GraphModel::layoutCost(g), int64_t{4});
    g.edges.push_back({1, 4, 1});  // spans ranks 0..3: two virtual nodes
    QCOMPARE(GraphModel::layoutCost(g), int64_t{6});
    g.edges.push_back({4, 1, 1});  // back edge: as long as the forward one
    QCOMPARE(GraphModel::layoutCost(g), int64_t{8});
  }

  // Expand All on a plan of 64 devices and thousands of ops: it opens level by level, the groups in sight
  // first, up to its bound of visible nodes, and the event loop keeps turning throughout: a zero-interval
  // timer runs before every level arrives (no level is laid out on the UI thread or in one blocking call).
  // Collapse All during an expansion wins.
  void expandAllOnALargePlanIsProgressiveAndBounded() {
    MainWindow w;
    QVERIFY(showZooPlan(w, "llama3-8b", "dp=4,tp=4,pp=4,mb=4", 8));
    GraphView* view = w.parallelView();
    const int overview = view->visibleNodeCount();

    int ticks = 0, levels = 0, levelsWithoutTicks = 0;
    QTimer tick;
    tick.setInterval(0);
    connect(&tick, &QTimer::timeout, [&] { ++ticks; });
    connect(view, &GraphView::layoutFinished, [&] {
      ++levels;
      levelsWithoutTicks += ticks == 0;
      ticks = 0;
    });
    tick.start();
    view->expandAll();
    QVERIFY(view->expanding());
    QVERIFY(waitForLayouts(w, 600000));
    tick.stop();
    QVERIFY(!view->expanding());
    const int expanded = view->visibleNodeCount();
    QVERIFY2(expanded > overview && expanded <= GraphView::kExpandBound,
             qPrintable(QStringLiteral("%1 nodes after Expand All, %2 before").arg(expanded).arg(overview)));
    QVERIFY2(levels >= 2, qPrintable(QStringLiteral("%1 layouts").arg(levels)));
    QVERIFY2(levelsWithoutTicks == 0,
             qPrintable(QStringLiteral("%1 of %2 levels arrived without the event loop turning")
                            .arg(levelsWithoutTicks)
                            .arg(levels)));
    saveScreenshot(w, "inspector-expand-all-bounded");

    view->collapseAll();
    QVERIFY(waitForLayouts(w, 120000));
    view->expandAll();
    QVERIFY(view->expanding());
    view->collapseAll();
    QVERIFY(!view->expanding());
    QVERIFY(waitForLayouts(w, 120000));
    QCOMPARE(view->visibleNodeCount(),
             static_cast<int>(view->model()->node(view->model()->root()).children.size()));
  }
};

QTEST_MAIN(TestInspectorLayout)
#include "test_inspector_layout.moc"
