// The dependence of a stage's obligations on a fold count t, bounded from the ops (docs/soundness.md,
// "Size points", condition D). Each value carries, for three kinds of monomials of the stage's inputs, the
// range of exponents of t their coefficients can have:
//   own    - monomials holding the member's own data (a row of the batch, a replica's or a copy's input):
//            they differ from member to member, so a sum over the t members adds no factor t;
//   shared - monomials holding batch data but the same on every member (a sum already taken, broadcast
//            back): a sum over the members multiplies them by t;
//   plain  - monomials with no batch data (weights, constants): likewise multiplied by t.
// "Shared" and "plain" monomials are distinct, as are "own"/"shared" ones and "plain" ones, so an obligation
// needs the width of one kind at a time. Every op that is not a polynomial map may turn batch data into a
// plain monomial (y / y = 1) or invert a count, so its result is widened to both signs and every kind.
#include "core/stage/count_degree.h"

#include <algorithm>
#include <climits>
#include <map>
#include <optional>
#include <string>

#include "core/ops/registry.h"

namespace paraproof::stage {

namespace {

struct Range {
  int lo = INT_MAX, hi = INT_MIN;
  bool empty() const { return lo > hi; }
  static Range at(int e) { return {e, e}; }
  Range operator|(const Range& o) const {
    if (empty()) return o;
    if (o.empty()) return *this;
    return {std::min(lo, o.lo), std::max(hi, o.hi)};
  }
  Range operator+(const Range& o) const {  // the exponents of a product
    if (empty() || o.empty()) return {};
    return {lo + o.lo, hi + o.hi};
  }
  Range shift(int k) const { return empty() ? Range{} : Range{lo + k, hi + k}; }
  Range mirrored() const { return empty() ? Range{} : *this | Range{-hi, -lo}; }
  int width() const { return empty() ? 0 : hi - lo; }
  bool operator==(const Range&) const = default;
};

struct Tracks {
  Range own, shared, plain;
  Range any() const { return own | shared | plain; }
  Tracks operator|(const Tracks& o) const { return {own | o.own, shared | o.shared, plain | o.plain}; }
  bool operator==(const Tracks&) const = default;
};

Tracks product(const Tracks& a, const Tracks& b) {
  Tracks r;
  r.own = (a.own + b.any()) | (a.any() + b.own);
  r.shared = (a.shared + b.shared) | (a.shared + b.plain) | (a.plain + b.shared);
  r.plain = a.plain + b.plain;
  return r;
}

// A sum over the t members: own monomials become shared ones (a sum already taken), the others gain t.
Tracks summed(const Tracks& a) {
  return {{}, a.own | a.shared | a.shared.shift(1), a.plain.shift(1)};
}

Tracks divided(const Tracks& a) {  // by t
  return {a.own.shift(-1), a.shared.shift(-1), a.plain.shift(-1)};
}

// Any map that is not a polynomial in its inputs (a quotient, a root, an exponential, a comparison).
Tracks widened(const Tracks& a) {
  const Range all = a.any().mirrored();
  return {a.own.empty() ? Range{} : all, a.own.empty() && a.shared.empty() ? Range{} : all, all};
}

enum class Kind { Linear, Product, Other };

Kind kindOf(const std::string& op) {
  static const std::set<std::string> linear{
      "identity",  "neg",          "scale",     "div_scalar", "add_scalar", "cast",           "add",
      "sub",       "maximum",      "minimum",   "reshape",    "transpose",  "slice",          "concat",
      "split",     "broadcast_to", "gather",    "relu",       "constant",   "iota",           "sum",
      "mean",      "max",          "embedding", "all_reduce", "all_gather", "reduce_scatter", "all_to_all",
      "broadcast", "send",         "recv"};
  static const std::set<std::string> products{"mul", "square", "matmul", "linear", "einsum"};
  if (linear.count(op)) return Kind::Linear;
  if (products.count(op)) return Kind::Product;
  return Kind::Other;
}

// 1 / y for a y whose coefficients are one power of t (a count, a count times data): the same monomials
// inverted, t to the opposite power. Otherwise not a Laurent polynomial: nullopt.
std::optional<Tracks> inverse(const Tracks& y) {
  const Range all = y.any();
  if (all.empty() || all.lo != all.hi) return std::nullopt;
  auto neg = [](const Range& r) { return r.empty() ? Range{} : Range::at(-r.lo); };
  return Tracks{neg(y.own), neg(y.shared), neg(y.plain)};
}

Tracks quotient(const Tracks& x, const Tracks& y) {
  std::optional<Tracks> inv = inverse(y);
  if (!inv) return widened(x | y | product(x, y));
  Tracks q = product(x, *inv);
  q.plain = q.plain | q.own | q.shared;  // y / y = 1: batch data may cancel
  return q;
}

Tracks combine(const std::string& op, const std::vector<Tracks>& in) {
  if (in.empty()) return {{}, {}, Range::at(0)};
  if (op == "reciprocal" && in.size() == 1) return quotient({{}, {}, Range::at(0)}, in[0]);
  if (op == "div" && in.size() == 2) return quotient(in[0], in[1]);
  Tracks acc = in[0];
  if (op == "add_scalar") acc = acc | Tracks{{}, {}, Range::at(0)};  // x + c: c is a plain monomial
  const Kind k = kindOf(op);
  for (size_t i = 1; i < in.size(); ++i)
    acc = k == Kind::Linear ? acc | in[i] : acc | in[i] | product(acc, in[i]);
  return k == Kind::Other ? widened(acc) : acc;
}

class Degree {
 public:
  Degree(const Plan& plan, const Stage& s, const FoldParameter& t) : plan_(plan), stage_(s), t_(t) {}
  Degree(const Plan& plan, const Stage& s, const AxisPredicate& inClass)
      : plan_(plan), stage_(s), t_(none_), inClass_(&inClass) {}

  int run() {
    // A logical stage input that devices hold as their members' own pieces (partial sums over the members)
    // is the sum of those pieces: shared batch data, not plain.
    for (const DeviceOp& dop : stage_.deviceOps) {
      const size_t d = static_cast<size_t>(dop.device);
      const Device& dev = plan_.devices[d];
      for (ValueId v : dev.graph.ops[static_cast<size_t>(dop.op)].inputs)
        if (t_.varying.count({d, v}))
          if (auto lin = dev.lineage.find(v); lin != dev.lineage.end()) summedOwn_.insert(lin->second.tensor);
    }
    logical();
    devices();
    int need = 1;
    for (const DeviceValue& c : stage_.checked) {
      const Lineage& lin = plan_.devices[static_cast<size_t>(c.device)].lineage.at(c.value);
      const ValueId lv = plan_.logical.findValue(lin.tensor);
      const Tracks l = lv == kNone ? Tracks{} : logicalValue(lv);
      const Tracks d = deviceValue(static_cast<size_t>(c.device), c.value);
      need = std::max(
          {need, 1 + (l.own | l.shared | d.own | d.shared).width(), 1 + (l.plain | d.plain).width()});
    }
    return need;
  }

 private:
  Tracks input(bool own) const { return own ? Tracks{Range::at(0), {}, {}} : Tracks{{}, {}, Range::at(0)}; }

  // Whether axis `a` of value `v` of graph `g` (0: logical, d + 1: device d) scales with the parameter.
  bool scaledAxis(size_t g, ValueId v, int a) const {
    if (inClass_) return (*inClass_)(g, v, a);
    return g == 0 && t_.logicalAxes.count({v, a}) > 0;
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
    return input(inClass_ ? scaledValue(d + 1, v) : t_.varying.count({d, v}) > 0);
  }

  // An op's reductions and counts over scaled axes (graph g: 0 logical, d + 1 device d): a reduction over a
  // scaled axis sums over the members, a count on an input axis divides by their number, one on an output
  // axis makes the value the same along it.
  Tracks withAxes(size_t g, const Graph& graph, const Op& op, Tracks out) const {
    const ops::OpDef* def = ops::findOp(op.kind);
    ops::AxisInfo info;
    if (def && def->axes) {
      std::vector<TensorType> ti, to;
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

  // The logical ops in graph order.
  void logical() {
    for (OpId o : stage_.logicalOps) {
      const Op& op = plan_.logical.ops[static_cast<size_t>(o)];
      std::vector<Tracks> in;
      for (ValueId v : op.inputs)
        in.push_back(logicalValue(v));
      const Tracks out = withAxes(0, plan_.logical, op, combine(op.kind, in));
      for (ValueId v : op.outputs)
        logical_[v] = out;
    }
  }

  // Device ops exchange data through collectives and send/recv: iterated to a fixpoint (ranges only grow).
  void devices() {
    std::map<std::string, Tracks> collectiveIn;  // instance -> the union of its members' operands
    std::map<std::string, Tracks> sent;          // "from>to#instance" -> the operand sent
    for (size_t pass = 0; pass <= stage_.deviceOps.size(); ++pass) {
      bool changed = false;
      for (const DeviceOp& dop : stage_.deviceOps) {
        const size_t d = static_cast<size_t>(dop.device);
        const Device& dev = plan_.devices[d];
        const Op& op = dev.graph.ops[static_cast<size_t>(dop.op)];
        std::vector<Tracks> in;
        for (ValueId v : op.inputs)
          in.push_back(deviceValue(d, v));
        Tracks out = combine(op.kind, in);
        if (inClass_) out = withAxes(d + 1, dev.graph, op, out);
        const std::string inst = op.attrs.contains("instance") ? op.attrs["instance"].dump() : "";
        if (op.kind == "send" || op.kind == "recv") {
          const int peer = op.attrs.value("peer", -1);
          const std::string key = op.kind == "send" ? std::to_string(dev.rank) + ">" + std::to_string(peer)
                                                    : std::to_string(peer) + ">" + std::to_string(dev.rank);
          Tracks& s = sent[key + "#" + inst];
          if (op.kind == "send") {
            changed = grow(s, out) || changed;
            continue;
          }
          out = s;
        } else if (op.attrs.contains("group")) {  // a collective: what every member contributed
          Tracks& all = collectiveIn[inst];
          changed = grow(all, out) || changed;
          out = all;
          if (t_.sums.count({d, dop.op}) || t_.averages.count({d, dop.op})) out = summed(out);
          if (t_.averages.count({d, dop.op})) out = divided(out);
        }
        if (t_.sums.count({d, dop.op}) && !op.attrs.contains("group")) out = summed(out);  // accumulation
        for (ValueId v : op.outputs)
          changed = grow(device_[{d, v}], out) || changed;
      }
      if (!changed) break;
    }
  }

  static bool grow(Tracks& into, const Tracks& by) {
    const Tracks before = into;
    into = into | by;
    return !(into == before);
  }

  static inline const FoldParameter none_{};
  const Plan& plan_;
  const Stage& stage_;
  const FoldParameter& t_;
  const AxisPredicate* inClass_ = nullptr;
  std::set<std::string> summedOwn_;
  std::map<ValueId, Tracks> logical_;
  std::map<std::pair<size_t, ValueId>, Tracks> device_;
};

}  // namespace

int countsNeeded(const Plan& plan, const Stage& stage, const FoldParameter& t) {
  if (t.empty()) return 1;
  return Degree(plan, stage, t).run();
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
