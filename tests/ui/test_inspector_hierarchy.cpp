// The hierarchy: scope groups, device groups with folded data-parallel replicas, folded micro-batches,
// structurally identical groups, collapse/expand, big groups split, and search focusing a node.
#include <QListWidget>

#include "core/models/zoo.h"
#include "core/parallel/generate.h"
#include "inspector_test_support.h"
#include "ui/minimap.h"
#include "ui/node_tooltip.h"
#include "ui/search_panel.h"
#include "ui/zoo_dialog.h"

using namespace paraproof;
using namespace paraproof::ui;
using namespace paraproof::ui::testing;

class TestInspectorHierarchy : public QObject {
  Q_OBJECT

  static int groupLabelled(const GraphModel& m, const QString& label) {
    for (int n = 0; n < m.size(); ++n)
      if (m.node(n).isGroup() && labelOf(m.node(n)) == label && m.node(n).parent >= 0) return n;
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

  // An imported op's scope "model.fc1 mlp.py:20" groups by the dotted path; the line after the space is a
  // note (the tooltip), not a level, so the lines of one module share its group.
  void aScopeNoteIsNotALevel() {
    Plan plan;
    ValueId x = plan.logical.addInput("x", {{4}, DType::F32});
    int k = 0;
    for (const char* scope : {"model.fc1 mlp.py:20", "model.fc1 mlp.py:21", "model.fc2 mlp.py:20"}) {
      Op op;
      op.id = "op" + std::to_string(k);
      op.kind = "neg";
      op.inputs = {x};
      op.scope = scope;
      plan.logical.addOp(op, {{"v" + std::to_string(k++), {{4}, DType::F32}}});
      x = plan.logical.findValue("v" + std::to_string(k - 1));
    }
    GraphModel m = GraphModel::logical(plan);
    const int model = groupLabelled(m, "model"), fc1 = groupLabelled(m, "fc1");
    QVERIFY(model >= 0 && fc1 >= 0);
    QCOMPARE(m.node(fc1).parent, model);
    for (int n = 0; n < m.size(); ++n)
      if (m.node(n).isGroup()) QVERIFY2(!labelOf(m.node(n)).contains("py"), qPrintable(labelOf(m.node(n))));
  }

  // llama3-8b, 2 layers, dp2 x tp2 x pp2 with 2 micro-batches: every forward/backward op exists as "name#0"
  // and "name#1" on a device.
  static Plan microBatchedPlan() {
    ZooRequest r;
    r.model = "llama3-8b";
    r.parallel = "dp=2,tp=2,pp=2,mb=2";
    r.layers = 2;
    return generateFromZoo(r);
  }

  void microBatchNamesAreRecognised() {
    int mb = 0;
    QCOMPARE(names::withoutCopyMarker("layers.0.mlp.w2.out#1/ar", &mb),
             std::string("layers.0.mlp.w2.out/ar"));
    QCOMPARE(mb, 1);
    QCOMPARE(names::withoutCopyMarker("tokens#12", &mb), std::string("tokens"));
    QCOMPARE(mb, 12);
    QCOMPARE(names::withoutCopyMarker("adamw.step", &mb), std::string("adamw.step"));
    QCOMPARE(mb, -1);
    QCOMPARE(names::withoutCopyMarker("odd#name", &mb), std::string("odd#name"));
    QCOMPARE(mb, -1);
  }

  // A fold groups only copies that are the same op: with eps changed in micro-batch 0 of layer 1 on rank 1
  // (tv07), that rank's two norm copies are shown apart, each under its own name; elsewhere they fold.
  void microBatchCopiesThatDifferAreShownApart() {
    ZooRequest r;
    r.model = "llama3-8b";
    r.parallel = "dp=2,tp=2,pp=2,mb=2";
    r.layers = 4;
    r.inject = "tv07-eps@layer=1,rank=1,mb=0";
    const Plan plan = generateFromZoo(r);
    const GraphModel folded = GraphModel::parallel(plan, {});
    QStringList apart;
    int foldedNorms = 0;
    for (int n = 0; n < folded.size(); ++n) {
      const HierarchyNode& hn = folded.node(n);
      if (hn.isGroup() || !labelOf(hn).startsWith(QStringLiteral("layers.1.attention_norm.out"))) continue;
      const Element& e = folded.element(hn.element);
      if (labelOf(hn).contains('#')) {
        apart << labelOf(hn) + QStringLiteral(" on rank %1").arg(plan.devices[e.device].rank);
        QCOMPARE(hn.microBatches, 1);
      } else {
        ++foldedNorms;
      }
    }
    apart.sort();
    QCOMPARE(apart, (QStringList{QStringLiteral("layers.1.attention_norm.out#0 on rank 1"),
                                 QStringLiteral("layers.1.attention_norm.out#1 on rank 1")}));
    QVERIFY(foldedNorms > 0);  // the other ranks holding layer 1 still fold their copies
  }

  // A compact plan states 2 of its dp=8 replicas: each shown group stands for all 8, and the view covers
  // every device of the mesh.
  void compactReplicaGroupsCountEveryReplica() {
    parallel::GenerateOptions options;
    options.compact = true;
    const Plan plan = parallel::generatePlan(*models::findModel("llama-micro"),
                                             parallel::parseParallel("dp=8,tp=2"), options);
    QVERIFY(plan.replicas.has_value());
    QVERIFY(plan.devices.size() < 16);
    const GraphModel model = GraphModel::parallel(plan, {});
    QCOMPARE(model.devicesCovered(), int64_t{16});
    int groups = 0;
    for (int n = 0; n < model.size(); ++n)
      if (model.node(n).kind == HierarchyNode::Kind::Device) {
        QCOMPARE(model.node(n).replicas, 8);
        QVERIFY2(labelOf(model.node(n)).endsWith(QStringLiteral("\u00d78 dp")),
                 qPrintable(labelOf(model.node(n))));
        ++groups;
      }
    QCOMPARE(groups, 2);  // one per tp rank
  }

  // A replica that is not the translate of its line (an eps changed on rank 5, compact plan of dp=8) is shown
  // apart and labelled, its line's translates still fold, and every device of the mesh is counted once. On
  // two replicas nothing says which one deviates: both are shown.
  void aDeviantReplicaIsShownApart() {
    for (const bool compact : {true, false}) {
      parallel::GenerateOptions options;
      options.compact = compact;
      options.inject = "tv07-eps@layer=0,rank=5";
      const Plan plan = parallel::generatePlan(*models::findModel("llama-micro"),
                                               parallel::parseParallel("dp=8,tp=2"), options);
      const GraphModel model = GraphModel::parallel(plan, {});
      QCOMPARE(model.devicesCovered(), int64_t{16});
      const int five = plan.deviceIndex(5);
      QCOMPARE(model.representative(five), five);
      std::map<QString, int> replicasOf;
      for (int n = 0; n < model.size(); ++n)
        if (model.node(n).kind == HierarchyNode::Kind::Device)
          replicasOf[labelOf(model.node(n))] = model.node(n).replicas;
      QCOMPARE(replicasOf.size(), size_t{3});
      QCOMPARE(replicasOf.count(QStringLiteral("rank 5  (deviant)")), size_t{1});
      QCOMPARE(replicasOf[QStringLiteral("rank 5  (deviant)")], 1);
      int sum = 0;
      for (const auto& [label, count] : replicasOf)
        sum += count;
      QCOMPARE(sum, 16);
    }
    ZooRequest two;
    two.model = "llama3-8b";
    two.parallel = "dp=2,tp=2";
    two.inject = "tv07-eps@layer=1,rank=1";
    const Plan plan = generateFromZoo(two);
    const GraphModel model = GraphModel::parallel(plan, {});
    QCOMPARE(model.representative(plan.deviceIndex(1)), plan.deviceIndex(1));
    QCOMPARE(model.devicesCovered(), int64_t{4});
  }

  void microBatchesFoldIntoOneNodeWithCount() {
    Plan plan = microBatchedPlan();
    ParallelSelection unfoldedSel;
    unfoldedSel.foldMicroBatches = false;
    GraphModel unfolded = GraphModel::parallel(plan, unfoldedSel);
    GraphModel folded = GraphModel::parallel(plan, {});
    int perMicroBatch = 0, foldedLeaves = 0;
    for (int n = 0; n < unfolded.size(); ++n)
      if (!unfolded.node(n).isGroup() && labelOf(unfolded.node(n)).contains('#')) ++perMicroBatch;
    for (int n = 0; n < folded.size(); ++n) {
      const HierarchyNode& hn = folded.node(n);
      if (hn.isGroup() || hn.parent < 0) continue;
      QVERIFY2(!labelOf(hn).contains('#'), qPrintable(labelOf(hn)));  // no per-micro-batch node is left
      if (hn.microBatches > 1) {
        QCOMPARE(hn.microBatches, 2);
        QVERIFY2(labelOf(hn).endsWith(QStringLiteral("\u00d72 mb")), qPrintable(labelOf(hn)));
        ++foldedLeaves;
      }
    }
    QVERIFY(perMicroBatch > 100);
    QCOMPARE(perMicroBatch, 2 * foldedLeaves);  // half as many nodes, each counting 2
    QCOMPARE(folded.elements().size(), unfolded.elements().size() - size_t(foldedLeaves));
    QVERIFY(nodeTooltip(folded, folded.leafOf(0)).size() > 0);

    // Both copies of an op map to the folded node, so stage colours and lineage reach it from either.
    const int dev = folded.shownDevices().front();
    const Graph& g = plan.devices[dev].graph;
    std::string first, second;
    for (const Op& op : g.ops)
      if (op.id.find("#0") != std::string::npos) {
        std::string other = op.id;
        other.replace(other.find("#0"), 2, "#1");
        if (g.findOp(other) != kNone) {
          first = op.id;
          second = other;
          break;
        }
      }
    QVERIFY(!first.empty());
    QCOMPARE(folded.elementOfOp(dev, second), folded.elementOfOp(dev, first));
    QVERIFY(unfolded.elementOfOp(dev, second) != unfolded.elementOfOp(dev, first));
  }

  void microBatchFoldingIsAToggleInTheWindow() {
    MainWindow w;
    w.resize(1600, 1000);
    w.show();
    w.openPlan(microBatchedPlan(), "llama3-8b dp=2,tp=2,pp=2,mb=2");
    w.setParallelSelection({ParallelSelection::Mode::Device, 0, false});
    QVERIFY(waitForLayouts(w));  // the hierarchy is built in the background
    w.parallelView()->expandAll();
    QVERIFY(waitForLayouts(w));
    const int unfolded = w.parallelView()->visibleNodeCount();
    w.setParallelSelection({ParallelSelection::Mode::Device, 0, true});
    QVERIFY(waitForLayouts(w));  // the hierarchy is built in the background
    w.parallelView()->expandAll();
    QVERIFY(waitForLayouts(w));
    const int folded = w.parallelView()->visibleNodeCount();
    QVERIFY2(folded < unfolded * 3 / 4, qPrintable(QStringLiteral("%1 vs %2").arg(folded).arg(unfolded)));
    // Show one layer's mlp block expanded, its nodes labelled with the micro-batch count.
    GraphModel* m = w.parallelView()->model();
    m->collapseAll();
    const int mlp = groupLabelled(*m, "mlp");
    QVERIFY(mlp >= 0);
    m->reveal(mlp);
    for (std::vector<int> open{mlp}; !open.empty();) {
      const int g = open.back();
      open.pop_back();
      m->setExpanded(g, true);
      for (int c : m->node(g).children)
        if (m->node(c).isGroup()) open.push_back(c);
    }
    w.parallelView()->relayout();
    QVERIFY(waitForLayouts(w));
    int counted = 0;
    for (int n : m->visible().nodes)
      counted += labelOf(m->node(n)).endsWith(QStringLiteral("\u00d72 mb"));
    QVERIFY(counted > 3);
    QRectF block;
    for (int n : m->visible().nodes)
      if (m->visibleNodeOf(n) == n && m->node(n).parent != 0 &&
          labelOf(m->node(n)).endsWith(QStringLiteral("mb")))
        block = block.united(w.parallelView()->nodeSceneRect(n));
    w.parallelView()->fitInView(block.adjusted(-30, -30, 30, 30), Qt::KeepAspectRatio);
    saveScreenshot(w, "inspector-microbatches-folded");
  }

  // Three layers whose ops are the same kinds wired the same way, except that layer 2 uses exp where the
  // others use neg.
  static Plan threeLayers(const char* layer2Kind) {
    Plan plan;
    plan.name = "three-layers";
    // The graph input is consumed outside the layers, so no layer holds an extra input leaf.
    Op embed;
    embed.id = "embed";
    embed.kind = "neg";
    embed.inputs = {plan.logical.addInput("x", {{4}, DType::F32})};
    embed.scope = "embed";
    plan.logical.addOp(embed, {{"embed.out", {{4}, DType::F32}}});
    ValueId x = plan.logical.findValue("embed.out");
    for (int l = 0; l < 3; ++l) {
      const std::string p = "layers." + std::to_string(l);
      auto add = [&](const std::string& id, const std::string& kind, std::vector<ValueId> in) {
        Op op;
        op.id = p + "." + id;
        op.kind = kind;
        op.inputs = std::move(in);
        op.scope = p + "." + id.substr(0, id.find('.'));
        plan.logical.addOp(op, {{op.id + ".out", {{4}, DType::F32}}});
        return plan.logical.findValue(op.id + ".out");
      };
      ValueId a = add("norm.scale", "neg", {x});
      ValueId b = add("norm.shift", l == 2 ? layer2Kind : "neg", {a});
      ValueId c = add("mix.sum", "add", {a, b});
      x = add("mix.out", "neg", {c});
    }
    return plan;
  }

  void identicalGroupsHashEqual() {
    GraphModel m = GraphModel::logical(threeLayers("exp"));
    const int l0 = groupLabelled(m, "layers.0"), l1 = groupLabelled(m, "layers.1"),
              l2 = groupLabelled(m, "layers.2");
    QVERIFY(l0 >= 0 && l1 >= 0 && l2 >= 0);
    QCOMPARE(m.identity(l0).hash, m.identity(l1).hash);
    QVERIFY(m.identity(l2).hash != m.identity(l0).hash);  // one op kind differs
    QCOMPARE(m.identity(l1).first, l0);
    QCOMPARE(m.identity(l1).count, 2);
    QCOMPARE(m.identity(l2).count, 1);
    QVERIFY(nodeTooltip(m, l1).contains("identical to <b>layers.0</b>"));
    QVERIFY(!nodeTooltip(m, l0).contains("identical to"));  // never identical to itself
    QVERIFY(nodeTooltip(m, l0).contains("the first of 2 identical groups"));
    QVERIFY(detailOf(m.node(l1)).contains(QStringLiteral("\u00d72")));
    // With the same kind everywhere all three are identical.
    GraphModel same = GraphModel::logical(threeLayers("neg"));
    QCOMPARE(same.identity(groupLabelled(same, "layers.2")).count, 3);
  }

  void identicalGroupsHashEqualOnlyWithEqualWiring() {
    Plan plan = threeLayers("neg");
    // Rewire layer 1: its mix.sum adds a to itself instead of a + b (same op kinds, different edges).
    Op& sum = plan.logical.ops[plan.logical.findOp("layers.1.mix.sum")];
    sum.inputs[1] = sum.inputs[0];
    GraphModel m = GraphModel::logical(plan);
    QVERIFY(m.identity(groupLabelled(m, "layers.1")).hash != m.identity(groupLabelled(m, "layers.0")).hash);
    QCOMPARE(m.identity(groupLabelled(m, "layers.2")).hash, m.identity(groupLabelled(m, "layers.0")).hash);
  }

  void identicalLayersOfAGeneratedModel() {
    MainWindow w;
    QVERIFY(showZooPlan(w, "llama3-8b", "tp=2", 4));  // the hierarchy is built in the background
    w.logicalView()->collapseAll();
    QVERIFY(waitForLayouts(w));
    GraphModel* m = w.logicalView()->model();
    const int l1 = groupLabelled(*m, "layers.1"), l2 = groupLabelled(*m, "layers.2");
    QVERIFY(l1 >= 0 && l2 >= 0);
    QCOMPARE(m->identity(l1).hash, m->identity(l2).hash);
    QVERIFY(m->identity(l1).count >= 3);
    saveScreenshot(w, "inspector-identical-layers");
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
    QVERIFY(waitForLayouts(w));  // the hierarchy is built in the background
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
    QVERIFY(waitForLayouts(w));  // the hierarchy is built in the background
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

  // The minimap shows the whole drawing with the part in view framed while the view is zoomed in, moves the
  // view where it is clicked, and stays out of the way when everything is in view or it is switched off.
  void minimapFramesThePartInViewAndMovesThere() {
    MainWindow w;
    w.resize(1600, 1000);
    w.show();
    QVERIFY(w.openPlanFile(fixture("mlp_dp2tp2.json")));
    QVERIFY(waitForLayouts(w));
    GraphView* view = w.parallelView();
    view->expandAll();
    QVERIFY(waitForLayouts(w));
    view->fitAll();
    Minimap* map = view->minimap();
    QVERIFY(!map->isVisible());  // all in view: nothing to navigate
    for (int i = 0; i < 6; ++i)
      view->zoomIn();
    QTRY_VERIFY(map->isVisible());
    const QRectF drawing = view->scene()->sceneRect();
    const QRectF viewed = map->viewedSceneRect();
    QVERIFY(drawing.contains(viewed.center()));
    QVERIFY(viewed.width() < drawing.width() || viewed.height() < drawing.height());
    // Inside the view's viewport, in its lower right corner.
    QVERIFY(view->viewport()->geometry().contains(map->geometry()));
    saveScreenshot(w, "inspector-minimap");

    // A click on the drawing's top left corner (in the minimap) moves the view there.
    const QPoint topLeft =
        map->mapFromScene(drawing.topLeft() + QPointF(drawing.width() * 0.1, drawing.height() * 0.1));
    QTest::mouseClick(map->viewport(), Qt::LeftButton, {}, topLeft);
    const QPointF centre = map->viewedSceneRect().center();
    QVERIFY2(centre.x() < drawing.center().x() && centre.y() <= drawing.center().y() + 1,
             qPrintable(QStringLiteral("%1,%2").arg(centre.x()).arg(centre.y())));

    map->setOn(false);
    QVERIFY(!map->isVisible());
    map->setOn(true);
    QVERIFY(map->isVisible());
    view->fitAll();
    QTRY_VERIFY(!map->isVisible());
  }

  // The Search dock lists every match of both graphs with their count; F3 / Shift+F3 step through the list
  // (wrapping), a click goes to a row, and each step selects that match in its view.
  void searchListsMatchesAndStepsThroughThem() {
    MainWindow w;
    w.resize(1600, 1000);
    w.show();
    QVERIFY(w.openPlanFile(fixture("mlp_dp2tp2.json")));
    QVERIFY(waitForLayouts(w));
    QVERIFY(w.search("fc1"));
    SearchPanel* panel = w.searchPanel();
    const int n = panel->count();
    QVERIFY2(n >= 3, qPrintable(QString::number(n)));  // the logical op and its device copies
    QVERIFY2(panel->countText().startsWith(QStringLiteral("%1 matches").arg(n)),
             qPrintable(panel->countText()));
    QVERIFY(panel->isVisible());
    QCOMPARE(panel->current(), 0);
    QVERIFY(panel->list()->item(0)->text().contains("logical"));
    QVERIFY(panel->list()->item(n - 1)->text().contains("parallel"));

    QTest::keyClick(&w, Qt::Key_F3);
    QCOMPARE(panel->current(), 1);
    QTest::keyClick(&w, Qt::Key_F3, Qt::ShiftModifier);
    QTest::keyClick(&w, Qt::Key_F3, Qt::ShiftModifier);
    QCOMPARE(panel->current(), n - 1);  // wrapped to the last
    QVERIFY(waitForLayouts(w));
    QVERIFY(!w.parallelView()->selectedNodes().empty());

    // A click on a row goes there: the row's match is selected in its view.
    QListWidget* list = panel->list();
    const QRect row = list->visualItemRect(list->item(1));
    QTest::mouseClick(list->viewport(), Qt::LeftButton, {}, row.center());
    QCOMPARE(panel->current(), 1);
    QVERIFY(waitForLayouts(w));
    const GraphView* view = list->item(1)->text().contains("logical") ? w.logicalView() : w.parallelView();
    QVERIFY(!view->selectedNodes().empty());
    QVERIFY(labelOf(view->model()->node(view->selectedNodes().front())).contains("fc1"));
    saveScreenshot(w, "inspector-search-results");

    QVERIFY(!w.search("no-such-op-anywhere"));
    QCOMPARE(panel->count(), 0);
    QVERIFY(panel->countText().startsWith("No op"));
  }
};

QTEST_MAIN(TestInspectorHierarchy)
#include "test_inspector_hierarchy.moc"
