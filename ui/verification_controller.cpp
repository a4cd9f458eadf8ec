#include "ui/verification_controller.h"

#include "core/verify/report_annotate.h"

#include <QMetaObject>
#include <QPointer>
#include <QtConcurrent/QtConcurrentRun>
#include <mutex>

namespace paraproof::ui {

// Observer living on the worker thread: queues each callback and has the controller replay them on the GUI
// thread in batches (one queued call per burst, not one per stage: a fast run must not flood the event loop).
class VerificationController::Relay : public verify::Observer,
                                      public std::enable_shared_from_this<VerificationController::Relay> {
 public:
  Relay(VerificationController* c, uint64_t run) : controller_(c), run_(run) {}
  void onStagesPlanned(const std::vector<verify::StageInfo>& stages) override {
    post([stages](VerificationController* c) { emit c->stagesPlanned(stages); });
  }
  void onStageStarted(int stage) override {
    post([stage](VerificationController* c) { emit c->stageStarted(stage); });
  }
  void onStageFinished(const verify::StageResult& result) override {
    post([result](VerificationController* c) { emit c->stageFinished(result); });
  }

 private:
  using Event = std::function<void(VerificationController*)>;
  void post(Event e) {
    {
      std::lock_guard lock(mutex_);
      events_.push_back(std::move(e));
      if (drainPosted_) return;
      drainPosted_ = true;
    }
    QPointer<VerificationController> c = controller_;
    QMetaObject::invokeMethod(
        controller_, [c, self = shared_from_this()] { self->drain(c); }, Qt::QueuedConnection);
  }
  void drain(const QPointer<VerificationController>& c) {
    std::vector<Event> events;
    {
      std::lock_guard lock(mutex_);
      events.swap(events_);
      drainPosted_ = false;
    }
    // After Cancel the run's remaining events are dropped: its report (authoritative) follows at once.
    for (Event& e : events)
      if (c && c->run_ == run_ && !c->cancelRequested_) e(c.data());
  }

  VerificationController* controller_;
  const uint64_t run_;
  std::mutex mutex_;
  std::vector<Event> events_;
  bool drainPosted_ = false;
};

VerificationController::VerificationController(QObject* parent)
    : QObject(parent), verify_(&verify::verifyPlan) {
  qRegisterMetaType<verify::StageResult>();
  qRegisterMetaType<verify::Report>();
}

VerificationController::~VerificationController() {
  for (auto& [flag, future] : active_) {
    flag->store(true);
    future.waitForFinished();
  }
}

void VerificationController::start(std::shared_ptr<const Plan> plan, verify::Options options) {
  if (running_) cancel();
  ++run_;
  cancelRequested_ = false;
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  running_ = true;
  clock_.start();
  auto cancelFlag = cancel_;
  auto relay = std::make_shared<Relay>(this, run_);
  VerifyFunction verify = verify_;
  auto* watcher = new QFutureWatcher<verify::Report>(this);
  if (watcher_) watcher_->disconnect(this);
  watcher_ = watcher;
  const uint64_t run = run_;
  connect(watcher, &QFutureWatcher<verify::Report>::finished, this, [this, watcher, run] {
    verify::Report report = watcher->result();
    watcher->deleteLater();
    if (watcher_ == watcher) watcher_ = nullptr;
    if (run != run_) return;
    running_ = false;
    lastSeconds_ = clock_.isValid() ? clock_.elapsed() / 1000.0 : 0;
    report_ = report;
    emit finished(report_);
  });
  std::erase_if(active_, [](const auto& a) { return a.second.isFinished(); });
  QFuture<verify::Report> future = QtConcurrent::run([plan, options, relay, cancelFlag, verify] {
    try {
      verify::Report r = verify(*plan, options, relay.get(), cancelFlag.get());
      // As the CLI reports it: each stage's collectives and, for a failure, where it goes wrong.
      verify::annotateCommunication(r, *plan);
      verify::annotateFirstDifference(r, *plan);
      return r;
    } catch (const std::exception& e) {  // verifyPlan promises not to throw; a bug must not kill the GUI
      verify::Report r;
      r.verdict = verify::Verdict::Invalid;
      r.plan = plan->name;
      r.errors.push_back({"verifier", e.what()});
      return r;
    }
  });
  active_.emplace_back(cancelFlag, future);
  watcher->setFuture(future);
}

void VerificationController::cancel() {
  if (cancel_) cancel_->store(true);
  cancelRequested_ = running_;
}

double VerificationController::elapsedSeconds() const {
  return running_ && clock_.isValid() ? clock_.elapsed() / 1000.0 : lastSeconds_;
}

}  // namespace paraproof::ui
