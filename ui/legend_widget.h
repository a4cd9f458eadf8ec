// The colour legend: stage states, selection and lineage links.
#pragma once

#include <QWidget>

namespace paraproof::ui {

class LegendWidget : public QWidget {
  Q_OBJECT
 public:
  explicit LegendWidget(QWidget* parent = nullptr);
  // Compact: the colour chips only (each names itself in its tooltip), for narrow windows.
  void setCompact(bool compact);
  bool isCompact() const { return compact_; }

 protected:
  void changeEvent(QEvent* event) override;  // a new palette: the chips are drawn again in its colours

 private:
  void build();
  bool compact_ = false;
};

}  // namespace paraproof::ui
