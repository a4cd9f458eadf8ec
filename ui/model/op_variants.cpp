#include "ui/model/op_variants.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "ui/model/graph_model.h"

namespace paraproof::ui {

namespace {

std::string typeText(const Graph& g, ValueId v) {
  if (v < 0 || v >= static_cast<ValueId>(g.values.size())) return "?";
  const Value& val = g.values[v];
  return names::withoutCopyMarker(val.name) + " : " + dtypeName(val.type.dtype) + shapeString(val.type.shape);
}

// A collective's members as the same program sees them on every member: offsets from the first member
// ("4 ranks, step 1"), and whether this rank is one of them.
std::string groupText(const Json& group, int rank) {
  if (!group.is_array() || group.empty()) return group.dump();
  std::vector<int64_t> members;
  for (const Json& m : group)
    members.push_back(m.is_number_integer() ? m.get<int64_t>() : -1);
  const bool arithmetic =
      members.size() < 2 || std::adjacent_find(members.begin() + 1, members.end(), [&](int64_t a, int64_t b) {
                              return b - a != members[1] - members[0];
                            }) == members.end();
  std::string out = std::to_string(members.size()) + " ranks";
  if (members.size() >= 2 && arithmetic) {
    out += ", step " + std::to_string(members[1] - members[0]);
  } else {
    out += ":";
    for (int64_t m : members)
      out += " +" + std::to_string(m - members[0]);
  }
  if (std::find(members.begin(), members.end(), rank) == members.end()) out += " (without this rank)";
  return out;
}

std::string attrText(const std::string& key, const Json& value, int rank) {
  if (key == "group") return groupText(value, rank);
  if (key == "peer" && value.is_number_integer()) {
    const int64_t d = value.get<int64_t>() - rank;
    return "rank " + std::string(d >= 0 ? "+" : "") + std::to_string(d);
  }
  if (value.is_string()) return names::withoutCopyMarker(value.get<std::string>());
  return value.dump();
}

std::string lineageText(const Device& dev, ValueId v) {
  auto it = dev.lineage.find(v);
  if (it == dev.lineage.end()) return "(none)";
  const Lineage& l = it->second;
  std::string out = names::withoutCopyMarker(l.tensor);
  if (l.parts > 1) out += ", a partial sum of " + std::to_string(l.parts);
  return out;
}

// Property rows of one instance, by name. The collective's instance label differs on every group by
// design (it pairs the members), so it is not a property; a lineage box differs by shard, so the lineage
// row says which tensor and how it is split, not where.
using Row = std::tuple<int, size_t, std::string>;  // section, index, name: the order rows are shown in

std::map<Row, std::string> properties(const Device& dev, const Op& op) {
  std::map<Row, std::string> p;
  p[{0, 0, "kind"}] = op.kind;
  for (const auto& [key, value] : op.attrs.items())
    if (key != "instance") p[{1, 0, key}] = attrText(key, value, dev.rank);
  for (size_t k = 0; k < op.inputs.size(); ++k)
    p[{2, k, "input " + std::to_string(k)}] = typeText(dev.graph, op.inputs[k]);
  for (size_t k = 0; k < op.outputs.size(); ++k) {
    p[{3, k, "output " + std::to_string(k)}] = typeText(dev.graph, op.outputs[k]);
    p[{4, k, "lineage of output " + std::to_string(k)}] = lineageText(dev, op.outputs[k]);
  }
  return p;
}

std::string ranges(std::vector<int> xs) {
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  std::string out;
  for (size_t i = 0; i < xs.size();) {
    size_t j = i;
    while (j + 1 < xs.size() && xs[j + 1] == xs[j] + 1)
      ++j;
    out += (out.empty() ? "" : ",") + std::to_string(xs[i]) + (j > i ? "-" + std::to_string(xs[j]) : "");
    i = j + 1;
  }
  return out;
}

}  // namespace

int OpVariants::instanceCount() const {
  int n = 0;
  for (const OpVariant& v : variants)
    n += static_cast<int>(v.instances.size());
  return n;
}

OpVariants opVariants(const Plan& plan, const std::string& opId) {
  OpVariants out;
  out.name = names::withoutCopyMarker(opId);
  std::vector<std::pair<OpInstance, std::map<Row, std::string>>> found;
  for (size_t d = 0; d < plan.devices.size(); ++d) {
    const Device& dev = plan.devices[d];
    for (size_t o = 0; o < dev.graph.ops.size(); ++o) {
      const Op& op = dev.graph.ops[o];
      int mb = -1;
      if (names::withoutCopyMarker(op.id, &mb) != out.name) continue;
      found.push_back({{static_cast<int>(d), static_cast<OpId>(o), mb}, properties(dev, op)});
    }
  }
  if (found.empty()) return out;
  std::map<Row, bool> rowSet;
  for (const auto& [inst, props] : found)
    for (const auto& [row, value] : props)
      rowSet[row] = true;
  std::vector<Row> keys;
  for (const auto& [row, unused] : rowSet)
    keys.push_back(row);
  std::map<std::vector<std::string>, size_t> variantOf;
  for (auto& [inst, props] : found) {
    std::vector<std::string> values;
    for (const Row& k : keys) {
      auto it = props.find(k);
      values.push_back(it == props.end() ? "\u2014" : it->second);
    }
    auto [it, fresh] = variantOf.emplace(values, out.variants.size());
    if (fresh) out.variants.push_back({{}, std::move(values)});
    out.variants[it->second].instances.push_back(inst);
  }
  std::stable_sort(out.variants.begin(), out.variants.end(), [](const OpVariant& a, const OpVariant& b) {
    return a.instances.size() > b.instances.size();
  });
  for (const Row& k : keys)
    out.rows.push_back(std::get<2>(k));
  out.differs.assign(keys.size(), false);
  for (size_t r = 0; r < keys.size(); ++r)
    for (const OpVariant& v : out.variants)
      out.differs[r] = out.differs[r] || v.values[r] != out.variants[0].values[r];
  return out;
}

std::string describeInstances(const Plan& plan, const std::vector<OpInstance>& instances) {
  std::vector<int> ranks, mbs;
  for (const OpInstance& i : instances) {
    ranks.push_back(plan.devices[static_cast<size_t>(i.device)].rank);
    if (i.microBatch >= 0) mbs.push_back(i.microBatch);
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::string out = (ranks.size() == 1 ? "rank " : "ranks ") + ranges(ranks);
  if (mbs.empty()) return out;
  out += " \u00b7 mb " + ranges(mbs);
  // The ranks x copies it names, but for the pairs another variant holds (a deviant copy).
  std::sort(mbs.begin(), mbs.end());
  mbs.erase(std::unique(mbs.begin(), mbs.end()), mbs.end());
  std::set<std::pair<int, int>> held;
  for (const OpInstance& i : instances)
    held.insert({plan.devices[static_cast<size_t>(i.device)].rank, i.microBatch});
  std::vector<std::string> missing;
  for (int r : ranks)
    for (int m : mbs)
      if (!held.count({r, m})) missing.push_back("rank " + std::to_string(r) + " mb " + std::to_string(m));
  if (missing.empty()) return out;
  if (missing.size() > 3) return out + " (" + std::to_string(missing.size()) + " pairs held elsewhere)";
  out += " except ";
  for (size_t k = 0; k < missing.size(); ++k)
    out += (k ? ", " : "") + missing[k];
  return out;
}

}  // namespace paraproof::ui
