// Verification settings (worker count, per-stage timeout), persisted with QSettings.
#pragma once

#include <QDialog>

#include "core/verify/verify.h"

class QSpinBox;
class QComboBox;

namespace paraproof::ui {

verify::Options loadVerifyOptions();
void saveVerifyOptions(const verify::Options& options);

class SettingsDialog : public QDialog {
  Q_OBJECT
 public:
  explicit SettingsDialog(const verify::Options& current, QWidget* parent = nullptr);
  verify::Options options() const;

 private:
  verify::Options base_;
  QSpinBox* jobs_;
  QSpinBox* timeout_;
  QComboBox* engine_;
};

}  // namespace paraproof::ui
