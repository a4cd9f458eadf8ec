// Shows why a stage failed: the differing elements (expected vs actual, marked) and the inputs that cause it.
#pragma once

#include <QTextBrowser>
#include <optional>

#include "core/verify/report.h"

namespace paraproof::ui {

// A stage's verdict and counterexample as HTML using the theme's classes (Theme::css): the panel's content,
// and a failure report's section per failing stage.
QString counterexampleHtml(const verify::StageInfo& stage, const std::optional<verify::StageResult>& result,
                           const QString& bugNote);

class CounterexamplePanel : public QTextBrowser {
  Q_OBJECT
 public:
  explicit CounterexamplePanel(QWidget* parent = nullptr);
  void showNothing(const QString& hint);
  // `bugNote`: description of an injected catalog bug, when the plan was generated with one.
  void showStage(const verify::StageInfo& stage, const std::optional<verify::StageResult>& result,
                 const QString& bugNote);
  int shownDiffCount() const { return diffCount_; }
  void showHtml(const QString& html);  // styled with the theme's classes (.dim, .bad, .ok, .bug, .err)

 protected:
  void changeEvent(QEvent* event) override;

 private:
  int diffCount_ = 0;
  QString html_;
};

}  // namespace paraproof::ui
