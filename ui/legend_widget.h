// The colour legend: stage states, selection and lineage links.
#pragma once

#include <QWidget>

namespace paraproof::ui {

class LegendWidget : public QWidget {
  Q_OBJECT
 public:
  explicit LegendWidget(QWidget* parent = nullptr);
};

}  // namespace paraproof::ui
