// The lineage links drawn across the two graph views: a line from each selected node of one view to each of
// its counterparts in the other. A transparent widget over both views; a link whose node is scrolled out of
// sight ends at that view's edge.
#pragma once

#include <QPointF>
#include <QRect>
#include <QWidget>
#include <utility>
#include <vector>

namespace paraproof::ui {

class GraphView;

class LinkOverlay : public QWidget {
  Q_OBJECT
 public:
  static constexpr int kMaxDrawn = 400;  // more lines than this are noise, not information

  // Covers `host` (an ancestor of both views) and follows its size; ignores the mouse.
  LinkOverlay(QWidget* host, GraphView* logical, GraphView* parallel);

  // (logical element, parallel element) pairs; nodes are resolved again after every layout.
  void setLinks(std::vector<std::pair<int, int>> elementPairs);
  void clear() { setLinks({}); }

  struct Segment {
    QPointF logical, parallel;  // overlay coordinates
    bool logicalAtEdge = false, parallelAtEdge = false;
  };
  // What is drawn now: one segment per distinct pair of visible nodes.
  std::vector<Segment> segments() const;
  QRect viewRect(const GraphView* view) const;  // the view's viewport in overlay coordinates

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void resolve();  // element pairs -> distinct visible node pairs
  void refresh();

  GraphView* logical_;
  GraphView* parallel_;
  std::vector<std::pair<int, int>> elementPairs_;
  std::vector<std::pair<int, int>> nodePairs_;
};

}  // namespace paraproof::ui
