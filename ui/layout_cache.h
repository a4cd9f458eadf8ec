// Layouts already computed, keyed by the structure of the job (node sizes, cluster nesting, edges, in order)
// and not by its ids: a view with the same structure as one laid out before (another tensor-parallel rank,
// an identical pipeline stage, an expand/collapse undone) reuses the Graphviz result instead of running dot.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>

#include "ui/layout_types.h"

namespace paraproof::ui {

class LayoutCache {
 public:
  explicit LayoutCache(size_t capacity = 48) : capacity_(capacity) {}

  // Cluster titles count by buckets of this many characters (layers.2 and layers.10 alike).
  static constexpr int kLabelBucket = 6;
  static int labelBucket(qsizetype length) {
    return static_cast<int>((length + kLabelBucket - 1) / kLabelBucket);
  }

  static uint64_t signature(const LayoutJob& job);
  // The stored layout with this job's ids, or nothing.
  std::optional<LayoutResult> find(const LayoutJob& job);
  void store(const LayoutJob& job, const LayoutResult& result);

 private:
  size_t capacity_;
  std::list<uint64_t> recent_;  // most recent first
  // Results with ids replaced by positions in the job (nodes, clusters).
  std::unordered_map<uint64_t, std::pair<LayoutResult, std::list<uint64_t>::iterator>> entries_;
};

}  // namespace paraproof::ui
