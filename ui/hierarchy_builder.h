// Builds what the two views need for a plan (logical and parallel hierarchies, their lineage index, the stage
// map) on a background thread, so opening a big plan or changing the parallel selection never blocks the UI
// thread. Each request supersedes the earlier ones: a stale build is dropped, never shown.
#pragma once

#include <QObject>
#include <QThreadPool>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/plan/plan.h"
#include "core/verify/report.h"
#include "ui/model/graph_model.h"
#include "ui/model/lineage_index.h"
#include "ui/model/stage_map.h"

namespace paraproof::ui {

struct HierarchyRequest {
  std::shared_ptr<const Plan> plan;
  ParallelSelection selection;
  // The untouched logical hierarchy of an earlier build of the same plan; null: build the logical side too.
  std::shared_ptr<const GraphModel> logicalStructure;
  std::vector<verify::StageInfo> stages;  // known stages, for the stage map (may be empty)
  uint64_t stagesVersion = 0;             // which list of stages `stages` is, echoed in the build
  int overviewBudget = 40;                // visible nodes per view after the build (autoExpand)
};

// Everything a build produced. Owned by the worker until delivered, by the UI thread after: never shared.
struct HierarchyBuild {
  uint64_t generation = 0;
  std::shared_ptr<const Plan> plan;
  ParallelSelection selection;
  std::shared_ptr<const GraphModel>
      logicalStructure;                 // pristine (collapse state never changed): for rebuilds
  std::shared_ptr<GraphModel> logical;  // only when this build made the logical side
  std::shared_ptr<GraphModel> parallel;
  LineageIndex lineage;
  StageMap stageMap;
  uint64_t stagesVersion = 0;
  double milliseconds = 0;
  std::string error;  // the build failed; nothing else is set
};

class HierarchyBuilder : public QObject {
  Q_OBJECT
 public:
  explicit HierarchyBuilder(QObject* parent = nullptr);
  ~HierarchyBuilder() override;  // waits for a build in progress (it cannot be interrupted)

  // Starts a build on the worker thread; returns its generation. Any earlier build is superseded.
  uint64_t request(HierarchyRequest request);
  // Supersedes every build in flight without starting one (e.g. the plan is closed).
  void cancel();
  // True until the latest request has been delivered (or cancelled). UI thread only.
  bool pending() const { return delivered_ != generation_; }
  uint64_t generation() const { return generation_; }

  // Builds synchronously on the calling thread (the worker's body; tests and benchmarks use it directly).
  static std::shared_ptr<HierarchyBuild> build(const HierarchyRequest& request);

 signals:
  // Emitted on the UI thread with the latest build only.
  void built(std::shared_ptr<paraproof::ui::HierarchyBuild> build);

 private:
  void runLatest();  // on the worker thread
  void deliver(std::shared_ptr<HierarchyBuild> build);

  QThreadPool pool_;  // one thread: builds run one at a time, the latest request wins
  std::mutex mutex_;  // guards latest_ (handed from the UI thread to the worker)
  std::optional<std::pair<uint64_t, HierarchyRequest>> latest_;
  std::atomic<uint64_t> newest_{0};  // generation_ as seen by the worker, to drop stale builds early
  uint64_t generation_ = 0, delivered_ = 0;
};

// Destroys big objects (plans, hierarchies) on a pool thread: freeing 100k nodes is a visible UI stall.
template <class... T>
void destroyInBackground(T... owned) {
  QThreadPool::globalInstance()->start([... owned = std::move(owned)]() mutable { (owned.reset(), ...); });
}

}  // namespace paraproof::ui
