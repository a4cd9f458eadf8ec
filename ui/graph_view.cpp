#include "ui/graph_view.h"

#include <QBuffer>
#include <QContextMenuEvent>
#include <QEvent>
#include <QFontMetricsF>
#include <QGraphicsScene>
#include <QMenu>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QSvgGenerator>
#include <QTimer>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "ui/graph_items.h"
#include "ui/layout_worker.h"
#include "ui/minimap.h"
#include "ui/node_tooltip.h"
#include "ui/theme.h"

namespace paraproof::ui {
namespace {

constexpr double kMinScale = 0.02, kMaxScale = 6, kFitMaxScale = 1.25;
constexpr double kReadableScale = 0.9;  // a node's label reads at this zoom

NodeItem::Look lookOf(const GraphModel& m, int node) {
  const HierarchyNode& n = m.node(node);
  if (n.isGroup()) return NodeItem::Look::Group;
  const Element& e = m.element(n.element);
  if (e.kind == Element::Kind::Input) return NodeItem::Look::Input;
  return isCommunication(m.graphOf(e).ops[e.index].kind) ? NodeItem::Look::Communication : NodeItem::Look::Op;
}

QFont nodeFont(bool bold) {
  QFont f;
  f.setPointSizeF(8.5);
  f.setBold(bold);
  return f;
}

}  // namespace

GraphView::GraphView(LayoutWorker* worker, QWidget* parent) : QGraphicsView(parent), worker_(worker) {
  setScene(new QGraphicsScene(this));
  setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
  setDragMode(QGraphicsView::ScrollHandDrag);
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  setViewportUpdateMode(QGraphicsView::BoundingRectViewportUpdate);
  setFrameShape(QFrame::NoFrame);
  setFocusPolicy(Qt::StrongFocus);
  connect(scene(), &QGraphicsScene::selectionChanged, this, &GraphView::onSceneSelectionChanged);
  connect(worker_, &LayoutWorker::finished, this, &GraphView::onLayout);
  minimap_ = new Minimap(this);
}

GraphView::~GraphView() {
  latestJob_->store(0);
  // Deleting the scene deselects its items; nobody may hear about that any more.
  programmatic_ = true;
  disconnect(scene(), nullptr, this, nullptr);
  nodeItems_.clear();
  clusterItems_.clear();
  edgeItems_.clear();
}

void GraphView::setPlaceholder(const QString& text) {
  placeholder_ = text;
  viewport()->update();
}

void GraphView::setModel(std::shared_ptr<GraphModel> model) {
  model_ = std::move(model);
  firstDifference_ = -1;
  expanding_ = false;
  elementStates_.clear();
  selectedElements_.clear();
  linkedElements_.clear();
  fitOnNextLayout_ = true;
  relayout();
  minimap_->refresh();
}

void GraphView::relayout(int anchorNode) {
  anchorNode_ = anchorNode;
  if (!model_) {
    latestJob_->store(0);
    pending_ = false;
    scene()->clear();
    nodeItems_.clear();
    clusterItems_.clear();
    edgeItems_.clear();
    viewport()->update();
    return;
  }
  const VisibleGraph vg = model_->visible();
  lastLayoutCost_ = GraphModel::layoutCost(vg);
  LayoutJob job;
  job.id = worker_->nextJobId();
  job.latest = latestJob_;
  std::unordered_map<int, int> clusterIndex;
  for (int c : vg.clusters) {
    int parent = model_->node(c).parent;
    auto it = clusterIndex.find(parent);
    job.clusters.push_back(
        {c, it == clusterIndex.end() ? -1 : it->second, QString::fromStdString(model_->node(c).label)});
    clusterIndex[c] = static_cast<int>(job.clusters.size()) - 1;
  }
  const QFontMetricsF regular(nodeFont(false)), bold(nodeFont(true));
  for (int n : vg.nodes) {
    const HierarchyNode& hn = model_->node(n);
    const bool group = hn.isGroup();
    double textWidth = std::max((group ? bold : regular).horizontalAdvance(QString::fromStdString(hn.label)),
                                regular.horizontalAdvance(QString::fromStdString(hn.detail)) * 0.9);
    // Whole multiples of 8 points: names like layers.2 / layers.10 give equal sizes, so identical structures
    // share one layout (LayoutCache).
    double width = std::clamp(std::ceil((textWidth + 24) / 8) * 8, group ? 112.0 : 72.0, 232.0);
    double height = group ? 44 : (lookOf(*model_, n) == NodeItem::Look::Input ? 34 : 38);
    auto it = clusterIndex.find(hn.parent);
    job.nodes.push_back({n, width, height, it == clusterIndex.end() ? -1 : it->second});
  }
  for (const auto& e : vg.edges)
    job.edges.push_back({e.from, e.to, e.count});
  latestJob_->store(job.id);
  pending_ = true;
  worker_->submit(std::move(job));
}

void GraphView::onLayout(const LayoutResult& r) {
  if (!model_ || r.id != latestJob_->load()) return;  // stale: a newer layout was requested
  pending_ = false;
  lastLayoutMs_ = r.milliseconds;
  lastLayoutReused_ = r.reused;
  programmatic_ = true;
  scene()->clear();
  nodeItems_.clear();
  clusterItems_.clear();
  edgeItems_.clear();
  programmatic_ = false;
  if (!r.error.isEmpty()) {
    expanding_ = false;
    emit statusMessage(r.error);
    emit layoutFinished();
    return;
  }
  for (const auto& c : r.clusters) {
    int depth = 0;
    for (int p = model_->node(c.id).parent; p > 0; p = model_->node(p).parent)
      ++depth;
    auto* item = new ClusterItem(c.id, QString::fromStdString(model_->node(c.id).label),
                                 QRectF(c.x, c.y, c.width, c.height), depth);
    item->setToolTip(nodeTooltip(*model_, c.id));
    scene()->addItem(item);
    clusterItems_[c.id] = item;
  }
  for (const auto& b : r.nodes) {
    const HierarchyNode& hn = model_->node(b.id);
    auto* item = new NodeItem(b.id, lookOf(*model_, b.id), QString::fromStdString(hn.label),
                              QString::fromStdString(hn.detail), QRectF(b.x, b.y, b.width, b.height));
    item->setToolTip(nodeTooltip(*model_, b.id));
    scene()->addItem(item);
    nodeItems_[b.id] = item;
  }
  const VisibleGraph vg = model_->visible();
  std::map<std::pair<int, int>, int> counts;
  for (const auto& e : vg.edges)
    counts[{e.from, e.to}] = e.count;
  for (const auto& e : r.edges) {
    if (e.points.size() < 4) continue;
    QPainterPath path(QPointF(e.points[0].first, e.points[0].second));
    for (size_t i = 1; i + 2 < e.points.size(); i += 3)
      path.cubicTo(QPointF(e.points[i].first, e.points[i].second),
                   QPointF(e.points[i + 1].first, e.points[i + 1].second),
                   QPointF(e.points[i + 2].first, e.points[i + 2].second));
    QPolygonF arrow;
    if (e.hasArrow) {
      QPointF tip(e.arrowTip.first, e.arrowTip.second), from = path.currentPosition();
      QLineF line(from, tip);
      if (line.length() > 0.1) {
        QPointF dir = (tip - from) / line.length(), normal(-dir.y(), dir.x());
        arrow << tip << from + normal * 3.5 << from - normal * 3.5;
        path.lineTo(from);
      }
    }
    auto* item = new EdgeItem(path, arrow, counts[{e.from, e.to}]);
    scene()->addItem(item);
    edgeItems_.push_back({item, {e.from, e.to}});
  }
  scene()->setSceneRect(QRectF(-40, -40, r.width + 80, r.height + 80));
  applyStates();
  applySelection(false);
  applyLinks(false);
  applyFirstDifference();
  if (fitOnNextLayout_) {
    fitOnNextLayout_ = false;
    fitAll();
  } else if (anchorNode_ >= 0 && anchorNode_ < model_->size()) {
    centerOnNodes({model_->visibleNodeOf(anchorNode_)});
  }
  if (centerOnSelection_)
    centerOnNodes(visibleNodesFor(selectedElements_));
  else if (centerOnLinks_)
    centerOnNodes(visibleNodesFor(linkedElements_));
  centerOnSelection_ = centerOnLinks_ = false;
  if (focusElement_ >= 0 && focusElement_ < static_cast<int>(model_->elements().size()))
    zoomOnto(model_->visibleNodeOf(model_->leafOf(focusElement_)));
  focusElement_ = -1;
  emit statusMessage(r.reused
                         ? QStringLiteral("Laid out %1 nodes, %2 groups open, %3 edges (same structure as "
                                          "an earlier layout: reused)")
                               .arg(r.nodes.size())
                               .arg(r.clusters.size())
                               .arg(r.edges.size())
                         : QStringLiteral("Laid out %1 nodes, %2 groups open, %3 edges (cost %5) in %4 ms")
                               .arg(r.nodes.size())
                               .arg(r.clusters.size())
                               .arg(r.edges.size())
                               .arg(r.milliseconds, 0, 'f', 0)
                               .arg(lastLayoutCost_));
  emit layoutFinished();
  if (expanding_) QTimer::singleShot(0, this, &GraphView::expandStep);  // the next level, once this one shows
}

void GraphView::setElementStates(std::vector<StageState> states) {
  elementStates_ = std::move(states);
  applyStates();
}

void GraphView::applyStates() {
  if (!model_) return;
  std::unordered_map<int, StageState> agg;
  const size_t n = std::min(elementStates_.size(), model_->elements().size());
  for (size_t e = 0; e < n; ++e) {
    StageState s = elementStates_[e];
    if (s == StageState::None) continue;
    int leaf = model_->leafOf(static_cast<int>(e));
    for (int p = leaf; p > 0; p = model_->node(p).parent) {
      if (!nodeItems_.count(p) && !clusterItems_.count(p)) continue;
      StageState& slot = agg[p];
      slot = combine(slot, s);
    }
  }
  for (auto& [node, item] : nodeItems_)
    item->setState(agg.count(node) ? agg[node] : StageState::None);
  for (auto& [node, item] : clusterItems_)
    item->setState(agg.count(node) ? agg[node] : StageState::None);
}

StageState GraphView::nodeState(int node) const {
  if (auto it = nodeItems_.find(node); it != nodeItems_.end()) return it->second->state();
  if (auto it = clusterItems_.find(node); it != clusterItems_.end()) return it->second->state();
  return StageState::None;
}

std::vector<int> GraphView::visibleNodesFor(const std::vector<int>& elements) const {
  std::set<int> nodes;
  if (!model_) return {};
  for (int e : elements)
    if (e >= 0 && e < static_cast<int>(model_->elements().size()))
      nodes.insert(model_->visibleNodeOf(model_->leafOf(e)));
  return {nodes.begin(), nodes.end()};
}

void GraphView::selectElements(const std::vector<int>& elements, bool center) {
  selectedElements_ = elements;
  if (pending_) {
    centerOnSelection_ = center;
    return;
  }
  applySelection(center);
}

void GraphView::applySelection(bool center) {
  programmatic_ = true;
  scene()->clearSelection();
  std::vector<int> nodes = visibleNodesFor(selectedElements_);
  for (int n : nodes)
    if (auto it = nodeItems_.find(n); it != nodeItems_.end()) it->second->setSelected(true);
  programmatic_ = false;
  if (center) centerOnNodes(nodes);
}

void GraphView::setLinkedElements(const std::vector<int>& elements, bool center) {
  linkedElements_ = elements;
  if (pending_) {
    centerOnLinks_ = center;
    return;
  }
  applyLinks(center);
}

void GraphView::applyLinks(bool center) {
  std::vector<int> nodes = visibleNodesFor(linkedElements_);
  std::set<int> linked(nodes.begin(), nodes.end());
  for (auto& [node, item] : nodeItems_)
    item->setLinked(linked.count(node) > 0);
  for (auto& [item, ends] : edgeItems_)
    item->setEmphasis(linked.count(ends.first) && linked.count(ends.second));
  if (center) centerOnNodes(nodes);
}

std::vector<int> GraphView::selectedNodes() const {
  std::vector<int> out;
  for (auto& [node, item] : nodeItems_)
    if (item->isSelected()) out.push_back(node);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int> GraphView::linkedNodes() const {
  std::vector<int> out;
  for (auto& [node, item] : nodeItems_)
    if (item->linked()) out.push_back(node);
  std::sort(out.begin(), out.end());
  return out;
}

void GraphView::onSceneSelectionChanged() {
  if (programmatic_ || !model_) return;
  std::vector<int> elements;
  for (QGraphicsItem* item : scene()->selectedItems())
    if (auto* node = dynamic_cast<NodeItem*>(item)) {
      auto under = model_->elementsUnder(node->node());
      elements.insert(elements.end(), under.begin(), under.end());
    }
  selectedElements_ = elements;
  emit elementsSelected(elements);
}

void GraphView::focusNode(int node) {
  if (!model_ || node < 0 || node >= model_->size()) return;
  expanding_ = false;
  model_->reveal(node);
  selectedElements_ = model_->elementsUnder(node);
  centerOnSelection_ = true;
  relayout(node);
}

void GraphView::bringIntoView(const std::vector<int>& elements, int focus) {
  if (!model_ || focus < 0 || focus >= static_cast<int>(model_->elements().size())) {
    selectElements(elements);
    return;
  }
  expanding_ = false;
  selectedElements_ = elements;
  const int leaf = model_->leafOf(focus);
  if (!model_->isVisible(leaf)) {
    model_->reveal(leaf);
    focusElement_ = focus;
    relayout();
    return;
  }
  if (pending_) {  // the layout under way shows it
    focusElement_ = focus;
    return;
  }
  applySelection(false);
  zoomOnto(leaf);
}

void GraphView::setFirstDifference(int element) {
  firstDifference_ = element;
  applyFirstDifference();
}

int GraphView::firstDifferenceNode() const {
  for (const auto& [node, item] : nodeItems_)
    if (item->firstDifference()) return node;
  return -1;
}

void GraphView::applyFirstDifference() {
  const bool known =
      model_ && firstDifference_ >= 0 && firstDifference_ < static_cast<int>(model_->elements().size());
  const int marked = known ? model_->visibleNodeOf(model_->leafOf(firstDifference_)) : -1;
  for (auto& [node, item] : nodeItems_)
    item->setFirstDifference(node == marked);
}

void GraphView::zoomOnto(int node) {
  auto it = nodeItems_.find(node);
  if (it == nodeItems_.end()) return;
  if (transform().m11() < kReadableScale) setTransform(QTransform::fromScale(kReadableScale, kReadableScale));
  centerOn(it->second->sceneBoundingRect().center());
  emit viewportMoved();
}

void GraphView::centerOnNodes(const std::vector<int>& nodes) {
  QRectF box;
  for (int n : nodes)
    if (auto it = nodeItems_.find(n); it != nodeItems_.end())
      box = box.united(it->second->sceneBoundingRect());
  if (box.isNull()) return;
  QRectF visible = mapToScene(viewport()->rect()).boundingRect();
  if (box.width() > visible.width() || box.height() > visible.height()) {
    fitInView(box.adjusted(-40, -40, 40, 40), Qt::KeepAspectRatio);
    if (transform().m11() > kFitMaxScale) setTransform(QTransform::fromScale(kFitMaxScale, kFitMaxScale));
  }
  centerOn(box.center());
  emit viewportMoved();
}

bool GraphView::isNodeInViewport(int node) const {
  auto it = nodeItems_.find(node);
  if (it == nodeItems_.end()) return false;
  return mapToScene(viewport()->rect()).boundingRect().intersects(it->second->sceneBoundingRect());
}

QRectF GraphView::nodeSceneRect(int node) const {
  auto it = nodeItems_.find(node);
  return it == nodeItems_.end() ? QRectF() : it->second->sceneBoundingRect();
}

QRectF GraphView::groupSceneRect(int node) const {
  if (auto it = clusterItems_.find(node); it != clusterItems_.end()) return it->second->sceneBoundingRect();
  return nodeSceneRect(node);
}

void GraphView::toggle(int node) {
  if (!model_ || node <= 0 || node >= model_->size() || !model_->node(node).isGroup()) return;
  expanding_ = false;
  model_->setExpanded(node, !model_->node(node).expanded);
  relayout(node);
}

void GraphView::expandAll() {
  if (!model_) return;
  expanding_ = true;
  expandStep();
}

void GraphView::expandStep() {
  if (!expanding_ || !model_) return;
  std::vector<int> inSight;
  const QRectF sight = mapToScene(viewport()->rect()).boundingRect();
  for (const auto& [node, item] : nodeItems_)
    if (item->look() == NodeItem::Look::Group && sight.intersects(item->sceneBoundingRect()))
      inSight.push_back(node);
  std::sort(inSight.begin(), inSight.end());  // the map's order is not stable from run to run
  int left = 0;
  if (model_->expandLevel(kExpandBound, kExpandCostBound, inSight, &left) > 0) {
    fitOnNextLayout_ = true;
    relayout();
    return;
  }
  expanding_ = false;
  emit statusMessage(left == 0
                         ? tr("Expanded all: %1 nodes").arg(visibleNodeCount())
                         : tr("Expand All stopped at %1 nodes, its bound; %2 groups stay collapsed: open "
                              "them one by one, or show one pipeline stage or device")
                               .arg(visibleNodeCount())
                               .arg(left));
}

void GraphView::collapseAll() {
  if (!model_) return;
  expanding_ = false;
  model_->collapseAll();
  fitOnNextLayout_ = true;
  relayout();
}

void GraphView::scaleBy(double factor) {
  double current = transform().m11();
  factor = std::clamp(current * factor, kMinScale, kMaxScale) / current;
  scale(factor, factor);
  emit viewportMoved();
}

void GraphView::scrollContentsBy(int dx, int dy) {
  QGraphicsView::scrollContentsBy(dx, dy);
  emit viewportMoved();
}

void GraphView::resizeEvent(QResizeEvent* event) {
  QGraphicsView::resizeEvent(event);
  emit viewportMoved();
}

void GraphView::zoomIn() {
  scaleBy(1.25);
}
void GraphView::zoomOut() {
  scaleBy(0.8);
}

void GraphView::fitAll() {
  QRectF box = scene()->itemsBoundingRect();
  if (box.isEmpty()) return;
  fitInView(box.adjusted(-20, -20, 20, 20), Qt::KeepAspectRatio);
  if (transform().m11() > kFitMaxScale) {
    setTransform(QTransform::fromScale(kFitMaxScale, kFitMaxScale));
    centerOn(box.center());
  }
  emit viewportMoved();
}

void GraphView::wheelEvent(QWheelEvent* event) {
  scaleBy(std::pow(1.0015, event->angleDelta().y()));
  event->accept();
}

void GraphView::mouseDoubleClickEvent(QMouseEvent* event) {
  for (QGraphicsItem* item : items(event->pos())) {
    if (auto* node = dynamic_cast<NodeItem*>(item)) {
      if (node->look() == NodeItem::Look::Group) toggle(node->node());
      return;
    }
    if (auto* cluster = dynamic_cast<ClusterItem*>(item)) {
      toggle(cluster->node());
      return;
    }
  }
  QGraphicsView::mouseDoubleClickEvent(event);
}

void GraphView::contextMenuEvent(QContextMenuEvent* event) {
  if (!model_) return;
  QMenu menu(this);
  int target = -1;
  for (QGraphicsItem* item : items(event->pos())) {
    if (auto* node = dynamic_cast<NodeItem*>(item))
      target = node->node();
    else if (auto* cluster = dynamic_cast<ClusterItem*>(item))
      target = cluster->node();
    if (target >= 0) break;
  }
  if (target >= 0) {
    const HierarchyNode& n = model_->node(target);
    if (n.isGroup())
      menu.addAction(n.expanded ? tr("Collapse %1").arg(QString::fromStdString(n.label))
                                : tr("Expand %1").arg(QString::fromStdString(n.label)),
                     [this, target] { toggle(target); });
    if (n.parent > 0) {
      int parent = n.parent;
      menu.addAction(tr("Collapse %1").arg(QString::fromStdString(model_->node(parent).label)),
                     [this, parent] {
                       model_->setExpanded(parent, false);
                       relayout(parent);
                     });
    }
    menu.addSeparator();
  }
  menu.addAction(tr("Expand all"), this, &GraphView::expandAll);
  menu.addAction(tr("Collapse all"), this, &GraphView::collapseAll);
  menu.addAction(tr("Fit to window"), this, &GraphView::fitAll);
  menu.exec(event->globalPos());
}

QImage GraphView::renderImage(int maxSide) const {
  const QRectF box = scene()->itemsBoundingRect().adjusted(-20, -20, 20, 20);
  const double scale = std::min(2.0, maxSide / std::max({box.width(), box.height(), 1.0}));
  QImage image((box.size() * scale).toSize().expandedTo(QSize(1, 1)), QImage::Format_ARGB32_Premultiplied);
  image.fill(theme().canvas);
  QPainter p(&image);
  p.setRenderHint(QPainter::Antialiasing);
  scene()->render(&p, QRectF(QPointF(0, 0), box.size() * scale), box);
  return image;
}

QByteArray GraphView::renderSvg(const QString& title) const {
  const QRectF box = scene()->itemsBoundingRect().adjusted(-20, -20, 20, 20);
  QBuffer buffer;
  buffer.open(QIODevice::WriteOnly);
  QSvgGenerator svg;
  svg.setOutputDevice(&buffer);
  svg.setSize(box.size().toSize());
  svg.setViewBox(QRectF(QPointF(0, 0), box.size()));
  svg.setTitle(title);
  QPainter p(&svg);
  p.fillRect(QRectF(QPointF(0, 0), box.size()), theme().canvas);
  scene()->render(&p, QRectF(QPointF(0, 0), box.size()), box);
  p.end();
  return buffer.data();
}

void GraphView::changeEvent(QEvent* event) {
  QGraphicsView::changeEvent(event);
  if (event->type() != QEvent::PaletteChange) return;
  resetCachedContent();
  if (scene()) scene()->update();
  viewport()->update();
}

void GraphView::drawBackground(QPainter* painter, const QRectF& rect) {
  painter->fillRect(rect, theme().canvas);
  if (model_ || placeholder_.isEmpty()) return;
  painter->save();
  painter->resetTransform();
  painter->setPen(theme().placeholder);
  QFont f = painter->font();
  f.setPointSizeF(11);
  painter->setFont(f);
  painter->drawText(viewport()->rect(), Qt::AlignCenter | Qt::TextWordWrap, placeholder_);
  painter->restore();
}

}  // namespace paraproof::ui
