// Scalar expression DAG: every op's semantics lowers to it, every engine (Z3, random field, concrete
// double) interprets it. Nodes are hash-consed, Add/Mul/Max/Min are flattened and sorted, so structurally
// equal terms share one id.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/sym/huge_pages.h"

namespace paraproof::sym {

using ExprId = uint32_t;

enum class Sort : uint8_t { Real, Int, Bool };

enum class Kind : uint8_t {
  Const,  // Real: `value` (an exact binary rational); Int: `ivalue`; Bool: ivalue 0/1
  Var,    // free input; `var` indexes ExprPool::vars()
  Add,    // n-ary, Real or Int
  Mul,    // n-ary, Real or Int
  Div,    // Real / Real
  Apply,  // uninterpreted-in-the-proof function `fn` of Real args -> Real
  Lt,     // a < b, both Real or both Int -> Bool
  Le,     // a <= b
  Eq,     // a == b
  And,
  Or,
  Not,
  Ite,     // Bool ? T : T
  ToReal,  // Int -> Real
  Max,     // n-ary, Real or Int: flattened, sorted, duplicates removed (associative, commutative,
  Min,     // idempotent), so max over shards and the global max share one node
};

// Non-polynomial functions. The proof treats them as uninterpreted (sound: a plan equal for every
// function is equal for the real one); concrete evaluation uses the real function.
// New functions go last: the numbering is part of stage signatures and canonical hashes.
enum class Fn : uint8_t { Exp, Log, Sqrt, Sigmoid, Tanh, Erf, Pow /* args: x, Const exponent */, Sin, Cos };
const char* fnName(Fn f);

// A node's arguments: up to three inline (products and sums of two, function applications), more on the
// heap. A stage's lowering makes millions of nodes, and a vector each was a tenth of its time in malloc.
class NodeArgs {
 public:
  NodeArgs() = default;
  NodeArgs(std::initializer_list<ExprId> ids) { take(ids.begin(), ids.size()); }
  NodeArgs(const std::vector<ExprId>& ids) { take(ids.data(), ids.size()); }
  NodeArgs(const NodeArgs& o) { take(o.data(), o.size_); }
  NodeArgs(NodeArgs&& o) noexcept { steal(o); }
  NodeArgs& operator=(const NodeArgs& o) {
    if (this != &o) {
      NodeArgs copy(o);
      release();
      steal(copy);
    }
    return *this;
  }
  NodeArgs& operator=(NodeArgs&& o) noexcept {
    if (this != &o) {
      release();
      steal(o);
    }
    return *this;
  }
  ~NodeArgs() { release(); }

  const ExprId* data() const { return size_ > kInline ? heap_ : inline_; }
  const ExprId* begin() const { return data(); }
  const ExprId* end() const { return data() + size_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  ExprId operator[](size_t i) const { return data()[i]; }
  operator std::span<const ExprId>() const { return {data(), size_}; }

 private:
  static constexpr uint32_t kInline = 3;
  void take(const ExprId* from, size_t n) {
    ExprId* to = inline_;
    if (n > kInline) to = heap_ = new ExprId[n];
    std::copy_n(from, n, to);
    size_ = static_cast<uint32_t>(n);
  }
  void steal(NodeArgs& o) noexcept {
    size_ = o.size_;
    if (size_ > kInline)
      heap_ = o.heap_;
    else
      std::copy_n(o.inline_, size_, inline_);
    o.size_ = 0;
  }
  void release() noexcept {
    if (size_ > kInline) delete[] heap_;
    size_ = 0;
  }
  uint32_t size_ = 0;
  union {
    ExprId inline_[kInline];
    ExprId* heap_;
  };
};

struct Node {
  Kind kind;
  Sort sort;
  Fn fn = Fn::Exp;
  uint32_t var = 0;
  double value = 0;
  int64_t ivalue = 0;
  NodeArgs args = {};
};

// A free input as it is declared.
struct VarInfo {
  std::string name;  // e.g. "x[1,0]" or "dev3:w.part0[2]"
  Sort sort;
  int64_t lo = 0, hi = 0;  // Int vars range over [lo, hi)
};

// A free input as the pool stores it: its name is built on demand (ExprPool::varName), since a stage can
// hold millions of inputs and only a counterexample shows their names.
struct VarSlot {
  Sort sort;
  uint32_t family = 0;     // the tensor it is an element of (or a single named input)
  int64_t lo = 0, hi = 0;  // Int vars range over [lo, hi)
  int64_t element = -1;    // row-major index in the family's shape; -1: the family's name alone
};

// Thrown when a pool would grow past its node limit (ExprPool::setNodeLimit).
struct PoolLimitExceeded : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class ExprPool {
 public:
  ExprPool();

  // Bounds the number of nodes (lowering a huge stage must fail cleanly, not exhaust memory); a node that
  // would exceed it throws PoolLimitExceeded. Unlimited by default.
  void setNodeLimit(size_t limit) { nodeLimit_ = limit; }

  const Node& node(ExprId e) const { return e < baseSize_ ? base_->nodes[e] : nodes_[e - baseSize_]; }
  Sort sort(ExprId e) const { return node(e).sort; }
  size_t size() const { return baseSize_ + nodes_.size(); }

  // Moves every node into a shared immutable base: copies of the pool made afterwards share it and copy only
  // the nodes added since (the end-to-end oracle copies the correct plan's pool for every mutant).
  void freeze();
  const std::vector<VarSlot>& vars() const { return vars_; }
  std::string varName(uint32_t var) const;

  ExprId real(double v);
  ExprId integer(int64_t v);
  ExprId boolean(bool b);
  ExprId zero() const { return zero_; }
  ExprId one() const { return one_; }
  ExprId var(VarInfo info);
  // One input per element of a tensor of `shape`, named name[i,j,...] (row-major order).
  std::vector<ExprId> vars(const std::string& name, const std::vector<int64_t>& shape, Sort sort,
                           int64_t lo = 0, int64_t hi = 0);

  ExprId add(ExprId a, ExprId b);
  ExprId add(std::vector<ExprId> terms);  // empty -> 0 (Real)
  ExprId sub(ExprId a, ExprId b);
  ExprId neg(ExprId a);
  ExprId mul(ExprId a, ExprId b);
  ExprId mul(std::vector<ExprId> factors);
  ExprId div(ExprId a, ExprId b);
  ExprId scale(ExprId a, double c) { return mul(real(c), a); }
  ExprId apply(Fn f, std::vector<ExprId> args);
  ExprId lt(ExprId a, ExprId b);
  ExprId le(ExprId a, ExprId b);
  ExprId eq(ExprId a, ExprId b);
  ExprId land(ExprId a, ExprId b);
  ExprId lor(ExprId a, ExprId b);
  ExprId lnot(ExprId a);
  ExprId ite(ExprId c, ExprId t, ExprId e);
  ExprId max(ExprId a, ExprId b) { return extremum(Kind::Max, {a, b}); }
  ExprId min(ExprId a, ExprId b) { return extremum(Kind::Min, {a, b}); }
  ExprId max(std::vector<ExprId> xs) { return extremum(Kind::Max, std::move(xs)); }
  ExprId min(std::vector<ExprId> xs) { return extremum(Kind::Min, std::move(xs)); }
  ExprId toReal(ExprId i);

  // Called every 65536 new nodes; may throw to abandon a construction (one op can create millions of nodes,
  // so a stop request must be seen inside it). Clear it (nullptr) before the pool outlives its caller.
  void setGrowthCheck(std::function<void()> check) { growthCheck_ = std::move(check); }

  bool isConst(ExprId e) const { return node(e).kind == Kind::Const; }
  bool isConst(ExprId e, double v) const;

  // Human-readable rendering (bounded depth), for messages and debugging.
  std::string str(ExprId e, int depth = 6) const;

 private:
  struct Key;
  ExprId find(const Key& k, uint32_t hash) const;  // NodeIndex::kAbsent when new
  ExprId intern(Node n);
  ExprId intern(Kind kind, Sort sort, std::initializer_list<ExprId> args);  // allocates only when new
  ExprId push(Node n, const uint32_t* hash);                                // appends a node known to be new
  ExprId nary(Kind k, std::vector<ExprId> args);
  ExprId pair(Kind k, ExprId a, ExprId b);
  ExprId extremum(Kind k, std::vector<ExprId> args);

  // Hash-consing index: an open-addressing set of node ids that compares against the nodes themselves, so
  // a key is not stored twice and a lookup that hits allocates nothing (stages intern millions of terms).
  class NodeIndex {
   public:
    template <class SameNode>
    ExprId find(uint32_t hash, SameNode same) const;  // kAbsent when no id matches
    void insert(uint32_t hash, ExprId id);
    void insertAll(const NodeIndex& other);
    static constexpr ExprId kAbsent = UINT32_MAX;

   private:
    struct Slot {
      uint32_t hash = 0;  // the hash's high half: most probes of other nodes stop here
      ExprId id = kAbsent;
    };
    std::vector<Slot, HugePageAllocator<Slot>> slots_;  // a power of two, at most half full
    size_t count_ = 0;
  };
  struct Frozen {
    std::vector<Node, HugePageAllocator<Node>> nodes;
    NodeIndex index;
  };
  std::shared_ptr<const Frozen> base_;  // nodes [0, baseSize_)
  size_t baseSize_ = 0;
  std::vector<Node, HugePageAllocator<Node>> nodes_;  // nodes [baseSize_, size())
  struct VarFamily {
    std::string name;
    std::vector<int64_t> shape;
  };
  std::vector<VarSlot> vars_;
  std::vector<VarFamily> families_;
  NodeIndex index_;  // nodes_; base_ has its own
  ExprId zero_ = 0, one_ = 0;
  std::function<void()> growthCheck_;
  size_t nodeLimit_ = SIZE_MAX;
};

}  // namespace paraproof::sym
