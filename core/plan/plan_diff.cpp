#include "core/plan/plan_diff.h"

#include <map>
#include <set>

namespace paraproof {

namespace {

using Change = PlanElementDiff::Change;
using Element = PlanElementDiff::Element;

std::string quoted(const std::string& s) {
  return "'" + s + "'";
}

std::string typeString(const TensorType& t) {
  return std::string(dtypeName(t.dtype)) + shapeString(t.shape);
}

std::string lineageString(const Lineage& l) {
  std::string s = l.tensor;
  for (size_t k = 0; k < l.box.ranges.size(); ++k)
    s += (k ? "," : "[") + std::to_string(l.box.ranges[k].first) + ":" +
         std::to_string(l.box.ranges[k].second);
  if (!l.box.ranges.empty()) s += "]";
  if (l.parts > 1) s += " part " + std::to_string(l.part) + " of " + std::to_string(l.parts);
  return s;
}

// One graph with its lineage (none for the logical graph).
struct Side {
  const Graph& graph;
  const std::map<ValueId, Lineage>* lineage;

  std::string lineageOf(ValueId v) const {
    if (!lineage) return "";
    auto it = lineage->find(v);
    return it == lineage->end() ? "none" : lineageString(it->second);
  }
  // An op's identity apart from its id: its kind and where its outputs lie in the logical model.
  std::string signature(const Op& op) const {
    std::string s = op.kind;
    for (ValueId v : op.outputs)
      s += "|" + lineageOf(v);
    return s;
  }
};

void compareAttrs(const Json& a, const Json& b, std::vector<std::string>& out) {
  std::set<std::string> keys;
  for (const auto* attrs : {&a, &b})
    if (attrs->is_object())
      for (auto it = attrs->begin(); it != attrs->end(); ++it)
        keys.insert(it.key());
  for (const std::string& k : keys) {
    const bool inA = a.contains(k), inB = b.contains(k);
    if (inA && inB && a[k] == b[k]) continue;
    out.push_back("attribute " + k + ": " + (inA ? a[k].dump() : "(none)") + " -> " +
                  (inB ? b[k].dump() : "(none)"));
  }
}

// The value lists of two matched ops (inputs or outputs), by name, type and lineage.
void compareValues(const char* what, const Side& sa, const std::vector<ValueId>& va, const Side& sb,
                   const std::vector<ValueId>& vb, std::vector<std::string>& out) {
  if (va.size() != vb.size()) {
    out.push_back(std::string(what) + "s: " + std::to_string(va.size()) + " -> " + std::to_string(vb.size()));
    return;
  }
  for (size_t k = 0; k < va.size(); ++k) {
    const Value& x = sa.graph.values[static_cast<size_t>(va[k])];
    const Value& y = sb.graph.values[static_cast<size_t>(vb[k])];
    const std::string at = std::string(what) + " " + std::to_string(k);
    if (x.name != y.name) out.push_back(at + ": " + quoted(x.name) + " -> " + quoted(y.name));
    if (!(x.type == y.type)) out.push_back(at + " type: " + typeString(x.type) + " -> " + typeString(y.type));
    const std::string la = sa.lineageOf(va[k]), lb = sb.lineageOf(vb[k]);
    if (la != lb) out.push_back("lineage of " + quoted(y.name) + ": " + la + " -> " + lb);
  }
}

std::vector<std::string> compareOps(const Side& sa, const Op& a, const Side& sb, const Op& b) {
  std::vector<std::string> out;
  if (a.id != b.id) out.push_back("id: " + quoted(a.id) + " -> " + quoted(b.id));
  if (a.kind != b.kind) out.push_back("kind: " + a.kind + " -> " + b.kind);
  compareAttrs(a.attrs, b.attrs, out);
  compareValues("input", sa, a.inputs, sb, b.inputs, out);
  compareValues("output", sa, a.outputs, sb, b.outputs, out);
  if (a.origin != b.origin) out.push_back("origin: " + quoted(a.origin) + " -> " + quoted(b.origin));
  return out;
}

void diffGraphs(int rank, const Side& sa, const Side& sb, std::vector<PlanElementDiff>& out) {
  // Graph inputs by name: their type and lineage.
  for (ValueId v : sb.graph.inputs) {
    const Value& y = sb.graph.values[static_cast<size_t>(v)];
    const ValueId u = sa.graph.findValue(y.name);
    PlanElementDiff d{Change::Changed, rank, Element::Input, y.name, y.name, {}};
    if (u == kNone || sa.graph.values[static_cast<size_t>(u)].producer != kNone) {
      d.change = Change::Added;
      d.a.clear();
      d.details.push_back(typeString(y.type) + (sb.lineage ? ", lineage " + sb.lineageOf(v) : ""));
    } else {
      compareValues("input", sa, {u}, sb, {v}, d.details);
      if (d.details.empty()) continue;
    }
    out.push_back(std::move(d));
  }
  for (ValueId u : sa.graph.inputs) {
    const Value& x = sa.graph.values[static_cast<size_t>(u)];
    const ValueId v = sb.graph.findValue(x.name);
    if (v == kNone || sb.graph.values[static_cast<size_t>(v)].producer != kNone)
      out.push_back({Change::Removed, rank, Element::Input, x.name, "", {typeString(x.type)}});
  }

  // Ops by id, then the rest by kind and output lineage.
  std::vector<OpId> matchOf(sb.graph.ops.size(), kNone);
  std::vector<bool> usedA(sa.graph.ops.size(), false);
  for (size_t o = 0; o < sb.graph.ops.size(); ++o) {
    const OpId m = sa.graph.findOp(sb.graph.ops[o].id);
    if (m != kNone) {
      matchOf[o] = m;
      usedA[static_cast<size_t>(m)] = true;
    }
  }
  std::multimap<std::string, OpId> unmatchedA;
  for (size_t o = 0; o < sa.graph.ops.size(); ++o)
    if (!usedA[o]) unmatchedA.emplace(sa.signature(sa.graph.ops[o]), static_cast<OpId>(o));
  for (size_t o = 0; o < sb.graph.ops.size(); ++o) {
    if (matchOf[o] != kNone || !sb.lineage) continue;
    auto it = unmatchedA.find(sb.signature(sb.graph.ops[o]));
    if (it == unmatchedA.end()) continue;
    matchOf[o] = it->second;
    usedA[static_cast<size_t>(it->second)] = true;
    unmatchedA.erase(it);
  }
  // In the second plan's order, each removed op where the first plan had it.
  size_t nextA = 0;
  auto flushRemoved = [&](size_t upTo) {
    for (; nextA < upTo && nextA < sa.graph.ops.size(); ++nextA)
      if (!usedA[nextA]) {
        const Op& x = sa.graph.ops[nextA];
        out.push_back({Change::Removed, rank, Element::Op, x.id, "", {"kind " + x.kind}});
      }
  };
  for (size_t o = 0; o < sb.graph.ops.size(); ++o) {
    const Op& y = sb.graph.ops[o];
    if (matchOf[o] == kNone) {
      out.push_back({Change::Added, rank, Element::Op, "", y.id, {"kind " + y.kind}});
      continue;
    }
    flushRemoved(static_cast<size_t>(matchOf[o]));
    const Op& x = sa.graph.ops[static_cast<size_t>(matchOf[o])];
    std::vector<std::string> details = compareOps(sa, x, sb, y);
    if (!details.empty()) out.push_back({Change::Changed, rank, Element::Op, x.id, y.id, std::move(details)});
  }
  flushRemoved(sa.graph.ops.size());

  // Graph outputs by name: what the graph gives (a device that outputs its old state instead of the new).
  auto producer = [](const Side& s, ValueId v) {
    const OpId p = s.graph.values[static_cast<size_t>(v)].producer;
    return p == kNone ? std::string("graph input") : "op " + quoted(s.graph.ops[static_cast<size_t>(p)].id);
  };
  std::set<std::string> givenA, givenB;
  for (ValueId v : sa.graph.outputs)
    givenA.insert(sa.graph.values[static_cast<size_t>(v)].name);
  for (ValueId v : sb.graph.outputs)
    givenB.insert(sb.graph.values[static_cast<size_t>(v)].name);
  for (ValueId v : sa.graph.outputs)
    if (!givenB.count(sa.graph.values[static_cast<size_t>(v)].name))
      out.push_back({Change::Removed,
                     rank,
                     Element::Output,
                     sa.graph.values[static_cast<size_t>(v)].name,
                     "",
                     {"was given by " + producer(sa, v)}});
  for (ValueId v : sb.graph.outputs)
    if (!givenA.count(sb.graph.values[static_cast<size_t>(v)].name))
      out.push_back({Change::Added,
                     rank,
                     Element::Output,
                     "",
                     sb.graph.values[static_cast<size_t>(v)].name,
                     {"given by " + producer(sb, v) + (sb.lineage ? ", lineage " + sb.lineageOf(v) : "")}});
}

std::string meshString(const Mesh& m) {
  std::string s;
  for (size_t i = 0; i < m.axes.size(); ++i)
    s += (i ? "," : "") + m.axes[i] + "=" + (i < m.shape.size() ? std::to_string(m.shape[i]) : "?");
  return s;
}

}  // namespace

PlanDiff diffPlans(const Plan& a, const Plan& b) {
  PlanDiff diff;
  if (meshString(a.mesh) != meshString(b.mesh))
    diff.plan.push_back("mesh: " + meshString(a.mesh) + " -> " + meshString(b.mesh));
  std::set<std::pair<std::string, std::string>> stateA, stateB;
  for (const StatePair& s : a.state)
    stateA.insert({s.input, s.output});
  for (const StatePair& s : b.state)
    stateB.insert({s.input, s.output});
  for (const auto& [in, outName] : stateA)
    if (!stateB.count({in, outName})) diff.plan.push_back("state pair removed: " + in + " -> " + outName);
  for (const auto& [in, outName] : stateB)
    if (!stateA.count({in, outName})) diff.plan.push_back("state pair added: " + in + " -> " + outName);

  diffGraphs(kNone, {a.logical, nullptr}, {b.logical, nullptr}, diff.elements);
  std::map<int, const Device*> ranksA, ranksB;
  for (const Device& d : a.devices)
    ranksA[d.rank] = &d;
  for (const Device& d : b.devices)
    ranksB[d.rank] = &d;
  std::set<int> ranks;
  for (const auto* m : {&ranksA, &ranksB})
    for (const auto& [r, d] : *m)
      ranks.insert(r);
  for (int r : ranks) {
    auto x = ranksA.find(r), y = ranksB.find(r);
    if (x == ranksA.end() || y == ranksB.end()) {
      const bool inA = x != ranksA.end();
      const Plan& other = inA ? b : a;
      diff.plan.push_back("rank " + std::to_string(r) + ": stated only in the " + (inA ? "first" : "second") +
                          " plan" +
                          (other.replicas || other.microbatches ? " (the other, compact, implies it)" : "") +
                          ": not compared op by op");
      continue;
    }
    diffGraphs(r, {x->second->graph, &x->second->lineage}, {y->second->graph, &y->second->lineage},
               diff.elements);
  }
  return diff;
}

const char* changeName(PlanElementDiff::Change c) {
  switch (c) {
    case Change::Added:
      return "added";
    case Change::Removed:
      return "removed";
    case Change::Changed:
      return "changed";
  }
  return "?";
}

const char* elementName(PlanElementDiff::Element e) {
  switch (e) {
    case Element::Op:
      return "op";
    case Element::Input:
      return "input";
    case Element::Output:
      return "output";
  }
  return "?";
}

std::string describe(const PlanElementDiff& d) {
  std::string s = d.rank == kNone ? "logical" : "rank " + std::to_string(d.rank);
  s += std::string(" ") + elementName(d.element) + " " + quoted(d.name()) + " " + changeName(d.change);
  for (size_t k = 0; k < d.details.size(); ++k)
    s += (k ? "; " : ": ") + d.details[k];
  return s;
}

}  // namespace paraproof
