// The selected op on every device and micro-batch that runs it, side by side: one column per variant
// (instances that are the same op), the rows in which the variants disagree marked. A deviant copy (eps
// 1e-3 on rank 2 micro-batch 0, 1e-5 everywhere else) is its own column, never averaged away.
#pragma once

#include <QWidget>
#include <string>

#include "core/plan/plan.h"
#include "ui/model/op_variants.h"

class QLabel;
class QTableWidget;

namespace paraproof::ui {

class PropertiesPanel : public QWidget {
  Q_OBJECT
 public:
  explicit PropertiesPanel(QWidget* parent = nullptr);
  // The plan must outlive what is shown (until the next showOp or clear).
  void showOp(const Plan& plan, const std::string& opId);
  void clear(const QString& hint = {});
  const OpVariants& shown() const { return shown_; }
  QTableWidget* table() const { return table_; }

  static constexpr int kMaxColumns = 12;  // further variants are counted in the title

 private:
  QLabel* title_;
  QTableWidget* table_;
  OpVariants shown_;
};

}  // namespace paraproof::ui
