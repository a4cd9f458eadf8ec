#include "ui/link_overlay.h"

#include <QEvent>
#include <QPainter>
#include <QPainterPath>
#include <QScrollBar>
#include <algorithm>
#include <optional>
#include <set>

#include "ui/graph_view.h"
#include "ui/theme.h"

namespace paraproof::ui {
namespace {

const QColor kLinkColor(0x7B, 0x1F, 0xA2);

QPointF clampInto(const QRectF& r, QPointF p, bool* clamped) {
  QPointF q(std::clamp(p.x(), r.left(), r.right()), std::clamp(p.y(), r.top(), r.bottom()));
  *clamped = q != p;
  return q;
}

}  // namespace

LinkOverlay::LinkOverlay(QWidget* host, GraphView* logical, GraphView* parallel)
    : QWidget(host), logical_(logical), parallel_(parallel) {
  setAttribute(Qt::WA_TransparentForMouseEvents);
  setAttribute(Qt::WA_NoSystemBackground);
  setGeometry(host->rect());
  host->installEventFilter(this);
  hide();
  for (GraphView* v : {logical_, parallel_}) {
    connect(v, &GraphView::viewportMoved, this, &LinkOverlay::refresh);
    connect(v, &GraphView::layoutFinished, this, [this] {
      resolve();
      refresh();
    });
  }
}

void LinkOverlay::setLinks(std::vector<std::pair<int, int>> elementPairs) {
  elementPairs_ = std::move(elementPairs);
  resolve();
  refresh();
}

void LinkOverlay::resolve() {
  nodePairs_.clear();
  const GraphModel* lm = logical_->model();
  const GraphModel* pm = parallel_->model();
  if (!lm || !pm) return;
  const int ln = static_cast<int>(lm->elements().size()), pn = static_cast<int>(pm->elements().size());
  std::set<std::pair<int, int>> pairs;
  for (auto [le, pe] : elementPairs_)
    if (le >= 0 && le < ln && pe >= 0 && pe < pn)
      pairs.emplace(lm->visibleNodeOf(lm->leafOf(le)), pm->visibleNodeOf(pm->leafOf(pe)));
  nodePairs_.assign(pairs.begin(), pairs.end());
}

void LinkOverlay::refresh() {
  const bool show = !nodePairs_.empty();
  if (show) raise();
  setVisible(show);
  if (show) update();
}

QRect LinkOverlay::viewRect(const GraphView* view) const {
  const QWidget* vp = view->viewport();
  return QRect(vp->mapTo(parentWidget(), QPoint(0, 0)), vp->size());
}

std::vector<LinkOverlay::Segment> LinkOverlay::segments() const {
  std::vector<Segment> out;
  if (!logical_->isVisible() || !parallel_->isVisible()) return out;
  const QRectF lr = QRectF(viewRect(logical_)).adjusted(2, 2, -2, -2);
  const QRectF pr = QRectF(viewRect(parallel_)).adjusted(2, 2, -2, -2);
  // Scene point of a node's side facing the other view -> overlay coordinates.
  auto anchor = [this](const GraphView* view, int node, bool rightSide) -> std::optional<QPointF> {
    QRectF r = view->nodeSceneRect(node);
    if (r.isEmpty()) return std::nullopt;
    QPointF scenePoint(rightSide ? r.right() : r.left(), r.center().y());
    return QPointF(view->viewport()->mapTo(parentWidget(), view->mapFromScene(scenePoint)));
  };
  const bool logicalLeft = lr.center().x() <= pr.center().x();
  for (auto [ln, pn] : nodePairs_) {
    auto a = anchor(logical_, ln, logicalLeft);
    auto b = anchor(parallel_, pn, !logicalLeft);
    if (!a || !b) continue;
    Segment s;
    s.logical = clampInto(lr, *a, &s.logicalAtEdge);
    s.parallel = clampInto(pr, *b, &s.parallelAtEdge);
    out.push_back(s);
    if (out.size() >= static_cast<size_t>(kMaxDrawn)) break;
  }
  return out;
}

void LinkOverlay::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  QColor line = kLinkColor;
  line.setAlpha(190);
  for (const Segment& s : segments()) {
    // Horizontal tangents at both ends: the curve leaves one node sideways and enters the other sideways.
    const double dx = (s.parallel.x() - s.logical.x()) * 0.5;
    QPainterPath path(s.logical);
    path.cubicTo(s.logical + QPointF(dx, 0), s.parallel - QPointF(dx, 0), s.parallel);
    p.setPen(QPen(line, 2.2, s.logicalAtEdge || s.parallelAtEdge ? Qt::DashLine : Qt::SolidLine));
    p.setBrush(Qt::NoBrush);
    p.drawPath(path);
    p.setPen(Qt::NoPen);
    for (auto [point, atEdge] : {std::pair{s.logical, s.logicalAtEdge}, {s.parallel, s.parallelAtEdge}}) {
      // A filled dot on a node; a ring where the node is out of sight beyond the edge.
      p.setBrush(atEdge ? QBrush(theme().canvas) : QBrush(kLinkColor));
      p.setPen(atEdge ? QPen(kLinkColor, 1.6) : Qt::NoPen);
      p.drawEllipse(point, 3.5, 3.5);
    }
  }
}

bool LinkOverlay::eventFilter(QObject* watched, QEvent* event) {
  if (watched == parentWidget() &&
      (event->type() == QEvent::Resize || event->type() == QEvent::LayoutRequest)) {
    setGeometry(parentWidget()->rect());
    update();
  }
  return QWidget::eventFilter(watched, event);
}

}  // namespace paraproof::ui
