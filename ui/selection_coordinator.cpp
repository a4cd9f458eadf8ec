#include "ui/selection_coordinator.h"

#include "ui/graph_view.h"
#include "ui/link_overlay.h"

namespace paraproof::ui {

SelectionCoordinator::SelectionCoordinator(GraphView* logical, GraphView* parallel, LinkOverlay* links)
    : logical_(logical), parallel_(parallel), links_(links) {}

LineageIndex SelectionCoordinator::setLineage(LineageIndex lineage) {
  links_->clear();
  std::swap(lineage, lineage_);
  return lineage;
}

void SelectionCoordinator::reset() {
  links_->clear();
  lastSearch_.clear();
  hits_.clear();
  next_ = 0;
}

GraphView* SelectionCoordinator::other(GraphView* view) const {
  return view == logical_ ? parallel_ : logical_;
}

size_t SelectionCoordinator::linkFrom(GraphView* source, const std::vector<int>& elements) {
  const bool fromLogical = source == logical_;
  const std::vector<int> counterparts =
      fromLogical ? lineage_.parallelFor(elements) : lineage_.logicalFor(elements);
  other(source)->selectElements({}, false);
  source->setLinkedElements({}, false);
  other(source)->setLinkedElements(counterparts);
  links_->setLinks(fromLogical ? lineage_.linksFromLogical(elements) : lineage_.linksFromParallel(elements));
  return counterparts.size();
}

void SelectionCoordinator::showStage(const std::vector<int>& logical, int logicalFocus,
                                     const std::vector<int>& parallel, int parallelFocus, bool logicalDiffers,
                                     bool parallelDiffers) {
  logical_->setFirstDifference(logicalDiffers ? logicalFocus : -1);
  parallel_->setFirstDifference(parallelDiffers ? parallelFocus : -1);
  logical_->setLinkedElements({}, false);
  parallel_->setLinkedElements({}, false);
  links_->clear();
  logical_->bringIntoView(logical, logicalFocus);
  parallel_->bringIntoView(parallel, parallelFocus);
}

SelectionCoordinator::SearchStep SelectionCoordinator::search(const QString& text, bool backwards) {
  bool fresh = false;
  if (text != lastSearch_) {
    lastSearch_ = text;
    hits_.clear();
    next_ = 0;
    fresh = true;
    for (GraphView* view : {logical_, parallel_})
      if (view->model())
        for (int n : view->model()->find(text.toStdString()))
          hits_.emplace_back(view, n);
  }
  if (hits_.empty()) return {};
  // next_ is one past the current match; backwards goes to the one before the current.
  const size_t n = hits_.size();
  SearchStep step = goToMatch(fresh ? 0 : backwards ? (next_ + 2 * n - 2) % n : next_ % n);
  step.fresh = fresh;
  return step;
}

SelectionCoordinator::SearchStep SelectionCoordinator::goToMatch(size_t index) {
  if (hits_.empty()) return {};
  SearchStep step;
  index %= hits_.size();
  std::tie(step.view, step.node) = hits_[index];
  step.match = index + 1;
  step.matches = hits_.size();
  next_ = index + 1;
  step.view->focusNode(step.node);
  linkFrom(step.view, step.view->model()->elementsUnder(step.node));
  return step;
}

}  // namespace paraproof::ui
