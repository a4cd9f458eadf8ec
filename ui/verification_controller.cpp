#include "ui/verification_controller.h"

#include <QMetaObject>
#include <QPointer>
#include <QtConcurrent/QtConcurrentRun>

namespace paraproof::ui {

// Observer living on the worker thread: copies each callback into a queued call on the controller.
class VerificationController::Relay : public verify::Observer {
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
  template <class F>
  void post(F f) {
    QPointer<VerificationController> c = controller_;
    uint64_t run = run_;
    QMetaObject::invokeMethod(
        controller_,
        [c, run, f = std::move(f)] {
          if (c && c->run_ == run) f(c.data());
        },
        Qt::QueuedConnection);
  }
  VerificationController* controller_;
  uint64_t run_;
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
      return verify(*plan, options, relay.get(), cancelFlag.get());
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
}

double VerificationController::elapsedSeconds() const {
  return running_ && clock_.isValid() ? clock_.elapsed() / 1000.0 : lastSeconds_;
}

}  // namespace paraproof::ui
