// The guided bug tour, for teaching: a catalog bug is walked through in five steps, each driving the
// inspector as a teacher would by hand: (1) the bug, its class and where it was seen; (2) the correct plan,
// generated and verified (equivalent); (3) the same plan with the bug injected, verified (not equivalent);
// (4) the failing stage selected, the op its counterexample names first in view, its properties shown;
// (5) the correct and the injected plan side by side in compare mode, on the first difference.
// `paraproof-inspector --tour BUG` runs it; with --screenshots DIR it runs headless, one picture per step.
#pragma once

#include <QPointer>
#include <QString>
#include <QWidget>
#include <optional>

#include "core/verify/verify.h"
#include "ui/zoo_dialog.h"

class QComboBox;
class QLabel;
class QListWidget;
class QPushButton;

namespace paraproof::parallel {
struct BugEntry;
}

namespace paraproof::ui {

class CompareWindow;
class MainWindow;

enum class TourStep { Bug, CorrectPlan, InjectedPlan, FailingOp, Difference };
constexpr int kTourSteps = 5;
QString tourStepTitle(TourStep step);
QString tourStepSlug(
    TourStep step);  // for file names: "bug", "correct", "injected", "failing-op", "difference"

// The zoo plan a bug is toured on: the catalog's model and parallel spec, `layers` layers, the bug at the
// first place it applies.
ZooRequest tourRequest(const parallel::BugEntry& bug, int layers = 2);

// Drives one MainWindow (and the compare window it opens) through the steps of one bug at a time.
class BugTour : public QObject {
  Q_OBJECT
 public:
  explicit BugTour(MainWindow* window, QObject* parent = nullptr);
  ~BugTour() override;

  // Starts the tour of a catalog bug at its first step; false (and `failed`) for an unknown id.
  bool start(const QString& bugId, int layers = 2);
  void next();  // runs the following step; ignored while a step is running or after the last
  void restartStep();
  bool running() const { return running_; }
  bool atEnd() const { return step_ == TourStep::Difference && !running_; }
  TourStep step() const { return step_; }
  const parallel::BugEntry* bug() const { return bug_; }
  const ZooRequest& request() const { return request_; }
  // What the step shows (rich text); filled in as the step's work ends (verdicts, the failing op).
  QString explanation() const;
  std::optional<verify::Verdict> correctVerdict() const { return correctVerdict_; }
  std::optional<verify::Verdict> injectedVerdict() const { return injectedVerdict_; }
  CompareWindow* compareWindow() const { return compare_; }
  // The tour taught what it should: the correct plan equivalent, the injected one not, and a difference.
  bool succeeded() const;

 signals:
  void stepStarted(paraproof::ui::TourStep step);
  void stepReady(paraproof::ui::TourStep step);  // the step's work is done and shown
  void failed(const QString& error);

 private:
  void runStep();
  void generateAndVerify(const ZooRequest& request);
  void onVerified(const verify::Report& report);
  void finishStep();

  MainWindow* window_;
  const parallel::BugEntry* bug_ = nullptr;
  ZooRequest request_;
  TourStep step_ = TourStep::Bug;
  bool running_ = false;
  uint64_t generation_ = 0;  // a restarted tour ignores the previous one's late events
  std::optional<verify::Verdict> correctVerdict_, injectedVerdict_;
  QString failingStage_, failingOp_, propertiesDiff_;
  QPointer<CompareWindow> compare_;
  QMetaObject::Connection waiting_;
};

// The tour's panel, docked in the main window: the bug to tour, what the current step shows, the steps
// with the current one marked, and Next / Next Bug.
class TourPanel : public QWidget {
  Q_OBJECT
 public:
  explicit TourPanel(MainWindow* window, QWidget* parent = nullptr);
  BugTour* tour() const { return tour_; }
  bool startBug(const QString& bugId, int layers = 2);  // false for an unknown id
  void nextBug();                                       // the catalog's following bug, from its first step
  QPushButton* nextButton() const { return next_; }

 private:
  void refresh();

  BugTour* tour_;
  int layers_ = 2;
  QComboBox* bugs_;
  QLabel* text_;
  QListWidget* steps_;
  QPushButton* next_;
  QPushButton* nextBug_;
};

}  // namespace paraproof::ui
