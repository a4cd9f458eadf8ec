// One side of the inspector: a GraphModel drawn from the layout thread's results, with stage colours,
// selection, lineage highlights, collapse/expand, zoom and pan.
#pragma once

#include <QGraphicsView>
#include <QPointer>
#include <memory>
#include <unordered_map>

#include "ui/layout_types.h"
#include "ui/model/graph_model.h"
#include "ui/model/stage_state.h"

namespace paraproof::ui {

class LayoutWorker;
class NodeItem;
class ClusterItem;
class EdgeItem;

class Minimap;

class GraphView : public QGraphicsView {
  Q_OBJECT
 public:
  static constexpr int kExpandBound = 800;  // visible nodes Expand All stops at (dot: ~2 s; 2,000 took 80 s)
  static constexpr int64_t kExpandCostBound = 8000;  // and GraphModel::layoutCost (L3: ~1 ms a unit)

  GraphView(LayoutWorker* worker, QWidget* parent = nullptr);
  ~GraphView() override;

  // Takes a new model (or none); lays out its visible level.
  void setModel(std::shared_ptr<GraphModel> model);
  GraphModel* model() const { return model_.get(); }
  Minimap* minimap() const { return minimap_; }
  void setPlaceholder(const QString& text);

  // Per element of the model; nodes and frames show the loudest state below them.
  void setElementStates(std::vector<StageState> states);
  StageState nodeState(int node) const;  // of a visible node or frame

  // Programmatic selection (not echoed by elementsSelected): the visible nodes standing for the elements.
  void selectElements(const std::vector<int>& elements, bool center = true);
  // Lineage counterparts of the other view's selection.
  void setLinkedElements(const std::vector<int>& elements, bool center = true);
  std::vector<int> selectedNodes() const;
  std::vector<int> linkedNodes() const;
  // Expands what is needed to show the leaf, selects it and centres on it once laid out.
  void focusNode(int node);
  // Selects the elements and takes the view to `focus`, one of them (-1: only centres on the selection):
  // opens the groups on its path and, once laid out, centres on it at a readable zoom.
  void bringIntoView(const std::vector<int>& elements, int focus);
  // The element a counterexample names first (-1: none): its node is tagged apart from the stage's others.
  void setFirstDifference(int element);
  int firstDifferenceNode() const;  // the tagged visible node, -1 when none

  void toggle(int node);  // expand a collapsed group / collapse an expanded one
  // Progressive: one level per layout, the groups in sight first, up to kExpandBound visible nodes (a
  // plan of 8,192 devices fully expanded would be hundreds of thousands of boxes: gigabytes in dot and in
  // the scene). Any other expansion, Collapse All or a new model stops it.
  void expandAll();
  void collapseAll();
  void relayout(int anchorNode = -1);
  bool layoutPending() const { return pending_ || expanding_; }
  bool expanding() const { return expanding_; }
  double lastLayoutMilliseconds() const { return lastLayoutMs_; }
  bool lastLayoutReused() const { return lastLayoutReused_; }
  int visibleNodeCount() const { return model_ ? model_->visibleNodeCount() : 0; }
  bool isNodeInViewport(int node) const;
  QRectF nodeSceneRect(int node) const;   // empty when the node is not drawn
  QRectF groupSceneRect(int node) const;  // a drawn node or the frame of an expanded group; else empty

 public slots:
  void zoomIn();
  void zoomOut();
  void fitAll();
  // The whole drawing (every drawn node, not only the part in view), for exports and failure reports: an
  // image of at most `maxSide` pixels a side on the theme's canvas, or an SVG document.
  QImage renderImage(int maxSide = 16000) const;
  QByteArray renderSvg(const QString& title) const;

 signals:
  void elementsSelected(const std::vector<int>& elements);  // by the user
  void layoutFinished();
  void viewportMoved();  // scrolled, zoomed or resized: scene-to-widget mapping changed
  void statusMessage(const QString& text);

 protected:
  void changeEvent(
      QEvent* event) override;  // a new palette: the canvas and boxes repaint in the theme's colours
  void wheelEvent(QWheelEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void contextMenuEvent(QContextMenuEvent* event) override;
  void drawBackground(QPainter* painter, const QRectF& rect) override;
  void scrollContentsBy(int dx, int dy) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  void onLayout(const LayoutResult& result);
  void applyStates();
  void applyLinks(bool center);
  void applySelection(bool center);
  void onSceneSelectionChanged();
  void centerOnNodes(const std::vector<int>& nodes);
  std::vector<int> visibleNodesFor(const std::vector<int>& elements) const;
  void scaleBy(double factor);
  void expandStep();
  void zoomOnto(int node);

  LayoutWorker* worker_;
  std::shared_ptr<GraphModel> model_;
  std::shared_ptr<std::atomic<uint64_t>> latestJob_ = std::make_shared<std::atomic<uint64_t>>(0);
  bool pending_ = false;
  bool fitOnNextLayout_ = true;
  bool expanding_ = false;  // a progressive Expand All is under way
  int anchorNode_ = -1;
  bool programmatic_ = false;
  double lastLayoutMs_ = 0;
  int64_t lastLayoutCost_ = 0;  // GraphModel::layoutCost of the last layout requested
  bool lastLayoutReused_ = false;
  QString placeholder_;

  std::vector<StageState> elementStates_;
  std::vector<int> selectedElements_, linkedElements_;
  bool centerOnSelection_ = false, centerOnLinks_ = false;
  int focusElement_ = -1;
  int firstDifference_ = -1;    // element
  void applyFirstDifference();  // bringIntoView's element, zoomed onto after the next layout
  std::unordered_map<int, NodeItem*> nodeItems_;
  std::unordered_map<int, ClusterItem*> clusterItems_;
  std::vector<std::pair<EdgeItem*, std::pair<int, int>>> edgeItems_;
  Minimap* minimap_ = nullptr;
};

}  // namespace paraproof::ui
