#include "core/parallel/mutate.h"

#include <algorithm>
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
  Json& a = plan.devices[s.at.device].graph.ops[s.at.op].attrs[s.key];
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
    Json& a = s.entry < 0 ? op.attrs[s.key] : op.attrs[s.key][s.entry];
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
    n.id = op.outputs.size() == 1 ? op.id : op.id + ".dropped" + std::to_string(k);
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
      op.attrs["reduce"] = "sum";
    });
    return label + ": broadcast -> all_reduce sum";
  }
  // An all_reduce of one tensor may become a broadcast from one member; otherwise change the reduction.
  if (first.kind == "all_reduce" && first.inputs.size() == 1 && rng.below(3) == 0) {
    const int src = rng.pick(group);
    onInstance(plan, s, [&](Op& op) {
      op.kind = "broadcast";
      op.attrs.erase("reduce");
      op.attrs["src"] = src;
    });
    return label + ": all_reduce -> broadcast from rank " + std::to_string(src);
  }
  std::vector<std::string> kinds = first.kind == "all_reduce" ? std::vector<std::string>{"sum", "avg", "max"}
                                                              : std::vector<std::string>{"sum", "avg"};
  const std::string before = first.attrs.value("reduce", "sum");
  kinds.erase(std::remove(kinds.begin(), kinds.end(), before), kinds.end());
  const std::string after = rng.pick(kinds);
  onInstance(plan, s, [&](Op& op) { op.attrs["reduce"] = after; });
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
    onInstance(plan, s, [&](Op& op) { op.attrs["group"] = g; });
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
      op.attrs["group"] = moves ? moveGroup : stayGroup;
      op.attrs["instance"] = moves ? move : stay;
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
    op.attrs["start"] = start + d;
    op.attrs["end"] = end + d;
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
      const ValueId lv = plan.logical.findValue(it->second.tensor);
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
  xs.attrs["peer"] = e;
  xs.attrs["instance"] = ix;
  yr.attrs["peer"] = a;
  yr.attrs["instance"] = ix;
  ys.attrs["peer"] = b;
  ys.attrs["instance"] = iy;
  xr.attrs["peer"] = c;
  xr.attrs["instance"] = iy;
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
    if (auto what = op->apply(m.plan, rng)) {
      m.description = *what;
      return m;
    }
  }
  throw std::invalid_argument("no mutation operator applies to plan '" + correct.name + "'");
}

}  // namespace paraproof::parallel
