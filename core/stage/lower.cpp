// Value parts are parametrised, not constrained: for a group (t, box, n), parts 0..n-2 are fresh variables
// and part n-1 is t[box] minus their sum. That covers exactly the inputs consistent with the lineage, so the
// solver sees no side constraints.
#include "core/stage/lower.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "core/ops/registry.h"

namespace paraproof::stage {

namespace {

using ops::SymTensor;
using sym::ExprId;

std::string typeString(const TensorType& t) {
  return std::string(dtypeName(t.dtype)) + shapeString(t.shape);
}

// Row-major iteration over the elements of a box, yielding (flat index in box, index in full tensor).
template <class F>
void forEachInBox(const Box& box, F&& f) {
  const size_t rank = box.ranges.size();
  std::vector<int64_t> idx(rank);
  for (size_t i = 0; i < rank; ++i) {
    idx[i] = box.ranges[i].first;
    if (box.ranges[i].first >= box.ranges[i].second) return;
  }
  int64_t flat = 0;
  while (true) {
    f(flat++, idx);
    size_t k = rank;
    while (k > 0) {
      --k;
      if (++idx[k] < box.ranges[k].second) break;
      idx[k] = box.ranges[k].first;
      if (k == 0) return;
    }
    if (rank == 0) return;
  }
}

Box fullBox(const Shape& s) {
  Box b;
  for (int64_t d : s)
    b.ranges.push_back({0, d});
  return b;
}

// Everything the logical graph's lowering depends on besides the integer domains: ops and value types.
std::string logicalKey(const Graph& g) {
  std::string k;
  for (const Value& v : g.values)
    k += v.name + '\x01' + typeString(v.type) + '\x02';
  for (const Op& op : g.ops) {
    k += op.kind + '\x01' + op.attrs.dump() + '\x01';
    for (ValueId v : op.inputs)
      k += std::to_string(v) + ',';
    k += '\x01';
    for (ValueId v : op.outputs)
      k += std::to_string(v) + ',';
    k += '\x02';
  }
  return k;
}

// An op's lowering is a pure function of its kind, attributes and input tensors (types and expressions).
void appendTensorKey(std::string& k, const SymTensor& t) {
  k += typeString(t.type);
  k += '\x01';
  k.append(reinterpret_cast<const char*>(t.elems.data()), t.elems.size() * sizeof(ExprId));
  k += '\x02';
}

class Lowering {
 public:
  Lowering(const Plan& plan, const Stage& stage, const IntDomains& domains, sym::Problem& pb,
           const std::atomic<bool>* cancel, const LoweringMemo* reuse = nullptr,
           LoweringMemo* record = nullptr)
      : plan_(plan),
        stage_(stage),
        domains_(domains),
        pb_(pb),
        pool_(pb.pool),
        device_(plan.devices.size()),
        cancel_(cancel),
        reuse_(reuse),
        record_(record) {}

  void run() {
    // The memo's logical values stand for this plan's only if its logical graph and domains are the same.
    if (reuse_ &&
        (reuse_->logicalDomains != domains_.logical || reuse_->logicalKey != logicalKey(plan_.logical)))
      reuse_ = nullptr;
    if (reuse_) {
      pb_.logicalInputs = reuse_->logicalInputs;
      for (OpId o : stage_.logicalOps)
        if (!reuse_->logical.count(plan_.logical.ops[o].outputs.empty() ? kNone
                                                                        : plan_.logical.ops[o].outputs[0]))
          lowerLogical(o);
    } else {
      for (OpId o : stage_.logicalOps)
        lowerLogical(o);
    }
    runDevices();
    addObligations();
    if (record_) {
      record_->logicalKey = logicalKey(plan_.logical);
      record_->logicalDomains = domains_.logical;
      record_->logical = logical_;
      record_->logicalInputs = pb_.logicalInputs;
      record_->parts = parts_;
    }
    keepInternals();
  }

 private:
  const SymTensor& logicalByName(const std::string& name) {
    ValueId v = plan_.logical.findValue(name);
    if (v == kNone) throw UnsupportedStage("lineage names unknown logical tensor '" + name + "'");
    return logicalValue(v);
  }

  // Computed in this stage, or a free input of it.
  const SymTensor& logicalValue(ValueId v) {
    auto it = logical_.find(v);
    if (it != logical_.end()) return it->second;
    if (reuse_) {
      auto r = reuse_->logical.find(v);
      if (r != reuse_->logical.end()) return r->second;
    }
    const Value& val = plan_.logical.values[v];
    SymTensor t = freeTensor(val.name, val.type, domains_.logical.at(v));
    pb_.logicalInputs.push_back({val.name, kNone, val.type.shape, t.elems});
    return logical_.emplace(v, std::move(t)).first->second;
  }

  // Integer elements range over `range` (unbounded: lo == hi, any integer).
  SymTensor freeTensor(const std::string& name, const TensorType& type, const ops::IntRange& range) {
    const bool isInt = isInteger(type.dtype), bounded = isInt && range.bounded && range.lo < range.hi;
    return SymTensor{type, pool_.vars(name, type.shape, isInt ? sym::Sort::Int : sym::Sort::Real,
                                      bounded ? range.lo : 0, bounded ? range.hi : 0)};
  }

  std::vector<ExprId> sliceBox(const SymTensor& t, const Box& given) {
    // An empty box on a non-scalar tensor means the whole tensor.
    const Box box = given.ranges.empty() ? fullBox(t.shape()) : given;
    std::vector<ExprId> out;
    out.reserve(numElements(box.extent()));
    forEachInBox(box, [&](int64_t, const std::vector<int64_t>& idx) {
      out.push_back(t.elems[ops::flatIndex(t.shape(), idx)]);
    });
    return out;
  }

  // A division whose divisor folded to the constant 0 is undefined everywhere: the plan is invalid (as a
  // guard it would be `false` and make its obligation vacuous). Scans the nodes the op just created.
  void rejectZeroDivisor(size_t from, const std::string& op) const {
    for (size_t e = from; e < pool_.size(); ++e) {
      const sym::Node& n = pool_.node(static_cast<sym::ExprId>(e));
      if (n.kind == sym::Kind::Div && pool_.isConst(n.args[1], 0.0))
        throw InvalidStage(op,
                           "divides by a constant zero (" + pool_.str(static_cast<sym::ExprId>(e), 3) + ")");
    }
  }

  void checkCancel() const {
    if (cancel_ && cancel_->load(std::memory_order_relaxed)) throw LoweringCancelled();
  }

  void lowerLogical(OpId o) {
    checkCancel();
    const Op& op = plan_.logical.ops[o];
    const ops::OpDef* def = ops::findOp(op.kind);
    if (!def || !def->lower)
      throw UnsupportedStage("logical op '" + op.id + "' (" + op.kind + ") has no semantics");
    std::vector<SymTensor> in;
    for (ValueId v : op.inputs)
      in.push_back(logicalValue(v));
    const size_t before = pool_.size();
    std::vector<SymTensor> out = def->lower(pool_, in, op.attrs);
    rejectZeroDivisor(before, "logical op '" + op.id + "' (" + op.kind + ")");
    for (size_t i = 0; i < op.outputs.size(); ++i)
      logical_[op.outputs[i]] = std::move(out.at(i));
  }

  // A stage input on a device: its value is fixed by its lineage.
  const SymTensor& deviceInput(int d, ValueId v) {
    auto& env = device_[d];
    auto it = env.find(v);
    if (it != env.end()) return it->second;
    const Device& dev = plan_.devices[d];
    auto lin = dev.lineage.find(v);
    const Value& val = dev.graph.values[v];
    if (lin == dev.lineage.end())
      throw UnsupportedStage("device " + std::to_string(dev.rank) + " tensor '" + val.name +
                             "' enters the stage without lineage");
    SymTensor t{val.type, partValue(lin->second)};
    pb_.parallelInputs.push_back({val.name, dev.rank, val.type.shape, t.elems});
    return env.emplace(v, std::move(t)).first->second;
  }

  std::vector<ExprId> partValue(const Lineage& lin) {
    const SymTensor& whole = logicalByName(lin.tensor);
    if (lin.parts <= 1) return sliceBox(whole, lin.box);
    auto key = std::make_tuple(lin.tensor, lin.box, lin.parts);
    auto it = parts_.find(key);
    if (it == parts_.end() && reuse_) {
      auto r = reuse_->parts.find(key);
      if (r != reuse_->parts.end()) it = parts_.emplace(key, r->second).first;
    }
    if (it == parts_.end()) {
      std::vector<ExprId> target = sliceBox(whole, lin.box);
      std::vector<std::vector<ExprId>> ps(lin.parts);
      Shape ext = lin.box.ranges.empty() ? whole.shape() : lin.box.extent();
      TensorType tt{ext, whole.type.dtype};
      std::vector<ExprId> rest = target;
      for (int k = 0; k + 1 < lin.parts; ++k) {
        // A value part of an integer tensor may hold any integer: only the sum is in the domain.
        ps[k] = freeTensor(lin.tensor + ".part" + std::to_string(k), tt, ops::IntRange::any()).elems;
        for (size_t i = 0; i < rest.size(); ++i)
          rest[i] = pool_.sub(rest[i], ps[k][i]);
      }
      ps[lin.parts - 1] = rest;
      it = parts_.emplace(key, std::move(ps)).first;
    }
    return it->second.at(lin.part);
  }

  // An op's operand on device d: computed earlier in this stage, or a stage input fixed by its lineage.
  const SymTensor& operand(int d, ValueId v) {
    OpId p = plan_.devices[d].graph.values[v].producer;
    if (p != kNone && inStage_[d][p]) return device_[d].at(v);
    return deviceInput(d, v);
  }

  // Executes the stage's device ops in an order every device could follow: local ops in program order,
  // a collective once all its members reached it, a recv once its send ran.
  void runDevices() {
    std::vector<std::vector<OpId>> program(plan_.devices.size());
    inStage_.resize(plan_.devices.size());
    for (size_t d = 0; d < plan_.devices.size(); ++d)
      inStage_[d].assign(plan_.devices[d].graph.ops.size(), false);
    for (const DeviceOp& d : stage_.deviceOps) {
      program[d.device].push_back(d.op);
      inStage_[d.device][d.op] = true;
    }
    for (auto& p : program)
      std::sort(p.begin(), p.end());
    std::vector<size_t> pc(program.size(), 0);
    std::map<std::string, SymTensor> sent;
    std::map<std::string, std::map<int, OpId>> arrived;  // collective instance -> device -> op

    auto inputs = [&](int d, const Op& op) {
      std::vector<SymTensor> in;
      for (ValueId v : op.inputs)
        in.push_back(operand(d, v));
      return in;
    };

    bool progress = true;
    while (progress) {
      progress = false;
      for (size_t d = 0; d < program.size(); ++d) {
        const Device& dev = plan_.devices[d];
        while (pc[d] < program[d].size()) {
          checkCancel();
          OpId o = program[d][pc[d]];
          const Op& op = dev.graph.ops[o];
          const std::string inst = op.attrs.contains("instance") ? op.attrs["instance"].dump() : "";
          if (op.kind == "send") {
            sent[key(dev.rank, op.attrs.value("peer", -1), inst)] = inputs(static_cast<int>(d), op).at(0);
          } else if (op.kind == "recv") {
            auto it = sent.find(key(op.attrs.value("peer", -1), dev.rank, inst));
            if (it == sent.end()) break;
            const Value& out = dev.graph.values[op.outputs.at(0)];
            // The validator matches the types; a mismatch here is an internal error (e.g. a reduction
            // that scaled the two ends apart), never a tensor of one type holding another's elements.
            if (it->second.type != out.type ||
                it->second.elems.size() != static_cast<size_t>(numElements(out.type.shape)))
              throw UnsupportedStage("internal error: recv '" + op.id + "' on rank " +
                                     std::to_string(dev.rank) + " declares " + typeString(out.type) +
                                     " but its send sends " + typeString(it->second.type) + " (" +
                                     std::to_string(it->second.elems.size()) + " elements)");
            device_[d][op.outputs.at(0)] = SymTensor{out.type, it->second.elems};
          } else if (isCollective(op)) {
            auto& members = arrived[inst];
            if (!members.count(static_cast<int>(d))) {
              members[static_cast<int>(d)] = o;
              progress = true;
            }
            if (!runCollective(op, members)) break;
          } else {
            const ops::OpDef* def = ops::findOp(op.kind);
            if (!def || !def->lower)
              throw UnsupportedStage("device op '" + op.id + "' (" + op.kind + ") has no semantics");
            std::vector<SymTensor> in = inputs(static_cast<int>(d), op);
            std::string k;
            std::vector<SymTensor> out;
            if (memoKey(op, {&in}, k, out)) {
              const size_t before = pool_.size();
              out = def->lower(pool_, in, op.attrs);
              rejectZeroDivisor(
                  before, "device " + std::to_string(dev.rank) + " op '" + op.id + "' (" + op.kind + ")");
              remember(k, out);
            }
            if (out.size() < op.outputs.size())
              throw UnsupportedStage("device op '" + op.id + "' (" + op.kind + ") lowers to too few outputs");
            for (size_t i = 0; i < op.outputs.size(); ++i)
              device_[d][op.outputs[i]] = std::move(out[i]);
          }
          ++pc[d];
          progress = true;
        }
      }
    }
    for (size_t d = 0; d < program.size(); ++d)
      if (pc[d] < program[d].size())
        throw UnsupportedStage("device " + std::to_string(plan_.devices[d].rank) + " cannot run op '" +
                               plan_.devices[d].graph.ops[program[d][pc[d]]].id +
                               "': its communication partner is missing from the stage");
  }

  // The memo key of an op on these inputs (one list per input slot); false with `out` set when the memo has
  // it. Without a memo to read or fill, always true (lower it) with an empty key.
  bool memoKey(const Op& op, const std::vector<const std::vector<SymTensor>*>& slots, std::string& k,
               std::vector<SymTensor>& out) const {
    if (!reuse_ && !record_) return true;
    k = op.kind + '\x01' + op.attrs.dump() + '\x01';
    for (const auto* slot : slots) {
      for (const SymTensor& t : *slot)
        appendTensorKey(k, t);
      k += '\x03';
    }
    if (reuse_) {
      auto it = reuse_->ops.find(k);
      if (it != reuse_->ops.end()) {
        out = it->second;
        return false;
      }
    }
    return true;
  }
  void remember(std::string& k, const std::vector<SymTensor>& out) {
    if (record_) record_->ops.emplace(std::move(k), out);
  }

  static std::string key(int from, int to, const std::string& inst) {
    return std::to_string(from) + ">" + std::to_string(to) + "/" + inst;
  }

  // Runs a collective once every member arrived; members past it have their outputs set already.
  bool runCollective(const Op& op, std::map<int, OpId>& members) {
    const Json& group = op.attrs.at("group");
    if (members.size() < group.size()) return false;
    if (members.count(-1)) return true;  // already executed: the outputs are in place
    std::vector<int> order;
    for (const Json& r : group)
      order.push_back(plan_.deviceIndex(r.get<int>()));
    std::vector<std::vector<SymTensor>> perInput;  // [input slot][member]
    const ops::OpDef* def = ops::findOp(op.kind);
    if (!def || !def->lowerGroup) throw UnsupportedStage("collective " + op.kind + " has no semantics");
    size_t slots = op.inputs.size();
    std::vector<std::vector<SymTensor>> outs(order.size());
    for (size_t s = 0; s < slots; ++s) {
      std::vector<SymTensor> memberIn;
      for (int d : order) {
        const Op& mop = plan_.devices[d].graph.ops[members.at(d)];
        memberIn.push_back(operand(d, mop.inputs.at(s)));
      }
      std::string k;
      std::vector<SymTensor> res;
      if (memoKey(op, {&memberIn}, k, res)) {
        const size_t before = pool_.size();
        res = def->lowerGroup(pool_, memberIn, op.attrs);
        rejectZeroDivisor(before, "collective '" + op.id + "' (" + op.kind + ")");
        remember(k, res);
      }
      for (size_t m = 0; m < order.size(); ++m)
        outs[m].push_back(std::move(res.at(m)));
    }
    for (size_t m = 0; m < order.size(); ++m) {
      int d = order[m];
      const Op& mop = plan_.devices[d].graph.ops[members.at(d)];
      for (size_t s = 0; s < mop.outputs.size(); ++s)
        device_[d][mop.outputs[s]] = std::move(outs[m].at(s));
    }
    members[-1] = kNone;
    return true;
  }

  void addObligations() {
    struct PartRef {
      int device;
      ValueId value;
    };
    std::map<std::tuple<std::string, Box, int>, std::map<int, std::vector<PartRef>>> groups;
    for (const DeviceValue& dv : stage_.checked) {
      const Device& dev = plan_.devices[dv.device];
      const Lineage& lin = dev.lineage.at(dv.value);
      if (lin.parts <= 1) {
        const SymTensor& whole = logicalByName(lin.tensor);
        std::vector<ExprId> expected = sliceBox(whole, lin.box);
        const SymTensor& actual = device_[dv.device].at(dv.value);
        addElementwise(expected, actual.elems, dev.rank, dev.graph.values[dv.value].name, lin);
      } else {
        groups[{lin.tensor, lin.box, lin.parts}][lin.part].push_back({dv.device, dv.value});
      }
    }
    for (auto& [k, byPart] : groups) {
      const auto& [tensor, box, n] = k;
      Lineage lin{tensor, box, 0, n};
      // Replicas of a part must agree with the first one.
      for (auto& [part, refs] : byPart)
        for (size_t r = 1; r < refs.size(); ++r) {
          const Device& dev = plan_.devices[refs[r].device];
          addElementwise(device_[refs[0].device].at(refs[0].value).elems,
                         device_[refs[r].device].at(refs[r].value).elems, dev.rank,
                         dev.graph.values[refs[r].value].name, lin);
        }
      if (static_cast<int>(byPart.size()) == n) {
        // One n-ary sum per element: adding the parts one at a time would re-flatten and re-sort the
        // growing sum n times (quadratic in n for a norm summed over 128 ranks) and intern every prefix.
        std::vector<std::vector<ExprId>> terms;
        std::string who = "sum of " + std::to_string(n) + " parts of " + tensor + " on ranks";
        for (auto& [part, refs] : byPart) {
          const auto& e = device_[refs[0].device].at(refs[0].value).elems;
          if (terms.size() < e.size()) terms.resize(e.size());
          for (size_t i = 0; i < e.size(); ++i)
            terms[i].push_back(e[i]);
          who += " " + std::to_string(plan_.devices[refs[0].device].rank);
        }
        std::vector<ExprId> sum;
        sum.reserve(terms.size());
        for (auto& t : terms)
          sum.push_back(pool_.add(std::move(t)));
        addElementwise(sliceBox(logicalByName(tensor), box), sum, kNone, who, lin);
        continue;
      }
      // An incomplete group must move parts unchanged from a stage input with the same lineage.
      for (auto& [part, refs] : byPart) {
        if (!parts_.count(k))
          throw UnsupportedStage("value parts of '" + tensor +
                                 "' are split across stages; cannot check part " + std::to_string(part) +
                                 " alone");
        const Device& dev = plan_.devices[refs[0].device];
        Lineage pl{tensor, box, part, n};
        addElementwise(partValue(pl), device_[refs[0].device].at(refs[0].value).elems, dev.rank,
                       dev.graph.values[refs[0].value].name, pl);
      }
    }
  }

  // Moves the computed values into the problem (lowering is done with them).
  void keepInternals() {
    for (OpId o : stage_.logicalOps)
      for (ValueId v : plan_.logical.ops[o].outputs)
        if (auto it = logical_.find(v); it != logical_.end())
          pb_.internals.push_back(
              {plan_.logical.values[v].name, kNone, it->second.shape(), std::move(it->second.elems)});
    for (size_t d = 0; d < device_.size(); ++d) {
      const Device& dev = plan_.devices[d];
      for (auto& [v, t] : device_[d])
        pb_.internals.push_back({dev.graph.values[v].name, dev.rank, t.shape(), std::move(t.elems)});
    }
  }

  void addElementwise(const std::vector<ExprId>& expected, const std::vector<ExprId>& actual, int rank,
                      const std::string& tensor, const Lineage& lin) {
    if (expected.size() != actual.size())
      throw UnsupportedStage("tensor '" + tensor + "' has " + std::to_string(actual.size()) +
                             " elements but its lineage box has " + std::to_string(expected.size()));
    const SymTensor& whole = logicalByName(lin.tensor);
    const Box box = lin.box.ranges.empty() ? fullBox(whole.shape()) : lin.box;
    std::vector<std::vector<int64_t>> idx;
    idx.reserve(expected.size());
    forEachInBox(box, [&](int64_t, const std::vector<int64_t>& i) { idx.push_back(i); });
    for (size_t i = 0; i < expected.size(); ++i)
      pb_.obligations.push_back({expected[i], actual[i], rank, tensor, lin.tensor, idx[i]});
  }

  const Plan& plan_;
  const Stage& stage_;
  const IntDomains& domains_;
  sym::Problem& pb_;
  sym::ExprPool& pool_;
  std::unordered_map<ValueId, SymTensor> logical_;
  std::vector<std::unordered_map<ValueId, SymTensor>> device_;
  std::vector<std::vector<bool>> inStage_;  // [device][op]: the op belongs to this stage
  std::map<std::tuple<std::string, Box, int>, std::vector<std::vector<ExprId>>> parts_;
  const std::atomic<bool>* cancel_;
  const LoweringMemo* reuse_;
  LoweringMemo* record_;
};

}  // namespace

int64_t stageElements(const Plan& plan, const Stage& stage) {
  std::set<std::pair<int, ValueId>> seen;  // (graph: -1 logical, else device index; value)
  int64_t total = 0;
  auto count = [&](int g, ValueId v, const Graph& graph) {
    if (!seen.insert({g, v}).second) return;
    int64_t n = numElements(graph.values[v].type.shape);
    total = n > std::numeric_limits<int64_t>::max() - total ? std::numeric_limits<int64_t>::max() : total + n;
  };
  auto lineageTensor = [&](const Device& dev, ValueId v) {
    auto it = dev.lineage.find(v);
    if (it == dev.lineage.end()) return;
    ValueId lv = lineageValue(plan.logical, it->second);
    if (lv != kNone) count(-1, lv, plan.logical);
  };
  for (OpId o : stage.logicalOps) {
    const Op& op = plan.logical.ops[o];
    for (ValueId v : op.inputs)
      count(-1, v, plan.logical);
    for (ValueId v : op.outputs)
      count(-1, v, plan.logical);
  }
  for (const DeviceOp& d : stage.deviceOps) {
    const Device& dev = plan.devices[d.device];
    const Op& op = dev.graph.ops[d.op];
    for (ValueId v : op.inputs) {
      count(d.device, v, dev.graph);
      lineageTensor(dev, v);
    }
    for (ValueId v : op.outputs)
      count(d.device, v, dev.graph);
  }
  for (const DeviceValue& c : stage.checked)
    lineageTensor(plan.devices[c.device], c.value);
  return total;
}

namespace {

sym::Problem lowerWith(const Plan& plan, const Stage& stage, const IntDomains& domains,
                       const std::atomic<bool>* cancel, std::chrono::steady_clock::time_point deadline,
                       const LoweringLimits& limits, const LoweringMemo* reuse, LoweringMemo* record) {
  const int64_t elements = stageElements(plan, stage);
  if (elements > limits.maxElements)
    throw StageTooLarge("stage too large (" + std::to_string(elements) + " scalar elements; the limit is " +
                        std::to_string(limits.maxElements) + ")");
  sym::Problem pb;
  if (reuse) pb.pool = reuse->pool;
  pb.pool.setNodeLimit(static_cast<size_t>(std::max<int64_t>(limits.maxExprNodes, 0)));
  pb.pool.setGrowthCheck([&] {
    if (cancel && cancel->load(std::memory_order_relaxed)) throw LoweringCancelled();
    if (std::chrono::steady_clock::now() >= deadline) throw LoweringTimeout(pb.pool.size());
  });
  try {
    Lowering(plan, stage, domains, pb, cancel, reuse, record).run();
  } catch (const sym::PoolLimitExceeded& e) {
    pb.pool.setGrowthCheck(nullptr);
    throw StageTooLarge("stage too large (" + std::to_string(elements) + " scalar elements, " + e.what() +
                        ")");
  } catch (...) {
    pb.pool.setGrowthCheck(nullptr);
    throw;
  }
  pb.pool.setGrowthCheck(nullptr);  // the problem outlives this frame (and is copied by abandoned proofs)
  pb.pool.setNodeLimit(SIZE_MAX);   // the engines may add nodes of their own
  if (record) {
    pb.pool.freeze();  // variants copy only what they add
    record->pool = pb.pool;
  }
  return pb;
}

}  // namespace

sym::Problem lowerStage(const Plan& plan, const Stage& stage, const IntDomains& domains,
                        const std::atomic<bool>* cancel, std::chrono::steady_clock::time_point deadline,
                        const LoweringLimits& limits) {
  return lowerWith(plan, stage, domains, cancel, deadline, limits, nullptr, nullptr);
}

sym::Problem lowerStage(const Plan& plan, const Stage& stage, const std::atomic<bool>* cancel,
                        const LoweringLimits& limits) {
  return lowerStage(plan, stage, intDomains(plan), cancel, std::chrono::steady_clock::time_point::max(),
                    limits);
}

sym::Problem lowerStageRecording(const Plan& plan, const Stage& stage, LoweringMemo& record,
                                 const std::atomic<bool>* cancel, const LoweringLimits& limits) {
  record = LoweringMemo{};
  return lowerWith(plan, stage, intDomains(plan), cancel, std::chrono::steady_clock::time_point::max(),
                   limits, nullptr, &record);
}

sym::Problem lowerStageWithMemo(const Plan& plan, const Stage& stage, const LoweringMemo& memo,
                                const std::atomic<bool>* cancel, const LoweringLimits& limits) {
  return lowerWith(plan, stage, intDomains(plan), cancel, std::chrono::steady_clock::time_point::max(),
                   limits, &memo, nullptr);
}

}  // namespace paraproof::stage
