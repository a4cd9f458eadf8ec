#include "core/verify/first_difference.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

#include "core/ops/registry.h"
#include "core/solver/engine.h"

namespace paraproof::verify {

namespace {

bool close(double a, double b) {
  return std::abs(a - b) <= 1e-6 * std::max({1.0, std::abs(a), std::abs(b)});
}

// How the values of one tensor on a group of ranks combine into the value a collective would make.
enum class Combine { Sum, Mean, Max, Min };

using Node = std::pair<size_t, OpId>;                  // (device index in the plan, op)
using Block = std::pair<Shape, std::vector<int64_t>>;  // (a logical value's shape, block index on a grid)

// "0,1,2,3"
std::string rankList(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks)
    out += (out.empty() ? "" : ",") + std::to_string(r);
  return out;
}

// The question a partial value read as whole asks: where the collective goes when the importer said (the
// statement after the value's last write), else `unknown`.
std::string collectiveMissing(const std::string& site, const std::string& unknown = " before this op") {
  return "a collective missing" + (site.empty() ? unknown : " after its last write, before " + site) + "?";
}

class Judge {
 public:
  Judge(const StageInfo& stage, const CounterexampleReport& cex, const Plan& plan)
      : stage_(stage), cex_(cex), plan_(plan) {
    for (size_t d = 0; d < plan.devices.size(); ++d)
      deviceOf_[plan.devices[d].rank] = d;
    for (const TensorValues& t : cex.internals)
      add(t);
    for (const TensorValues& t : cex.parallelInputs)
      add(t);
    for (const TensorValues& t : cex.logicalInputs)
      add(t);
    for (const ParallelOpRef& ref : stage.parallelOps) {
      auto d = deviceOf_.find(ref.rank);
      if (d == deviceOf_.end()) continue;
      const OpId o = plan.devices[d->second].graph.findOp(ref.op);
      if (o == kNone) continue;
      if (inStage_.insert({d->second, o}).second) order_.push_back({d->second, o});
    }
    // The order the ops run in: position in the program, then rank.
    std::sort(order_.begin(), order_.end(), [&](const Node& a, const Node& b) {
      return std::pair(a.second, plan.devices[a.first].rank) <
             std::pair(b.second, plan.devices[b.first].rank);
    });
    for (const Node& n : order_) {
      const Op& op = opAt(n);
      const ops::OpDef* def = ops::findOp(op.kind);
      if (!def || !def->communication) continue;
      auto it = op.attrs.find("instance");
      const std::string instance = it == op.attrs.end() ? "" : it->dump();
      if (!instance.empty()) exchanges_[instance].push_back(n);
    }
    std::set<std::vector<int>> groups = meshGroups();
    groups.insert(stage.devices);
    for (const CommunicationRef& c : stage.communication)
      if (c.group.size() >= 2) groups.insert(c.group);
    groups_.assign(groups.begin(), groups.end());
  }

  std::optional<WrongOp> run() {
    if (cex_.internals.empty() || order_.empty()) return std::nullopt;
    const std::set<Node> upstream = upstreamOfDiffs();
    for (const Node& n : order_) {
      if (!upstream.count(n)) continue;
      const Op& op = opAt(n);
      ValueId wrong = kNone;
      for (ValueId v : op.outputs)
        if (!constant(n.first, v) && !agrees(n.first, v)) {
          wrong = v;
          break;
        }
      if (wrong == kNone) continue;
      bool inputsAgree = true;
      for (ValueId v : op.inputs)
        inputsAgree = inputsAgree && (constant(n.first, v) || agrees(n.first, v));
      if (exhausted_) return std::nullopt;
      if (!inputsAgree) {
        if (auto completed = completedBy(n, wrong)) return completed;
        continue;
      }
      if (setRightDownstream(n)) continue;
      if (exhausted_) return std::nullopt;
      if (auto misplaced = misplacedConstant(n)) return misplaced;
      if (exhausted_) return std::nullopt;
      if (auto sent = wrongTensorSent(n)) return sent;
      if (exhausted_) return std::nullopt;
      return WrongOp{plan_.devices[n.first].rank, n.second, wrong, why(n, wrong), missingAfter(n)};
    }
    return partialOutput();
  }

  // No op goes wrong inside the stage, but a checked value that differs is a partial value: the collective
  // that completes it is missing (or reduces over another group) before the output.
  std::optional<WrongOp> partialOutput() {
    std::optional<WrongOp> first;
    for (const ElementDiff& e : cex_.diffs) {
      auto d = e.device == kNone ? deviceOf_.end() : deviceOf_.find(e.device);
      if (d == deviceOf_.end()) continue;
      const Graph& g = plan_.devices[d->second].graph;
      const ValueId v = g.findValue(e.tensor);
      if (v == kNone || g.values[v].producer == kNone) continue;
      const Node made{d->second, g.values[v].producer};
      if (!inStage_.count(made) || (first && made.second >= first->op)) continue;
      // Through the scope-less copies that make an output (identity, detach) to the op computing it.
      Node computing = made;
      ValueId computed = v;
      while (opAt(computing).scope.empty() && opAt(computing).inputs.size() == 1) {
        const ValueId in = opAt(computing).inputs[0];
        const OpId p = g.values[in].producer;
        if (p == kNone || !inStage_.count({d->second, p})) break;
        computing = {d->second, p};
        computed = in;
      }
      // It reads a part as if whole, or one the model never forms whose sum would be right. An identity hands
      // the part on unchanged where it is scoped (the `return` of an autograd.Function): it is the place.
      const bool handsOn = opAt(computing).kind == "identity";
      if (const std::string site = handsOn ? "" : missingAfter(computing); !site.empty()) {
        first = WrongOp{e.device, computing.second, computed, why(computing, computed), site};
        continue;
      }
      if (exhausted_) return std::nullopt;
      if (auto completed = handsOn ? std::nullopt : completedBy(computing, computed)) {
        first = completed;
        continue;
      }
      agrees(d->second, v);
      if (exhausted_) return std::nullopt;
      // Only a sum or a mean: a maximum over ranks matches by chance where one rank holds the right value
      // and the others smaller ones.
      auto p = partial_.find({d->second, v});
      const std::string partial = asPartial(d->second, v);
      if (p != partial_.end() && (p->second.first == "sum" || p->second.first == "mean")) {
        const std::string site = statementAfter(d->second, v);
        first = WrongOp{e.device, made.second, v,
                        "the output " + partial + ": " + collectiveMissing(site, ""), site};
      }
    }
    return first;
  }

 private:
  const Op& opAt(const Node& n) const { return plan_.devices[n.first].graph.ops[n.second]; }

  // "'t' (where it was made), which agrees with the model only as the sum over ranks 0,1", or empty.
  std::string asPartial(size_t d, ValueId v) const {
    const Graph& g = plan_.devices[d].graph;
    // A stage input stated as a value part (its lineage): partial by declaration.
    const OpId producer = g.values[v].producer;
    if (auto lin = plan_.devices[d].lineage.find(v); lin != plan_.devices[d].lineage.end() &&
                                                     lin->second.parts > 1 &&
                                                     (producer == kNone || !inStage_.count({d, producer})))
      return "'" + g.values[v].name + "', part " + std::to_string(lin->second.part + 1) + " of " +
             std::to_string(lin->second.parts) + " of logical '" + lin->second.tensor + "' (a partial value)";
    auto p = partial_.find({d, v});
    if (p == partial_.end()) return "";
    const std::string ranks = rankList(p->second.second);
    const OpId made = g.values[v].producer;
    const std::string where =
        made == kNone || g.ops[made].scope.empty() ? "" : " (" + g.ops[made].scope + ")";
    return "'" + g.values[v].name + "'" + where + ", which agrees with the model only as the " +
           p->second.first + " over ranks " + ranks;
  }

  // An input with no counterpart in the model whose sum over a group of the stage's ranks would make this
  // op's value the model's: a part read as if whole, its collective forgotten (Megatron's predicted logits,
  // which the model never forms, before their all-reduce). The op is re-evaluated on the counterexample's
  // values with that input summed.
  std::optional<WrongOp> completedBy(const Node& n, ValueId wrong) {
    const Op& op = opAt(n);
    const ops::OpDef* def = ops::findOp(op.kind);
    const Graph& g = plan_.devices[n.first].graph;
    const Shape& shape = g.values[wrong].type.shape;  // a checked output has no values of its own here
    if (!def || !def->lower || def->communication || !affordable(g, op, shape)) return std::nullopt;
    for (size_t port = 0; port < op.inputs.size(); ++port) {
      const ValueId u = op.inputs[port];
      if (constant(n.first, u) || agrees(n.first, u) || isInteger(g.values[u].type.dtype)) continue;
      for (const std::vector<int>& group : groups_) {
        std::vector<double> sum;
        if (!sumOver(group, n.first, u, sum)) continue;
        std::optional<std::vector<double>> value = evaluate(n, port, sum, wrong);
        if (!value || !isLogicalBox(shape, *value)) continue;
        const std::string site = statementAfter(n.first, u, n.second);
        const OpId p = g.values[u].producer;
        const std::string where = p == kNone || g.ops[p].scope.empty() ? "" : " (" + g.ops[p].scope + ")";
        return WrongOp{plan_.devices[n.first].rank, n.second, wrong,
                       "it reads '" + g.values[u].name + "'" + where + ", whose sum over ranks " +
                           rankList(group) +
                           " would make this op's value the model's: " + collectiveMissing(site),
                       site};
      }
    }
    return std::nullopt;
  }

  // Re-evaluating is for small ops, and a few: every op after the bug reads a wrong value, and a matmul of
  // the largest tensors a counterexample keeps would lower to tens of millions of terms.
  bool affordable(const Graph& g, const Op& op, const Shape& out) {
    int64_t elements = numElements(out);
    for (ValueId v : op.inputs)
      elements += numElements(g.values[v].type.shape);
    return numElements(out) <= 4096 && elements <= 16384 && ++reevaluated_ <= 256;
  }

  // The element-wise sum of `v`'s values (named alike) on the group's ranks; false unless all hold them and
  // `d` is one of them.
  bool sumOver(const std::vector<int>& group, size_t d, ValueId v, std::vector<double>& sum) const {
    if (std::find(group.begin(), group.end(), plan_.devices[d].rank) == group.end()) return false;
    const std::string& name = plan_.devices[d].graph.values[v].name;
    for (int r : group) {
      auto peer = deviceOf_.find(r);
      const ValueId pv = peer == deviceOf_.end() ? kNone : plan_.devices[peer->second].graph.findValue(name);
      const TensorValues* t = pv == kNone ? nullptr : valuesOf(peer->second, pv);
      if (!t || (!sum.empty() && t->values.size() != sum.size())) return false;
      if (sum.empty()) sum.assign(t->values.size(), 0.0);
      for (size_t i = 0; i < sum.size(); ++i)
        sum[i] += t->values[i];
    }
    return !sum.empty();
  }

  // The op's output on the counterexample's values of its inputs, input `port` replaced by `with`.
  std::optional<std::vector<double>> evaluate(const Node& n, size_t port, const std::vector<double>& with,
                                              ValueId output) const {
    const Op& op = opAt(n);
    const Graph& g = plan_.devices[n.first].graph;
    sym::ExprPool pool;
    std::vector<ops::SymTensor> in;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const TensorValues* t = valuesOf(n.first, op.inputs[i]);
      const std::vector<double>* values = i == port ? &with : t ? &t->values : nullptr;
      const TensorType& type = g.values[op.inputs[i]].type;
      if (!values || values->size() != static_cast<size_t>(numElements(type.shape))) return std::nullopt;
      ops::SymTensor st{type, {}};
      for (double x : *values)
        st.elems.push_back(type.dtype == DType::Bool ? pool.boolean(x != 0)
                           : isInteger(type.dtype)   ? pool.integer(static_cast<int64_t>(std::llround(x)))
                                                     : pool.real(x));
      in.push_back(std::move(st));
    }
    try {
      const std::vector<ops::SymTensor> outs = ops::findOp(op.kind)->lower(pool, in, op.attrs);
      const auto at = std::find(op.outputs.begin(), op.outputs.end(), output) - op.outputs.begin();
      if (static_cast<size_t>(at) >= outs.size()) return std::nullopt;
      const std::vector<double> all = solver::evaluateReal(pool, {});
      std::vector<double> value;
      for (sym::ExprId e : outs[static_cast<size_t>(at)].elems)
        value.push_back(all[e]);
      return value;
    } catch (const std::exception&) {  // an op the counterexample's values cannot feed: no counterfactual
      return std::nullopt;
    }
  }

  // What the importer recorded for op `o` (plan metadata "statement_after": the next statement, and for an op
  // in a loop the loop and the statement after it), or null.
  const Json* recorded(size_t d, OpId o) const {
    auto all = plan_.metadata.find("statement_after");
    if (o == kNone || all == plan_.metadata.end() || !all->is_object()) return nullptr;
    auto ofRank = all->find(std::to_string(plan_.devices[d].rank));
    if (ofRank == all->end() || !ofRank->is_object()) return nullptr;
    auto at = ofRank->find(plan_.devices[d].graph.ops[o].id);
    return at != ofRank->end() && at->is_object() ? &*at : nullptr;
  }

  // The statement after the last write of `v` (the importer's record, through the scope-less copies an
  // output is made by), where its missing collective belongs; empty when the plan does not say. A value a
  // loop writes on every pass (gradients accumulated over micro-batches) and read after the loop (by
  // `reader`, or as an output) is complete only after it: the statement after the loop.
  std::string statementAfter(size_t d, ValueId v, OpId reader = kNone) const {
    const Graph& g = plan_.devices[d].graph;
    for (int hop = 0; hop < 32 && v != kNone && g.values[v].producer != kNone; ++hop) {
      const Op& op = g.ops[g.values[v].producer];
      if (const Json* at = recorded(d, g.values[v].producer)) {
        const Json* read = recorded(d, reader);
        const bool sameLoop =
            read && read->contains("loop") && at->contains("loop") && (*read)["loop"] == (*at)["loop"];
        if (at->contains("after_loop") && !sameLoop) return at->value("after_loop", "");
        return at->value("next", "");
      }
      if (!op.scope.empty() || op.inputs.size() != 1) break;
      v = op.inputs[0];
    }
    return "";
  }

  // The op reads a partial value as if whole (not a collective, whose group or reduction would be at fault):
  // the statement after that value's last write. Ops of the reading statement itself (`m.unsqueeze(-1)` in
  // `logits - m.unsqueeze(-1)`) are followed back to the statement that made the part.
  std::string missingAfter(const Node& n) {
    const Op& op = opAt(n);
    const ops::OpDef* def = ops::findOp(op.kind);
    if (def && def->communication) return "";
    const Graph& g = plan_.devices[n.first].graph;
    const std::string reading = statementAfter(n.first, op.outputs.empty() ? kNone : op.outputs[0], n.second);
    for (ValueId v : op.inputs) {
      if (asPartial(n.first, v).empty()) continue;
      for (std::string site = statementAfter(n.first, v, n.second); !site.empty() && site == reading;) {
        const OpId p = g.values[v].producer;
        ValueId earlier = kNone;
        for (ValueId u : p == kNone ? std::vector<ValueId>{} : g.ops[p].inputs)
          if (earlier == kNone && !constant(n.first, u) && agrees(n.first, u) &&
              !asPartial(n.first, u).empty())
            earlier = u;
        if (earlier == kNone) break;
        v = earlier;
        site = statementAfter(n.first, v, n.second);
      }
      return statementAfter(n.first, v, n.second);
    }
    return "";
  }

  std::string why(const Node& n, ValueId wrong) const {
    const Op& op = opAt(n);
    const ops::OpDef* def = ops::findOp(op.kind);
    for (ValueId v : op.inputs) {
      const std::string partial = asPartial(n.first, v);
      if (partial.empty()) continue;
      if (def && def->communication)
        return "it reads " + partial + ", and this " + op.kind +
               " does not make the model's value of it: the wrong reduction, group or scale?";
      const std::string site = statementAfter(n.first, v, n.second);
      return "it reads " + partial + ": " + collectiveMissing(site);
    }
    return "the values it reads agree with the model; its output '" +
           plan_.devices[n.first].graph.values[wrong].name +
           "' is no slice or partial value of a logical one";
  }

  // The stage's ranks grouped along every set of mesh axes (those equal on the other axes): where a partial
  // value belongs even when the plan never reduces it over that group (a reduction over the wrong group).
  std::set<std::vector<int>> meshGroups() const {
    std::set<std::vector<int>> out;
    const size_t axes = plan_.mesh.axes.size();
    if (axes == 0 || axes > 8) return out;
    for (unsigned subset = 1; subset < (1u << axes); ++subset) {
      std::map<std::vector<int64_t>, std::vector<int>> byRest;
      for (int r : stage_.devices) {
        auto d = deviceOf_.find(r);
        if (d == deviceOf_.end()) continue;
        const std::vector<int64_t>& coord = plan_.devices[d->second].coord;
        if (coord.size() != axes) return out;
        std::vector<int64_t> rest;
        for (size_t a = 0; a < axes; ++a)
          if (!(subset & (1u << a))) rest.push_back(coord[a]);
        byRest[rest].push_back(r);
      }
      for (auto& [rest, ranks] : byRest)
        if (ranks.size() >= 2) out.insert(ranks);
    }
    return out;
  }

  void add(const TensorValues& t) {
    if (t.values.size() != static_cast<size_t>(numElements(t.shape))) return;
    if (t.device == kNone) {
      if (logicalNames_.insert(t.name).second) logical_.push_back(&t);
      return;
    }
    if (auto d = deviceOf_.find(t.device); d != deviceOf_.end())
      device_.emplace(std::pair(d->second, t.name), &t);
  }

  const TensorValues* valuesOf(size_t d, ValueId v) const {
    auto it = device_.find({d, plan_.devices[d].graph.values[v].name});
    return it == device_.end() ? nullptr : it->second;
  }

  // Built from constants alone (no graph input, no received value): a scale, a mask, positions.
  bool constant(size_t d, ValueId v) {
    auto [it, fresh] = constants_.try_emplace(d);
    std::vector<char>& c = it->second;
    if (fresh) {
      const Graph& g = plan_.devices[d].graph;
      c.assign(g.values.size(), 0);
      for (const Op& op : g.ops) {
        const ops::OpDef* def = ops::findOp(op.kind);
        bool all = !(def && def->communication);
        for (ValueId in : op.inputs)
          all = all && c[in];
        for (ValueId out : op.outputs)
          c[out] = all;
      }
    }
    return c[v];
  }

  // The value agrees with the model (see the header); a value that enters the stage was checked where it was
  // made, and one without values in the counterexample is not judged.
  bool agrees(size_t d, ValueId v) {
    auto [memo, fresh] = agrees_.try_emplace({d, v}, true);
    if (!fresh) return memo->second;
    const Value& val = plan_.devices[d].graph.values[v];
    const TensorValues* t = valuesOf(d, v);
    if (val.producer == kNone || !inStage_.count({d, val.producer}) || !t) return true;
    bool ok = isLogicalBox(t->shape, t->values);
    const int rank = plan_.devices[d].rank;
    for (size_t g = 0; g < groups_.size() && !ok; ++g) {
      if (std::find(groups_[g].begin(), groups_[g].end(), rank) == groups_[g].end()) continue;
      std::vector<const TensorValues*> members;
      for (int r : groups_[g]) {
        auto peer = deviceOf_.find(r);
        const ValueId pv =
            peer == deviceOf_.end() ? kNone : plan_.devices[peer->second].graph.findValue(val.name);
        const TensorValues* pt = pv == kNone ? nullptr : valuesOf(peer->second, pv);
        if (!pt || pt->shape != t->shape) break;
        members.push_back(pt);
      }
      if (members.size() != groups_[g].size()) continue;
      for (Combine how : {Combine::Sum, Combine::Mean, Combine::Max, Combine::Min})
        if ((ok = combines(members, how) && isLogicalBox(t->shape, combine(members, how)))) {
          static const char* const names[] = {"sum", "mean", "maximum", "minimum"};
          partial_[{d, v}] = {names[static_cast<int>(how)], groups_[g]};
          break;
        }
    }
    return memo->second = ok;
  }

  // A maximum (minimum) over ranks only says something when two ranks hold it somewhere: else it is one
  // rank's value with the others below it, which matches whenever that rank's value alone does.
  static bool combines(const std::vector<const TensorValues*>& members, Combine how) {
    if (how == Combine::Sum || how == Combine::Mean) return true;
    std::set<size_t> holders;
    for (size_t i = 0; i < members.front()->values.size() && holders.size() < 2; ++i) {
      size_t best = 0;
      for (size_t m = 1; m < members.size(); ++m) {
        const double x = members[m]->values[i], b = members[best]->values[i];
        if (how == Combine::Max ? x > b : x < b) best = m;
      }
      holders.insert(best);
    }
    return holders.size() >= 2;
  }

  static std::vector<double> combine(const std::vector<const TensorValues*>& members, Combine how) {
    std::vector<double> out = members.front()->values;
    for (size_t m = 1; m < members.size(); ++m)
      for (size_t i = 0; i < out.size(); ++i) {
        const double x = members[m]->values[i];
        out[i] = how == Combine::Max   ? std::max(out[i], x)
                 : how == Combine::Min ? std::min(out[i], x)
                                       : out[i] + x;
      }
    if (how == Combine::Mean)
      for (double& x : out)
        x /= static_cast<double>(members.size());
    return out;
  }

  // `x` equals some logical value of the stage on one block of a regular grid (the whole of it included).
  bool isLogicalBox(const Shape& shape, const std::vector<double>& x) {
    return !blocksOf(shape, x, 1).empty();
  }

  // Where `x` sits in the model: (logical shape, block index on the grid of `shape`) of up to `limit` blocks
  // of logical values that it equals (of `only`, when given).
  std::set<Block> blocksOf(const Shape& shape, const std::vector<double>& x, size_t limit,
                           const TensorValues* only = nullptr) {
    std::set<Block> found;
    const size_t rank = shape.size();
    for (const TensorValues* l : logical_) {
      if (only && l != only) continue;
      if (l->shape.size() != rank) continue;
      std::vector<int64_t> blocks(rank), strides(rank, 1);
      int64_t count = 1;
      bool grid = true;
      for (size_t a = 0; a < rank && grid; ++a) {
        grid = shape[a] > 0 && l->shape[a] % shape[a] == 0;
        if (grid) blocks[a] = l->shape[a] / shape[a];
        count *= grid ? blocks[a] : 1;
        grid = grid && count <= 4096;
      }
      if (!grid) continue;
      for (size_t a = rank; a-- > 1;)
        strides[a - 1] = strides[a] * l->shape[a];
      std::vector<int64_t> block(rank, 0);
      for (int64_t b = 0; b < count; ++b) {
        if (budget_ < 0) {
          exhausted_ = true;
          return {};
        }
        // Walk the block's elements with an odometer over `shape`.
        std::vector<int64_t> idx(rank, 0);
        bool same = true;
        for (size_t i = 0; i < x.size() && same; ++i) {
          int64_t at = 0;
          for (size_t a = 0; a < rank; ++a)
            at += (block[a] * shape[a] + idx[a]) * strides[a];
          same = close(x[i], l->values[static_cast<size_t>(at)]);
          --budget_;
          for (size_t a = rank; a-- > 0;) {
            if (++idx[a] < shape[a]) break;
            idx[a] = 0;
          }
        }
        if (same && found.insert({l->shape, block}).second && found.size() >= limit) return found;
        for (size_t a = rank; a-- > 0;) {
          if (++block[a] < blocks[a]) break;
          block[a] = 0;
        }
      }
    }
    return found;
  }

  // The wrong op reads a constant (a mask, positions) that is the model's value at another block than the
  // values it is combined with (a causal mask built for rows 0.. on the rank holding rows n..): the op that
  // built it for the wrong place is where the stage goes wrong. Empty when no constant input is such.
  std::optional<WrongOp> misplacedConstant(const Node& n) {
    const Op& op = opAt(n);
    for (ValueId c : op.inputs) {
      const TensorValues* ct = constant(n.first, c) ? valuesOf(n.first, c) : nullptr;
      if (!ct || ct->values.size() < 2) continue;
      std::set<Block> home;  // where the op's other inputs of the same shape sit
      for (ValueId v : op.inputs) {
        const TensorValues* t = v == c || constant(n.first, v) ? nullptr : valuesOf(n.first, v);
        if (!t || t->shape != ct->shape) continue;
        const std::set<Block> at = blocksOf(t->shape, t->values, 16);
        home.insert(at.begin(), at.end());
      }
      if (home.empty() || !placedElsewhere(*ct, home)) continue;
      // The first op building it whose value of this shape is already placed elsewhere.
      const Graph& g = plan_.devices[n.first].graph;
      std::set<ValueId> chain{c};
      std::vector<OpId> builders;
      std::vector<ValueId> stack{c};
      while (!stack.empty()) {
        const ValueId v = stack.back();
        stack.pop_back();
        const OpId p = g.values[v].producer;
        if (p == kNone || !inStage_.count({n.first, p})) continue;
        builders.push_back(p);
        for (ValueId in : g.ops[p].inputs)
          if (chain.insert(in).second) stack.push_back(in);
      }
      std::sort(builders.begin(), builders.end());
      builders.erase(std::unique(builders.begin(), builders.end()), builders.end());
      for (OpId b : builders)
        for (ValueId out : g.ops[b].outputs) {
          const TensorValues* t = valuesOf(n.first, out);
          if (t && t->shape == ct->shape && placedElsewhere(*t, home))
            return WrongOp{plan_.devices[n.first].rank, b, out,
                           "the constant '" + g.values[out].name +
                               "' equals the model's value at another block " +
                               "than the values it is combined with (by '" + op.id +
                               "'): built for another rank's part?",
                           ""};
        }
    }
    return std::nullopt;
  }

  // The op reads only values of the model, but in a combination the model never reads them in: no logical op
  // of its kind reads the logical tensors its inputs equal, and one that differs at a single input reads
  // another tensor there. When that input was received, the sender sent the wrong tensor (the gradient of a
  // pipeline stage's output where its input's belongs): the statement making the tensor sent is named.
  std::optional<WrongOp> wrongTensorSent(const Node& n) {
    const Op& op = opAt(n);
    const Graph& g = plan_.devices[n.first].graph;
    std::vector<std::set<std::string>> equals(op.inputs.size());  // empty: any (a constant)
    for (size_t p = 0; p < op.inputs.size(); ++p) {
      if (constant(n.first, op.inputs[p])) continue;
      const TensorValues* t = valuesOf(n.first, op.inputs[p]);
      if (!t) return std::nullopt;
      equals[p] = logicalNamesOf(t->shape, t->values);
      if (equals[p].empty() || exhausted_) return std::nullopt;
    }
    // Inputs a logical op of this kind, alike at every other input, reads otherwise, and what it reads there.
    std::map<size_t, std::set<std::string>> ports;
    for (const Op& lop : plan_.logical.ops) {
      if (lop.kind != op.kind || lop.inputs.size() != op.inputs.size()) continue;
      std::vector<size_t> differ;
      for (size_t p = 0; p < op.inputs.size(); ++p)
        if (!equals[p].empty() && !equals[p].count(plan_.logical.values[lop.inputs[p]].name))
          differ.push_back(p);
      if (differ.empty()) return std::nullopt;  // the model reads them so: the op itself is wrong
      if (differ.size() == 1) ports[differ[0]].insert(plan_.logical.values[lop.inputs[differ[0]]].name);
    }
    // Of those, the one received (a local value is the receiver's own).
    std::optional<size_t> port;
    for (const auto& [p, wanted] : ports) {
      const OpId made = g.values[op.inputs[p]].producer;
      if (made == kNone || g.ops[made].kind != "recv") continue;
      if (port) return std::nullopt;
      port = p;
    }
    if (!port) return partOfWanted(n, ports, equals);
    const ValueId read = op.inputs[*port];
    const OpId recv = g.values[read].producer;
    for (const Node& peer : exchangeOf({n.first, recv})) {
      const Op& send = opAt(peer);
      if (send.kind != "send" || send.inputs.empty()) continue;
      const Graph& sg = plan_.devices[peer.first].graph;
      const Json* made = recorded(peer.first, sg.values[send.inputs[0]].producer);
      if (!made || !made->contains("at")) return std::nullopt;
      const std::string at = made->value("at", "");
      return WrongOp{plan_.devices[n.first].rank, n.second, op.outputs.empty() ? kNone : op.outputs[0],
                     "it reads '" + g.values[read].name + "', received from rank " +
                         std::to_string(plan_.devices[peer.first].rank) + ", the model's value of '" +
                         *equals[*port].begin() + "', which the model's " + op.kind +
                         " does not read there: the wrong tensor sent? (made at " + at + ")",
                     at};
    }
    return std::nullopt;
  }

  // A local input that is a model value, but an earlier one, whose sum over a group of ranks is what the
  // model reads there: gradients accumulated over one replica's micro-batches equal the model's accumulation
  // after its first micro-batch, and their all-reduce was forgotten.
  std::optional<WrongOp> partOfWanted(const Node& n, const std::map<size_t, std::set<std::string>>& ports,
                                      const std::vector<std::set<std::string>>& equals) {
    const Op& op = opAt(n);
    const Graph& g = plan_.devices[n.first].graph;
    for (const auto& [p, wanted] : ports)
      for (const std::vector<int>& group : groups_) {
        std::vector<double> sum;
        if (!sumOver(group, n.first, op.inputs[p], sum)) continue;
        std::string is;
        for (const std::string& name : logicalNamesOf(g.values[op.inputs[p]].type.shape, sum))
          if (wanted.count(name)) is = name;
        if (is.empty()) continue;
        const std::string site = statementAfter(n.first, op.inputs[p], n.second);
        return WrongOp{plan_.devices[n.first].rank, n.second, op.outputs.empty() ? kNone : op.outputs[0],
                       "it reads '" + g.values[op.inputs[p]].name + "', the model's value of '" +
                           *equals[p].begin() + "', whose sum over ranks " + rankList(group) +
                           " is the model's '" + is + "' that its " + op.kind +
                           " reads there: " + collectiveMissing(site),
                       site};
      }
    return std::nullopt;
  }

  // The names of the logical values of the stage that `x` equals a block of.
  std::set<std::string> logicalNamesOf(const Shape& shape, const std::vector<double>& x) {
    std::set<std::string> names;
    for (const TensorValues* l : logical_)
      if (!blocksOf(shape, x, 1, l).empty()) names.insert(l->name);
    return names;
  }

  // Equals the model somewhere, but at none of `home`'s blocks.
  bool placedElsewhere(const TensorValues& t, const std::set<Block>& home) {
    const std::set<Block> at = blocksOf(t.shape, t.values, 16);
    if (at.empty()) return false;
    for (const Block& b : at)
      if (home.count(b)) return false;
    return true;
  }

  // The ops a checked value that differs depends on, across ranks through the stage's collectives and p2p.
  std::set<Node> upstreamOfDiffs() const {
    std::set<Node> seen;
    std::vector<Node> stack;
    auto reach = [&](const Node& n) {
      if (inStage_.count(n) && seen.insert(n).second) stack.push_back(n);
    };
    auto reachValue = [&](size_t d, ValueId v) {
      if (v != kNone) reach({d, plan_.devices[d].graph.values[v].producer});
    };
    for (const ElementDiff& e : cex_.diffs) {
      if (e.device != kNone) {
        if (auto d = deviceOf_.find(e.device); d != deviceOf_.end())
          reachValue(d->second, plan_.devices[d->second].graph.findValue(e.tensor));
        continue;
      }
      for (int r : stage_.devices)  // a sum of value parts: every part on the stage's ranks
        if (auto d = deviceOf_.find(r); d != deviceOf_.end())
          for (const auto& [v, lin] : plan_.devices[d->second].lineage)
            if (lin.tensor == e.logicalTensor) reachValue(d->second, v);
    }
    while (!stack.empty()) {
      const Node n = stack.back();
      stack.pop_back();
      for (ValueId v : opAt(n).inputs)
        reachValue(n.first, v);
      for (const Node& peer : exchangeOf(n))
        reach(peer);
    }
    return seen;
  }

  // The wrong value is made right again further on (an op after it agrees with the model), as a local
  // maximum is by its all-reduce: a step of a different algebra, not the error.
  bool setRightDownstream(const Node& from) {
    std::set<Node> seen{from};
    std::vector<Node> stack{from};
    while (!stack.empty() && !exhausted_) {
      const Node n = stack.back();
      stack.pop_back();
      std::vector<Node> next = exchangeOf(n);
      for (ValueId v : opAt(n).outputs)
        for (OpId c : consumers(n.first)[v])
          next.push_back({n.first, c});
      for (const Node& m : next) {
        if (!inStage_.count(m) || !seen.insert(m).second) continue;
        for (ValueId v : opAt(m).outputs)
          if (!constant(m.first, v) && agrees(m.first, v)) return true;
        stack.push_back(m);
      }
    }
    return false;
  }

  std::vector<Node> exchangeOf(const Node& n) const {
    auto it = opAt(n).attrs.find("instance");
    if (it == opAt(n).attrs.end()) return {};
    auto e = exchanges_.find(it->dump());
    return e == exchanges_.end() ? std::vector<Node>{} : e->second;
  }

  const std::vector<std::vector<OpId>>& consumers(size_t d) {
    auto [it, fresh] = consumers_.try_emplace(d);
    if (fresh) it->second = plan_.devices[d].graph.consumers();
    return it->second;
  }

  const StageInfo& stage_;
  const CounterexampleReport& cex_;
  const Plan& plan_;
  std::unordered_map<int, size_t> deviceOf_;  // rank -> device index
  std::map<std::pair<size_t, std::string>, const TensorValues*> device_;
  std::vector<const TensorValues*> logical_;
  std::set<std::string> logicalNames_;
  std::set<Node> inStage_;
  std::vector<Node> order_;
  std::map<std::string, std::vector<Node>> exchanges_;  // communication instance -> its ops in the stage
  std::vector<std::vector<int>> groups_;                // rank groups a partial value may be spread over
  std::map<std::pair<size_t, ValueId>, bool> agrees_;
  // Values that agree only combined over a group: how, and the group's ranks.
  std::map<std::pair<size_t, ValueId>, std::pair<std::string, std::vector<int>>> partial_;
  std::map<size_t, std::vector<char>> constants_;
  std::map<size_t, std::vector<std::vector<OpId>>> consumers_;
  // Element comparisons left: the judge gives up on a stage too large to judge quickly.
  int64_t budget_ = int64_t{20} * 1000 * 1000;
  bool exhausted_ = false;
  int reevaluated_ = 0;  // ops re-evaluated with an input summed (completedBy)
};

}  // namespace

std::optional<WrongOp> firstWrongOp(const StageInfo& stage, const CounterexampleReport& cex,
                                    const Plan& plan) {
  return Judge(stage, cex, plan).run();
}

}  // namespace paraproof::verify
