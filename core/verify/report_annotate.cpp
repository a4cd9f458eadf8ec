#include "core/verify/report_annotate.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <iomanip>
#include <map>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "core/ir/halves.h"
#include "core/ops/registry.h"
#include "core/verify/first_difference.h"

namespace paraproof::verify {

namespace {

std::string fmt(double v) {
  std::ostringstream os;
  os << std::setprecision(6) << v;
  return os.str();
}

bool near(double a, double b) {
  return std::abs(a - b) <= 1e-6 * std::max({1.0, std::abs(a), std::abs(b)});
}

std::string groupText(const std::vector<int>& g) {
  std::string s = "[";
  for (size_t i = 0; i < g.size(); ++i)
    s += (i ? "," : "") + std::to_string(g[i]);
  return s + "]";
}

void intAttrOr(const Json& a, const char* key, int& out) {
  auto it = a.find(key);
  if (it != a.end() && it->is_number_integer()) out = it->get<int>();
}

// The entries of one (device, tensor) group of differing elements.
struct Group {
  int device = kNone;
  std::string tensor, logical;
  std::vector<const ElementDiff*> diffs;
};

std::string who(const Group& g) {
  return (g.device == kNone ? std::string("the sum of parts") : "rank " + std::to_string(g.device)) + " '" +
         g.tensor + "'";
}

// k with actual = k * expected at every element (expected nonzero), or NaN.
double commonRatio(const Group& g) {
  double k = NAN;
  for (const ElementDiff* d : g.diffs) {
    if (d->expected == 0) return NAN;
    double r = d->actual / d->expected;
    if (std::isnan(k))
      k = r;
    else if (!near(k, r))
      return NAN;
  }
  return k;
}

// Known values of a logical tensor by index: its differing elements, or all of it when it is an input of the
// stage.
using Known = std::map<std::vector<int64_t>, double>;

// "actual[i] = expected[i + s along axis a]" for every differing element whose shifted index is known.
std::string shiftHint(const Group& g, const CounterexampleReport& c) {
  Known expected;
  for (const TensorValues& t : c.logicalInputs)
    if (t.name == g.logical && t.values.size() == static_cast<size_t>(numElements(t.shape)))
      for (size_t f = 0; f < t.values.size(); ++f)
        expected[ops::unflatIndex(t.shape, static_cast<int64_t>(f))] = t.values[f];
  for (const ElementDiff* d : g.diffs)
    expected[d->index] = d->expected;
  const size_t rank = g.diffs.front()->index.size();
  for (size_t a = 0; a < rank; ++a)
    for (int64_t s : {int64_t{1}, int64_t{-1}, int64_t{2}, int64_t{-2}, int64_t{3}, int64_t{-3}, int64_t{4},
                      int64_t{-4}}) {
      size_t matched = 0, tested = 0;
      for (const ElementDiff* d : g.diffs) {
        std::vector<int64_t> j = d->index;
        if (j.size() != rank) return "";
        j[a] += s;
        auto it = expected.find(j);
        if (it == expected.end()) continue;
        ++tested;
        matched += near(d->actual, it->second);
      }
      if (tested >= 1 && matched == tested && 2 * tested >= g.diffs.size() && tested + 1 >= 2)
        return who(g) + ": actual[i] = expected[i with axis " + std::to_string(a) + " shifted by " +
               std::to_string(s) + "] of logical '" + g.logical +
               "': a shifted slice (an offset or a box off by that much, at the checked size)";
    }
  return "";
}

std::unordered_map<int, const Device*> devicesByRank(const Plan& plan) {
  std::unordered_map<int, const Device*> byRank;
  for (const Device& d : plan.devices)
    byRank.emplace(d.rank, &d);
  return byRank;
}

// An output's copy (identity, detach) often has no scope of its own: name the op that computed it.
StageInfo::FirstDifference described(const Graph& g, int rank, OpId o, ValueId v) {
  OpId named = o;
  for (int hop = 0; hop < 32 && g.ops[named].scope.empty() && !g.ops[named].inputs.empty(); ++hop) {
    OpId up = g.values[g.ops[named].inputs[0]].producer;
    if (up == kNone) break;
    named = up;
  }
  return {rank, g.ops[named].id, g.values[v].name, g.ops[named].scope, ""};
}

// The earliest op (in its device's order) producing one of the differing device values; for a differing sum
// of value parts, which names no device, every stage device's value of that logical tensor is a candidate.
std::optional<StageInfo::FirstDifference> firstDifference(
    const StageInfo& s, const CounterexampleReport& c, const std::unordered_map<int, const Device*>& byRank) {
  std::vector<std::pair<int, ValueId>> differing;  // (rank, device value)
  for (const ElementDiff& d : c.diffs) {
    if (d.device != kNone) {
      if (auto dev = byRank.find(d.device); dev != byRank.end())
        differing.push_back({d.device, dev->second->graph.findValue(d.tensor)});
      continue;
    }
    for (int rank : s.devices)
      if (auto dev = byRank.find(rank); dev != byRank.end())
        for (const auto& [value, lin] : dev->second->lineage)
          if (lin.tensor == d.logicalTensor) differing.push_back({rank, value});
  }
  std::optional<StageInfo::FirstDifference> first;
  OpId firstIndex = kNone;
  for (const auto& [rank, v] : differing) {
    const Graph& g = byRank.at(rank)->graph;
    if (v == kNone || g.values[v].producer == kNone) continue;
    OpId o = g.values[v].producer;
    if (first && (o > firstIndex || (o == firstIndex && rank >= first->rank))) continue;
    firstIndex = o;
    first = described(g, rank, o, v);
  }
  return first;
}

// The communication ops among a stage's device ops, one entry per collective instance or p2p direction.
void annotateCommunication(StageInfo& s, const std::unordered_map<int, const Device*>& byRank) {
  s.communication.clear();
  std::map<std::string, size_t> index;  // kind|instance|peer -> entry
  for (const ParallelOpRef& ref : s.parallelOps) {
    auto dev = byRank.find(ref.rank);
    if (dev == byRank.end()) continue;
    const Graph& g = dev->second->graph;
    OpId o = g.findOp(ref.op);
    if (o == kNone) continue;
    const Op& op = g.ops[o];
    const ops::OpDef* def = ops::findOp(op.kind);
    if (!def || !def->communication || (op.kind == "broadcast" && !op.attrs.contains("instance"))) continue;
    CommunicationRef c;
    c.kind = op.kind;
    c.op = op.id;
    if (auto it = op.attrs.find("instance"); it != op.attrs.end() && it->is_string())
      c.instance = it->get<std::string>();
    if (auto it = op.attrs.find("group"); it != op.attrs.end() && it->is_array())
      for (const Json& r : *it)
        if (r.is_number_integer()) c.group.push_back(r.get<int>());
    intAttrOr(op.attrs, "peer", c.peer);
    if (auto it = op.attrs.find("reduce"); it != op.attrs.end() && it->is_string())
      c.reduce = it->get<std::string>();
    // send/recv: one entry per direction; a collective: one per instance.
    const bool p2p = c.kind == "send" || c.kind == "recv";
    const std::string key = c.kind + "|" + c.instance + "|" +
                            (p2p ? std::to_string(ref.rank) + ">" + std::to_string(c.peer) : "");
    auto [it, fresh] = index.emplace(key, s.communication.size());
    if (fresh) s.communication.push_back(c);
    s.communication[it->second].ranks.push_back(ref.rank);
  }
}

}  // namespace

void annotateFirstDifference(Report& report, const Plan& plan) {
  const auto byRank = devicesByRank(plan);
  for (size_t i = 0; i < report.stages.size() && i < report.results.size(); ++i) {
    StageInfo& s = report.stages[i];
    const StageResult& res = report.results[i];
    if (res.status != solver::Status::Failed || !res.counterexample) continue;
    // The op where the values inside the stage stop agreeing, else the earliest producer of a differing
    // output.
    std::optional<StageInfo::FirstDifference> first;
    if (auto wrong = firstWrongOp(s, *res.counterexample, plan)) {
      first = described(byRank.at(wrong->rank)->graph, wrong->rank, wrong->op, wrong->value);
      first->why = wrong->why;
      if (!wrong->site.empty()) {  // a missing statement: where it goes; the op stays in the why
        first->why += " (the op: " + first->scope + ")";
        first->scope = wrong->site;
      }
    } else if ((first = firstDifference(s, *res.counterexample, byRank))) {
      first->why = "the earliest op making a checked value that differs";
    }
    if (!first) continue;
    // Device ops in the order they run (op index, then rank).
    std::vector<std::pair<OpId, int>> placed;
    for (const ParallelOpRef& ref : s.parallelOps)
      if (auto dev = byRank.find(ref.rank); dev != byRank.end())
        if (OpId o = dev->second->graph.findOp(ref.op); o != kNone) placed.push_back({o, ref.rank});
    std::sort(placed.begin(), placed.end());
    std::vector<std::string> ordered;
    auto add = [&](const std::string& scope) {
      if (!scope.empty() && std::find(ordered.begin(), ordered.end(), scope) == ordered.end())
        ordered.push_back(scope);
    };
    add(first->scope);
    for (const auto& [o, rank] : placed)
      add(byRank.at(rank)->graph.ops[o].scope);
    for (const std::string& scope : s.scopes)  // the logical ops' (and any not placed above)
      add(scope);
    s.scopes = std::move(ordered);
    s.firstDifference = std::move(first);
  }
}

void annotateCommunication(Report& report, const Plan& plan) {
  const auto byRank = devicesByRank(plan);
  // Each stage is annotated from the plan alone: a frontier plan's 20,000 stages split between two threads.
  inTwoHalves(report.stages.size(), largePlan(plan), [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i)
      annotateCommunication(report.stages[i], byRank);
  });
}

std::vector<std::string> counterexampleHints(const CounterexampleReport& c,
                                             const std::vector<CommunicationRef>& communication) {
  std::vector<Group> groups;
  for (const ElementDiff& d : c.diffs) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const Group& g) { return g.device == d.device && g.tensor == d.tensor; });
    if (it == groups.end()) {
      groups.push_back({d.device, d.tensor, d.logicalTensor, {}});
      it = groups.end() - 1;
    }
    it->diffs.push_back(&d);
  }
  std::vector<std::string> hints;
  for (const Group& g : groups) {
    bool zeros = true;
    for (const ElementDiff* d : g.diffs)
      zeros = zeros && d->actual == 0;
    if (zeros) {
      hints.push_back(who(g) + ": actual is 0 at every differing element of logical '" + g.logical +
                      "' (a contribution never added, a wrong part or slice, a mask?)");
      continue;
    }
    double k = commonRatio(g);
    if (!std::isnan(k) && !near(k, 1)) {
      std::string h = who(g) + ": actual = " + fmt(k) +
                      " x expected at every differing element of logical '" + g.logical + "'";
      // A factor equal to a group size in the stage points at its reduction.
      for (const CommunicationRef& r : communication) {
        const double n = static_cast<double>(r.group.size());
        if (n < 2) continue;
        const std::string what = r.kind + " '" + r.op + "' (group " + groupText(r.group) +
                                 (r.reduce.empty() ? "" : ", reduce " + r.reduce) + ")";
        if (near(k, n)) {
          h += "; " + fmt(k) + " is the size of " + what +
               ": a sum where an average belongs, or a value reduced twice?";
          break;
        }
        if (near(k * n, 1)) {
          h += "; 1/" + fmt(n) + " is one over the size of " + what +
               ": an average where a sum belongs, or a missing sum?";
          break;
        }
      }
      if (h.back() == '\'') h += " (a scale factor or a count off by that ratio?)";
      hints.push_back(h);
      continue;
    }
    if (std::string h = shiftHint(g, c); !h.empty()) hints.push_back(h);
  }
  // Replicas that each hold a partial value: their actuals sum to (a multiple of) the expected one.
  std::map<std::pair<std::string, std::vector<int64_t>>, std::vector<const ElementDiff*>> byElement;
  for (const ElementDiff& d : c.diffs)
    if (d.device != kNone) byElement[{d.logicalTensor, d.index}].push_back(&d);
  for (const ElementDiff& d : c.agreeing)  // a holder whose value agrees is still one of the summands
    if (auto it = byElement.find({d.logicalTensor, d.index}); it != byElement.end()) it->second.push_back(&d);
  for (auto& [key, ds] : byElement)
    std::sort(ds.begin(), ds.end(),
              [](const ElementDiff* a, const ElementDiff* b) { return a->device < b->device; });
  std::map<std::string, std::pair<double, std::vector<int>>> sums;  // logical tensor -> (ratio, ranks)
  std::map<std::string, bool> fits;
  for (const auto& [key, ds] : byElement) {
    auto [it, fresh] = fits.emplace(key.first, true);
    if (!it->second) continue;
    if (ds.size() < 2 || ds[0]->expected == 0) {
      it->second = false;
      continue;
    }
    double total = 0;
    std::vector<int> ranks;
    for (const ElementDiff* d : ds) {
      total += d->actual;
      ranks.push_back(d->device);
    }
    const double ratio = total / ds[0]->expected;
    auto& [r, rs] = sums[key.first];
    if (fresh) {
      r = ratio;
      rs = ranks;
    } else if (!near(r, ratio) || rs != ranks) {
      it->second = false;
    }
  }
  for (const auto& [tensor, ok] : fits) {
    if (!ok) continue;
    const auto& [ratio, ranks] = sums[tensor];
    if (std::abs(ratio - std::round(ratio)) > 1e-6 || std::round(ratio) < 1) continue;
    std::string rs;
    for (size_t i = 0; i < ranks.size(); ++i)
      rs += (i ? "," : "") + std::to_string(ranks[i]);
    hints.push_back("logical '" + tensor + "': the actual values summed over ranks " + rs + " = " +
                    (near(ratio, 1) ? std::string("expected") : fmt(ratio) + " x expected") +
                    ": each rank holds a partial value (a missing " +
                    (near(ratio, 1) ? "all_reduce sum" : "all_reduce avg") +
                    ", or a reduction over the wrong group?)");
  }
  return hints;
}

std::string shapedValues(const Shape& shape, const std::vector<double>& values, size_t limit) {
  if (shape.empty()) return values.empty() ? "[]" : fmt(values[0]);
  std::string shapeText = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    shapeText += (i ? "," : "") + std::to_string(shape[i]);
  shapeText += "]";
  if (values.size() > limit || values.size() != static_cast<size_t>(numElements(shape))) {
    std::string s = "shape " + shapeText + ", row-major: [";
    for (size_t i = 0; i < values.size() && i < 16; ++i)
      s += (i ? ", " : "") + fmt(values[i]);
    return s + (values.size() > 16 ? ", ...]" : "]");
  }
  // Nested brackets, one level per axis.
  std::string s;
  size_t flat = 0;
  std::function<void(size_t)> emit = [&](size_t axis) {
    s += "[";
    for (int64_t i = 0; i < shape[axis]; ++i) {
      if (i) s += ", ";
      if (axis + 1 == shape.size())
        s += fmt(values[flat++]);
      else
        emit(axis + 1);
    }
    s += "]";
  };
  emit(0);
  return "shape " + shapeText + " " + s;
}

}  // namespace paraproof::verify
