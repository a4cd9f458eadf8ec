#include "core/models/sharding.h"

#include <stdexcept>

namespace paraproof::models {

int Group::indexOf(int rank) const {
  for (size_t i = 0; i < ranks.size(); ++i)
    if (ranks[i] == rank) return static_cast<int>(i);
  return -1;
}

MeshCoord ShardContext::coordOf(const Degrees& d, int rank) {
  MeshCoord c;
  c.tp = rank % d.tp;
  rank /= d.tp;
  c.cp = rank % d.cp;
  rank /= d.cp;
  c.dp = rank % d.dp;
  c.pp = rank / d.dp;
  return c;
}

Group ShardContext::group(Axis a) const {
  Group g;
  const char* axisName = "";
  auto add = [&](MeshCoord c) { g.ranks.push_back(rankOf(c)); };
  MeshCoord c = at_;
  switch (a) {
    case Axis::TP:
      axisName = "tp";
      for (c.tp = 0; c.tp < deg_.tp; ++c.tp)
        add(c);
      break;
    case Axis::DP:
      axisName = "dp";
      for (c.dp = 0; c.dp < deg_.dp; ++c.dp)
        add(c);
      break;
    case Axis::CP:
      axisName = "cp";
      for (c.cp = 0; c.cp < deg_.cp; ++c.cp)
        add(c);
      break;
    case Axis::PP:
      axisName = "pp";
      for (c.pp = 0; c.pp < deg_.pp; ++c.pp)
        add(c);
      break;
    case Axis::DPCP:
      axisName = "dpcp";
      for (c.dp = 0; c.dp < deg_.dp; ++c.dp)
        for (c.cp = 0; c.cp < deg_.cp; ++c.cp)
          add(c);
      break;
    case Axis::ModelParallel:
      axisName = "mp";
      for (c.pp = 0; c.pp < deg_.pp; ++c.pp)
        for (c.tp = 0; c.tp < deg_.tp; ++c.tp)
          add(c);
      break;
    case Axis::EP:
      axisName = "ep";
      for (c.dp = edpIndex() * deg_.ep; c.dp < (edpIndex() + 1) * deg_.ep; ++c.dp)
        add(c);
      break;
    case Axis::EDP:
      axisName = "edp";
      for (c.dp = epIndex(); c.dp < deg_.dp; c.dp += deg_.ep)
        for (c.cp = 0; c.cp < deg_.cp; ++c.cp)
          add(c);
      break;
    case Axis::ExpertModelParallel:
      axisName = "emp";
      for (c.pp = 0; c.pp < deg_.pp; ++c.pp)
        for (c.dp = edpIndex() * deg_.ep; c.dp < (edpIndex() + 1) * deg_.ep; ++c.dp)
          for (c.tp = 0; c.tp < deg_.tp; ++c.tp)
            add(c);
      break;
    case Axis::All:
      axisName = "all";
      for (int r = 0; r < deg_.devices(); ++r)
        g.ranks.push_back(r);
      break;
  }
  g.name = std::string(axisName) + std::to_string(g.ranks.front());
  return g;
}

Layout Layout::full(std::string name, Shape shape) {
  Layout l;
  l.name = std::move(name);
  for (int64_t d : shape)
    l.box.emplace_back(0, d);
  l.shape = std::move(shape);
  return l;
}

Layout Layout::local(std::string name, Shape shape) {
  Layout l = full(std::move(name), std::move(shape));
  l.lineage = false;
  return l;
}

Layout& Layout::slice(int dim, int64_t start, int64_t count) {
  auto& r = box.at(dim);
  r.first += start;
  r.second = r.first + count;
  if (r.second > shape.at(dim)) throw std::logic_error("layout slice out of range for " + name);
  return *this;
}

Layout& Layout::shard(int dim, int index, int count) {
  const int64_t extent = box.at(dim).second - box.at(dim).first;
  if (count <= 0 || extent % count != 0)
    throw std::logic_error("layout of " + name + ": dim " + std::to_string(dim) + " (" +
                           std::to_string(extent) + ") not divisible by " + std::to_string(count));
  return slice(dim, index * (extent / count), extent / count);
}

Layout& Layout::partial(int k, int n) {
  part = k;
  parts = n;
  return *this;
}

Layout& Layout::whole() {
  part = 0;
  parts = 1;
  return *this;
}

Layout Layout::renamed(std::string n) const {
  Layout l = *this;
  l.name = std::move(n);
  l.as.clear();
  return l;
}

Layout Layout::named(std::string valueName) const {
  Layout l = *this;
  l.as = std::move(valueName);
  return l;
}

Shape Layout::localShape() const {
  Shape s;
  for (auto [a, b] : box)
    s.push_back(b - a);
  return s;
}

std::optional<std::pair<int, int>> Layout::gridCell() const {
  if (!lineage || parts != 1) return std::nullopt;
  int64_t index = 0, count = 1;
  for (size_t d = 0; d < box.size(); ++d) {
    const auto [start, end] = box[d];
    const int64_t extent = end - start;
    if (extent <= 0 || shape.at(d) % extent != 0 || start % extent != 0) return std::nullopt;
    index = index * (shape[d] / extent) + start / extent;
    count *= shape[d] / extent;
  }
  return std::pair{static_cast<int>(index), static_cast<int>(count)};
}

}  // namespace paraproof::models
