#include "ui/graph_items.h"

#include <QFont>
#include <QPainter>
#include <QStyleOptionGraphicsItem>

#include "ui/theme.h"

namespace paraproof::ui {
namespace {

constexpr double kHalo = 5;  // room outside the box for the selection and link outlines
constexpr double kTag = 14;  // height of the "first difference" tag above a box

QColor borderFor(StageState s) {
  return s == StageState::None ? theme().neutralBorder : stateColor(s);
}

double lodOf(const QStyleOptionGraphicsItem* option, QPainter* p) {
  return option->levelOfDetailFromTransform(p->worldTransform());
}

}  // namespace

NodeItem::NodeItem(int node, Look look, QString title, QString detail, QRectF rect)
    : node_(node), look_(look), title_(std::move(title)), detail_(std::move(detail)), rect_(rect) {
  setFlag(ItemIsSelectable);
  setAcceptHoverEvents(true);
  setZValue(10);
}

void NodeItem::setState(StageState s) {
  if (s == state_) return;
  state_ = s;
  update();
}

void NodeItem::setLinked(bool linked) {
  if (linked == linked_) return;
  linked_ = linked;
  update();
}

void NodeItem::setFirstDifference(bool on) {
  if (on == firstDifference_) return;
  prepareGeometryChange();  // the tag reaches above the box
  firstDifference_ = on;
  update();
}

QRectF NodeItem::boundingRect() const {
  return rect_.adjusted(-kHalo, firstDifference_ ? -kTag - kHalo : -kHalo, kHalo + 4, kHalo + 4);
}

void NodeItem::paint(QPainter* p, const QStyleOptionGraphicsItem* option, QWidget*) {
  p->setRenderHint(QPainter::Antialiasing);
  const double lod = lodOf(option, p);
  const bool failed = state_ == StageState::Failed;
  const Theme& t = theme();
  QColor fill = t.stateFill(state_);
  if (state_ == StageState::None) {
    fill = look_ == Look::Group           ? t.groupFill
           : look_ == Look::Communication ? t.communicationFill
           : look_ == Look::Input         ? t.inputFill
                                          : t.opFill;
  }
  const QColor border = borderFor(state_);
  const double radius = look_ == Look::Input ? rect_.height() / 2 : 5;

  if (isSelected() || linked_) {
    QColor halo = isSelected() ? selectionColor() : linkColor();
    halo.setAlpha(90);
    p->setPen(Qt::NoPen);
    p->setBrush(halo);
    p->drawRoundedRect(rect_.adjusted(-kHalo, -kHalo, kHalo, kHalo), radius + 4, radius + 4);
  }
  if (look_ == Look::Group) {  // a stacked card says "there is more inside"
    p->setPen(QPen(border.lighter(130), 1));
    p->setBrush(t.dark ? fill.lighter(112) : fill.darker(104));
    p->drawRoundedRect(rect_.translated(4, 4), radius, radius);
  }
  QPen pen(border, failed ? 2.6 : (look_ == Look::Group ? 1.6 : 1.1));
  if (look_ == Look::Input) pen.setStyle(Qt::DashLine);
  if (isSelected())
    pen = QPen(selectionColor(), 2.6);
  else if (linked_)
    pen = QPen(linkColor(), 2.6);
  p->setPen(pen);
  p->setBrush(fill);
  p->drawRoundedRect(rect_, radius, radius);
  if (look_ == Look::Op || look_ == Look::Communication) {  // status accent on the left edge
    p->setPen(Qt::NoPen);
    p->setBrush(border);
    p->drawRoundedRect(QRectF(rect_.left() + 1.5, rect_.top() + 3, 4, rect_.height() - 6), 2, 2);
  }
  if (firstDifference_) {
    const QRectF tag(rect_.left(), rect_.top() - kTag - 2, std::min(rect_.width(), 96.0), kTag);
    p->setPen(Qt::NoPen);
    p->setBrush(stateColor(StageState::Failed));
    p->drawRoundedRect(tag, kTag / 2, kTag / 2);
    if (lod >= 0.3) {
      QFont f = p->font();
      f.setPointSizeF(7);
      f.setBold(true);
      p->setFont(f);
      p->setPen(Qt::white);
      p->drawText(tag, Qt::AlignCenter, QStringLiteral("\u2260 first difference"));
    }
  }
  if (lod < 0.3) return;  // text would be unreadable; colour and shape carry the information

  QFont titleFont = p->font();
  titleFont.setPointSizeF(8.5);
  titleFont.setBold(look_ == Look::Group || failed);
  QFont detailFont = titleFont;
  detailFont.setBold(false);
  detailFont.setPointSizeF(7.5);
  const QRectF text = rect_.adjusted(look_ == Look::Input ? 10 : 9, 3, -6, -3);
  p->setPen(t.text);
  p->setFont(titleFont);
  const QFontMetricsF fm(titleFont);
  QRectF titleRect =
      detail_.isEmpty() ? text : QRectF(text.left(), text.top(), text.width(), text.height() / 2 + 2);
  p->drawText(titleRect, Qt::AlignLeft | (detail_.isEmpty() ? Qt::AlignVCenter : Qt::AlignBottom),
              fm.elidedText(title_, Qt::ElideMiddle, text.width()));
  if (!detail_.isEmpty()) {
    p->setFont(detailFont);
    p->setPen(look_ == Look::Communication ? t.communicationText : t.detailText);
    QRectF detailRect(text.left(), text.center().y() + 2, text.width(), text.height() / 2 - 2);
    p->drawText(detailRect, Qt::AlignLeft | Qt::AlignTop,
                QFontMetricsF(detailFont).elidedText(detail_, Qt::ElideRight, text.width()));
  }
}

ClusterItem::ClusterItem(int node, QString title, QRectF rect, int depth)
    : node_(node), title_(std::move(title)), rect_(rect), depth_(depth) {
  setZValue(depth);
  setAcceptHoverEvents(true);
}

void ClusterItem::setState(StageState s) {
  if (s == state_) return;
  state_ = s;
  update();
}

bool ClusterItem::titleContains(QPointF scenePos) const {
  QPointF local = mapFromScene(scenePos);
  return rect_.contains(local) && local.y() < rect_.top() + 22;
}

QRectF ClusterItem::boundingRect() const {
  return rect_.adjusted(-2, -2, 2, 2);
}

void ClusterItem::paint(QPainter* p, const QStyleOptionGraphicsItem* option, QWidget*) {
  p->setRenderHint(QPainter::Antialiasing);
  const int shade = std::min(depth_, 5);
  const Theme& t = theme();
  QColor fill = t.dark ? t.clusterFill.lighter(100 + 6 * shade) : t.clusterFill.darker(100 + 3 * shade);
  QColor border = state_ == StageState::None ? t.clusterBorder : stateColor(state_);
  if (state_ == StageState::Failed) fill = t.failedClusterFill;
  p->setPen(QPen(border, state_ == StageState::Failed ? 2.4 : 1.2));
  p->setBrush(fill);
  p->drawRoundedRect(rect_, 8, 8);
  if (lodOf(option, p) < 0.25) return;
  QFont f = p->font();
  f.setPointSizeF(9);
  f.setBold(true);
  p->setFont(f);
  p->setPen(state_ == StageState::Failed ? (t.dark ? t.bad : stateColor(state_).darker(120)) : t.clusterText);
  QRectF title(rect_.left() + 8, rect_.top() + 3, rect_.width() - 16, 18);
  p->drawText(title, Qt::AlignLeft | Qt::AlignVCenter,
              QFontMetricsF(f).elidedText(QStringLiteral("\u25BE ") + title_, Qt::ElideRight, title.width()));
}

EdgeItem::EdgeItem(const QPainterPath& path, QPolygonF arrow, int count)
    : QGraphicsPathItem(path), arrow_(std::move(arrow)), count_(count) {
  setZValue(5);
}

void EdgeItem::setEmphasis(bool on) {
  if (on == emphasis_) return;
  emphasis_ = on;
  setZValue(on ? 6 : 5);
  update();
}

QRectF EdgeItem::boundingRect() const {
  return QGraphicsPathItem::boundingRect().united(arrow_.boundingRect()).adjusted(-20, -10, 20, 10);
}

void EdgeItem::paint(QPainter* p, const QStyleOptionGraphicsItem* option, QWidget*) {
  p->setRenderHint(QPainter::Antialiasing);
  QColor c = emphasis_ ? linkColor() : theme().edge;
  double width = (emphasis_ ? 2.0 : 1.2) + std::min(count_ - 1, 6) * 0.35;
  p->setPen(QPen(c, width));
  p->setBrush(Qt::NoBrush);
  p->drawPath(path());
  p->setPen(Qt::NoPen);
  p->setBrush(c);
  p->drawPolygon(arrow_);
  if (count_ > 1 && lodOf(option, p) >= 0.5) {
    QFont f = p->font();
    f.setPointSizeF(7);
    p->setFont(f);
    p->setPen(theme().edgeText);
    p->drawText(path().pointAtPercent(0.5) + QPointF(4, 0), QStringLiteral("%1").arg(count_));
  }
}

}  // namespace paraproof::ui
