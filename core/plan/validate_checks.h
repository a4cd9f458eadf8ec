// The whole-plan checks behind validatePlan(), one family per file (internal).
#pragma once

#include <string>
#include <vector>

#include "core/plan/diagnostics.h"
#include "core/plan/plan.h"

namespace paraproof::validation {

// Collects diagnostics; places are JSON pointers built from indices, prefixed with the source file.
class Report {
 public:
  Report(const std::string& source, std::vector<Diagnostic>& out) : source_(source), out_(out) {}
  void add(const std::string& ptr, std::string message);
  size_t count() const { return out_.size(); }

 private:
  const std::string& source_;
  std::vector<Diagnostic>& out_;
};

std::string devicePtr(size_t device);
std::string opPtr(size_t device, OpId op);
std::string lineagePtr(const Plan& plan, size_t device, ValueId v);
std::string who(const Device& d);     // "rank 3: "
std::string boxString(const Box& b);  // "[0,2)x[0,4)"

// Logical tensor by name, or null.
const Value* logicalValue(const Plan& plan, const std::string& name);
const Value* logicalValue(const Plan& plan, const Lineage& l);  // the tensor it names (its hint, plan.h)
// The logical tensor the lineage names when its box has the right rank, is in bounds and non-empty; else
// null.
const Value* lineageTensor(const Plan& plan, const Lineage& l);
inline bool lineageWellFormed(const Plan& plan, const Lineage& l) {
  return lineageTensor(plan, l) != nullptr;
}

// A collective op (the shape op "broadcast" shares its name with the collective; the latter has an instance).
bool isCollectiveOp(const Op& op);
std::string commInstance(const Op& op);    // attrs.instance, "" if absent or not a string
int commPeer(const Op& op);                // attrs.peer, kNone if absent or not an integer
std::vector<int> commGroup(const Op& op);  // attrs.group, empty if absent or malformed

// Returns true when ranks are unique (the order simulation identifies devices by rank).
bool checkMesh(const Plan& plan, Report& r);
void checkLogicalGraph(const Plan& plan, Report& r);
void checkAttributes(const Plan& plan, Report& r);  // validate_attrs.cpp
void checkLineage(const Plan& plan, Report& r);
void checkDeviceInputs(const Plan& plan, Report& r);
void checkValueParts(const Plan& plan, Report& r);
// Returns true when every collective and send/recv is well matched (the order check needs that).
bool checkCommunication(const Plan& plan, Report& r);
void checkCommunicationOrder(const Plan& plan, Report& r);
void checkCoverage(const Plan& plan, Report& r);
void checkStateDeclaration(const Plan& plan, Report& r);

}  // namespace paraproof::validation
