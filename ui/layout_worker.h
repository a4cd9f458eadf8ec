// The one thread that talks to Graphviz: owns the GVC_t, lays out jobs with dot, returns plain results.
#pragma once

#include <QObject>
#include <QThread>
#include <memory>

#include "ui/layout_cache.h"
#include "ui/layout_types.h"

namespace paraproof::ui {

class GraphvizLayouter;

// Lives on its own QThread; submit() may be called from any thread.
class LayoutWorker : public QObject {
  Q_OBJECT
 public:
  LayoutWorker();
  ~LayoutWorker() override;
  // The worker every window of the process shares (Graphviz keeps global state: two threads running dot at
  // once are not safe); the last window to go destroys it. UI thread only.
  static std::shared_ptr<LayoutWorker> shared();
  // Ids are unique across every view sharing this worker, so each view recognises its own results.
  uint64_t nextJobId() { return ++lastJobId_; }
  void submit(LayoutJob job);

 signals:
  void finished(paraproof::ui::LayoutResult result);

 private:
  void run(const LayoutJob& job);

  std::atomic<uint64_t> lastJobId_{0};
  QThread thread_;
  QObject* context_ = nullptr;            // lives on thread_, receives the queued jobs
  GraphvizLayouter* layouter_ = nullptr;  // created and destroyed on thread_
  LayoutCache cache_;                     // used on thread_ only
};

}  // namespace paraproof::ui
