// The pieces the bug catalog is made of (internal to core/parallel): the place a mutation applies to, what a
// bug needs of the plan, a catalog row, and the mutations several rows share. bug_catalog.cpp holds the rows;
// bugs.cpp resolves a request to a place and applies a row's mutation.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/parallel/bugs.h"
#include "core/parallel/generate.h"
#include "core/parallel/plan_edit.h"
#include "core/plan/plan.h"

namespace paraproof::parallel::catalog {

// What a mutation may rely on: the generated plan, its strategy, and the resolved place.
struct Where {
  Plan& plan;
  ParallelSpec spec;
  int layers = 0;
  bool llama = false;
  InjectionSite site;
  Injection& out;

  // A per-micro-batch value's name at the site; under cp, of the rank's first zig-zag chunk.
  std::string mb(const std::string& base) const { return microBatch(base) + names::chunkSuffix(0, spec.cp); }
  // The name of a value made once per micro-batch for both chunks (cp's key/value gradient halves).
  std::string microBatch(const std::string& base) const {
    return base + names::microBatchSuffix(site.microBatch, spec.mb);
  }
  std::string layer(const std::string& rest) const {
    return "layers." + std::to_string(site.layer) + "." + rest;
  }
  Device& dev(int rank) const { return deviceByRank(plan, rank); }
  Device& here() const { return dev(site.rank); }
  void changed(int rank, const std::string& op) { out.changedOps.emplace_back(rank, op); }
};

using Mutation = std::function<void(Where&)>;

struct Needs {
  int dp = 1, tp = 1, pp = 1, mb = 1, cp = 1, ep = 1;
  bool moe = false;  // the site layer is a MoE layer (default: the first one)
  int zero = 0;      // minimum ZeRO stage
  bool llama = false;
  bool tied = false;  // a model with tied embedding/output
  bool layer = true;  // the site names a layer
  bool sp = false;    // sequence parallelism
};

// One row of the catalog: what the bug is, what it needs of the plan, how it mutates it.
struct Item {
  BugEntry entry;
  Needs needs;
  Mutation mutate;
};

// The rows, in catalog order (bug_catalog.cpp).
std::vector<Item> buildCatalog();

// Mutation building blocks (bug_mutations.cpp).
std::vector<int> groupOf(const Op& o);
// Applies `fn` to the collective `opId` on every member of its group (the same op id on each: SPMD).
void onEveryMember(Where& w, const std::string& opId, const std::function<void(Device&, Op&)>& fn);
const std::string& nameOf(const Device& d, ValueId v);
Op& producerOf(Device& d, const std::string& value);  // by value name; throws for a graph input
std::string mlpOutputReduce(const Where& w);          // the all-reduce closing the layer's MLP
std::string gradBucket(Where& w);                     // the layer's data-parallel gradient bucket
void toIdentity(Device&, Op& o);
void setEps(Where& w, int rank);
void setAttentionScale(Where& w, int rank);
// Another rank holding the same layer: the neighbour along the first of `axes` that has one.
int neighbour(Where& w, std::vector<const char*> axes = {"tp", "dp"});
Mutation keepsOldState(std::string rest);
Mutation unreduced(std::string grad, std::string group);

}  // namespace paraproof::parallel::catalog
