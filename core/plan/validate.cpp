#include "core/plan/validate.h"

#include "core/ir/halves.h"
#include "core/plan/json_reader.h"
#include "core/plan/validate_checks.h"

namespace paraproof {

namespace validation {

void Report::add(const std::string& ptr, std::string message) {
  out_.push_back(Diagnostic{planjson::place(source_, ptr), std::move(message)});
}

std::string devicePtr(size_t device) {
  return "/devices/" + std::to_string(device);
}

std::string opPtr(size_t device, OpId op) {
  return devicePtr(device) + "/ops/" + std::to_string(op);
}

std::string lineagePtr(const Plan& plan, size_t device, ValueId v) {
  return planjson::child(devicePtr(device) + "/lineage", plan.devices[device].graph.values[v].name);
}

std::string who(const Device& d) {
  return "rank " + std::to_string(d.rank) + ": ";
}

std::string boxString(const Box& b) {
  if (b.ranges.empty()) return "[] (scalar)";
  std::string s;
  for (size_t k = 0; k < b.ranges.size(); ++k)
    s +=
        (k ? "x[" : "[") + std::to_string(b.ranges[k].first) + "," + std::to_string(b.ranges[k].second) + ")";
  return s;
}

const Value* logicalValue(const Plan& plan, const std::string& name) {
  ValueId v = plan.logical.findValue(name);
  return v == kNone ? nullptr : &plan.logical.values[v];
}

const Value* logicalValue(const Plan& plan, const Lineage& l) {
  const ValueId v = lineageValue(plan.logical, l);
  return v == kNone ? nullptr : &plan.logical.values[v];
}

const Value* lineageTensor(const Plan& plan, const Lineage& l) {
  const Value* t = logicalValue(plan, l);
  if (!t || l.box.ranges.size() != t->type.shape.size() || l.parts < 1 || l.part < 0 || l.part >= l.parts)
    return nullptr;
  for (size_t k = 0; k < l.box.ranges.size(); ++k) {
    auto [a, b] = l.box.ranges[k];
    if (a < 0 || b > t->type.shape[k] || a >= b) return nullptr;
  }
  return t;
}

bool isCollectiveOp(const Op& op) {
  return isCollective(op.kind) && (op.kind != "broadcast" || op.attrs.contains("instance"));
}

std::string commInstance(const Op& op) {
  auto it = op.attrs.find("instance");
  return it != op.attrs.end() && it->is_string() ? it->get<std::string>() : "";
}

int commPeer(const Op& op) {
  auto it = op.attrs.find("peer");
  return it != op.attrs.end() && it->is_number_integer() ? it->get<int>() : kNone;
}

std::vector<int> commGroup(const Op& op) {
  std::vector<int> g;
  auto it = op.attrs.find("group");
  if (it == op.attrs.end() || !it->is_array()) return g;
  for (const Json& r : *it) {
    if (!r.is_number_integer()) return {};
    g.push_back(r.get<int>());
  }
  return g;
}

}  // namespace validation

namespace {

// `sizeDependentOnly`: only the checks that read extents, index-valued attributes or box ends
// (validateReducedPlan).
std::vector<Diagnostic> validate(const Plan& plan, const std::string& source, bool sizeDependentOnly) {
  using namespace validation;
  std::vector<Diagnostic> diags;
  Report r(source, diags);
  const bool ranksUnique = checkMesh(plan, r);
  // Two families of checks that only read the plan, of about equal cost on a frontier plan: on a large plan
  // (a folded frontier plan, validated after each fold and each reduction) they run on two threads; the
  // diagnostics keep the order of a serial run.
  auto graphsAndLineage = [&](Report& out) {
    checkLogicalGraph(plan, out);
    checkAttributes(plan, out);
    checkLineage(plan, out);
    checkDeviceInputs(plan, out);
    if (!sizeDependentOnly) checkValueParts(plan, out);
  };
  auto communication = [&](Report& out) {
    // A hang is only meaningful once every call has a well-defined partner.
    if (checkCommunication(plan, out) && ranksUnique && !sizeDependentOnly)
      checkCommunicationOrder(plan, out);
    checkCoverage(plan, out);
    checkStateDeclaration(plan, out);
  };
  if (!largePlan(plan)) {
    graphsAndLineage(r);
    communication(r);
    return diags;
  }
  std::vector<Diagnostic> later;
  Report laterReport(source, later);
  inTwoHalves(2, true, [&](size_t begin, size_t end) {  // family 0 here, family 1 on a second thread
    for (size_t family = begin; family < end; ++family)
      family == 0 ? graphsAndLineage(r) : communication(laterReport);
  });
  diags.insert(diags.end(), std::make_move_iterator(later.begin()), std::make_move_iterator(later.end()));
  return diags;
}

}  // namespace

std::vector<Diagnostic> validatePlan(const Plan& plan, const std::string& source) {
  return validate(plan, source, false);
}

std::vector<Diagnostic> validateReducedPlan(const Plan& reduced, const std::string& source) {
  return validate(reduced, source, true);
}

}  // namespace paraproof
