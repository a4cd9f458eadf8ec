// Emits one program (the logical graph, or one device graph) with lineage. Device value names are the
// logical names plus a micro-batch suffix; ops implementing a logical op carry it as `origin` and share its
// scope. Collectives over a group of one rank are skipped, so degrees 1 reproduce the logical graph.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/models/graph_builder.h"
#include "core/models/sharding.h"
#include "core/plan/plan.h"

namespace paraproof::models {

struct Val {
  ValueId id = kNone;
  Layout lay;
  bool valid() const { return id != kNone; }
};

class Emitter {
 public:
  // `lineage` null: emitting the logical graph (no origins, no lineage).
  Emitter(Graph& g, std::map<ValueId, Lineage>* lineage) : b_(g), lineage_(lineage) {}

  bool logical() const { return lineage_ == nullptr; }
  // Names emitted from now on get the suffix "#m" when the step has more than one micro-batch, then "~c"
  // for sequence chunk c when a device holds more than one (context parallel); m or c < 0: no such suffix.
  void setMicroBatch(int m, int count) {
    mbSuffix_ = names::microBatchSuffix(m, count);
    suffix_ = mbSuffix_ + chunkSuffix_;
  }
  void setChunk(int c, int count) {
    chunkSuffix_ = names::chunkSuffix(c, count);
    suffix_ = mbSuffix_ + chunkSuffix_;
  }
  const std::string& suffix() const { return suffix_; }

  Val input(const Layout& lay, DType dtype = DType::F32);
  Val op(const std::string& kind, const std::vector<Val>& in, const Json& attrs, const std::string& scope,
         const Layout& out, const std::string& origin = kAuto);
  std::vector<Val> opN(const std::string& kind, const std::vector<Val>& in, const Json& attrs,
                       const std::string& scope, const std::vector<Layout>& outs,
                       const std::string& origin = kAuto);

  // Collectives; each is the identity (returns its input) when the group has one rank.
  // `out` overrides the result's layout (e.g. a max over shards is the logical max).
  Val allReduce(const Val& x, const Group& g, const std::string& reduce, const std::string& scope,
                const std::optional<Layout>& out = std::nullopt);
  std::vector<Val> allReduceBucket(const std::vector<Val>& xs, const Group& g, const std::string& reduce,
                                   const std::string& scope);
  Val allGather(const Val& x, const Group& g, int dim, const Layout& out, const std::string& scope);
  Val reduceScatter(const Val& x, const Group& g, int dim, const std::string& reduce, const Layout& out,
                    const std::string& scope);
  Val allToAll(const Val& x, const Group& g, int splitDim, int concatDim, const Layout& out,
               const std::string& scope);
  void send(const Val& x, int self, int peer, const std::string& scope);
  Val recv(const Layout& lay, DType dtype, int self, int peer, const std::string& scope);

  void output(const Val& v) { b_.output(v.id); }
  const TensorType& type(const Val& v) const { return b_.type(v.id); }
  const std::string& name(const Val& v) const { return b_.name(v.id); }
  Graph& graph() { return b_.graph(); }

  static inline const std::string kAuto = "\x01auto";

 private:
  std::string valueName(const Layout& l) const { return (l.as.empty() ? l.name : l.as) + suffix_; }
  void record(ValueId v, const Layout& l);
  // Emits the op and records each output's layout.
  std::vector<Val> emit(const OpSpec& s, const std::vector<Layout>& outs);
  // A one-input collective over `g`, named "<input>/<tag>"; the identity when the group has one rank.
  Val collective(const std::string& kind, std::string_view tag, const Val& x, const Group& g, Json attrs,
                 const Layout& out, const std::string& scope);
  std::string uniqueName(const std::string& base) const;

  GraphBuilder b_;
  std::map<ValueId, Lineage>* lineage_;
  std::string mbSuffix_, chunkSuffix_, suffix_;
};

}  // namespace paraproof::models
