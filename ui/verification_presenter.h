// The verification as the window shows it: runs and cancels it (VerificationController), keeps the stage
// table, the stage map of the current hierarchies and the status bar's verification part up to date, and
// tells the window which state each element of the two views shows. MainWindow wires it to the views and
// docks; what a run means for them lives here.
#pragma once

#include <QObject>
#include <QTimer>
#include <memory>
#include <vector>

#include "core/plan/plan.h"
#include "core/verify/report.h"
#include "core/verify/verify.h"
#include "ui/model/graph_model.h"
#include "ui/model/stage_map.h"
#include "ui/model/stage_state.h"

namespace paraproof::ui {

class StageTableModel;
class VerificationController;
class VerificationStatus;

class VerificationPresenter : public QObject {
  Q_OBJECT
 public:
  VerificationPresenter(VerificationStatus* status, QObject* parent);
  ~VerificationPresenter() override;  // joins a running verification

  void start(std::shared_ptr<const Plan> plan, const verify::Options& options);
  void cancel();
  bool isRunning() const;
  // A new plan: the run (if any) cancelled, no stages, no report; returns the old stage map for the caller
  // to free off the UI thread.
  StageMap reset();
  // The views show new hierarchies: `built` is the stage map the builder made for stage list `version` (see
  // stagesVersion), used when still current, else the map is made here. Returns the old map.
  StageMap setModels(const GraphModel& logical, const GraphModel& parallel, StageMap built, uint64_t version);

  const std::vector<verify::StageInfo>& stages() const { return stages_; }
  uint64_t stagesVersion() const { return stagesVersion_; }  // bumped whenever stages() changes
  const StageMap& stageMap() const { return stageMap_; }
  StageTableModel* table() const { return table_; }
  VerificationController* controller() const { return controller_; }
  bool hasReport() const { return hasReport_; }
  const verify::Report& lastReport() const;
  int firstFailingStage() const;  // -1 when none
  // After a run without a failing stage: what the counterexample panel says instead.
  QString outcomeText(const verify::Report& report) const;

 signals:
  // The state every element of the two views shows (per element of their models), after any change,
  // coalesced to one signal per 60 ms burst of stage events.
  void statesChanged(const std::vector<paraproof::ui::StageState>& logical,
                     const std::vector<paraproof::ui::StageState>& parallel);
  void runningChanged(bool running);
  // The run ended: table, states and status bar show the report; `message` is the status bar's line.
  void finished(const paraproof::verify::Report& report, const QString& message);

 private:
  void onStagesPlanned(const std::vector<verify::StageInfo>& stages);
  void onFinished(const verify::Report& report);
  void scheduleStatePush();
  void pushStates();
  void updateProgress();

  VerificationStatus* status_;
  VerificationController* controller_;
  StageTableModel* table_;
  std::vector<verify::StageInfo> stages_;
  uint64_t stagesVersion_ = 0;
  StageMap stageMap_;
  const GraphModel* logical_ = nullptr;  // the views' current models (owned by the window)
  const GraphModel* parallel_ = nullptr;
  bool hasReport_ = false;
  bool dropRun_ = false;  // reset() cancelled a run of the previous plan: its report must not be shown
  QTimer stateTimer_;
  QTimer clockTimer_;
};

}  // namespace paraproof::ui
