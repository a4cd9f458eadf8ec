#include "ui/legend_widget.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QPixmap>

#include "ui/theme.h"

namespace paraproof::ui {
namespace {

QLabel* chip(const QColor& border, const QColor& fill, const QString& text, QWidget* parent) {
  QPixmap pm(28, 28);
  pm.setDevicePixelRatio(2);
  pm.fill(Qt::transparent);
  QPainter p(&pm);
  p.setRenderHint(QPainter::Antialiasing);
  p.setPen(QPen(border, 1.6));
  p.setBrush(fill);
  p.drawRoundedRect(QRectF(1.5, 2.5, 11, 9), 2.5, 2.5);
  p.end();
  auto* box = new QLabel(parent);
  box->setPixmap(pm);
  box->setToolTip(text);
  return box;
}

}  // namespace

LegendWidget::LegendWidget(QWidget* parent) : QWidget(parent) {
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(6, 0, 6, 0);
  layout->setSpacing(4);
  build();
  setToolTip(
      tr("Node fill and border show the state of the stages covering it; a group shows its worst member."));
}

void LegendWidget::build() {
  QLayout* layout = this->layout();
  while (QLayoutItem* item = layout->takeAt(0)) {
    delete item->widget();
    delete item;
  }
  auto add = [&](const QColor& border, const QColor& fill, const QString& text) {
    layout->addWidget(chip(border, fill, text, this));
    auto* l = new QLabel(text, this);
    l->setStyleSheet(QStringLiteral("margin-right: 5px;"));
    l->setVisible(!compact_);
    layout->addWidget(l);
  };
  for (StageState s : {StageState::Pending, StageState::Running, StageState::Verified, StageState::Failed,
                       StageState::Inconclusive})
    add(stateColor(s), stateFillColor(s), stateName(s));
  QColor sel = selectionColor(), link = linkColor();
  add(sel, sel.lighter(180), tr("selected"));
  add(link, link.lighter(180), tr("linked"));
}

void LegendWidget::setCompact(bool compact) {
  if (compact == compact_) return;
  compact_ = compact;
  build();
}

void LegendWidget::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::PaletteChange) build();
}

}  // namespace paraproof::ui
