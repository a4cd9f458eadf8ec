// "New plan from the model zoo": model, layers, parallel degrees and an optional catalog bug to inject.
#pragma once

#include <QDialog>
#include <functional>
#include <optional>

#include "core/parallel/generate.h"
#include "core/plan/plan.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace paraproof::ui {

struct ZooRequest {
  QString model;
  QString parallel = QStringLiteral("dp=2,tp=2");
  int layers = 2;  // 0: the model's own layer count
  QString inject;  // bug id with optional "@layer=..,rank=..,mb=.."; empty: none
};

// Builds the plan; throws std::invalid_argument with a readable message for impossible requests.
Plan generateFromZoo(const ZooRequest& request);
// The plan without the request's bug and with it, generated so that only the bug differs (compare mode).
parallel::BugComparison generateComparisonFromZoo(const ZooRequest& injected);
// A plan name that says what it is, e.g. "llama3-8b dp=2,tp=2 + tv01-allreduce-missing".
QString describe(const ZooRequest& request);

class ZooDialog : public QDialog {
  Q_OBJECT
 public:
  explicit ZooDialog(QWidget* parent = nullptr);
  ZooRequest request() const;
  bool verifyAfterGenerating() const;  // the "Verify after generating" box (remembered with the request)
  // The plan built when the dialog was accepted.
  std::optional<Plan> takePlan() { return std::move(plan_); }
  // What builds the plan on the pool thread (generateFromZoo); tests put a gate in front of it.
  using Generator = std::function<Plan(const ZooRequest&)>;
  void setGenerator(Generator g) { generator_ = std::move(g); }

 protected:
  void accept() override;

 private:
  void onBugChanged();
  bool generating_ = false;
  void onModelChanged();
  void restoreLastRequest();

  QComboBox* model_;
  QLabel* modelNote_;
  QSpinBox* layers_;
  QLineEdit* parallel_;
  QComboBox* bug_;
  QLineEdit* where_;
  QLabel* bugNote_;
  QCheckBox* verifyAfter_;
  QLabel* error_;
  std::optional<Plan> plan_;
  Generator generator_ = generateFromZoo;
};

}  // namespace paraproof::ui
