// The hierarchy: scope groups, device groups with folded data-parallel replicas, collapse/expand, big groups
// split, and search focusing a node.
#include "inspector_test_support.h"

using namespace paraproof;
using namespace paraproof::ui;
using namespace paraproof::ui::testing;

class TestInspectorHierarchy : public QObject {
  Q_OBJECT

  static int groupLabelled(const GraphModel& m, const QString& label) {
    for (int n = 0; n < m.size(); ++n)
      if (m.node(n).isGroup() && m.node(n).label == label && m.node(n).parent >= 0) return n;
    return -1;
  }

 private slots:
  void initTestCase() { isolateSettings(); }

  void scopesBecomeGroupsAndReplicasFold() {
    Plan plan = loadPlan(fixture("mlp_dp2tp2.json").toStdString());
    GraphModel logical = GraphModel::logical(plan);
    // "mlp.fc1" -> group mlp > group fc1 > ops; every op is a leaf somewhere under the root.
    QVERIFY(groupLabelled(logical, "mlp") >= 0);
    int ops = 0;
    for (const Element& e : logical.elements())
      ops += e.kind == Element::Kind::Op;
    QCOMPARE(ops, static_cast<int>(plan.logical.ops.size()));

    // dp2 x tp2: the two dp replicas of each tp rank fold into one device group counting 2.
    GraphModel parallel = GraphModel::parallel(plan, {});
    QCOMPARE(parallel.shownDevices().size(), size_t(2));
    for (int d : parallel.shownDevices())
      QCOMPARE(plan.devices[d].coord[0], int64_t(0));
    int devices = 0;
    for (int n = 0; n < parallel.size(); ++n)
      if (parallel.node(n).kind == HierarchyNode::Kind::Device && parallel.node(n).parent >= 0) {
        ++devices;
        QCOMPARE(parallel.node(n).replicas, 2);
      }
    QCOMPARE(devices, 2);
    // A folded replica's op maps to its representative's element.
    QCOMPARE(parallel.elementOfOp(2, plan.devices[2].graph.ops[0].id),
             parallel.elementOfOp(0, plan.devices[0].graph.ops[0].id));

    // One device: no folding.
    GraphModel one = GraphModel::parallel(plan, {ParallelSelection::Mode::Device, 3});
    QCOMPARE(one.shownDevices(), std::vector<int>{plan.deviceIndex(3)});
  }

  void bigGroupsAreSplit() {
    Plan plan;
    plan.name = "wide";
    for (int i = 0; i < 100; ++i) {
      ValueId x = plan.logical.addInput("x" + std::to_string(i), {{2}, DType::F32});
      Op op;
      op.id = "neg" + std::to_string(i);
      op.kind = "neg";
      op.inputs = {x};
      op.scope = "wide";
      plan.logical.addOp(op, {{"y" + std::to_string(i), {{2}, DType::F32}}});
    }
    GraphModel m = GraphModel::logical(plan);
    const int wide = groupLabelled(m, "wide");
    QVERIFY(wide >= 0);
    QVERIFY(m.node(wide).children.size() <= size_t(GraphModel::kMaxChildren));
    QCOMPARE(m.node(wide).leafCount, 200);
  }

  void collapseAndExpandChangeVisibleCount() {
    MainWindow w;
    w.resize(1600, 1000);
    w.show();
    QVERIFY(w.openPlanFile(fixture("mlp_dp2tp2.json")));
    GraphView* view = w.logicalView();
    view->expandAll();
    QVERIFY(waitForLayouts(w));
    GraphModel* m = view->model();
    const int all = view->visibleNodeCount();
    const int mlp = groupLabelled(*m, "mlp");
    QVERIFY(mlp >= 0);
    QVERIFY(m->node(mlp).leafCount > 1);

    // Collapsing a group replaces all its leaves with one box; its frame disappears.
    view->toggle(mlp);
    QVERIFY(waitForLayouts(w));
    QCOMPARE(view->visibleNodeCount(), all - m->node(mlp).leafCount + 1);
    QVERIFY(!view->nodeSceneRect(mlp).isEmpty());
    saveScreenshot(w, "inspector-collapsed");

    view->toggle(mlp);
    QVERIFY(waitForLayouts(w));
    QCOMPARE(view->visibleNodeCount(), all);
    QVERIFY(view->nodeSceneRect(mlp).isEmpty());

    view->collapseAll();
    QVERIFY(waitForLayouts(w));
    QCOMPARE(view->visibleNodeCount(), static_cast<int>(m->node(m->root()).children.size()));
  }

  void searchFindsAndFocusesANode() {
    MainWindow w;
    w.resize(1600, 1000);
    w.show();
    QVERIFY(w.openPlanFile(fixture("mlp_dp2tp2.json")));
    w.logicalView()->collapseAll();
    QVERIFY(waitForLayouts(w));
    const int fc2 = leafNamed(*w.logicalView()->model(), "fc2");
    QVERIFY(fc2 >= 0);
    QVERIFY(!w.logicalView()->model()->isVisible(fc2));

    QVERIFY(w.search("fc2"));
    QVERIFY(waitForLayouts(w));
    QVERIFY(w.logicalView()->model()->isVisible(fc2));  // its groups were expanded
    QCOMPARE(w.logicalView()->selectedNodes(), std::vector<int>{fc2});
    QVERIFY(w.logicalView()->isNodeInViewport(fc2));
    QVERIFY(!w.parallelView()->linkedNodes().empty());  // and its counterparts are shown
    saveScreenshot(w, "inspector-search");

    QVERIFY(!w.search("no-such-op-anywhere"));
  }
};

QTEST_MAIN(TestInspectorHierarchy)
#include "test_inspector_hierarchy.moc"
