// Plain data crossing between the GUI thread and the layout thread: what to lay out and where it went.
#pragma once

#include <QMetaType>
#include <QString>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace paraproof::ui {

struct LayoutJob {
  struct Node {
    int id = 0;
    double width = 0, height = 0;  // points
    int cluster = -1;              // index into clusters, -1 = top level
  };
  struct Cluster {
    int id = 0;
    int parent = -1;  // index into clusters
    QString label;
  };
  struct Edge {
    int from = 0, to = 0;  // node ids
    int weight = 1;
  };
  uint64_t id = 0;
  // The newest job id of the requesting view; an older job is skipped before layout starts.
  std::shared_ptr<std::atomic<uint64_t>> latest;
  std::vector<Node> nodes;
  std::vector<Cluster> clusters;
  std::vector<Edge> edges;
};

// Coordinates in points with Y growing downwards (already flipped from Graphviz).
struct LayoutResult {
  struct Box {
    int id = 0;
    double x = 0, y = 0, width = 0, height = 0;  // top-left corner
  };
  struct Edge {
    int from = 0, to = 0;
    std::vector<std::pair<double, double>> points;  // cubic bezier control points: p0 (c1 c2 p)*
    bool hasArrow = false;
    std::pair<double, double> arrowTip;
  };
  uint64_t id = 0;
  std::vector<Box> nodes;
  std::vector<Box> clusters;
  std::vector<Edge> edges;
  double width = 0, height = 0;
  double milliseconds = 0;
  bool reused = false;  // taken from the layout cache: a structurally identical job was laid out before
  QString error;
};

}  // namespace paraproof::ui

Q_DECLARE_METATYPE(paraproof::ui::LayoutJob)
Q_DECLARE_METATYPE(paraproof::ui::LayoutResult)
