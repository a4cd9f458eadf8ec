#include "ui/settings_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QSettings>
#include <QSpinBox>
#include <QThread>

namespace paraproof::ui {

verify::Options loadVerifyOptions() {
  QSettings s;
  verify::Options o;
  o.jobs = std::max(1, s.value("verify/jobs", std::max(1, QThread::idealThreadCount())).toInt());
  o.timeoutSeconds = std::max(1.0, s.value("verify/timeout", 60.0).toDouble());
  o.engine = static_cast<verify::EngineChoice>(
      std::clamp(s.value("verify/engine", static_cast<int>(verify::EngineChoice::Both)).toInt(), 0, 2));
  return o;
}

void saveVerifyOptions(const verify::Options& o) {
  QSettings s;
  s.setValue("verify/jobs", o.jobs);
  s.setValue("verify/timeout", o.timeoutSeconds);
  s.setValue("verify/engine", static_cast<int>(o.engine));
}

SettingsDialog::SettingsDialog(const verify::Options& current, QWidget* parent)
    : QDialog(parent), base_(current) {
  setWindowTitle(tr("Verification Settings"));
  auto* form = new QFormLayout(this);
  jobs_ = new QSpinBox(this);
  jobs_->setRange(1, 256);
  jobs_->setValue(current.jobs);
  jobs_->setToolTip(tr("Stages checked in parallel"));
  timeout_ = new QSpinBox(this);
  timeout_->setRange(1, 24 * 3600);
  timeout_->setSuffix(tr(" s"));
  timeout_->setValue(static_cast<int>(current.timeoutSeconds));
  engine_ = new QComboBox(this);
  engine_->addItem(tr("Z3 proof"), static_cast<int>(verify::EngineChoice::Z3));
  engine_->addItem(tr("Random field (fast check)"), static_cast<int>(verify::EngineChoice::Random));
  engine_->addItem(tr("Both: random first, then Z3"), static_cast<int>(verify::EngineChoice::Both));
  engine_->setCurrentIndex(engine_->findData(static_cast<int>(current.engine)));
  form->addRow(tr("Worker threads:"), jobs_);
  form->addRow(tr("Timeout per stage:"), timeout_);
  form->addRow(tr("Engine:"), engine_);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  form->addRow(buttons);
}

verify::Options SettingsDialog::options() const {
  verify::Options o = base_;
  o.jobs = jobs_->value();
  o.timeoutSeconds = timeout_->value();
  o.engine = static_cast<verify::EngineChoice>(engine_->currentData().toInt());
  return o;
}

}  // namespace paraproof::ui
