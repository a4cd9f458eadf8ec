#include "ui/minimap.h"

#include <QEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>

#include "ui/graph_view.h"
#include "ui/model/stage_state.h"
#include "ui/theme.h"

namespace paraproof::ui {
namespace {
constexpr int kWidth = 200, kHeight = 130, kMargin = 10;  // at most; a quarter of a small view
}

Minimap::Minimap(GraphView* view) : QGraphicsView(view->scene(), view), view_(view) {
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setInteractive(false);
  setFrameShape(QFrame::Box);
  setFocusPolicy(Qt::NoFocus);
  setCursor(Qt::PointingHandCursor);
  setToolTip(tr("Minimap: the whole drawing, the part in view framed; click or drag to move there"));
  setViewportUpdateMode(QGraphicsView::FullViewportUpdate);
  view_->installEventFilter(this);
  connect(view_, &GraphView::viewportMoved, this, &Minimap::refresh);
  connect(view_->scene(), &QGraphicsScene::sceneRectChanged, this, &Minimap::refresh);
  place();
  refresh();
}

void Minimap::setOn(bool on) {
  on_ = on;
  refresh();
}

QRectF Minimap::viewedSceneRect() const {
  return view_->mapToScene(view_->viewport()->rect()).boundingRect();
}

void Minimap::refresh() {
  const QRectF drawing = scene()->itemsBoundingRect();
  // Nothing to navigate when the whole drawing is in view.
  const bool useful = on_ && view_->model() && !drawing.isEmpty() &&
                      !viewedSceneRect().adjusted(-2, -2, 2, 2).contains(drawing);
  setVisible(useful);
  if (!useful) return;
  place();
  fitInView(drawing, Qt::KeepAspectRatio);
  viewport()->update();
}

void Minimap::place() {
  const QRect area = view_->viewport()->geometry();
  const QSize size(std::min(kWidth, area.width() / 4), std::min(kHeight, area.height() / 4));
  setGeometry(area.right() - size.width() - kMargin, area.bottom() - size.height() - kMargin, size.width(),
              size.height());
  raise();
}

void Minimap::drawBackground(QPainter* painter, const QRectF& rect) {
  QColor canvas = theme().canvas;
  painter->fillRect(rect, theme().dark ? canvas.lighter(115) : canvas.darker(103));
}

void Minimap::drawForeground(QPainter* painter, const QRectF&) {
  QColor frame = selectionColor();
  if (theme().dark) frame = frame.lighter(170);
  QColor fill = frame;
  fill.setAlpha(40);
  painter->setPen(QPen(frame, 0));  // cosmetic: one pixel at any scale
  painter->setBrush(fill);
  painter->drawRect(viewedSceneRect());
}

void Minimap::moveViewTo(QPoint pos) {
  view_->centerOn(mapToScene(pos));
}

void Minimap::mousePressEvent(QMouseEvent* event) {
  if (event->button() == Qt::LeftButton) moveViewTo(event->position().toPoint());
}

void Minimap::mouseMoveEvent(QMouseEvent* event) {
  if (event->buttons() & Qt::LeftButton) moveViewTo(event->position().toPoint());
}

void Minimap::wheelEvent(QWheelEvent* event) {
  event->ignore();  // the view zooms
}

bool Minimap::eventFilter(QObject* watched, QEvent* event) {
  if (watched == view_ && (event->type() == QEvent::Resize || event->type() == QEvent::Show)) refresh();
  return QGraphicsView::eventFilter(watched, event);
}

}  // namespace paraproof::ui
