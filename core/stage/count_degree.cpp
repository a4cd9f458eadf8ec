// The dependence of a stage's obligations on a fold count or a reduced class's extent t, bounded from the
// ops (docs/soundness.md, "Size points", condition D): a dataflow of counts::Tracks (count_tracks.h) over the
// stage's logical and device ops. Polynomial ops combine the tracks as sums and products do; the fused ops
// follow their count models (count_models.h); any other op is widened to both signs and every kind.
#include "core/stage/count_degree.h"

#include <algorithm>
#include <climits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "core/ops/registry.h"
#include "core/stage/count_models.h"
#include "core/stage/count_tracks.h"

namespace paraproof::stage {

namespace {

using namespace counts;

enum class Kind { Linear, Product, Other };

Kind kindOf(const std::string& op) {
  static const std::set<std::string> linear{
      "identity",   "neg",       "scale",        "div_scalar", "add_scalar", "cast",       "add",
      "add_n",      "sub",       "maximum",      "minimum",    "reshape",    "transpose",  "slice",
      "concat",     "split",     "broadcast_to", "gather",     "relu",       "constant",   "iota",
      "sum",        "mean",      "max",          "embedding",  "all_reduce", "all_gather", "reduce_scatter",
      "all_to_all", "broadcast", "send",         "recv"};
  static const std::set<std::string> products{"mul", "square", "matmul", "linear", "einsum"};
  if (linear.count(op)) return Kind::Linear;
  if (products.count(op)) return Kind::Product;
  return Kind::Other;
}

// A polynomial op's output, or an op without a count model widened (its inputs recorded as arguments of
// any uninterpreted function it may apply).
Tracks combine(const std::string& op, const std::vector<Tracks>& in, Atoms& atoms) {
  if (in.empty()) return constant();
  if (op == "reciprocal" && in.size() == 1) return quotient({{}, {}, Range::at(0)}, in[0]);
  if (op == "div" && in.size() == 2) return quotient(in[0], in[1]);
  Tracks acc = in[0];
  if (op == "add_scalar") acc = acc | Tracks{{}, {}, Range::at(0)};  // x + c: c is a plain monomial
  const Kind k = kindOf(op);
  for (size_t i = 1; i < in.size(); ++i)
    acc = k == Kind::Linear ? acc | in[i] : acc | in[i] | product(acc, in[i]);
  if (k != Kind::Other) return acc;
  atoms.apply("*", acc);
  return widened(acc);
}

class Degree {
 public:
  Degree(const Plan& plan, const Stage& s, const FoldIndex& t) : plan_(plan), stage_(s), t_(t) {}
  Degree(const Plan& plan, const Stage& s, const AxisPredicate& inClass)
      : plan_(plan), stage_(s), t_(none_), inClass_(&inClass) {}

  int run() {
    // A logical stage input that devices hold as their members' own pieces (partial sums over the members)
    // is the sum of those pieces: shared batch data, not plain.
    for (const DeviceOp& dop : stage_.deviceOps) {
      const size_t d = static_cast<size_t>(dop.device);
      const Device& dev = plan_.devices[d];
      for (ValueId v : dev.graph.ops[static_cast<size_t>(dop.op)].inputs)
        if (t_.varying(d, v))
          if (auto lin = dev.lineage.find(v); lin != dev.lineage.end()) summedOwn_.insert(lin->second.tensor);
    }
    logical();
    devices();
    int need = 1;
    for (const DeviceValue& c : stage_.checked) {
      const Lineage& lin = plan_.devices[static_cast<size_t>(c.device)].lineage.at(c.value);
      const ValueId lv = lineageValue(plan_.logical, lin);
      const Tracks l = lv == kNone ? Tracks{} : logicalValue(lv);
      const Tracks d = deviceValue(static_cast<size_t>(c.device), c.value);
      need = std::max(need, 1 + (l | d).width());
    }
    // An uninterpreted function's arguments over several powers of t: two applications may be one term at
    // one size and two at another, which no number of points rules out (docs/soundness.md): full size.
    return atoms_.width() > 0 ? std::max(need, 3) : need;
  }

 private:
  Tracks input(bool own) const { return own ? Tracks{Range::at(0), {}, {}} : Tracks{{}, {}, Range::at(0)}; }

  // Whether axis `a` of value `v` of graph `g` (0: logical, d + 1: device d) scales with the parameter.
  bool scaledAxis(size_t g, ValueId v, int a) const {
    if (inClass_) return (*inClass_)(g, v, a);
    return g == 0 && t_.logicalAxis(v, a);
  }

  bool scaledValue(size_t g, ValueId v) const {
    const Graph& graph = g == 0 ? plan_.logical : plan_.devices[g - 1].graph;
    for (size_t a = 0; a < graph.values[v].type.shape.size(); ++a)
      if (scaledAxis(g, v, static_cast<int>(a))) return true;
    return false;
  }

  Tracks logicalValue(ValueId v) {
    auto it = logical_.find(v);
    if (it != logical_.end()) return it->second;
    if (scaledValue(0, v)) return logical_[v] = input(true);  // a stage input: fresh variables
    if (summedOwn_.count(plan_.logical.values[v].name)) return logical_[v] = Tracks{{}, Range::at(0), {}};
    return logical_[v] = input(false);
  }

  Tracks deviceValue(size_t d, ValueId v) {
    auto it = device_.find({d, v});
    if (it != device_.end()) return it->second;
    return input(inClass_ ? scaledValue(d + 1, v) : t_.varying(d, v));
  }

  // An op's reductions and counts over scaled axes (graph g: 0 logical, d + 1 device d): a reduction over a
  // scaled axis sums over the members, a count on an input axis divides by their number, one on an output
  // axis makes the value the same along it.
  Tracks withAxes(size_t g, const Graph& graph, const Op& op, Tracks out) const {
    const ops::OpDef* def = ops::findOp(op.kind);
    ops::AxisInfo info;
    if (def && def->axes) {
      std::vector<TensorType> ti, to;
      ti.reserve(op.inputs.size());
      to.reserve(op.outputs.size());
      for (ValueId v : op.inputs)
        ti.push_back(graph.values[v].type);
      for (ValueId v : op.outputs)
        to.push_back(graph.values[v].type);
      try {
        info = def->axes(ti, to, op.attrs);
      } catch (const std::exception&) {
        return widened(summed(out));  // no rule: it may sum over anything
      }
    }
    auto scaled = [&](ops::AxisRef r) {
      const int nIn = static_cast<int>(op.inputs.size());
      if (r.axis < 0 || r.port < 0) return false;
      const ValueId v = r.port < nIn ? op.inputs.at(static_cast<size_t>(r.port))
                                     : op.outputs.at(static_cast<size_t>(r.port - nIn));
      return scaledAxis(g, v, r.axis);
    };
    // Each scaled axis reduced over multiplies what is the same along it by t (a sum over [t, t] is t^2).
    for (const ops::AxisRef& r : info.reduced)
      if (scaled(r)) out = summed(out);
    for (const auto& group : info.counts)
      for (const ops::AxisRef& r : group)
        if (scaled(r)) {
          const bool ofInput = r.port < static_cast<int>(op.inputs.size());
          if (ofInput)
            out = divided(out);  // a mean's divisor
          else
            out = Tracks{{}, out.own | out.shared, out.plain};  // constant along the axis: shared
        }
    // Positions along a scaled axis are numbers up to its extent: anything may follow from them.
    if (std::any_of(info.positions.begin(), info.positions.end(), scaled)) out = widened(summed(out));
    return out;
  }

  // Each output's tracks (graph g: 0 logical, d + 1 device d); `axes`: whether the op's axes may scale.
  std::vector<Tracks> outputs(size_t g, const Graph& graph, const Op& op, std::vector<Tracks> in, bool axes) {
    OpUse use{op, {}, std::move(in), [&](int port, int axis) {
                const int nIn = static_cast<int>(op.inputs.size());
                if (!axes || port < 0 || axis < 0) return false;
                const ValueId v = port < nIn ? op.inputs.at(static_cast<size_t>(port))
                                             : op.outputs.at(static_cast<size_t>(port - nIn));
                return scaledAxis(g, v, axis);
              }};
    use.types.reserve(op.inputs.size());
    for (ValueId v : op.inputs)
      use.types.push_back(graph.values[v].type);
    if (std::optional<std::vector<Tracks>> fused = fusedOutputs(use, atoms_)) return *fused;
    Tracks out = combine(op.kind, use.in, atoms_);
    if (axes) out = withAxes(g, graph, op, out);
    return std::vector<Tracks>(op.outputs.size(), out);
  }

  // The logical ops in graph order.
  void logical() {
    for (OpId o : stage_.logicalOps) {
      const Op& op = plan_.logical.ops[static_cast<size_t>(o)];
      std::vector<Tracks> in;
      for (ValueId v : op.inputs)
        in.push_back(logicalValue(v));
      const std::vector<Tracks> out = outputs(0, plan_.logical, op, std::move(in), true);
      for (size_t k = 0; k < op.outputs.size(); ++k)
        logical_[op.outputs[k]] = out[k];
    }
  }

  // Device ops exchange data through collectives and send/recv: iterated to a fixpoint (ranges only grow).
  void devices() {
    std::map<std::string, Tracks> collectiveIn;  // instance -> the union of its members' operands
    std::map<std::string, Tracks> sent;          // "from>to#instance" -> the operand sent
    // An op that does not communicate gives the same outputs for the same inputs: not recomputed.
    std::vector<std::vector<Tracks>> seen(stage_.deviceOps.size());
    // What each op's communication is keyed by, computed once (the passes below revisit every op).
    struct Comm {
      bool p2p = false, collective = false, send = false, group = false;
      std::string key;  // p2p: "from>to#instance"; collective: the instance
    };
    std::vector<Comm> comm(stage_.deviceOps.size());
    for (size_t i = 0; i < stage_.deviceOps.size(); ++i) {
      const DeviceOp& dop = stage_.deviceOps[i];
      const Device& dev = plan_.devices[static_cast<size_t>(dop.device)];
      const Op& op = dev.graph.ops[static_cast<size_t>(dop.op)];
      Comm& c = comm[i];
      c.p2p = op.kind == "send" || op.kind == "recv";
      c.send = op.kind == "send";
      c.group = op.attrs.contains("group");
      c.collective = !c.p2p && c.group;
      if (!c.p2p && !c.collective) continue;
      const std::string inst = op.attrs.contains("instance") ? op.attrs["instance"].dump() : "";
      if (c.p2p) {
        const int peer = op.attrs.value("peer", -1);
        const std::string key = c.send ? std::to_string(dev.rank) + ">" + std::to_string(peer)
                                       : std::to_string(peer) + ">" + std::to_string(dev.rank);
        c.key = key + "#" + inst;
      } else {
        c.key = inst;
      }
    }
    // Without communication data flows only forward within each device, and the ops are in program order:
    // one pass reaches the fixpoint (a second would find every op's inputs as the first left them).
    const bool exchanges =
        std::any_of(comm.begin(), comm.end(), [](const Comm& c) { return c.p2p || c.collective; });
    for (size_t pass = 0; pass <= stage_.deviceOps.size(); ++pass) {
      bool changed = false;
      for (size_t i = 0; i < stage_.deviceOps.size(); ++i) {
        const DeviceOp& dop = stage_.deviceOps[i];
        const size_t d = static_cast<size_t>(dop.device);
        const Device& dev = plan_.devices[d];
        const Op& op = dev.graph.ops[static_cast<size_t>(dop.op)];
        const Comm& c = comm[i];
        std::vector<Tracks> in;
        in.reserve(op.inputs.size());
        for (ValueId v : op.inputs)
          in.push_back(deviceValue(d, v));
        const bool communicates = c.p2p || c.collective;
        if (!communicates) {
          if (pass > 0 && in == seen[i]) continue;
          seen[i] = in;
        }
        std::vector<Tracks> outs = outputs(d + 1, dev.graph, op, std::move(in), inClass_ != nullptr);
        Tracks out = outs.empty() ? Tracks{} : outs[0];
        if (c.p2p) {
          Tracks& s = sent[c.key];
          if (c.send) {
            changed = grow(s, out) || changed;
            continue;
          }
          out = s;
        } else if (c.collective) {
          // A collective: output k is what every member contributed as operand k (a bucketed all-reduce
          // has several), summed over the members for a sum, and divided again for an avg.
          const bool sums = t_.sums(d, dop.op) || t_.averages(d, dop.op);
          const bool averages = t_.averages(d, dop.op);
          for (size_t k = 0; k < op.outputs.size(); ++k) {
            Tracks& all = collectiveIn[c.key + "#" + std::to_string(k)];
            changed = grow(all, outs.size() == 1 ? out : outs[k]) || changed;
            Tracks o = sums ? summed(all) : all;
            if (averages) o = divided(o);
            changed = grow(device_[{d, op.outputs[k]}], o) || changed;
          }
          continue;
        }
        const bool accumulates = t_.sums(d, dop.op) && !c.group;
        for (size_t k = 0; k < op.outputs.size(); ++k) {
          const Tracks o = outs.size() == 1 ? out : outs[k];
          changed = grow(device_[{d, op.outputs[k]}], accumulates ? summed(o) : o) || changed;
        }
      }
      if (!changed || !exchanges) break;
    }
  }

  static bool grow(Tracks& into, const Tracks& by) {
    const Tracks before = into;
    into = into | by;
    return !(into == before);
  }

  static inline const FoldIndex none_{FoldParameter{}};
  const Plan& plan_;
  const Stage& stage_;
  const FoldIndex& t_;
  const AxisPredicate* inClass_ = nullptr;
  std::set<std::string> summedOwn_;
  Atoms atoms_;
  struct DeviceValueHash {
    size_t operator()(const std::pair<size_t, ValueId>& k) const {
      return std::hash<uint64_t>{}(static_cast<uint64_t>(k.first) << 32 ^ static_cast<uint32_t>(k.second));
    }
  };
  std::unordered_map<ValueId, Tracks> logical_;                                     // looked up, never walked
  std::unordered_map<std::pair<size_t, ValueId>, Tracks, DeviceValueHash> device_;  // likewise
};

}  // namespace

FoldIndex::FoldIndex(const FoldParameter& t) : empty_(t.empty()) {
  for (const auto& [v, a] : t.logicalAxes)
    logicalAxes_.insert(key(v, a));
  for (const auto& [part, into] :
       {std::pair{&t.sums, &sums_}, {&t.averages, &averages_}, {&t.varying, &varying_}})
    for (const auto& [d, id] : *part) {
      if (id < 0) throw std::logic_error("FoldParameter: a negative id");
      if (into->size() <= d) into->resize(d + 1);
      std::vector<bool>& bits = (*into)[d];
      if (bits.size() <= static_cast<size_t>(id)) bits.resize(static_cast<size_t>(id) + 1, false);
      bits[static_cast<size_t>(id)] = true;
    }
}

int countsNeeded(const Plan& plan, const Stage& stage, const FoldIndex& t) {
  if (t.empty()) return 1;
  return Degree(plan, stage, t).run();
}

int countsNeeded(const Plan& plan, const Stage& stage, const FoldParameter& t) {
  if (t.empty()) return 1;
  return countsNeeded(plan, stage, FoldIndex(t));
}

int classCountsNeeded(const Plan& plan, const Stage& stage, const AxisPredicate& inClass) {
  return Degree(plan, stage, inClass).run();
}

ClassNeeds reducedClassNeeds(const Plan& reduced, const Stage& stage, const ReductionClasses& classes) {
  std::set<size_t> touched;
  auto touch = [&](size_t g, const Graph& graph, const Op& op) {
    for (const auto* values : {&op.inputs, &op.outputs})
      for (ValueId v : *values)
        for (size_t a = 0; a < graph.values[v].type.shape.size(); ++a) {
          const size_t c = classes.classOf(g, v, static_cast<int>(a));
          if (classes.factor[c] > 1) touched.insert(c);
        }
  };
  for (OpId o : stage.logicalOps)
    touch(0, reduced.logical, reduced.logical.ops[static_cast<size_t>(o)]);
  for (const DeviceOp& d : stage.deviceOps) {
    const Graph& g = reduced.devices[static_cast<size_t>(d.device)].graph;
    touch(static_cast<size_t>(d.device) + 1, g, g.ops[static_cast<size_t>(d.op)]);
  }
  ClassNeeds needs;
  for (size_t c : touched) {
    const AxisPredicate inClass = [&](size_t g, ValueId v, int a) { return classes.classOf(g, v, a) == c; };
    const int n = classCountsNeeded(reduced, stage, inClass);
    if (n == 2) needs.twoCounts.push_back(c);
    if (n > 2) needs.more.push_back(c);
  }
  return needs;
}

}  // namespace paraproof::stage
