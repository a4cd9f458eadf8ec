// The scene items of a graph view: op/input/group boxes, expanded-group frames, and dataflow edges.
#pragma once

#include <QGraphicsItem>
#include <QGraphicsPathItem>

#include "ui/model/stage_state.h"

namespace paraproof::ui {

// A box for a visible hierarchy node: a leaf (op or input) or a collapsed group.
class NodeItem : public QGraphicsItem {
 public:
  enum class Look { Op, Communication, Input, Group };
  NodeItem(int node, Look look, QString title, QString detail, QRectF rect);

  int node() const { return node_; }
  Look look() const { return look_; }
  StageState state() const { return state_; }
  void setState(StageState s);
  bool linked() const { return linked_; }
  void setLinked(bool linked);
  // The op whose value a counterexample names first: a "first difference" tag above the box sets it
  // apart from the other ops of its failing stage.
  bool firstDifference() const { return firstDifference_; }
  void setFirstDifference(bool on);

  QRectF boundingRect() const override;
  void paint(QPainter* p, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  int node_;
  Look look_;
  QString title_, detail_;
  QRectF rect_;
  StageState state_ = StageState::None;
  bool linked_ = false;
  bool firstDifference_ = false;
};

// The frame of an expanded group, with its title; double-click collapses it.
class ClusterItem : public QGraphicsItem {
 public:
  ClusterItem(int node, QString title, QRectF rect, int depth);
  int node() const { return node_; }
  void setState(StageState s);
  StageState state() const { return state_; }
  bool titleContains(QPointF scenePos) const;

  QRectF boundingRect() const override;
  void paint(QPainter* p, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  int node_;
  QString title_;
  QRectF rect_;
  int depth_;
  StageState state_ = StageState::None;
};

class EdgeItem : public QGraphicsPathItem {
 public:
  EdgeItem(const QPainterPath& path, QPolygonF arrow, int count);
  void setEmphasis(bool on);
  QRectF boundingRect() const override;
  void paint(QPainter* p, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  QPolygonF arrow_;
  int count_;
  bool emphasis_ = false;
};

}  // namespace paraproof::ui
