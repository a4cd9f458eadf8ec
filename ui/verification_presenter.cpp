#include "ui/verification_presenter.h"

#include <utility>

#include "ui/stage_table.h"
#include "ui/verification_controller.h"
#include "ui/verification_status.h"

namespace paraproof::ui {

VerificationPresenter::VerificationPresenter(VerificationStatus* status, QObject* parent)
    : QObject(parent),
      status_(status),
      controller_(new VerificationController(this)),
      table_(new StageTableModel(this)) {
  connect(controller_, &VerificationController::stagesPlanned, this, &VerificationPresenter::onStagesPlanned);
  connect(controller_, &VerificationController::stageStarted, this, [this](int stage) {
    table_->markRunning(stage);
    scheduleStatePush();
  });
  connect(controller_, &VerificationController::stageFinished, this, [this](const verify::StageResult& r) {
    table_->setResult(r);
    scheduleStatePush();  // colours and progress follow within 60 ms, once per burst of results
  });
  connect(controller_, &VerificationController::finished, this, &VerificationPresenter::onFinished);
  stateTimer_.setSingleShot(true);
  stateTimer_.setInterval(60);
  connect(&stateTimer_, &QTimer::timeout, this, &VerificationPresenter::pushStates);
  clockTimer_.setInterval(250);
  connect(&clockTimer_, &QTimer::timeout, this, &VerificationPresenter::updateProgress);
}

VerificationPresenter::~VerificationPresenter() {
  delete controller_;  // joins a running verification before the table and the window go away
  controller_ = nullptr;
}

void VerificationPresenter::start(std::shared_ptr<const Plan> plan, const verify::Options& options) {
  dropRun_ = false;  // a run of an earlier plan still finishing is dropped by the controller itself
  stages_.clear();
  ++stagesVersion_;
  table_->clear();
  stageMap_ = StageMap();
  pushStates();
  status_->started();
  clockTimer_.start();
  controller_->start(std::move(plan), options);
  emit runningChanged(true);
}

void VerificationPresenter::cancel() {
  if (!controller_->isRunning()) return;
  controller_->cancel();
  status_->cancelling();
}

bool VerificationPresenter::isRunning() const {
  return controller_->isRunning();
}

StageMap VerificationPresenter::reset() {
  dropRun_ = controller_->isRunning();
  if (dropRun_) controller_->cancel();
  clockTimer_.stop();
  hasReport_ = false;
  stages_.clear();
  ++stagesVersion_;
  table_->clear();
  status_->reset();
  logical_ = parallel_ = nullptr;
  return std::exchange(stageMap_, StageMap());
}

StageMap VerificationPresenter::setModels(const GraphModel& logical, const GraphModel& parallel,
                                          StageMap built, uint64_t version) {
  logical_ = &logical;
  parallel_ = &parallel;
  StageMap old = std::exchange(
      stageMap_, version == stagesVersion_ ? std::move(built) : StageMap(stages_, logical, parallel));
  pushStates();
  return old;
}

const verify::Report& VerificationPresenter::lastReport() const {
  return controller_->lastReport();
}

void VerificationPresenter::onStagesPlanned(const std::vector<verify::StageInfo>& stages) {
  stages_ = stages;
  ++stagesVersion_;
  table_->setStages(stages);
  if (logical_ && parallel_) stageMap_ = StageMap(stages_, *logical_, *parallel_);
  status_->stagesPlanned(static_cast<int>(stages.size()));
  pushStates();
}

void VerificationPresenter::onFinished(const verify::Report& report) {
  clockTimer_.stop();
  if (std::exchange(dropRun_, false)) {  // the cancelled run of the previous plan: nothing of it is shown
    emit runningChanged(false);
    return;
  }
  hasReport_ = true;
  // The report is authoritative: it also covers runs whose observer events were dropped or never sent.
  if (table_->stageCount() != static_cast<int>(report.stages.size()) && !report.stages.empty())
    onStagesPlanned(report.stages);
  table_->setResults(report.results);
  if (report.cancelled) table_->markUnfinishedCancelled();
  pushStates();
  emit runningChanged(false);
  emit finished(report, status_->finished(report, *table_));
}

QString VerificationPresenter::outcomeText(const verify::Report& report) const {
  const int verified = table_->count(StageState::Verified);
  const int checked = verified + table_->count(StageState::Failed) + table_->count(StageState::Inconclusive);
  if (report.cancelled)
    return tr("Cancelled: %1 of %2 stages checked, %3 not run.")
        .arg(checked)
        .arg(table_->stageCount())
        .arg(table_->stageCount() - checked);
  return tr("No counterexample: %1 of %2 stages verified. Select a stage to see it in both views.")
      .arg(verified)
      .arg(table_->stageCount());
}

int VerificationPresenter::firstFailingStage() const {
  for (int i = 0; i < table_->stageCount(); ++i)
    if (table_->state(i) == StageState::Failed) return i;
  return -1;
}

void VerificationPresenter::updateProgress() {
  status_->progressed(*table_, controller_->elapsedSeconds());
}

void VerificationPresenter::scheduleStatePush() {
  if (!stateTimer_.isActive()) stateTimer_.start();
}

void VerificationPresenter::pushStates() {
  stateTimer_.stop();
  updateProgress();
  if (!logical_ || !parallel_) return;
  emit statesChanged(stageMap_.logicalStates(table_->states()), stageMap_.parallelStates(table_->states()));
}

}  // namespace paraproof::ui
