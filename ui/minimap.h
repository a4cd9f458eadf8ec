// A graph view's minimap: the whole drawing scaled into the view's lower right corner, the part in view
// framed. A click or a drag in it moves the view there. It shares the view's scene (no second copy of the
// items; boxes drawn without text at its scale) and hides itself while the whole drawing is in view.
#pragma once

#include <QGraphicsView>

namespace paraproof::ui {

class GraphView;

class Minimap : public QGraphicsView {
  Q_OBJECT
 public:
  explicit Minimap(GraphView* view);
  void setOn(bool on);  // View > Minimap
  bool isOn() const { return on_; }
  // The part of the scene the view shows, as framed here.
  QRectF viewedSceneRect() const;
  void refresh();  // the view moved, zoomed or got a new drawing

 protected:
  void drawBackground(QPainter* painter, const QRectF& rect) override;
  void drawForeground(QPainter* painter, const QRectF& rect) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void place();
  void moveViewTo(QPoint pos);

  GraphView* view_;
  bool on_ = true;
};

}  // namespace paraproof::ui
