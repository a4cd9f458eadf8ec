// Shows why a stage failed: the differing elements (expected vs actual, marked) and the inputs that cause it.
#pragma once

#include <QTextBrowser>
#include <optional>

#include "core/verify/report.h"

namespace paraproof::ui {

class CounterexamplePanel : public QTextBrowser {
  Q_OBJECT
 public:
  explicit CounterexamplePanel(QWidget* parent = nullptr);
  void showNothing(const QString& hint);
  // `bugNote`: description of an injected catalog bug, when the plan was generated with one.
  void showStage(const verify::StageInfo& stage, const std::optional<verify::StageResult>& result,
                 const QString& bugNote);
  int shownDiffCount() const { return diffCount_; }

 private:
  int diffCount_ = 0;
};

}  // namespace paraproof::ui
