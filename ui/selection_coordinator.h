// The one path by which a selection in one view reaches the other: the selected elements' lineage
// counterparts are linked (highlighted, and joined by the overlay's lines), a stage is brought into view in
// both, and search steps through the matches of both views. MainWindow owns the views and the overlay and
// says what to show; this class decides how the two views stay consistent.
#pragma once

#include <QString>
#include <utility>
#include <vector>

#include "ui/model/lineage_index.h"

namespace paraproof::ui {

class GraphView;
class LinkOverlay;

class SelectionCoordinator {
 public:
  SelectionCoordinator(GraphView* logical, GraphView* parallel, LinkOverlay* links);

  // The lineage of the models the views show now; returns the previous one (to free elsewhere).
  LineageIndex setLineage(LineageIndex lineage);
  // A new plan: nothing is selected or linked, the search starts over.
  void reset();

  // `source` selected `elements` (by the user or a search hit): the other view shows their counterparts.
  // Returns how many counterparts there are.
  size_t linkFrom(GraphView* source, const std::vector<int>& elements);
  // A stage: both views select its elements and go to its focus element (-1: none), nothing linked. A focus
  // that `differs` is the element a counterexample names first, tagged as such.
  void showStage(const std::vector<int>& logical, int logicalFocus, const std::vector<int>& parallel,
                 int parallelFocus, bool logicalDiffers, bool parallelDiffers);

  struct SearchStep {
    GraphView* view = nullptr;  // null: no match
    int node = -1;
    size_t match = 0, matches = 0;  // 1-based position among all matches of both views
    bool fresh = false;             // the text changed: the matches were found anew
  };
  // Each call with the same text moves to the next match (logical view's first, then the parallel's);
  // `backwards` to the previous one.
  SearchStep search(const QString& text, bool backwards = false);
  // Goes to match `index` (0-based) of the last search.
  SearchStep goToMatch(size_t index);
  using SearchHit = std::pair<GraphView*, int>;  // view, hierarchy node
  const std::vector<SearchHit>& searchHits() const { return hits_; }

 private:
  GraphView* other(GraphView* view) const;

  GraphView* logical_;
  GraphView* parallel_;
  LinkOverlay* links_;
  LineageIndex lineage_;
  QString lastSearch_;
  std::vector<SearchHit> hits_;
  size_t next_ = 0;  // the match the next forward step goes to
};

}  // namespace paraproof::ui
