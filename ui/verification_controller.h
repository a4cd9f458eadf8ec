// Runs verify::verifyPlan on a background thread and re-emits its observer callbacks on the GUI thread.
#pragma once

#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QObject>
#include <atomic>
#include <functional>
#include <memory>

#include "core/verify/verify.h"
#include "ui/report_metatypes.h"

namespace paraproof::ui {

class VerificationController : public QObject {
  Q_OBJECT
 public:
  // The verification entry point; tests may substitute a scripted one.
  using VerifyFunction = std::function<verify::Report(const Plan&, const verify::Options&, verify::Observer*,
                                                      const std::atomic<bool>*)>;

  explicit VerificationController(QObject* parent = nullptr);
  ~VerificationController() override;
  void setVerifyFunction(VerifyFunction f) { verify_ = std::move(f); }

  // Starts a run on `plan` (shared so it outlives the worker even if a new plan is opened meanwhile).
  void start(std::shared_ptr<const Plan> plan, verify::Options options);
  void cancel();
  bool isRunning() const { return running_; }
  double elapsedSeconds() const;
  const verify::Report& lastReport() const { return report_; }

 signals:
  void stagesPlanned(const std::vector<paraproof::verify::StageInfo>& stages);
  void stageStarted(int stage);
  void stageFinished(const paraproof::verify::StageResult& result);
  void finished(const paraproof::verify::Report& report);

 private:
  class Relay;
  VerifyFunction verify_;
  std::shared_ptr<std::atomic<bool>> cancel_;
  uint64_t run_ = 0;  // callbacks of older runs are dropped
  bool running_ = false;
  bool cancelRequested_ = false;  // the running run was cancelled: its stage events are no longer shown
  QElapsedTimer clock_;
  double lastSeconds_ = 0;
  verify::Report report_;
  QFutureWatcher<verify::Report>* watcher_ = nullptr;
  // Every run still executing, so the destructor can cancel and join them (the relay points at us).
  std::vector<std::pair<std::shared_ptr<std::atomic<bool>>, QFuture<verify::Report>>> active_;
};

}  // namespace paraproof::ui
