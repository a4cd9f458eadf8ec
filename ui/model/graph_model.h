// The hierarchy shown in one graph view: ops and inputs (elements) grouped by device and name scope
// (model > layer > block > op), with collapse state, and the visible graph at the current collapse level.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/plan/plan.h"
#include "ui/model/group_identity.h"

namespace paraproof::ui {

// A leaf of the hierarchy: one op or one graph input, of the logical graph or of one device.
struct Element {
  enum class Kind { Op, Input };
  Kind kind = Kind::Op;
  int device = kNone;  // index into Plan::devices; kNone = the logical graph
  int index = 0;       // OpId or ValueId in that graph
};

struct HierarchyNode {
  enum class Kind { Root, Mesh, Device, Scope, Split, Leaf };
  Kind kind = Kind::Leaf;
  std::string label;   // UTF-8
  std::string detail;  // second line: op kind, tensor shape, "12 ops"
  int parent = -1;
  std::vector<int> children;
  int element = -1;      // leaves only
  int replicas = 1;      // data-parallel replicas folded into this device group
  int microBatches = 1;  // per-micro-batch copies ("name#m") folded into this leaf
  int leafCount = 0;     // elements below (1 for a leaf)
  bool expanded = false;
  bool isGroup() const { return kind != Kind::Leaf; }
};

// Which devices the parallel side shows.
struct ParallelSelection {
  enum class Mode { AllDevices, PipelineStage, Device };
  Mode mode = Mode::AllDevices;
  int value = 0;  // pipeline stage (pp coordinate) or rank
  // The copies of an op for each micro-batch ("w2.out#0", "w2.out#1") are shown as one node "x2 mb".
  bool foldMicroBatches = true;
};

struct VisibleGraph {
  struct Edge {
    int from = 0, to = 0;  // hierarchy nodes
    int count = 1;         // underlying tensor edges folded into this one
  };
  std::vector<int> nodes;     // drawn as boxes: leaves and collapsed groups
  std::vector<int> clusters;  // expanded groups (not the root), drawn as frames around their children
  std::vector<Edge> edges;
};

class GraphModel {
 public:
  static constexpr int kMaxChildren = 24;       // larger groups are split into chunks of this size
  static constexpr int kMinIdenticalBadge = 3;  // smaller identical groups are too common to point out

  GraphModel() = default;
  // The plan must outlive the model.
  static GraphModel logical(const Plan& plan);
  static GraphModel parallel(const Plan& plan, ParallelSelection selection);

  bool isParallel() const { return parallel_; }
  const Plan* plan() const { return plan_; }
  int root() const { return 0; }
  int size() const { return static_cast<int>(nodes_.size()); }
  const HierarchyNode& node(int i) const { return nodes_[i]; }
  const std::vector<Element>& elements() const { return elements_; }
  const Element& element(int e) const { return elements_[e]; }
  int leafOf(int element) const { return leafOfElement_[element]; }

  // Element of an op / input; a device folded into a replica group maps to its representative's element.
  // Returns -1 when the device is not shown or the name is unknown.
  int elementOfOp(int device, const std::string& opId) const;
  int elementOfOp(int device, OpId op) const;
  int elementOfInput(int device, ValueId value) const;
  int representative(int device) const;  // kNone when the device is not shown
  const std::vector<int>& shownDevices() const { return shownDevices_; }
  // Devices the shown ones stand for, the replicas a compact plan implies included.
  int64_t devicesCovered() const { return devicesCovered_; }

  void setExpanded(int node, bool expanded);
  void expandAll();  // every group: for small models only (GraphView expands large ones progressively)
  void collapseAll();
  // One step of a progressive Expand All: expands the visible collapsed groups, those in `first` before the
  // rest, while the visible count stays within `budget` and the layout cost within `costBound`. Returns how
  // many it expanded; `left` receives how many visible collapsed groups remain (0: everything is expanded).
  int expandLevel(int budget, int64_t costBound, const std::vector<int>& first, int* left);
  // What Graphviz's dot pays to lay out `g`, roughly: its boxes plus one virtual node per rank a long edge
  // crosses (ranks as longest paths over the graph without its back edges). A deep model's collapsed layers
  // all feed the optimizer: 300 boxes can mean 100,000 virtual nodes and minutes of layout.
  static int64_t layoutCost(const VisibleGraph& g);
  void reveal(int node);        // expands every ancestor so the node is visible
  void autoExpand(int budget);  // expands groups breadth-first while the visible count stays within budget
  int visibleNodeOf(int node) const;  // the node itself or its outermost collapsed ancestor
  bool isVisible(int node) const { return visibleNodeOf(node) == node; }
  VisibleGraph visible() const;
  int visibleNodeCount() const;

  std::vector<int> elementsUnder(int node) const;
  // Leaves whose op id, kind, scope, tensor names or lineage tensors contain `text`, best matches first.
  std::vector<int> find(const std::string& text) const;
  // Structural hash of a group and the groups identical to it (see group_identity.h).
  const GroupIdentity& identity(int node) const { return identities_[node]; }
  const std::vector<std::pair<int, int>>& elementEdges() const { return elementEdges_; }
  const std::string& elementName(int element) const;
  const Graph& graphOf(const Element& e) const;

 private:
  int addNode(HierarchyNode n);
  int scopeGroup(int parent, const std::string& scope, std::unordered_map<std::string, int>& cache);
  void addGraph(int parent, int device, const Graph& g, bool foldMicroBatches);
  void finish();  // compacts single-leaf groups, splits big groups, counts leaves
  void split(int group);
  int countLeaves(int node);

  const Plan* plan_ = nullptr;
  bool parallel_ = false;
  std::vector<HierarchyNode> nodes_;
  std::vector<Element> elements_;
  std::vector<int> leafOfElement_;
  std::vector<std::pair<int, int>> elementEdges_;  // producer element -> consumer element
  // Per plan device (index kNone+1 = logical): op / input value -> element.
  std::vector<std::vector<int>> opElements_, inputElements_;
  std::vector<int> representative_;  // per plan device
  std::vector<int> shownDevices_;
  int64_t devicesCovered_ = 0;
  std::vector<GroupIdentity> identities_;
};

}  // namespace paraproof::ui
