// Lineage links: selecting a logical op highlights the device ops implementing it and draws a line to each
// of them across the two views, and the reverse.
#include <set>

#include "inspector_test_support.h"
#include "ui/link_overlay.h"

using namespace paraproof;
using namespace paraproof::ui;
using namespace paraproof::ui::testing;

class TestInspectorLineage : public QObject {
  Q_OBJECT

  // Every drawn link starts in the logical view and ends in the parallel view; where the node is in sight it
  // starts/ends on the node itself. Returns the number of links.
  static int checkLinks(MainWindow& w) {
    LinkOverlay* o = w.linkOverlay();
    const QRect lr = o->viewRect(w.logicalView()), pr = o->viewRect(w.parallelView());
    const auto segments = o->segments();
    for (const auto& s : segments) {
      if (!lr.contains(s.logical.toPoint()) || !pr.contains(s.parallel.toPoint())) {
        qWarning("link (%g,%g) -> (%g,%g) outside the views", s.logical.x(), s.logical.y(), s.parallel.x(),
                 s.parallel.y());
        return -1;
      }
    }
    return static_cast<int>(segments.size());
  }

  // The middle of each link is painted in the link colour in the window's screenshot.
  static bool linksArePainted(MainWindow& w) {
    const QImage shot = w.grab().toImage();
    LinkOverlay* o = w.linkOverlay();
    for (const auto& s : o->segments()) {
      const QPoint mid = o->mapTo(&w, ((s.logical + s.parallel) / 2).toPoint()) * shot.devicePixelRatio();
      bool found = false;
      for (int dx = -2; dx <= 2 && !found; ++dx)
        for (int dy = -2; dy <= 2 && !found; ++dy) {
          const QColor c = shot.pixelColor(mid + QPoint(dx, dy));
          found = c.green() + 40 < c.red() && c.green() + 40 < c.blue();  // purple, not the white canvas
        }
      if (!found) return false;
    }
    return true;
  }

  static std::set<std::string> linkedOrigins(GraphView* parallel) {
    std::set<std::string> origins;
    const GraphModel* m = parallel->model();
    for (int n : parallel->linkedNodes())
      for (int e : m->elementsUnder(n)) {
        const Element& el = m->element(e);
        if (el.kind == Element::Kind::Op) origins.insert(m->graphOf(el).ops[el.index].origin);
      }
    return origins;
  }

 private slots:
  void initTestCase() { isolateSettings(); }

  void logicalSelectionHighlightsParallelCounterparts() {
    MainWindow w;
    w.resize(1600, 1000);
    w.show();
    QVERIFY(w.openPlanFile(fixture("mlp_tp2.json")));
    w.setParallelSelection({ParallelSelection::Mode::AllDevices, 0});
    QVERIFY(waitForLayouts(w));  // the hierarchy is built in the background
    w.logicalView()->expandAll();
    w.parallelView()->expandAll();
    QVERIFY(waitForLayouts(w));

    const int fc1 = leafNamed(*w.logicalView()->model(), "fc1");
    QVERIFY(fc1 >= 0);
    clickNode(w.logicalView(), fc1);
    QCOMPARE(w.logicalView()->selectedNodes(), std::vector<int>{fc1});
    // One counterpart per tensor-parallel rank, each implementing fc1.
    QTRY_COMPARE(w.parallelView()->linkedNodes().size(), size_t(2));
    QCOMPARE(linkedOrigins(w.parallelView()), std::set<std::string>{"fc1"});
    // One drawn link per counterpart, from fc1 across the splitter to each device op.
    QTRY_COMPARE(checkLinks(w), 2);
    QVERIFY(w.linkOverlay()->isVisible());
    QVERIFY(linksArePainted(w));
    const QRectF fc1Rect = w.logicalView()->nodeSceneRect(fc1);
    const QPointF fc1Side = w.logicalView()->viewport()->mapTo(
        w.centralWidget(), w.logicalView()->mapFromScene(QPointF(fc1Rect.right(), fc1Rect.center().y())));
    for (const auto& seg : w.linkOverlay()->segments()) {
      QVERIFY(!seg.logicalAtEdge);
      QVERIFY((seg.logical - fc1Side).manhattanLength() < 3);
    }
    saveScreenshot(w, "inspector-lineage-logical");

    // Scrolling the parallel view moves the link ends with the nodes; a node out of sight ends at the edge.
    QRectF linked;
    for (int n : w.parallelView()->linkedNodes())
      linked = linked.united(w.parallelView()->nodeSceneRect(n));
    const QRectF scene = w.parallelView()->sceneRect();
    QPointF far = scene.topLeft();
    for (QPointF corner : {scene.topRight(), scene.bottomLeft(), scene.bottomRight()})
      if (QLineF(corner, linked.center()).length() > QLineF(far, linked.center()).length()) far = corner;
    w.parallelView()->scale(4, 4);
    w.parallelView()->centerOn(far);
    QTRY_COMPARE(checkLinks(w), 2);
    bool anyAtEdge = false;
    for (const auto& seg : w.linkOverlay()->segments())
      anyAtEdge = anyAtEdge || seg.parallelAtEdge;
    QVERIFY(anyAtEdge);
    w.parallelView()->fitAll();

    // The reverse: a device op highlights its logical origin.
    const int deviceOp = w.parallelView()->linkedNodes().front();
    clickNode(w.parallelView(), deviceOp);
    QTRY_COMPARE(w.logicalView()->linkedNodes(), std::vector<int>{fc1});
    QVERIFY(w.parallelView()->linkedNodes().empty());  // the old links are gone
    QTRY_COMPARE(checkLinks(w), 1);                    // one line back to the origin
    QVERIFY(linksArePainted(w));
    saveScreenshot(w, "inspector-lineage-parallel");

    // Selecting a stage replaces lineage links by the stage's own highlight.
    w.linkOverlay()->clear();
    QCOMPARE(checkLinks(w), 0);
    QVERIFY(!w.linkOverlay()->isVisible());
  }

  void tensorSelectionFollowsLineage() {
    MainWindow w;
    w.show();
    QVERIFY(w.openPlanFile(fixture("mlp_tp2.json")));
    QVERIFY(waitForLayouts(w));  // the hierarchy is built in the background
    w.logicalView()->expandAll();
    w.parallelView()->expandAll();
    QVERIFY(waitForLayouts(w));
    // A logical weight input maps to the device inputs holding its shards.
    const GraphModel* lm = w.logicalView()->model();
    const Graph& g = w.plan()->logical;
    int weight = -1;
    for (ValueId v : g.inputs)
      if (g.values[v].type.shape.size() == 2 && weight < 0) weight = lm->elementOfInput(kNone, v);
    QVERIFY(weight >= 0);
    clickNode(w.logicalView(), lm->leafOf(weight));
    QTRY_VERIFY(!w.parallelView()->linkedNodes().empty());
    const GraphModel* pm = w.parallelView()->model();
    for (int n : w.parallelView()->linkedNodes()) {
      const Element& e = pm->element(pm->node(n).element);
      QVERIFY(e.kind == Element::Kind::Input);
      const Lineage& l = w.plan()->devices[e.device].lineage.at(e.index);
      QCOMPARE(l.tensor, lm->elementName(weight));
    }
  }
};

QTEST_MAIN(TestInspectorLineage)
#include "test_inspector_lineage.moc"
