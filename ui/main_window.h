// The inspector window: logical | parallel graph views, stage table and counterexample docks, run/cancel.
#pragma once

#include <QMainWindow>
#include <QTimer>
#include <functional>
#include <memory>

#include "core/plan/plan.h"
#include "core/verify/verify.h"
#include "ui/hierarchy_builder.h"
#include "ui/model/graph_model.h"
#include "ui/model/lineage_index.h"
#include "ui/model/stage_map.h"
#include "ui/report_metatypes.h"
#include "ui/selection_coordinator.h"
#include "ui/theme.h"
#include "ui/zoo_dialog.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSplitter;
class QTableView;
class QAction;
class QCheckBox;
class QDockWidget;

namespace paraproof::ui {

class CompareWindow;
class CounterexamplePanel;
class PropertiesPanel;
class SearchPanel;
class SelectionCoordinator;
class TourPanel;
class VerificationStatus;
class GraphView;
class LayoutWorker;
class LegendWidget;
class LinkOverlay;
class StageFilterProxy;
class StageTableModel;
class VerificationController;
class VerificationPresenter;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Loads a plan (on the calling thread) and opens it; on failure shows nothing new and returns the error
  // text. A PyTorch SCRIPT.py is imported first (docs/torch-import.md).
  bool openPlanFile(const QString& path, QString* error = nullptr);
  // Loads the plan, or imports the SCRIPT.py, on a background thread, then opens it; a failure is shown in
  // the status bar, emitted as openFailed and, with `dialogOnError`, reported in a message box.
  void openPlanFileInBackground(const QString& path, bool dialogOnError = true);
  // Generates a zoo plan on a background thread, then opens it; failures as for openPlanFileInBackground.
  void generatePlanInBackground(const ZooRequest& request, bool dialogOnError = true);
  // Shows the plan: its hierarchies are built on a background thread (hierarchyPending() until then), then
  // laid out. Opening another plan meanwhile drops the stale build.
  void openPlan(Plan plan, const QString& source);
  const Plan* plan() const { return plan_.get(); }
  // Writes the open plan (generated, imported or loaded) as JSON on a pool thread, atomically (a temporary
  // file renamed); planSaved reports the end (and, with `dialogOnError`, a failure in a message box). False
  // when there is no plan.
  bool savePlanInBackground(const QString& path, bool dialogOnError = true);

  // Writes the last verification's failure report (HTML, or Markdown for *.md; ui/failure_report.h).
  bool exportFailureReport(const QString& path, QString* error = nullptr);

  void runVerification();
  void cancelVerification();
  bool isVerifying() const;
  void setVerifyOptions(const verify::Options& o) { options_ = o; }
  const verify::Options& verifyOptions() const { return options_; }

  // A new compare window (deleted on close), shown; the caller starts its comparison.
  static CompareWindow* newCompareWindow();
  // View > Theme: applies the choice to the application and saves it.
  void setTheme(ThemeChoice choice);
  // Shows the bug tour's panel (Help > Bug Tour), creating it on first use.
  TourPanel* openTour();

  void setParallelSelection(ParallelSelection selection);  // also sets micro-batch folding
  void selectStage(int stageIndex);  // focuses it in both views and shows its counterexample
  int firstFailingStage() const;     // -1 when none
  // Finds op / tensor / scope names in both views and lists them in the Search dock with their count; each
  // call with the same text moves to the next match (`backwards`: the previous one). False if none.
  bool search(const QString& text, bool backwards = false);
  SearchPanel* searchPanel() const { return searchPanel_; }
  LegendWidget* legend() const { return legend_; }
  bool isCompact() const { return compact_; }  // laid out for a small window
  bool hierarchyPending() const;               // a plan is being loaded or its hierarchies built
  // Anything still in flight before the views are settled: loading, building hierarchies, layouts.
  bool layoutsPending() const;

  GraphView* logicalView() const { return logicalView_; }
  GraphView* parallelView() const { return parallelView_; }
  LinkOverlay* linkOverlay() const { return links_; }
  StageTableModel* stageModel() const { return stageModel_; }
  QTableView* stageTable() const { return stageTable_; }
  CounterexamplePanel* counterexamplePanel() const { return cexPanel_; }
  PropertiesPanel* propertiesPanel() const { return propsPanel_; }
  VerificationController* controller() const;

 signals:
  void planOpened();                      // the plan is known; its hierarchies are still being built
  void openFailed(const QString& error);  // a background load or import failed (one diagnostic a line)
  void hierarchyBuilt();  // the views show the hierarchies of the current plan (layouts may still run)
  void verificationFinished(const paraproof::verify::Report& report);
  void planSaved(const QString& path, const QString& error);  // error empty: written

 protected:
  void closeEvent(QCloseEvent* event) override;
  void changeEvent(QEvent* event) override;  // a new palette: headers in its colours
  void resizeEvent(QResizeEvent* event) override;
  void showEvent(QShowEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  // Runs `load` on a pool thread behind the shown window (views and progress bar say what is happening),
  // then opens its plan; a newer open drops it. `what` names the source in messages.
  using PlanSource = std::function<std::shared_ptr<Plan>(QString* error)>;
  void openInBackground(PlanSource load, const QString& source, const QString& busy, const QString& failure,
                        bool dialogOnError);
  void buildActions();
  void buildCentral();
  void buildDocks();
  void buildStatusBar();
  void rebuildParallelModel();
  ParallelSelection currentSelection() const;
  void requestHierarchy(bool withLogical);
  void onHierarchyBuilt(std::shared_ptr<HierarchyBuild> build);
  void refreshParallelChoices();
  void updateTitle();
  void renderHeaders();  // the view headers' text and bar, in the theme's colours
  void adaptToSize();    // compact docks and toolbar in small windows
  void onFinished(const verify::Report& report, const QString& message);
  void onLogicalSelection(const std::vector<int>& elements);
  void onParallelSelection(const std::vector<int>& elements);
  void onStageRowChanged();
  void showStage(int stage);
  void showSearchStep(const SelectionCoordinator::SearchStep& step);
  // The op a selection or a failure is about, in the properties panel (raised when `raise`).
  void showProperties(const std::string& opId, bool raise);
  void openDialog();
  void openZooDialog();
  void compareWithFileDialog();
  void compareWithCorrectPlan();
  void updateCompareActions();
  void savePlanDialog();
  void exportView();
  void exportReport();
  void exportFailureReportDialog();
  void showSettings();
  void showAbout();
  GraphView* activeView() const;
  QString bugNote() const;

  std::shared_ptr<LayoutWorker> worker_;  // released after the views (destructor)
  VerificationPresenter* verification_;
  HierarchyBuilder* builder_;
  std::shared_ptr<const Plan> plan_;
  QString planPath_;
  uint64_t loadGeneration_ = 0;  // background loads of older requests are dropped
  bool loading_ = false;
  std::shared_ptr<GraphModel> logicalModel_, parallelModel_;
  std::shared_ptr<const GraphModel> logicalStructure_;  // the worker's pristine copy, for parallel rebuilds
  verify::Options options_;
  QAction* savePlanAction_ = nullptr;
  QAction* compareFileAction_ = nullptr;
  QAction* compareBugAction_ = nullptr;
  std::optional<ZooRequest> zooRequest_;  // the last zoo plan asked for (compare with its correct plan)

  GraphView* logicalView_;
  GraphView* parallelView_;
  QSplitter* splitter_ = nullptr;
  LinkOverlay* links_ = nullptr;
  bool splitSized_ = false;
  QLabel* logicalHeader_ = nullptr;
  QLabel* parallelHeader_ = nullptr;
  QString logicalDetail_, parallelDetail_;  // what the headers say after their titles
  std::vector<QAction*> themeActions_;
  QComboBox* parallelMode_;
  QComboBox* parallelValue_;
  QCheckBox* foldMicroBatches_;
  StageTableModel* stageModel_;
  StageFilterProxy* stageProxy_;
  QTableView* stageTable_;
  QLineEdit* stageFilter_;
  QComboBox* stateFilter_;
  CounterexamplePanel* cexPanel_;
  PropertiesPanel* propsPanel_;
  QDockWidget* propsDock_ = nullptr;
  QDockWidget* tourDock_ = nullptr;
  QDockWidget* stageDock_ = nullptr;
  QDockWidget* cexDock_ = nullptr;
  LegendWidget* legend_ = nullptr;
  bool compact_ = false;
  QByteArray wideLayout_;  // dock arrangement before the window went compact
  SearchPanel* searchPanel_ = nullptr;
  QDockWidget* searchDock_ = nullptr;
  QLineEdit* searchBox_;
  VerificationStatus* status_ = nullptr;
  QAction* runAction_;
  QAction* cancelAction_;
  GraphView* lastActiveView_ = nullptr;
  std::unique_ptr<SelectionCoordinator> selection_;
};

}  // namespace paraproof::ui
