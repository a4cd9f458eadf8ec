// The status bar's verification part: the verdict, the failed count and elapsed time, the progress bar
// (busy while a plan loads or the stages are being planned, then stages done / total) and Cancel. MainWindow
// tells it what happens; it only presents.
#pragma once

#include <QWidget>

#include "core/verify/report.h"

class QLabel;
class QProgressBar;
class QPushButton;

namespace paraproof::ui {

class StageTableModel;

class VerificationStatus : public QWidget {
  Q_OBJECT
 public:
  explicit VerificationStatus(QWidget* parent = nullptr);

  void reset();        // a new plan: "not verified"
  void busy(bool on);  // a plan is loading: an indeterminate bar (off: back to "not verified")
  void started();      // verifying, the stages not known yet
  void stagesPlanned(int count);
  void progressed(const StageTableModel& stages, double elapsedSeconds);
  void cancelling();
  // The run's end: the verdict shown; returns the line for the status bar's message area.
  QString finished(const verify::Report& report, const StageTableModel& stages);
  void setCompact(bool compact);  // a narrower bar in small windows

  QProgressBar* progressBar() const { return progress_; }

 signals:
  void cancelRequested();

 private:
  QLabel* verdict_;
  QLabel* progressText_;
  QProgressBar* progress_;
  QPushButton* cancel_;
};

}  // namespace paraproof::ui
