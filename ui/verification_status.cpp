#include "ui/verification_status.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>

#include "ui/model/stage_state.h"
#include "ui/stage_table.h"
#include "ui/theme.h"

namespace paraproof::ui {

VerificationStatus::VerificationStatus(QWidget* parent) : QWidget(parent) {
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  verdict_ = new QLabel(this);
  verdict_->setTextFormat(Qt::RichText);
  verdict_->setContentsMargins(12, 0, 4, 0);  // apart from a long status message on its left
  progressText_ = new QLabel(this);
  progress_ = new QProgressBar(this);
  progress_->setFixedWidth(220);
  progress_->setTextVisible(true);
  cancel_ = new QPushButton(QIcon(":/icons/stop.svg"), tr("Cancel"), this);
  cancel_->setEnabled(false);
  connect(cancel_, &QPushButton::clicked, this, &VerificationStatus::cancelRequested);
  for (QWidget* w : std::initializer_list<QWidget*>{verdict_, progressText_, progress_, cancel_})
    layout->addWidget(w);
  reset();
}

void VerificationStatus::reset() {
  verdict_->clear();
  progressText_->clear();
  progress_->setRange(0, 1);
  progress_->setValue(0);
  progress_->setFormat(tr("not verified"));
  cancel_->setEnabled(false);
}

void VerificationStatus::busy(bool on) {
  if (on)
    progress_->setRange(0, 0);
  else
    progress_->setRange(0, 1);
}

void VerificationStatus::started() {
  verdict_->setText(
      tr("<span style='color:%1'>verifying\u2026</span>").arg(theme().stateText(StageState::Running).name()));
  progress_->setRange(0, 0);  // busy until the stages are known
  cancel_->setEnabled(true);
}

void VerificationStatus::stagesPlanned(int count) {
  progress_->setRange(0, std::max(1, count));
  progress_->setValue(0);
  progress_->setFormat(tr("%v / %m stages"));
}

void VerificationStatus::progressed(const StageTableModel& stages, double elapsedSeconds) {
  int done = 0;
  for (StageState s : stages.states())
    done += s == StageState::Verified || s == StageState::Failed || s == StageState::Inconclusive;
  if (stages.stageCount() > 0) progress_->setValue(done);
  const int failed = stages.count(StageState::Failed);
  progressText_->setText(tr("%1%2 s")
                             .arg(failed ? tr("<b style='color:%1'>%2 failed</b> &middot; ")
                                               .arg(theme().stateText(StageState::Failed).name())
                                               .arg(failed)
                                         : QString())
                             .arg(elapsedSeconds, 0, 'f', 1));
}

void VerificationStatus::cancelling() {
  cancel_->setEnabled(false);
}

QString VerificationStatus::finished(const verify::Report& report, const StageTableModel& stages) {
  cancel_->setEnabled(false);
  const int failed = stages.count(StageState::Failed);
  const int inconclusive = stages.count(StageState::Inconclusive);
  const int verified = stages.count(StageState::Verified);
  const int checked = verified + failed + inconclusive;
  progress_->setRange(0, std::max(1, stages.stageCount()));
  progress_->setValue(checked);
  QString verdict = QString::fromLatin1(verify::verdictName(report.verdict));
  const StageState shown = report.verdict == verify::Verdict::Equivalent      ? StageState::Verified
                           : report.verdict == verify::Verdict::NotEquivalent ? StageState::Failed
                                                                              : StageState::Inconclusive;
  if (report.cancelled) verdict = tr("cancelled");
  verdict_->setText(
      QStringLiteral("<b style='color:%1'>%2</b>").arg(theme().stateText(shown).name(), verdict));
  const int notRun = stages.stageCount() - checked;
  return tr("%1: %2 verified, %3 failed, %4 inconclusive%5 of %6 stages in %7 s")
      .arg(verdict)
      .arg(verified)
      .arg(failed)
      .arg(inconclusive)
      .arg(notRun > 0 ? tr(", %1 not run").arg(notRun) : QString())
      .arg(stages.stageCount())
      .arg(report.seconds, 0, 'f', 2);
}

void VerificationStatus::setCompact(bool compact) {
  progress_->setFixedWidth(compact ? 130 : 220);
}

}  // namespace paraproof::ui
