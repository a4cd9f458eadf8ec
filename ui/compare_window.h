// Compare mode: two plans side by side (the correct plan and an injected one, two exports of one model, a
// plan before and after a fix), ops matched by id, then by kind and output lineage (core/plan/plan_diff.h).
// The differences are listed in a panel with their count; stepping through them (F3, Shift+F3, a click)
// opens the graph they are in and brings the op into view in both plans. Colours follow a diff's: an op only
// the second plan has is green there, one only the first has is red there, a changed op is amber in both; a
// folded group shows the loudest of its members.
#pragma once

#include <QMainWindow>
#include <functional>
#include <memory>

#include "core/plan/plan.h"
#include "core/plan/plan_diff.h"
#include "ui/model/graph_model.h"
#include "ui/model/stage_state.h"

class QComboBox;
class QLabel;
class QTreeWidget;

namespace paraproof::ui {

class GraphView;
class LayoutWorker;
struct ZooRequest;

// One side of a comparison: a plan and the hierarchies its two graphs are drawn from.
struct ComparedPlan {
  std::shared_ptr<const Plan> plan;
  QString name;
  std::shared_ptr<GraphModel> logical, parallel;
  // Per element of `logical` / `parallel`: the colour of its difference (None: the same in both plans).
  std::vector<StageState> logicalStates, parallelStates;
};

// Everything the window shows, built on a pool thread.
struct Comparison {
  ComparedPlan a, b;
  PlanDiff diff;
};

// Diffs the plans and builds both sides' hierarchies (seconds on a frontier plan: not on the UI thread).
std::shared_ptr<Comparison> buildComparison(std::shared_ptr<const Plan> a, const QString& nameA,
                                            std::shared_ptr<const Plan> b, const QString& nameB);
// The element of `side` a difference is about (an op; for a graph input or output, its value's leaf or
// producer), -1 when that plan does not have it or does not show the rank.
int elementOfDifference(const ComparedPlan& side, const PlanElementDiff& d, bool first);

class CompareWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit CompareWindow(QWidget* parent = nullptr);
  ~CompareWindow() override;

  // Each compares on a pool thread behind the shown window; a newer comparison supersedes an older one.
  void comparePlans(std::shared_ptr<const Plan> a, const QString& nameA, std::shared_ptr<const Plan> b,
                    const QString& nameB);
  void compareFiles(const QString& a, const QString& b);
  void comparePlanWithFile(std::shared_ptr<const Plan> a, const QString& nameA, const QString& b);
  void compareWithBug(const ZooRequest& injected);  // its correct plan (left) and the injected one (right)

  bool pending() const { return pending_; }  // loading, generating or diffing
  bool layoutsPending() const;
  const Comparison* comparison() const { return comparison_.get(); }
  int differenceCount() const;
  int currentDifference() const { return current_; }
  void stepTo(int index);  // selects it in the list and brings it into view in both plans
  void nextDifference();   // F3; wraps around
  void previousDifference();
  GraphView* viewA() const { return viewA_; }
  GraphView* viewB() const { return viewB_; }
  QTreeWidget* differenceList() const { return list_; }
  QString summary() const;  // the count line above the list

 signals:
  void compared();  // the comparison is shown (layouts may still run)
  void failed(const QString& error);

 private:
  using Source = std::function<std::shared_ptr<Comparison>(QString* error)>;
  void start(Source source, const QString& busy);
  void present(std::shared_ptr<Comparison> comparison);
  void showGraph(bool parallel);

  std::shared_ptr<LayoutWorker> worker_;  // released after the views (destructor)
  GraphView* viewA_;
  GraphView* viewB_;
  QLabel* headerA_;
  QLabel* headerB_;
  QComboBox* graph_;
  QLabel* summary_;
  QTreeWidget* list_;
  std::shared_ptr<Comparison> comparison_;
  uint64_t generation_ = 0;
  bool pending_ = false;
  bool parallelShown_ = false;
  int current_ = -1;
};

}  // namespace paraproof::ui
