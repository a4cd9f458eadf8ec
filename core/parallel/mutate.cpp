#include "core/parallel/mutate.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "core/parallel/plan_edit.h"

namespace paraproof::parallel {

uint64_t MutationRng::next() {
  uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

size_t MutationRng::below(size_t n) {
  return static_cast<size_t>(next() % n);
}

namespace {

struct OpSite {
  int device = 0;  // index into Plan::devices
  OpId op = 0;
};

std::string opLabel(const Plan& plan, int d, OpId o) {
  const Op& op = plan.devices[d].graph.ops[o];
  return "rank " + std::to_string(plan.devices[d].rank) + " op '" + op.id + "' (" + op.kind + ")";
}

const std::string& valueName(const Device& dev, ValueId v) {
  return dev.graph.values[v].name;
}

std::vector<OpSite> allOps(const Plan& plan, const std::function<bool(const Device&, const Op&)>& keep) {
  std::vector<OpSite> out;
  for (int d = 0; d < static_cast<int>(plan.devices.size()); ++d) {
    const Graph& g = plan.devices[d].graph;
    for (OpId o = 0; o < static_cast<OpId>(g.ops.size()); ++o)
      if (keep(plan.devices[d], g.ops[o])) out.push_back({d, o});
  }
  return out;
}

std::string instanceOf(const Op& op) {
  auto it = op.attrs.find("instance");
  return it != op.attrs.end() && it->is_string() ? it->get<std::string>() : "";
}

// The matching calls of one collective instance on every member, in device order.
std::vector<OpSite> membersOf(const Plan& plan, const std::string& instance) {
  return allOps(plan,
                [&](const Device&, const Op& op) { return isCollective(op) && instanceOf(op) == instance; });
}

// One site per collective instance (its first member).
std::vector<OpSite> collectiveInstances(const Plan& plan,
                                        const std::function<bool(const Device&, const Op&)>& keep) {
  std::set<std::string> seen;
  std::vector<OpSite> out;
  for (const OpSite& s :
       allOps(plan, [&](const Device&d, const Op&op) { return isCollective(op) && keep(d, op); }))
    if (seen.insert(instanceOf(plan.devices[s.device].graph.ops[s.op])).second) out.push_back(s);
  return out;
}

// A site chosen in two steps, a key (op kind, attribute) uniformly then a site of that key: otherwise the
// most repeated op (one optimizer update per parameter) would take most of the mutants.
template <class Site, class Key>
const Site& pickSpread(MutationRng& rng, const std::vector<Site>& sites, Key key) {
  std::map<std::string, std::vector<size_t>> byKey;
  for (size_t i = 0; i < sites.size(); ++i)
    byKey[key(sites[i])].push_back(i);
  auto it = byKey.begin();
  std::advance(it, static_cast<long>(rng.below(byKey.size())));
  return sites[rng.pick(it->second)];
}

const std::string& kindAt(const Plan& plan, const OpSite& s) {
  return plan.devices[s.device].graph.ops[s.op].kind;
}

// Keys whose values mean communication structure, changed only by the operators made for them.
bool commKey(const std::string& k) {
  return k == "group" || k == "instance" || k == "peer" || k == "src";
}

// Applies an attribute edit to every member of a collective (SPMD: the same call on each), or to the op.
void onInstance(Plan& plan, const OpSite& s, const std::function<void(Op&)>& edit) {
  const Op& op = plan.devices[s.device].graph.ops[s.op];
  if (!isCollective(op)) {
    edit(plan.devices[s.device].graph.ops[s.op]);
    return;
  }
  for (const OpSite& m : membersOf(plan, instanceOf(op)))
    edit(plan.devices[m.device].graph.ops[m.op]);
}

std::string where(const Plan& plan, const OpSite& s) {
  const Op& op = plan.devices[s.device].graph.ops[s.op];
  if (isCollective(op))
    return "collective '" + op.id + "' (" + op.kind + ", instance " + instanceOf(op) + ", every member)";
  return opLabel(plan, s.device, s.op);
}

// ---- constants: real attributes, booleans and enumerated strings -------------------------------------

struct AttrSite {
  OpSite at;
  std::string key;
};

double mutatedConstant(double v, MutationRng& rng) {
  if (v == 0) return 0.5;
  if (std::fabs(v) >= 1e4) return 0;         // a mask fill: -1e9 -> 0
  if (std::fabs(v) < 0.05) return v + 0.25;  // eps, lr: a change doubles would see
  return rng.coin() ? v * 2 : (std::fabs(v - 1) < 1e-12 ? 0.5 : v / 2);  // factors, betas, scales
}

std::optional<std::string> mutateConstant(Plan& plan, MutationRng& rng) {
  static const std::map<std::string, std::vector<std::string>> choices = {{"reduction", {"sum", "mean"}},
                                                                          {"approximate", {"tanh", "none"}}};
  std::vector<AttrSite> sites;
  for (const OpSite& s : allOps(plan, [](const Device&, const Op& op) { return !isCommunication(op); }))
    for (const auto& [k, v] : plan.devices[s.device].graph.ops[s.op].attrs.items())
      if (v.is_number_float() || v.is_boolean() || (v.is_string() && choices.count(k)))
        sites.push_back({s, k});
  if (sites.empty()) return std::nullopt;
  const AttrSite& s =
      pickSpread(rng, sites, [&](const AttrSite& a) { return kindAt(plan, a.at) + "." + a.key; });
  Json& a = plan.devices[s.at.device].graph.ops[s.at.op].attrs.edit()[s.key];
  std::string before = a.dump();
  if (a.is_number_float()) {
    a = mutatedConstant(a.get<double>(), rng);
  } else if (a.is_boolean()) {
    a = !a.get<bool>();
  } else {
    for (const std::string& c : choices.at(s.key))
      if (c != a.get<std::string>()) {
        a = c;
        break;
      }
  }
  return opLabel(plan, s.at.device, s.at.op) + ": " + s.key + " " + before + " -> " + a.dump();
}

// ---- integer attributes: dims, offsets, counts (one entry of a list) ---------------------------------

struct IntSite {
  OpSite at;
  std::string key;
  int entry = -1;  // -1: a scalar attribute
};

std::optional<std::string> mutateInteger(Plan& plan, MutationRng& rng) {
  std::vector<IntSite> sites;
  std::set<std::string> seenInstance;
  for (const OpSite& s :
       allOps(plan, [](const Device&, const Op& op) { return op.kind != "send" && op.kind != "recv"; })) {
    const Op& op = plan.devices[s.device].graph.ops[s.op];
    if (isCollective(op) && !seenInstance.insert(instanceOf(op)).second) continue;
    for (const auto& [k, v] : op.attrs.items()) {
      if (commKey(k) || k == "shape") continue;  // a shape off by one is always rejected: no information
      if (v.is_number_integer()) sites.push_back({s, k, -1});
      if (v.is_array())
        for (int i = 0; i < static_cast<int>(v.size()); ++i)
          if (v[i].is_number_integer()) sites.push_back({s, k, i});
    }
  }
  if (sites.empty()) return std::nullopt;
  const IntSite& s =
      pickSpread(rng, sites, [&](const IntSite& a) { return kindAt(plan, a.at) + "." + a.key; });
  const int64_t delta = rng.coin() ? 1 : -1;
  const std::string label = where(plan, s.at);
  std::string change;
  onInstance(plan, s.at, [&](Op& op) {
    Json& a = s.entry < 0 ? op.attrs.edit()[s.key] : op.attrs.edit()[s.key][s.entry];
    change = s.key + (s.entry < 0 ? "" : "[" + std::to_string(s.entry) + "]") + " " + a.dump() + " -> " +
             std::to_string(a.get<int64_t>() + delta);
    a = a.get<int64_t>() + delta;
  });
  return label + ": " + change;
}

// ---- operand swaps -----------------------------------------------------------------------------------

std::optional<std::string> swapOperands(Plan& plan, MutationRng& rng) {
  struct Site {
    OpSite at;
    size_t i, j;
  };
  std::vector<Site> sites;
  for (const OpSite& s : allOps(plan, [](const Device&, const Op& op) { return op.inputs.size() >= 2; })) {
    const Device& dev = plan.devices[s.device];
    const Op& op = dev.graph.ops[s.op];
    for (size_t i = 0; i < op.inputs.size(); ++i)
      for (size_t j = i + 1; j < op.inputs.size(); ++j)
        if (op.inputs[i] != op.inputs[j] &&
            dev.graph.values[op.inputs[i]].type == dev.graph.values[op.inputs[j]].type)
          sites.push_back({s, i, j});
  }
  if (sites.empty()) return std::nullopt;
  const Site& s = pickSpread(rng, sites, [&](const Site& a) { return kindAt(plan, a.at); });
  Device& dev = plan.devices[s.at.device];
  Op& op = dev.graph.ops[s.at.op];
  std::swap(op.inputs[s.i], op.inputs[s.j]);
  return opLabel(plan, s.at.device, s.at.op) + ": operands " + std::to_string(s.i) + " ('" +
         valueName(dev, op.inputs[s.j]) + "') and " + std::to_string(s.j) + " ('" +
         valueName(dev, op.inputs[s.i]) + "') swapped";
}

// ---- collectives -------------------------------------------------------------------------------------

// Replaces op `opId` on `dev` by one identity per output: output k := input `from[k]`.
void toIdentities(Device& dev, const std::string& opId, const std::vector<size_t>& from) {
  const Op& op = dev.graph.ops[dev.graph.findOp(opId)];
  std::vector<NewOp> repl;
  for (size_t k = 0; k < op.outputs.size(); ++k) {
    NewOp n;
    n.id = op.outputs.size() == 1 ? op.id.str() : op.id + ".dropped" + std::to_string(k);
    n.kind = "identity";
    n.inputs = {valueName(dev, op.inputs.at(from[k]))};
    n.outputs = {valueName(dev, op.outputs[k])};
    n.scope = op.scope;
    n.origin = op.origin;
    repl.push_back(std::move(n));
  }
  replaceOp(dev, opId, repl);
}

bool sameTypesInOut(const Device& dev, const Op& op) {
  if (op.inputs.size() != op.outputs.size()) return false;
  for (size_t k = 0; k < op.inputs.size(); ++k)
    if (!(dev.graph.values[op.inputs[k]].type == dev.graph.values[op.outputs[k]].type)) return false;
  return true;
}

std::optional<std::string> dropCollective(Plan& plan, MutationRng& rng) {
  auto sites = collectiveInstances(plan, [](const Device& d, const Op& op) { return sameTypesInOut(d, op); });
  if (sites.empty()) return std::nullopt;
  const OpSite s = rng.pick(sites);
  const std::string label = where(plan, s);
  const std::string opId = plan.devices[s.device].graph.ops[s.op].id;
  for (const OpSite& m : membersOf(plan, instanceOf(plan.devices[s.device].graph.ops[s.op]))) {
    Device& dev = plan.devices[m.device];
    std::vector<size_t> from(dev.graph.ops[m.op].outputs.size());
    for (size_t k = 0; k < from.size(); ++k)
      from[k] = k;
    toIdentities(dev, dev.graph.ops[m.op].id, from);
  }
  return label + ": dropped (output := input)";
}

std::optional<std::string> changeCollective(Plan& plan, MutationRng& rng) {
  auto sites = collectiveInstances(plan, [](const Device&, const Op& op) {
    return op.kind == "all_reduce" || op.kind == "reduce_scatter" || op.kind == "broadcast";
  });
  if (sites.empty()) return std::nullopt;
  const OpSite s = rng.pick(sites);
  const Op& first = plan.devices[s.device].graph.ops[s.op];
  const std::string label = where(plan, s);
  const std::vector<int> group = first.attrs.at("group").get<std::vector<int>>();
  if (first.kind == "broadcast") {
    onInstance(plan, s, [](Op& op) {
      op.kind = "all_reduce";
      op.attrs.erase("src");
      op.attrs.set("reduce", "sum");
    });
    return label + ": broadcast -> all_reduce sum";
  }
  // An all_reduce of one tensor may become a broadcast from one member; otherwise change the reduction.
  if (first.kind == "all_reduce" && first.inputs.size() == 1 && rng.below(3) == 0) {
    const int src = rng.pick(group);
    onInstance(plan, s, [&](Op& op) {
      op.kind = "broadcast";
      op.attrs.erase("reduce");
      op.attrs.set("src", src);
    });
    return label + ": all_reduce -> broadcast from rank " + std::to_string(src);
  }
  std::vector<std::string> kinds = first.kind == "all_reduce" ? std::vector<std::string>{"sum", "avg", "max"}
                                                              : std::vector<std::string>{"sum", "avg"};
  const std::string before = first.attrs.value("reduce", "sum");
  kinds.erase(std::remove(kinds.begin(), kinds.end(), before), kinds.end());
  const std::string after = rng.pick(kinds);
  onInstance(plan, s, [&](Op& op) { op.attrs.set("reduce", after); });
  return label + ": reduce " + before + " -> " + after;
}

// One member of a collective's group replaced: with a rank of another instance of the same call (the two
// ranks trade places, so both calls stay matched), or, when there is only one instance, two members swap
// their positions in the group (the order of gathered pieces and scattered shards).
std::optional<std::string> changeGroup(Plan& plan, MutationRng& rng) {
  auto sites =
      collectiveInstances(plan, [](const Device&, const Op& op) { return op.attrs.at("group").size() >= 2; });
  if (sites.empty()) return std::nullopt;
  const OpSite s = rng.pick(sites);
  const Op& first = plan.devices[s.device].graph.ops[s.op];
  const std::string instA = instanceOf(first), opId = first.id, label = where(plan, s);
  const std::vector<int> groupA = first.attrs.at("group").get<std::vector<int>>();
  // Other instances of the same op id with a group of the same size and no common rank.
  std::map<std::string, std::vector<int>> others;
  for (const OpSite& o : allOps(plan, [&](const Device&, const Op& op) {
         return isCollective(op) && op.id == opId && op.kind == first.kind;
       })) {
    const Op& op = plan.devices[o.device].graph.ops[o.op];
    std::vector<int> g = op.attrs.at("group").get<std::vector<int>>();
    bool disjoint =
        std::none_of(g.begin(), g.end(), [&](int r) { return std::count(groupA.begin(), groupA.end(), r); });
    if (instanceOf(op) != instA && g.size() == groupA.size() && disjoint) others[instanceOf(op)] = g;
  }
  const size_t pos = rng.below(groupA.size());
  if (others.empty()) {
    size_t other = (pos + 1 + rng.below(groupA.size() - 1)) % groupA.size();
    std::vector<int> g = groupA;
    std::swap(g[pos], g[other]);
    onInstance(plan, s, [&](Op& op) { op.attrs.set("group", g); });
    return label + ": group " + Json(groupA).dump() + " -> " + Json(g).dump();
  }
  std::vector<std::string> names;
  for (const auto& [n, g] : others)
    names.push_back(n);
  const std::string instB = rng.pick(names);
  const std::vector<int> groupB = others.at(instB);
  const size_t posB = rng.below(groupB.size());
  const int a = groupA[pos], b = groupB[posB];
  std::vector<int> newA = groupA, newB = groupB;
  newA[pos] = b;
  newB[posB] = a;
  // Members of A keep instance A with group newA, except rank a which joins B; likewise for B.
  const std::vector<OpSite> membersA = membersOf(plan, instA), membersB = membersOf(plan, instB);
  auto retarget = [&](const std::vector<OpSite>& members, int mover, const std::string& stay,
                      const std::vector<int>& stayGroup, const std::string& move,
                      const std::vector<int>& moveGroup) {
    for (const OpSite& m : members) {
      Op& op = plan.devices[m.device].graph.ops[m.op];
      const bool moves = plan.devices[m.device].rank == mover;
      op.attrs.set("group", moves ? moveGroup : stayGroup);
      op.attrs.set("instance", moves ? move : stay);
    }
  };
  retarget(membersA, a, instA, newA, instB, newB);
  retarget(membersB, b, instB, newB, instA, newA);
  return label + ": rank " + std::to_string(a) + " of group " + Json(groupA).dump() + " replaced by rank " +
         std::to_string(b) + " (groups " + Json(newA).dump() + " and " + Json(newB).dump() + ")";
}

// ---- redirected inputs -------------------------------------------------------------------------------

std::optional<std::string> redirectInput(Plan& plan, MutationRng& rng) {
  struct Site {
    OpSite at;
    size_t slot;
  };
  std::vector<Site> sites;
  for (const OpSite& s : allOps(plan, [](const Device&, const Op& op) { return !op.inputs.empty(); })) {
    const Op& op = plan.devices[s.device].graph.ops[s.op];
    for (size_t k = 0; k < op.inputs.size(); ++k)
      sites.push_back({s, k});
  }
  // Try a few sites: not every input has another value of its type defined before the op.
  for (int attempt = 0; attempt < 16 && !sites.empty(); ++attempt) {
    const Site& s = pickSpread(rng, sites, [&](const Site& a) { return kindAt(plan, a.at); });
    Device& dev = plan.devices[s.at.device];
    Op& op = dev.graph.ops[s.at.op];
    const ValueId old = op.inputs[s.slot];
    const TensorType& t = dev.graph.values[old].type;
    std::vector<ValueId> candidates;
    for (ValueId v = 0; v < static_cast<ValueId>(dev.graph.values.size()); ++v) {
      const Value& val = dev.graph.values[v];
      if (v != old && val.type == t && val.producer < s.at.op) candidates.push_back(v);  // kNone: an input
    }
    if (candidates.empty()) continue;
    const ValueId to = rng.pick(candidates);
    op.inputs[s.slot] = to;
    return opLabel(plan, s.at.device, s.at.op) + ": input " + std::to_string(s.slot) + " '" +
           valueName(dev, old) + "' -> '" + valueName(dev, to) + "'";
  }
  return std::nullopt;
}

// ---- shifted slices and lineage boxes ----------------------------------------------------------------

std::optional<std::string> shiftSlice(Plan& plan, MutationRng& rng) {
  auto sites = allOps(plan, [](const Device&, const Op& op) { return op.kind == "slice"; });
  for (int attempt = 0; attempt < 16 && !sites.empty(); ++attempt) {
    const OpSite& s = rng.pick(sites);
    Device& dev = plan.devices[s.device];
    Op& op = dev.graph.ops[s.op];
    const Shape& in = dev.graph.values[op.inputs.at(0)].type.shape;
    int64_t dim = op.attrs.value("dim", 0);
    if (dim < 0) dim += static_cast<int64_t>(in.size());
    if (dim < 0 || dim >= static_cast<int64_t>(in.size())) continue;
    const int64_t start = op.attrs.value("start", int64_t{0}), end = op.attrs.value("end", in[dim]);
    std::vector<int64_t> deltas;
    if (start > 0) deltas.push_back(-1);
    if (end < in[dim]) deltas.push_back(1);
    if (deltas.empty()) continue;
    const int64_t d = rng.pick(deltas);
    op.attrs.set("start", start + d);
    op.attrs.set("end", end + d);
    return opLabel(plan, s.device, s.op) + ": [" + std::to_string(start) + ", " + std::to_string(end) +
           ") -> [" + std::to_string(start + d) + ", " + std::to_string(end + d) + ") along dim " +
           std::to_string(dim);
  }
  return std::nullopt;
}

// The box of a device graph input (what it is loaded with) or output (what it is claimed to hold) moved by
// one element along one dimension. Intermediate lineage is an annotation for the verifier, not semantics.
std::optional<std::string> shiftLineage(Plan& plan, MutationRng& rng) {
  struct Site {
    int device;
    ValueId value;
    size_t dim;
    int64_t delta;
  };
  // An output whose lineage no other device output repeats cannot move without a coverage gap (rejected).
  std::map<std::tuple<std::string, Box, int, int>, int> outputCopies;
  for (const Device& dev : plan.devices)
    for (ValueId v : std::set<ValueId>(dev.graph.outputs.begin(), dev.graph.outputs.end()))
      if (auto it = dev.lineage.find(v); it != dev.lineage.end())
        ++outputCopies[{it->second.tensor, it->second.box, it->second.part, it->second.parts}];
  std::vector<Site> sites;
  for (int d = 0; d < static_cast<int>(plan.devices.size()); ++d) {
    const Device& dev = plan.devices[d];
    std::set<ValueId> boundary(dev.graph.inputs.begin(), dev.graph.inputs.end());
    for (ValueId v : dev.graph.outputs)
      if (auto it = dev.lineage.find(v);
          it != dev.lineage.end() && !boundary.count(v) &&
          outputCopies[{it->second.tensor, it->second.box, it->second.part, it->second.parts}] > 1)
        boundary.insert(v);
    for (ValueId v : boundary) {
      auto it = dev.lineage.find(v);
      if (it == dev.lineage.end()) continue;
      const ValueId lv = lineageValue(plan.logical, it->second);
      if (lv == kNone) continue;
      const Shape& full = plan.logical.values[lv].type.shape;
      const Box& box = it->second.box;
      for (size_t k = 0; k < box.ranges.size() && k < full.size(); ++k) {
        if (box.ranges[k].first > 0) sites.push_back({d, v, k, -1});
        if (box.ranges[k].second < full[k]) sites.push_back({d, v, k, 1});
      }
    }
  }
  if (sites.empty()) return std::nullopt;
  const Site& s = rng.pick(sites);
  Device& dev = plan.devices[s.device];
  Lineage& lin = dev.lineage.at(s.value);
  auto& r = lin.box.ranges[s.dim];
  const std::string before = "[" + std::to_string(r.first) + ", " + std::to_string(r.second) + ")";
  r.first += s.delta;
  r.second += s.delta;
  const bool isInput = std::count(dev.graph.inputs.begin(), dev.graph.inputs.end(), s.value) > 0;
  return "rank " + std::to_string(dev.rank) + (isInput ? " input '" : " output '") + valueName(dev, s.value) +
         "': lineage " + lin.tensor + " dim " + std::to_string(s.dim) + " " + before + " -> [" +
         std::to_string(r.first) + ", " + std::to_string(r.second) + ")";
}

// ---- send peers --------------------------------------------------------------------------------------

// Two transfers of the same type trade destinations: a -> b and c -> e become a -> e and c -> b, with the
// receivers' peers and the instances changed to match (a well-matched plan sending to the wrong rank).
std::optional<std::string> swapSendPeers(Plan& plan, MutationRng& rng) {
  struct Transfer {
    OpSite send, recv;
  };
  std::vector<Transfer> transfers;
  for (const OpSite& s : allOps(plan, [](const Device&, const Op& op) { return op.kind == "send"; })) {
    const Op& send = plan.devices[s.device].graph.ops[s.op];
    const int peer = send.attrs.value("peer", -1), from = plan.devices[s.device].rank;
    const int pd = plan.deviceIndex(peer);
    if (pd == kNone) continue;
    const Graph& g = plan.devices[pd].graph;
    for (OpId o = 0; o < static_cast<OpId>(g.ops.size()); ++o)
      if (g.ops[o].kind == "recv" && g.ops[o].attrs.value("peer", -1) == from &&
          instanceOf(g.ops[o]) == instanceOf(send))
        transfers.push_back({s, {pd, o}});
  }
  std::vector<std::pair<size_t, size_t>> pairs;
  for (size_t i = 0; i < transfers.size(); ++i)
    for (size_t j = i + 1; j < transfers.size(); ++j) {
      const Transfer &x = transfers[i], &y = transfers[j];
      const Device &xs = plan.devices[x.send.device], &ys = plan.devices[y.send.device];
      const Device &xr = plan.devices[x.recv.device], &yr = plan.devices[y.recv.device];
      const Value& xv = xs.graph.values[xs.graph.ops[x.send.op].inputs.at(0)];
      const Value& yv = ys.graph.values[ys.graph.ops[y.send.op].inputs.at(0)];
      // The same call on two ranks (SPMD), sent to the wrong one of the two receivers.
      if (xs.graph.ops[x.send.op].id == ys.graph.ops[y.send.op].id && x.send.device != y.send.device &&
          x.recv.device != y.recv.device && xv.type == yv.type && x.recv.device != y.send.device &&
          y.recv.device != x.send.device &&
          xr.graph.ops[x.recv.op].attrs.value("shape", Json()) ==
              yr.graph.ops[y.recv.op].attrs.value("shape", Json()))
        pairs.emplace_back(i, j);
    }
  if (pairs.empty()) return std::nullopt;
  const auto [i, j] = rng.pick(pairs);
  const Transfer x = transfers[i], y = transfers[j];
  Op& xs = plan.devices[x.send.device].graph.ops[x.send.op];
  Op& ys = plan.devices[y.send.device].graph.ops[y.send.op];
  Op& xr = plan.devices[x.recv.device].graph.ops[x.recv.op];
  Op& yr = plan.devices[y.recv.device].graph.ops[y.recv.op];
  const int a = plan.devices[x.send.device].rank, b = plan.devices[x.recv.device].rank;
  const int c = plan.devices[y.send.device].rank, e = plan.devices[y.recv.device].rank;
  const std::string ix = instanceOf(xs) + "~to" + std::to_string(e),
                    iy = instanceOf(ys) + "~to" + std::to_string(b);
  xs.attrs.set("peer", e);
  xs.attrs.set("instance", ix);
  yr.attrs.set("peer", a);
  yr.attrs.set("instance", ix);
  ys.attrs.set("peer", b);
  ys.attrs.set("instance", iy);
  xr.attrs.set("peer", c);
  xr.attrs.set("instance", iy);
  return "send '" + xs.id + "' rank " + std::to_string(a) + " -> " + std::to_string(b) + " and send '" +
         ys.id + "' rank " + std::to_string(c) + " -> " + std::to_string(e) + " trade destinations";
}

// ---- dropped ops -------------------------------------------------------------------------------------

// Output k := an input of the same type; an optimizer update keeps its parameter and state unchanged.
std::optional<std::vector<size_t>> dropSources(const Device& dev, const Op& op, MutationRng* rng) {
  if (op.kind == "adamw" && op.inputs.size() == 4 && op.outputs.size() == 3)
    return std::vector<size_t>{0, 2, 3};
  std::vector<size_t> from;
  for (ValueId out : op.outputs) {
    std::vector<size_t> same;
    for (size_t k = 0; k < op.inputs.size(); ++k)
      if (dev.graph.values[op.inputs[k]].type == dev.graph.values[out].type) same.push_back(k);
    if (same.empty()) return std::nullopt;
    from.push_back(rng ? rng->pick(same) : same.front());
  }
  return from;
}

std::optional<std::string> dropOp(Plan& plan, MutationRng& rng) {
  auto sites = allOps(plan, [](const Device& dev, const Op& op) {
    return !isCommunication(op) && op.kind != "identity" && !op.inputs.empty() && !op.outputs.empty() &&
           dropSources(dev, op, nullptr).has_value();
  });
  if (sites.empty()) return std::nullopt;
  const OpSite s = pickSpread(rng, sites, [&](const OpSite& a) { return kindAt(plan, a); });
  Device& dev = plan.devices[s.device];
  const Op op = dev.graph.ops[s.op];
  const std::vector<size_t> from = *dropSources(dev, op, &rng);
  std::string what;
  for (size_t k = 0; k < from.size(); ++k)
    what += (k ? ", '" : "'") + valueName(dev, op.outputs[k]) + "' := '" +
            valueName(dev, op.inputs[from[k]]) + "'";
  const std::string label = opLabel(plan, s.device, s.op);
  toIdentities(dev, op.id, from);
  return label + ": dropped (" + what + ")" + (op.kind == "adamw" ? ", the optimizer update is skipped" : "");
}

// ---- kept state ---------------------------------------------------------------------------------------

// A device output replaced by a graph input of the same type: the step's result dropped, the old state kept
// (preferably the input the output succeeds: same box, its tensor's name a prefix of the output's).
std::optional<std::string> keepOldState(Plan& plan, MutationRng& rng) {
  struct Site {
    int device;
    size_t position;
  };
  std::vector<Site> sites;
  for (int d = 0; d < static_cast<int>(plan.devices.size()); ++d) {
    const Graph& g = plan.devices[d].graph;
    for (size_t k = 0; k < g.outputs.size(); ++k)
      if (g.values[g.outputs[k]].producer != kNone &&
          std::any_of(g.inputs.begin(), g.inputs.end(),
                      [&](ValueId in) { return g.values[in].type == g.values[g.outputs[k]].type; }))
        sites.push_back({d, k});
  }
  if (sites.empty()) return std::nullopt;
  const Site& s = rng.pick(sites);
  Device& dev = plan.devices[s.device];
  const ValueId out = dev.graph.outputs[s.position];
  std::vector<ValueId> same, predecessor;
  const auto outLin = dev.lineage.find(out);
  for (ValueId in : dev.graph.inputs) {
    if (!(dev.graph.values[in].type == dev.graph.values[out].type)) continue;
    same.push_back(in);
    const auto inLin = dev.lineage.find(in);
    if (outLin != dev.lineage.end() && inLin != dev.lineage.end() &&
        inLin->second.box == outLin->second.box &&
        outLin->second.tensor.rfind(inLin->second.tensor, 0) == 0 &&
        inLin->second.tensor != outLin->second.tensor)
      predecessor.push_back(in);
  }
  // The longest such prefix: 'w.v' for 'w.v.out', not 'w'.
  auto nameLength = [&](ValueId v) { return dev.lineage.at(v).tensor.size(); };
  std::sort(predecessor.begin(), predecessor.end(),
            [&](ValueId a, ValueId b) { return nameLength(a) > nameLength(b); });
  const ValueId in = predecessor.empty() ? rng.pick(same) : predecessor.front();
  dev.graph.outputs[s.position] = in;
  return "rank " + std::to_string(dev.rank) + " output " + std::to_string(s.position) + " '" +
         valueName(dev, out) + "' -> input '" + valueName(dev, in) + "' (the step's result dropped)";
}

// ---- coincidences at a folded or reduced size -----------------------------------------------------------
// The operators below build plans that are wrong at full size but right at some smaller size a checker
// could use instead (a fold of the replicas or micro-batch copies, a shape reduction): a count replaced by
// its value at the smaller size, a lineage box that stops moving with its replica or copy, a count taken at
// run time from the wrong tensor or squared, an integer id narrowed to a smaller vocabulary.

NewOp newOp(const Op& site, const std::string& tag, const std::string& kind, std::vector<std::string> inputs,
            Json attrs = Json::object()) {
  NewOp n;
  n.id = names::taggedBeforeCopyMarker(site.id, tag);
  n.kind = kind;
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  n.outputs = {n.id};
  n.scope = site.scope;
  n.origin = site.origin;
  return n;
}

// The devices an edit of device d's program must reach. In a compact plan the template replicas define the
// implied ones, so the edit goes to every stated replica of d's line (a mutation of the template is a
// mutation of every replica it stands for); in an explicit plan to d alone (one replica).
std::vector<int> lineOf(const Plan& plan, int d) {
  if (!plan.replicas) return {d};
  const auto it = std::find(plan.mesh.axes.begin(), plan.mesh.axes.end(), plan.replicas->axis);
  if (it == plan.mesh.axes.end()) return {d};
  const size_t a = static_cast<size_t>(it - plan.mesh.axes.begin());
  std::vector<int> out;
  for (int e = 0; e < static_cast<int>(plan.devices.size()); ++e) {
    std::vector<int64_t> x = plan.devices[e].coord, y = plan.devices[d].coord;
    if (x.size() != y.size() || a >= x.size()) continue;
    x[a] = y[a] = 0;
    if (x == y) out.push_back(e);
  }
  if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  return out;
}

// `name` moved from micro-batch copy `from` to copy `to` ("x#0~1" -> "x#1~1"); other names unchanged.
std::string inCopy(const std::string& name, const std::string& from, const std::string& to) {
  if (from.empty() || names::copyMarker(name) != from) return name;
  const size_t h = name.rfind(from);
  return name.substr(0, h) + to + name.substr(h + from.size());
}

// Op `opId` replaced, on every device of d's line, by `before` + the op with input `slot` reading `input`.
// In a compact plan an op of a template copy is edited in both template copies (the implied copies are
// translates of the pair, which must stay translates of each other).
void insertBefore(Plan& plan, int d, const std::string& opId, const std::vector<NewOp>& before, size_t slot,
                  const std::string& input) {
  const std::string marker = names::copyMarker(opId);
  std::vector<std::string> copies{marker};
  if (plan.microbatches && !marker.empty()) {
    const std::string a = "#" + std::to_string(plan.microbatches->from),
                      b = "#" + std::to_string(plan.microbatches->from + 1);
    if (marker == a) copies.push_back(b);
    if (marker == b) copies.push_back(a);
  }
  for (int e : lineOf(plan, d))
    for (const std::string& to : copies) {
      Device& dev = plan.devices[e];
      const std::string id = inCopy(opId, marker, to);
      if (dev.graph.findOp(id) == kNone) continue;
      NewOp op = asNewOp(dev, dev.graph.ops[dev.graph.findOp(id)]);
      op.inputs.at(slot) = inCopy(input, marker, to);
      std::vector<NewOp> repl;
      for (NewOp n : before) {
        n.id = inCopy(n.id, marker, to);
        for (std::string& v : n.inputs)
          v = inCopy(v, marker, to);
        for (std::string& v : n.outputs)
          v = inCopy(v, marker, to);
        repl.push_back(std::move(n));
      }
      repl.push_back(op);
      replaceOp(dev, id, repl);
    }
}

// Proper divisors >= 2 of n: the sizes a fold or reduction of n could check (1 when there is none).
std::vector<int64_t> smallerCounts(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t m = 2; m < n; ++m)
    if (n % m == 0) out.push_back(m);
  if (out.empty()) out.push_back(1);
  return out;
}

bool isScalarFloat(const Value& v) {
  return v.type.shape.empty() && !isInteger(v.type.dtype) && v.type.dtype != DType::Bool;
}

// The micro-batch count of a plan: stated (compact) or the copies named on the device.
int64_t microBatchCount(const Plan& plan, const Device& dev) {
  if (plan.microbatches) return plan.microbatches->count;
  int64_t n = 0;
  for (const Op& op : dev.graph.ops)
    if (std::string m = names::copyMarker(op.id); !m.empty())
      n = std::max<int64_t>(n, std::stoll(m.substr(1)) + 1);
  return n;
}

// The last add of a gradient-accumulation chain on a device: it reads a copy ("g#k") and its (step-wide)
// result is read by no add that reads another copy.
bool isChainEnd(const Device& dev, const Op& op) {
  if (op.kind != "add" || op.outputs.size() != 1 || !names::copyMarker(valueName(dev, op.outputs[0])).empty())
    return false;
  if (std::none_of(op.inputs.begin(), op.inputs.end(),
                   [&](ValueId v) { return !names::copyMarker(valueName(dev, v)).empty(); }))
    return false;
  for (const Op& other : dev.graph.ops)
    if (other.kind == "add" && std::count(other.inputs.begin(), other.inputs.end(), op.outputs[0]) &&
        std::any_of(other.inputs.begin(), other.inputs.end(),
                    [&](ValueId v) { return !names::copyMarker(valueName(dev, v)).empty(); }))
      return false;
  return true;
}

// A size-dependent count replaced by its value at a smaller size: a sum over a group of g members made an
// avg times g' < g (avg made a sum over g'), or a sum over n micro-batch copies scaled by m/n.
std::optional<std::string> foldCountConstant(Plan& plan, MutationRng& rng) {
  struct Site {
    OpSite at;
    bool collective;
  };
  std::vector<Site> sites;
  for (const OpSite& s : collectiveInstances(plan, [](const Device&, const Op& op) {
         return (op.kind == "all_reduce" || op.kind == "reduce_scatter") &&
                op.attrs.at("group").size() >= 2 &&
                (op.attrs.value("reduce", "") == "sum" || op.attrs.value("reduce", "") == "avg");
       }))
    sites.push_back({s, true});
  for (const OpSite& s : allOps(plan, [&](const Device&dev, const Op&op) {
         return isChainEnd(dev, op) && microBatchCount(plan, dev) >= 2;
       }))
    sites.push_back({s, false});
  if (sites.empty()) return std::nullopt;
  const Site& s = pickSpread(rng, sites, [&](const Site& a) {
    return a.collective
               ? kindAt(plan, a.at) + "." +
                     std::to_string(plan.devices[a.at.device].graph.ops[a.at.op].attrs.at("group").size())
               : std::string("accumulation");
  });
  const std::string label = where(plan, s.at);
  if (s.collective) {
    const Op& first = plan.devices[s.at.device].graph.ops[s.at.op];
    const int64_t g = static_cast<int64_t>(first.attrs.at("group").size());
    const int64_t smaller = rng.pick(smallerCounts(g));
    const bool wasSum = first.attrs.value("reduce", "") == "sum";
    const double factor = wasSum ? static_cast<double>(smaller) : 1.0 / static_cast<double>(smaller);
    // Every member, and in a compact plan the same call in every stated replica of a member's line (a
    // collective within a replica has an instance per replica: the template pair must change together).
    std::set<std::pair<int, std::string>> calls;
    for (const OpSite& m : membersOf(plan, instanceOf(first)))
      for (int e : lineOf(plan, m.device))
        if (plan.devices[e].graph.findOp(plan.devices[m.device].graph.ops[m.op].id) != kNone)
          calls.insert({e, plan.devices[m.device].graph.ops[m.op].id});
    for (const auto& [d, id] : calls) {
      Device& dev = plan.devices[d];
      const Op op = dev.graph.ops[dev.graph.findOp(id)];
      NewOp coll = asNewOp(dev, op);
      coll.attrs["reduce"] = wasSum ? "avg" : "sum";
      std::vector<NewOp> repl;
      for (std::string& out : coll.outputs) {
        const std::string name = out;
        out = names::taggedBeforeCopyMarker(name, wasSum ? "avg" : "sum");
        NewOp sc;
        sc.id = names::taggedBeforeCopyMarker(name, "count");
        sc.kind = "scale";
        sc.inputs = {out};
        sc.attrs = {{"factor", factor}};
        sc.outputs = {name};
        sc.scope = op.scope;
        sc.origin = op.origin;
        repl.push_back(sc);
      }
      repl.insert(repl.begin(), coll);
      replaceOp(dev, op.id, repl);
    }
    return label + ": reduce " + (wasSum ? "sum over " : "avg over ") + std::to_string(g) + " -> " +
           (wasSum ? "avg times " : "sum over ") + std::to_string(smaller) + " (the count at a group of " +
           std::to_string(smaller) + ")";
  }
  Device& dev = plan.devices[s.at.device];
  const Op op = dev.graph.ops[s.at.op];
  const int64_t n = microBatchCount(plan, dev), m = rng.pick(smallerCounts(n));
  const std::string out = valueName(dev, op.outputs[0]);
  for (int e : lineOf(plan, s.at.device)) {
    Device& d = plan.devices[e];
    if (d.graph.findOp(op.id) == kNone) continue;
    NewOp add = asNewOp(d, d.graph.ops[d.graph.findOp(op.id)]);
    add.outputs = {names::taggedBeforeCopyMarker(out, "sum")};
    NewOp sc = newOp(op, "count", "scale", {add.outputs[0]},
                     {{"factor", static_cast<double>(m) / static_cast<double>(n)}});
    sc.outputs = {out};
    replaceOp(d, op.id, {add, sc});
  }
  return label + ": the sum '" + out + "' over " + std::to_string(n) + " micro-batches scaled by " +
         std::to_string(m) + "/" + std::to_string(n) + " (the sum over " + std::to_string(m) + " copies)";
}

// One device input's lineage box pinned to the box another replica or copy loads (the template's when it
// can): it stops moving with its replica or copy.
std::optional<std::string> pinLineageBox(Plan& plan, MutationRng& rng) {
  struct Site {
    int device;
    ValueId value;
  };
  std::map<std::string, std::set<Box>> boxes;  // tensor -> boxes of device inputs
  std::vector<Site> sites;
  for (int d = 0; d < static_cast<int>(plan.devices.size()); ++d)
    for (ValueId v : plan.devices[d].graph.inputs)
      if (auto it = plan.devices[d].lineage.find(v); it != plan.devices[d].lineage.end()) {
        boxes[it->second.tensor].insert(it->second.box);
        sites.push_back({d, v});
      }
  auto sameExtents = [](const Box& a, const Box& b) {
    if (a.ranges.size() != b.ranges.size()) return false;
    for (size_t k = 0; k < a.ranges.size(); ++k)
      if (a.ranges[k].second - a.ranges[k].first != b.ranges[k].second - b.ranges[k].first) return false;
    return true;
  };
  auto others = [&](const Site& s) {
    const Lineage& l = plan.devices[s.device].lineage.at(s.value);
    std::vector<Box> out;
    for (const Box& b : boxes[l.tensor])
      if (!(b == l.box) && sameExtents(b, l.box)) out.push_back(b);
    return out;
  };
  // A compact plan's template pair defines every implied box by its step: a pinned template (step zero)
  // tiles nothing, which the format rejects. Only a further stated replica or copy (a deviant) can be pinned.
  auto isTemplate = [&](const Site& s) {
    const Device& dev = plan.devices[s.device];
    if (plan.microbatches) {
      const std::string m = names::copyMarker(valueName(dev, s.value));
      if (m == "#" + std::to_string(plan.microbatches->from) ||
          m == "#" + std::to_string(plan.microbatches->from + 1))
        return true;
    }
    if (plan.replicas) {
      const auto it = std::find(plan.mesh.axes.begin(), plan.mesh.axes.end(), plan.replicas->axis);
      const size_t a = static_cast<size_t>(it - plan.mesh.axes.begin());
      if (a < dev.coord.size() && (dev.coord[a] == plan.replicas->from || dev.coord[a] == plan.replicas->to))
        return true;
    }
    return false;
  };
  std::erase_if(sites, [&](const Site& s) { return isTemplate(s) || others(s).empty(); });
  if (sites.empty()) return std::nullopt;
  const Site& s = pickSpread(
      rng, sites, [&](const Site& a) { return plan.devices[a.device].lineage.at(a.value).tensor; });
  const std::vector<Box> to = others(s);
  Device& dev = plan.devices[s.device];
  Lineage& lin = dev.lineage.at(s.value);
  auto boxText = [](const Box& b) {
    std::string t = "[";
    for (size_t k = 0; k < b.ranges.size(); ++k)
      t += (k ? ", " : "") + std::to_string(b.ranges[k].first) + ":" + std::to_string(b.ranges[k].second);
    return t + "]";
  };
  const std::string before = boxText(lin.box);
  lin.box = rng.coin() ? to.front() : rng.pick(to);  // the smallest offsets: the template's
  return "rank " + std::to_string(dev.rank) + " input '" + valueName(dev, s.value) + "': lineage " +
         lin.tensor + " " + before + " pinned to " + boxText(lin.box);
}

// A scalar divisor (div by a [] count, reciprocal of one): the sites of the count operators.
struct DivisorSite {
  OpSite at;
  size_t slot;
};

std::vector<DivisorSite> divisorSites(const Plan& plan) {
  std::vector<DivisorSite> out;
  for (const OpSite& s : allOps(plan, [](const Device&dev, const Op&op) {
         return (op.kind == "div" && op.inputs.size() == 2 &&
                 isScalarFloat(dev.graph.values[op.inputs[1]])) ||
                (op.kind == "reciprocal" && isScalarFloat(dev.graph.values[op.inputs[0]]));
       })) {
    const Op& op = plan.devices[s.device].graph.ops[s.op];
    out.push_back({s, op.kind == "div" ? size_t{1} : size_t{0}});
  }
  return out;
}

// A count taken at run time from another tensor: sum(y * 0 + 1) over every axis of a tensor y of the same
// micro-batch, in place of the right count.
std::optional<std::string> countOfOtherTensor(Plan& plan, MutationRng& rng) {
  std::vector<DivisorSite> sites = divisorSites(plan);
  for (int attempt = 0; attempt < 16 && !sites.empty(); ++attempt) {
    const DivisorSite& s = pickSpread(rng, sites, [&](const DivisorSite& a) { return kindAt(plan, a.at); });
    Device& dev = plan.devices[s.at.device];
    const Op op = dev.graph.ops[s.at.op];
    const std::string marker = names::copyMarker(op.id);
    std::vector<ValueId> candidates;
    for (ValueId v = 0; v < static_cast<ValueId>(dev.graph.values.size()); ++v) {
      const Value& val = dev.graph.values[v];
      if (val.producer >= s.at.op && val.producer != kNone) continue;
      if (val.type.shape.empty() || numElements(val.type.shape) < 2 || isInteger(val.type.dtype) ||
          val.type.dtype == DType::Bool || names::copyMarker(val.name) != marker)
        continue;
      candidates.push_back(v);
    }
    if (candidates.empty()) continue;
    const ValueId y =
        pickSpread(rng, candidates, [&](ValueId v) { return shapeString(dev.graph.values[v].type.shape); });
    const std::string yName = valueName(dev, y), old = valueName(dev, op.inputs[s.slot]);
    const Shape yShape = dev.graph.values[y].type.shape;
    const NewOp zero = newOp(op, "other_zero", "scale", {yName}, {{"factor", 0.0}});
    const NewOp one = newOp(op, "other_one", "add_scalar", {zero.outputs[0]}, {{"value", 1.0}});
    const NewOp count = newOp(op, "other_count", "sum", {one.outputs[0]});
    const std::string label = opLabel(plan, s.at.device, s.at.op);
    insertBefore(plan, s.at.device, op.id, {zero, one, count}, s.slot, count.outputs[0]);
    return label + ": count '" + old + "' -> sum(" + yName +
           " * 0 + 1) = " + std::to_string(numElements(yShape)) + " (" + shapeString(yShape) + ")";
  }
  return std::nullopt;
}

// The largest group of a collective on a device, over at least two ranks: the data-parallel group where there
// is one (the axis the replica fold shrinks).
std::vector<int> widestGroup(const Device& dev) {
  std::vector<int> best;
  for (const Op& op : dev.graph.ops)
    if (isCollective(op) && op.attrs.contains("group")) {
      std::vector<int> g = op.attrs.at("group").get<std::vector<int>>();
      if (g.size() > best.size() && std::count(g.begin(), g.end(), dev.rank)) best = g;
    }
  return best.size() >= 2 ? best : std::vector<int>{};
}

// The micro-batch copies a device states ("#j" in its op ids), in order.
std::vector<int> statedCopies(const Device& dev) {
  std::set<int> js;
  for (const Op& op : dev.graph.ops)
    if (std::string m = names::copyMarker(op.id); !m.empty()) js.insert(std::stoi(m.substr(1)));
  return {js.begin(), js.end()};
}

// c = the number of micro-batch copies, counted at run time: a one per copy ("mutant.one#j") summed by an
// accumulation chain over the copies (the form the micro-batch fold folds), at the start of the program of
// device d (and of every stated replica of its line). In a compact plan the chain over the stated copies
// stands for the chain over all of them.
std::string addCopyCount(Plan& plan, int d) {
  for (int e : lineOf(plan, d)) {
    Device& dev = plan.devices[e];
    const std::vector<int> js = statedCopies(dev);
    if (js.size() < 2 || dev.graph.findOp("mutant.copy_count") != kNone) continue;
    std::vector<NewOp> ops;
    for (int j : js) {
      NewOp one;
      one.id = "mutant.one#" + std::to_string(j);
      one.kind = "constant";
      one.attrs = {{"shape", Json::array()}, {"value", 1.0}};
      one.outputs = {one.id};
      ops.push_back(one);
    }
    std::string acc = "mutant.one#" + std::to_string(js[0]);
    for (size_t k = 1; k < js.size(); ++k) {
      NewOp add;
      add.id = k + 1 == js.size() ? "mutant.copy_count" : "mutant.copy_count.acc." + std::to_string(k);
      add.kind = "add";
      add.inputs = {acc, "mutant.one#" + std::to_string(js[k])};
      add.outputs = {add.id};
      ops.push_back(add);
      acc = add.id;
    }
    ops.push_back(asNewOp(dev, dev.graph.ops.front()));
    replaceOp(dev, dev.graph.ops.front().id, ops);
  }
  return "mutant.copy_count";
}

// A divisor multiplied by c^2 / m^2, c a count taken at run time: of the members of the device's widest group
// (an all_reduce sum of ones over it), or of its micro-batch copies (an accumulation of ones over them).
// Right when the group or the copies are folded to m, wrong at the full count.
std::optional<std::string> countSquared(Plan& plan, MutationRng& rng) {
  std::vector<DivisorSite> sites = divisorSites(plan);
  std::erase_if(sites, [&](const DivisorSite& s) {
    const Device& dev = plan.devices[s.at.device];
    return widestGroup(dev).empty() && statedCopies(dev).size() < 2;
  });
  if (sites.empty()) return std::nullopt;
  const DivisorSite s = pickSpread(rng, sites, [&](const DivisorSite& a) { return kindAt(plan, a.at); });
  const Op op = plan.devices[s.at.device].graph.ops[s.at.op];
  const std::vector<int> group = widestGroup(plan.devices[s.at.device]);
  const int64_t copies = microBatchCount(plan, plan.devices[s.at.device]);
  if (statedCopies(plan.devices[s.at.device]).size() >= 2 && copies >= 2 && (group.empty() || rng.coin())) {
    const int64_t m = rng.pick(smallerCounts(copies));
    const std::string label = opLabel(plan, s.at.device, s.at.op);
    const std::string old = valueName(plan.devices[s.at.device], op.inputs[s.slot]);
    const std::string c = addCopyCount(plan, s.at.device);
    const NewOp sq = newOp(op, "count_sq", "mul", {c, c});
    const NewOp k = newOp(op, "count_sq_over_m2", "scale", {sq.outputs[0]},
                          {{"factor", 1.0 / static_cast<double>(m * m)}});
    const NewOp div = newOp(op, "count_sq_divisor", "mul", {old, k.outputs[0]});
    insertBefore(plan, s.at.device, op.id, {sq, k, div}, s.slot, div.outputs[0]);
    return label + ": count '" + old + "' -> '" + old + "' * c^2 / " + std::to_string(m * m) +
           ", c = a run-time count of the " + std::to_string(copies) + " micro-batch copies (right only at " +
           std::to_string(m) + " copies)";
  }
  const int64_t g = static_cast<int64_t>(group.size()), m = rng.pick(smallerCounts(g));
  const std::string label = opLabel(plan, s.at.device, s.at.op);
  const std::string old = valueName(plan.devices[s.at.device], op.inputs[s.slot]);
  const std::string instance = "mutant.member_count/" + Json(group).dump();
  // The count, at the start of every member's program (one call per member, in the same place).
  for (int r : group) {
    const int d = plan.deviceIndex(r);
    if (d == kNone) continue;  // an implied replica of a compact plan: the translate of a stated one
    Device& dev = plan.devices[d];
    if (dev.graph.ops.empty() || dev.graph.findOp("mutant.ones") != kNone) continue;
    NewOp ones;
    ones.id = "mutant.ones";
    ones.kind = "constant";
    ones.attrs = {{"shape", Json::array()}, {"value", 1.0}};
    ones.outputs = {"mutant.ones"};
    NewOp ar;
    ar.id = "mutant.member_count";
    ar.kind = "all_reduce";
    ar.inputs = {"mutant.ones"};
    ar.attrs = {{"group", group}, {"instance", instance}, {"reduce", "sum"}};
    ar.outputs = {"mutant.member_count"};
    replaceOp(dev, dev.graph.ops.front().id, {ones, ar, asNewOp(dev, dev.graph.ops.front())});
  }
  const NewOp sq = newOp(op, "count_sq", "mul", {"mutant.member_count", "mutant.member_count"});
  const NewOp k =
      newOp(op, "count_sq_over_m2", "scale", {sq.outputs[0]}, {{"factor", 1.0 / static_cast<double>(m * m)}});
  const NewOp div = newOp(op, "count_sq_divisor", "mul", {old, k.outputs[0]});
  insertBefore(plan, s.at.device, op.id, {sq, k, div}, s.slot, div.outputs[0]);
  return label + ": count '" + old + "' -> '" + old + "' * c^2 / " + std::to_string(m * m) +
         ", c = a run-time count of the group " + Json(group).dump() + " (right only at " +
         std::to_string(m) + " members)";
}

// An integer id clamped below the vocabulary on one device (its replicas' line in a compact plan):
// minimum(ids, start + v/2 - 1) before an embedding, embedding_backward or one_hot of v classes.
std::optional<std::string> narrowIntId(Plan& plan, MutationRng& rng) {
  auto sites = allOps(plan, [](const Device& dev, const Op& op) {
    return (op.kind == "embedding" || op.kind == "embedding_backward" || op.kind == "one_hot") &&
           !op.inputs.empty() && isInteger(dev.graph.values[op.inputs[0]].type.dtype);
  });
  if (sites.empty()) return std::nullopt;
  const OpSite s = pickSpread(rng, sites, [&](const OpSite& a) { return kindAt(plan, a); });
  const Device& dev = plan.devices[s.device];
  const Op op = dev.graph.ops[s.op];
  int64_t v = 0;
  if (op.kind == "one_hot") v = op.attrs.value("num_classes", int64_t{0});
  if (op.kind == "embedding_backward") v = op.attrs.value("num_embeddings", int64_t{0});
  if (op.kind == "embedding" && op.inputs.size() == 2 && !dev.graph.values[op.inputs[1]].type.shape.empty())
    v = dev.graph.values[op.inputs[1]].type.shape[0];
  if (v < 2) return std::nullopt;
  const int64_t start = op.attrs.value("start", int64_t{0}), top = start + v / 2 - 1;
  const std::string ids = valueName(dev, op.inputs[0]);
  const NewOp bound = newOp(op, "id_bound", "constant", {},
                            {{"shape", Json::array()},
                             {"value", top},
                             {"dtype", dtypeName(dev.graph.values[op.inputs[0]].type.dtype)}});
  const NewOp clamp = newOp(op, "narrow_ids", "minimum", {ids, bound.outputs[0]});
  const std::string label = opLabel(plan, s.device, s.op);
  insertBefore(plan, s.device, op.id, {bound, clamp}, 0, clamp.outputs[0]);
  return label + ": ids '" + ids + "' clamped to <= " + std::to_string(top) + " (" + std::to_string(v / 2) +
         " of " + std::to_string(v) + " classes)";
}

// ---- compact plans: one edit of the template, every stated replica ------------------------------------

bool sameProgram(const Device& a, const Device& b) {
  if (a.graph.ops.size() != b.graph.ops.size() || a.graph.outputs != b.graph.outputs ||
      a.graph.inputs != b.graph.inputs)
    return false;
  for (size_t o = 0; o < a.graph.ops.size(); ++o) {
    const Op &x = a.graph.ops[o], &y = b.graph.ops[o];
    if (x.id != y.id || x.kind != y.kind || x.inputs != y.inputs || x.outputs != y.outputs ||
        x.attrs != y.attrs)
      return false;
  }
  return true;
}

// Replica `sOld`'s program after the edit that made `dOld` into `dNew` (two replicas of one line): dNew's
// program with s's own rank, coordinate, per-replica attributes (those where d and s differ: in-replica
// group members, peers, instances) where the edit left d's unchanged, and s's lineage by value name.
Device retarget(const Device& dOld, const Device& dNew, const Device& sOld) {
  Device out = dNew;
  out.rank = sOld.rank;
  out.coord = sOld.coord;
  for (Op& op : out.graph.ops) {
    const OpId io = dOld.graph.findOp(op.id), is = sOld.graph.findOp(op.id);
    if (io == kNone || is == kNone) continue;
    const Json &od = dOld.graph.ops[io].attrs, &os = sOld.graph.ops[is].attrs;
    for (const auto& [k, v] : os.items())
      if (od.value(k, Json()) != v && op.attrs.value(k, Json()) == od.value(k, Json())) op.attrs.set(k, v);
  }
  out.lineage.clear();
  for (const auto& [v, lin] : dNew.lineage) {
    const std::string& name = dNew.graph.values[v].name;
    const ValueId sv = sOld.graph.findValue(name);
    if (sv == kNone) {
      out.lineage[v] = lin;  // a value the edit made (none has a lineage of its own today)
    } else if (auto it = sOld.lineage.find(sv); it != sOld.lineage.end()) {
      out.lineage[v] = it->second;
    }
  }
  return out;
}

// In a compact plan, an edit of one stated replica's program is made on every stated replica of its line:
// the template pair stays a pair of translates, so the edit reaches every implied replica. Lineage edits are
// not copied (a lineage that stops advancing is what shift-lineage and pin-lineage-box test).
bool alignStatedReplicas(const Plan& before, Plan& after) {
  if (!after.replicas || before.devices.size() != after.devices.size()) return false;
  bool aligned = false;
  std::set<int> done;
  for (int d = 0; d < static_cast<int>(after.devices.size()); ++d) {
    if (done.count(d)) continue;
    const std::vector<int> line = lineOf(after, d);
    done.insert(line.begin(), line.end());
    std::vector<int> changed, same;
    for (int e : line)
      (sameProgram(before.devices[e], after.devices[e]) ? same : changed).push_back(e);
    if (changed.empty() || same.empty()) continue;
    for (int e : same)
      after.devices[e] =
          retarget(before.devices[changed.front()], after.devices[changed.front()], before.devices[e]);
    aligned = true;
  }
  return aligned;
}

}  // namespace

const std::vector<MutationOperator>& mutationOperators() {
  static const std::vector<MutationOperator> ops = {
      {"const-attr", "a real constant (factor, eps, lr, scale, fill...), a flag or a mode changed",
       mutateConstant},
      {"int-attr", "an integer attribute (dim, start/end, k, sizes, shape entry...) off by one",
       mutateInteger},
      {"swap-operands", "two operands of the same type swapped", swapOperands},
      {"drop-collective", "a collective removed on every member (output := input)", dropCollective},
      {"change-collective", "reduce sum/avg/max changed, or all_reduce <-> broadcast", changeCollective},
      {"group-member", "one member of a collective group replaced (or two members reordered)", changeGroup},
      {"redirect-input", "an op input pointing to another value of the same type", redirectInput},
      {"shift-slice", "a slice moved by one element", shiftSlice},
      {"shift-lineage", "the lineage box of a device input or output moved by one element", shiftLineage},
      {"send-peer", "two point-to-point transfers trade destinations", swapSendPeers},
      {"drop-op", "an op removed (output := an input of the same type), optimizer updates included", dropOp},
      {"keep-old-state", "a device output replaced by a graph input of the same type (old state kept)",
       keepOldState},
      {"fold-count-constant",
       "a size-dependent count (a group's sum or avg, a sum over the micro-batches) at a smaller size",
       foldCountConstant},
      {"pin-lineage-box", "a device input's lineage box pinned to another replica's or copy's",
       pinLineageBox},
      {"count-of-other-tensor", "a divisor count replaced by sum(y*0+1) over another tensor",
       countOfOtherTensor},
      {"count-squared", "a divisor times c^2/m^2, c a run-time count of a group (right at m members)",
       countSquared},
      {"narrow-int-id", "integer ids clamped to half the vocabulary before an embedding or one_hot",
       narrowIntId},
  };
  return ops;
}

Mutant makeMutant(const Plan& correct, uint64_t seed, int index, const std::vector<std::string>& only) {
  MutationRng rng(seed ^ (0xd1b54a32d192ed03ull * static_cast<uint64_t>(index + 1)));
  rng.next();
  std::vector<const MutationOperator*> order;
  for (const MutationOperator& op : mutationOperators())
    if (only.empty() || std::count(only.begin(), only.end(), op.name)) order.push_back(&op);
  // The first operator with a site in a random permutation: uniform over the operators that apply.
  for (size_t i = order.size(); i > 1; --i)
    std::swap(order[i - 1], order[rng.below(i)]);
  for (const MutationOperator* op : order) {
    Mutant m{index, op->name, "", correct};
    std::optional<std::string> what;
    try {
      what = op->apply(m.plan, rng);
    } catch (const std::exception&) {  // an inserted op whose shapes do not infer: no site after all
      what.reset();
    }
    if (what) {
      m.description = *what;
      if (alignStatedReplicas(correct, m.plan)) m.description += " (on every stated replica of its line)";
      return m;
    }
  }
  throw std::invalid_argument("no mutation operator applies to plan '" + correct.name + "'");
}

}  // namespace paraproof::parallel
