// Mesh and ranks, lineage well-formedness, the initial distribution, and value-part groups.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "core/plan/validate_checks.h"

namespace paraproof::validation {

namespace {
std::string coordString(const std::vector<int64_t>& c) {
  return shapeString(c);
}
}  // namespace

bool checkMesh(const Plan& plan, Report& r) {
  bool ranksUnique = true;
  std::unordered_map<int, size_t> byRank;
  std::map<std::vector<int64_t>, size_t> byCoord;
  for (size_t i = 0; i < plan.devices.size(); ++i) {
    const Device& d = plan.devices[i];
    if (d.rank < 0) r.add(devicePtr(i) + "/rank", "rank " + std::to_string(d.rank) + " is negative");
    auto [it, fresh] = byRank.emplace(d.rank, i);
    ranksUnique = ranksUnique && fresh;
    if (!fresh)
      r.add(devicePtr(i) + "/rank", "duplicate rank " + std::to_string(d.rank) + " (devices " +
                                        std::to_string(it->second) + " and " + std::to_string(i) + ")");
    if (d.coord.size() != plan.mesh.shape.size()) {
      r.add(devicePtr(i) + "/coord", who(d) + "coord " + coordString(d.coord) + " has " +
                                         std::to_string(d.coord.size()) + " entries but the mesh has " +
                                         std::to_string(plan.mesh.shape.size()) + " axes");
      continue;
    }
    bool inside = true;
    for (size_t k = 0; k < d.coord.size(); ++k)
      if (d.coord[k] < 0 || d.coord[k] >= plan.mesh.shape[k]) inside = false;
    if (!inside) {
      r.add(devicePtr(i) + "/coord", who(d) + "coord " + coordString(d.coord) +
                                         " is outside the mesh shape " + shapeString(plan.mesh.shape));
      continue;
    }
    auto [c, freshCoord] = byCoord.emplace(d.coord, i);
    if (!freshCoord)
      r.add(devicePtr(i) + "/coord", who(d) + "coord " + coordString(d.coord) +
                                         " is also the coord of rank " +
                                         std::to_string(plan.devices[c->second].rank));
  }
  int64_t positions = numElements(plan.mesh.shape);
  if (positions != static_cast<int64_t>(plan.devices.size()))
    r.add("/mesh/shape", "mesh shape " + shapeString(plan.mesh.shape) + " has " + std::to_string(positions) +
                             " positions but the plan has " + std::to_string(plan.devices.size()) +
                             " devices");
  return ranksUnique;
}

void checkLogicalGraph(const Plan& plan, Report& r) {
  for (size_t j = 0; j < plan.logical.ops.size(); ++j) {
    const Op& op = plan.logical.ops[j];
    if (isCollectiveOp(op) || isP2P(op.kind))
      r.add("/logical/ops/" + std::to_string(j), "logical op '" + op.id + "' is a communication op (" +
                                                     op.kind + "); only device graphs communicate");
  }
}

void checkLineage(const Plan& plan, Report& r) {
  for (size_t i = 0; i < plan.devices.size(); ++i) {
    const Device& d = plan.devices[i];
    for (const auto& [v, l] : d.lineage) {
      const std::string& name = d.graph.values[v].name;
      const Value* t = logicalValue(plan, l);
      const auto at = [&] { return lineagePtr(plan, i, v); };  // built only for a diagnostic
      if (!t) {
        r.add(at(), who(d) + "lineage of '" + name + "' names unknown logical tensor '" + l.tensor + "'");
        continue;
      }
      if (l.parts < 1)
        r.add(at(), who(d) + "lineage of '" + name + "' has parts " + std::to_string(l.parts) +
                        "; it must be >= 1");
      else if (l.part < 0 || l.part >= l.parts)
        r.add(at(), who(d) + "lineage of '" + name + "' has part " + std::to_string(l.part) +
                        " outside [0, " + std::to_string(l.parts) + ")");
      const Shape& full = t->type.shape;
      if (l.box.ranges.size() != full.size()) {
        r.add(at(), who(d) + "lineage box of '" + name + "' has " + std::to_string(l.box.ranges.size()) +
                        " dims but logical tensor '" + l.tensor + "' has rank " +
                        std::to_string(full.size()));
        continue;
      }
      bool boxOk = true;
      for (size_t k = 0; k < full.size() && boxOk; ++k) {
        auto [a, b] = l.box.ranges[k];
        if (a < 0 || b > full[k]) {
          r.add(at(), who(d) + "lineage box " + boxString(l.box) + " of '" + name +
                          "' is out of bounds of '" + l.tensor + "' " + shapeString(full) + " in dim " +
                          std::to_string(k));
          boxOk = false;
        } else if (a >= b) {
          r.add(at(), who(d) + "lineage box " + boxString(l.box) + " of '" + name + "' is empty in dim " +
                          std::to_string(k));
          boxOk = false;
        }
      }
      const Shape& local = d.graph.values[v].type.shape;
      if (boxOk && l.box.extent() != local)
        r.add(at(), who(d) + "tensor '" + name + "' has shape " + shapeString(local) +
                        " but its lineage box " + boxString(l.box) + " of '" + l.tensor + "' has extent " +
                        shapeString(l.box.extent()));
    }
  }
}

void checkDeviceInputs(const Plan& plan, Report& r) {
  std::set<std::string> logicalInputs;
  for (ValueId v : plan.logical.inputs)
    logicalInputs.insert(plan.logical.values[v].name);
  for (size_t i = 0; i < plan.devices.size(); ++i) {
    const Device& d = plan.devices[i];
    for (size_t k = 0; k < d.graph.inputs.size(); ++k) {
      ValueId v = d.graph.inputs[k];
      const auto at = [&] { return devicePtr(i) + "/inputs/" + std::to_string(k); };
      const std::string& name = d.graph.values[v].name;
      auto it = d.lineage.find(v);
      if (it == d.lineage.end())
        r.add(at(), who(d) + "device input '" + name +
                        "' has no lineage (every device input must be a slice or part of a logical input)");
      else if (logicalValue(plan, it->second) && !logicalInputs.count(it->second.tensor))
        r.add(at(), who(d) + "device input '" + name + "' has lineage to '" + it->second.tensor +
                        "', which is not a logical graph input");
    }
  }
}

void checkValueParts(const Plan& plan, Report& r) {
  // Grouped by (logical tensor, box, parts), the plan's own boxes referred to, not copied: a frontier plan
  // has a value-part lineage on most devices' partial sums.
  struct Key {
    const Value* tensor;
    const Box* box;
    int parts;
    bool operator==(const Key& o) const { return tensor == o.tensor && parts == o.parts && *box == *o.box; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      size_t h = std::hash<const void*>{}(k.tensor) ^ (static_cast<size_t>(k.parts) << 1);
      for (const auto& [lo, hi] : k.box->ranges)
        h = h * 1000003u ^ static_cast<size_t>(lo) * 31u ^ static_cast<size_t>(hi);
      return h;
    }
  };
  struct Group {
    std::set<int> present;
    size_t device = 0;
    ValueId value = kNone;  // where the group is first met
  };
  std::unordered_map<Key, Group, KeyHash> groups;
  for (size_t i = 0; i < plan.devices.size(); ++i)
    for (const auto& [v, l] : plan.devices[i].lineage) {
      const Value* t = l.parts > 1 ? lineageTensor(plan, l) : nullptr;
      if (!t) continue;
      groups.try_emplace(Key{t, &l.box, l.parts}, Group{{}, i, v}).first->second.present.insert(l.part);
    }
  // Reported in the order of (tensor name, box, parts).
  std::vector<std::pair<const Key*, const Group*>> incomplete;
  for (const auto& [key, g] : groups)
    if (g.present.size() < static_cast<size_t>(key.parts)) incomplete.push_back({&key, &g});
  std::sort(incomplete.begin(), incomplete.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first->tensor->name, *a.first->box, a.first->parts) <
           std::tie(b.first->tensor->name, *b.first->box, b.first->parts);
  });
  for (const auto& [key, g] : incomplete) {
    std::string missing;
    int count = 0;
    for (int p = 0; p < key->parts; ++p)
      if (!g->present.count(p)) {
        if (++count <= 8) missing += (missing.empty() ? "" : ", ") + std::to_string(p);
      }
    if (count > 8) missing += ", ...";
    r.add(lineagePtr(plan, g->device, g->value),
          "value parts of '" + key->tensor->name + "' " + boxString(*key->box) + " (" +
              std::to_string(key->parts) + " parts): part" + (count > 1 ? "s " : " ") + missing +
              (count > 1 ? " are" : " is") +
              " missing on every device, so the parts cannot sum to the logical value");
  }
}

}  // namespace paraproof::validation
