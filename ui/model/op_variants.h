// The properties of one op on every device and micro-batch that runs it, grouped into variants: instances
// that are the same op (kind, attributes, value types, collective members relative to the device) share a
// variant, and the properties in which variants disagree are the deviation a debugging view must show.
// Qt-free: the properties panel draws it, tests read it.
#pragma once

#include <string>
#include <vector>

#include "core/plan/plan.h"

namespace paraproof::ui {

struct OpInstance {
  int device = kNone;  // index into Plan::devices
  OpId op = 0;
  int microBatch = -1;  // the op's "#m" copy; -1 without one
};

struct OpVariant {
  std::vector<OpInstance> instances;  // in device, then micro-batch order
  std::vector<std::string> values;    // one per OpVariants::rows
};

struct OpVariants {
  std::string name;                 // the op id without its micro-batch suffix
  std::vector<std::string> rows;    // property names: kind, each attribute, inputs, outputs, lineage
  std::vector<OpVariant> variants;  // the most common first
  std::vector<bool> differs;        // per row: the variants do not all agree
  bool empty() const { return variants.empty(); }
  int instanceCount() const;
};

// Every device op whose id is `opId` up to its micro-batch suffix ("layers.1.attention_norm.out#0" and
// "...#1" are one op). Empty when no device runs it.
OpVariants opVariants(const Plan& plan, const std::string& opId);

// "rank 2 · mb 0", "ranks 0-1,3 · mb 0-1": which instances a variant stands for.
std::string describeInstances(const Plan& plan, const std::vector<OpInstance>& instances);

}  // namespace paraproof::ui
