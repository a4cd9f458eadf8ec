// The results of a search over both graphs: their count and one row per match (the op or tensor, which graph,
// its place in the hierarchy); the current match is marked, a click goes to a match, and the search box's
// Enter / F3 / Shift+F3 step through them in the list's order.
#pragma once

#include <QWidget>
#include <vector>

class QLabel;
class QListWidget;

namespace paraproof::ui {

class SearchPanel : public QWidget {
  Q_OBJECT
 public:
  struct Match {
    QString label;  // the node's label
    QString where;  // "logical" or "parallel", and its enclosing groups
  };
  explicit SearchPanel(QWidget* parent = nullptr);

  void setResults(const QString& text, const std::vector<Match>& matches);
  void setCurrent(int index);  // 0-based; the row is selected and scrolled to
  int count() const;
  int current() const;
  QString countText() const;
  QListWidget* list() const { return list_; }

 signals:
  void matchChosen(int index);  // the user clicked or activated a row

 private:
  QLabel* count_;
  QListWidget* list_;
};

}  // namespace paraproof::ui
