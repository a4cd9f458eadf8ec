#include "ui/layout_cache.h"

#include <cmath>
#include <unordered_map>

namespace paraproof::ui {
namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  return h ^ (v + 0x9E3779B97F4A7C15ull + (h << 12) + (h >> 4));
}

uint64_t points(double v) {
  return static_cast<uint64_t>(std::llround(v * 4));  // quarter points: sizes are computed, not typed
}

// id -> position, for nodes and clusters separately.
std::unordered_map<int, int> positions(const std::vector<LayoutJob::Node>& nodes) {
  std::unordered_map<int, int> out;
  for (size_t i = 0; i < nodes.size(); ++i)
    out.emplace(nodes[i].id, static_cast<int>(i));
  return out;
}

}  // namespace

uint64_t LayoutCache::signature(const LayoutJob& job) {
  uint64_t h = mix(mix(mix(0, job.nodes.size()), job.clusters.size()), job.edges.size());
  for (const auto& c : job.clusters)
    h = mix(mix(h, static_cast<uint64_t>(c.parent + 1)), static_cast<uint64_t>(labelBucket(c.label.size())));
  for (const auto& n : job.nodes)
    h = mix(mix(mix(h, points(n.width)), points(n.height)), static_cast<uint64_t>(n.cluster + 1));
  const auto at = positions(job.nodes);
  for (const auto& e : job.edges) {
    auto a = at.find(e.from), b = at.find(e.to);
    h = mix(mix(mix(h, a == at.end() ? ~0ull : a->second), b == at.end() ? ~0ull : b->second),
            static_cast<uint64_t>(e.weight));
  }
  return h;
}

std::optional<LayoutResult> LayoutCache::find(const LayoutJob& job) {
  auto it = entries_.find(signature(job));
  if (it == entries_.end()) return std::nullopt;
  recent_.splice(recent_.begin(), recent_, it->second.second);
  LayoutResult r = it->second.first;
  auto id = [&](int position) { return job.nodes[position].id; };
  for (auto& b : r.nodes)
    b.id = id(b.id);
  for (auto& b : r.clusters)
    b.id = job.clusters[b.id].id;
  for (auto& e : r.edges) {
    e.from = id(e.from);
    e.to = id(e.to);
  }
  r.id = job.id;
  r.milliseconds = 0;
  r.reused = true;
  return r;
}

void LayoutCache::store(const LayoutJob& job, const LayoutResult& result) {
  if (!result.error.isEmpty()) return;
  const uint64_t key = signature(job);
  if (entries_.count(key)) return;
  LayoutResult r = result;
  const auto at = positions(job.nodes);
  std::unordered_map<int, int> clusterAt;
  for (size_t i = 0; i < job.clusters.size(); ++i)
    clusterAt.emplace(job.clusters[i].id, static_cast<int>(i));
  for (auto& b : r.nodes)
    b.id = at.at(b.id);
  for (auto& b : r.clusters)
    b.id = clusterAt.at(b.id);
  for (auto& e : r.edges) {
    e.from = at.at(e.from);
    e.to = at.at(e.to);
  }
  recent_.push_front(key);
  entries_.emplace(key, std::pair{std::move(r), recent_.begin()});
  if (entries_.size() > capacity_) {
    entries_.erase(recent_.back());
    recent_.pop_back();
  }
}

}  // namespace paraproof::ui
