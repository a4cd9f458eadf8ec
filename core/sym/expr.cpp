#include "core/sym/expr.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <optional>
#include <span>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace paraproof::sym {

const char* fnName(Fn f) {
  switch (f) {
    case Fn::Exp:
      return "exp";
    case Fn::Log:
      return "log";
    case Fn::Sqrt:
      return "sqrt";
    case Fn::Sigmoid:
      return "sigmoid";
    case Fn::Tanh:
      return "tanh";
    case Fn::Erf:
      return "erf";
    case Fn::Pow:
      return "pow";
    case Fn::Sin:
      return "sin";
    case Fn::Cos:
      return "cos";
  }
  return "?";
}

namespace {
// A constant's value as bits (of its sort); other kinds carry none.
uint64_t constBits(const Node& n) {
  if (n.kind != Kind::Const) return 0;
  return n.sort == Sort::Real ? std::bit_cast<uint64_t>(n.value) : static_cast<uint64_t>(n.ivalue);
}
}  // namespace

// What identifies a node, with its arguments borrowed: a lookup that hits allocates nothing.
struct ExprPool::Key {
  Kind kind;
  Sort sort;
  Fn fn;
  uint32_t var;
  uint64_t bits;
  std::span<const ExprId> args;
  static Key of(const Node& n) { return {n.kind, n.sort, n.fn, n.var, constBits(n), n.args}; }
};

namespace {
// 32 bits: the probe position is its low bits, and a slot keeps all of it to skip most other nodes unread.
uint32_t hashKey(Kind kind, Sort sort, Fn fn, uint32_t var, uint64_t bits, std::span<const ExprId> args) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](uint64_t x) { h = (h ^ x) * 1099511628211ull; };
  mix(static_cast<uint64_t>(kind) | static_cast<uint64_t>(sort) << 8 | static_cast<uint64_t>(fn) << 16 |
      static_cast<uint64_t>(var) << 24);
  mix(bits);
  for (ExprId a : args)
    mix(a);
  // splitmix64's finaliser: FNV leaves the low bits (the probe position) poorly mixed.
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return static_cast<uint32_t>(h ^ (h >> 31));
}

}  // namespace

template <class SameNode>
ExprId ExprPool::NodeIndex::find(uint32_t hash, SameNode same) const {
  if (slots_.empty()) return kAbsent;
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.id == kAbsent) return kAbsent;
    if (s.hash == hash && same(s.id)) return s.id;
  }
}

void ExprPool::NodeIndex::insert(uint32_t hash, ExprId id) {
  if (2 * (count_ + 1) > slots_.size()) {
    auto old = std::move(slots_);
    slots_.assign(old.empty() ? 64 : 2 * old.size(), Slot{});
    count_ = 0;
    for (const Slot& s : old)
      if (s.id != kAbsent) insert(s.hash, s.id);
  }
  const size_t mask = slots_.size() - 1;
  size_t i = hash & mask;
  while (slots_[i].id != kAbsent)
    i = (i + 1) & mask;
  slots_[i] = Slot{hash, id};
  ++count_;
}

void ExprPool::NodeIndex::insertAll(const NodeIndex& other) {
  for (const Slot& s : other.slots_)
    if (s.id != kAbsent) insert(s.hash, s.id);
}

ExprPool::ExprPool() {
  zero_ = real(0.0);
  one_ = real(1.0);
}

void ExprPool::freeze() {
  if (nodes_.empty()) return;
  auto f = std::make_shared<Frozen>();
  if (base_) {
    f->nodes = base_->nodes;
    f->index = base_->index;
  }
  f->nodes.insert(f->nodes.end(), std::make_move_iterator(nodes_.begin()),
                  std::make_move_iterator(nodes_.end()));
  f->index.insertAll(index_);
  nodes_.clear();
  index_ = {};
  baseSize_ = f->nodes.size();
  base_ = std::move(f);
}

// Inputs are never looked up (each call makes a new one), so they stay out of the index: `hash` is null.
ExprId ExprPool::push(Node n, const uint32_t* hash) {
  if (size() >= nodeLimit_)
    throw PoolLimitExceeded("more than " + std::to_string(nodeLimit_) + " expression nodes");
  ExprId id = static_cast<ExprId>(size());
  if ((id & 0xffff) == 0 && growthCheck_) growthCheck_();
  nodes_.push_back(std::move(n));
  if (hash) index_.insert(*hash, id);
  return id;
}

ExprId ExprPool::find(const Key& k, uint32_t hash) const {
  auto same = [&k](const Node& n) {
    return n.kind == k.kind && n.sort == k.sort && n.fn == k.fn && n.var == k.var && constBits(n) == k.bits &&
           std::ranges::equal(n.args, k.args);
  };
  if (base_) {
    ExprId b = base_->index.find(hash, [&](ExprId id) { return same(base_->nodes[id]); });
    if (b != NodeIndex::kAbsent) return b;
  }
  return index_.find(hash, [&](ExprId id) { return same(nodes_[id - baseSize_]); });
}

ExprId ExprPool::intern(Node n) {
  const Key k = Key::of(n);
  const uint32_t hash = hashKey(k.kind, k.sort, k.fn, k.var, k.bits, k.args);
  const ExprId hit = find(k, hash);
  return hit != NodeIndex::kAbsent ? hit : push(std::move(n), &hash);
}

ExprId ExprPool::intern(Kind kind, Sort sort, std::initializer_list<ExprId> args) {
  const Key k{kind, sort, Fn::Exp, 0, 0, std::span<const ExprId>(args.begin(), args.size())};
  const uint32_t hash = hashKey(k.kind, k.sort, k.fn, k.var, k.bits, k.args);
  const ExprId hit = find(k, hash);
  if (hit != NodeIndex::kAbsent) return hit;
  Node n{kind, sort};
  n.args = args;
  return push(std::move(n), &hash);
}

ExprId ExprPool::real(double v) {
  if (v == 0.0) v = 0.0;  // one zero: -0.0 and 0.0 are the same real
  Node n{Kind::Const, Sort::Real};
  n.value = v;
  return intern(std::move(n));
}

ExprId ExprPool::integer(int64_t v) {
  Node n{Kind::Const, Sort::Int};
  n.ivalue = v;
  return intern(std::move(n));
}

ExprId ExprPool::boolean(bool b) {
  Node n{Kind::Const, Sort::Bool};
  n.ivalue = b ? 1 : 0;
  return intern(std::move(n));
}

ExprId ExprPool::var(VarInfo info) {
  families_.push_back({std::move(info.name), {}});
  Node n{Kind::Var, info.sort};
  n.var = static_cast<uint32_t>(vars_.size());
  vars_.push_back({info.sort, static_cast<uint32_t>(families_.size() - 1), info.lo, info.hi});
  return push(n, nullptr);
}

std::vector<ExprId> ExprPool::vars(const std::string& name, const std::vector<int64_t>& shape, Sort sort,
                                   int64_t lo, int64_t hi) {
  int64_t count = 1;
  for (int64_t e : shape)
    count *= e;
  families_.push_back({name, shape});
  const auto family = static_cast<uint32_t>(families_.size() - 1);
  std::vector<ExprId> out;
  out.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    Node n{Kind::Var, sort};
    n.var = static_cast<uint32_t>(vars_.size());
    vars_.push_back({sort, family, lo, hi, i});
    out.push_back(push(n, nullptr));
  }
  return out;
}

std::string ExprPool::varName(uint32_t var) const {
  const VarSlot& v = vars_[var];
  const VarFamily& f = families_[v.family];
  if (v.element < 0) return f.name;
  std::vector<int64_t> index(f.shape.size());
  int64_t rest = v.element;
  for (size_t d = f.shape.size(); d-- > 0;) {
    index[d] = rest % f.shape[d];
    rest /= f.shape[d];
  }
  std::string out = f.name + "[";
  for (size_t d = 0; d < index.size(); ++d)
    out += (d ? "," : "") + std::to_string(index[d]);
  return out + "]";
}

bool ExprPool::isConst(ExprId e, double v) const {
  const Node& n = node(e);
  if (n.kind != Kind::Const) return false;
  if (n.sort == Sort::Real) return n.value == v;
  // Integers compare exactly: no rounding of either side to a double.
  return std::trunc(v) == v && std::fabs(v) < 0x1p63 && n.ivalue == static_cast<int64_t>(v);
}

namespace {
// Exact folding only: a folded constant must be the exact real result, never a rounded one (nor one lost to
// overflow or underflow); otherwise the operands stay separate terms.
bool exactSum(double a, double b, double& out) {
  if (!std::isfinite(a) || !std::isfinite(b)) return false;
  double s = a + b;  // a subnormal sum is exact (gradual underflow); TwoSum recovers the rounding error
  double bb = s - a;
  double err = (a - (s - bb)) + (b - bb);
  if (err != 0 || !std::isfinite(s)) return false;
  out = s;
  return true;
}
// The fma residual of a * b is exact only when a * b is far from the subnormal range, so the significands are
// multiplied at a normal scale (product in [1/4, 1)) and the binary exponent is applied afterwards: the
// result is exact iff that product is and scaling it back loses no bit (no overflow, no underflow).
bool exactProduct(double a, double b, double& out) {
  if (!std::isfinite(a) || !std::isfinite(b)) return false;
  if (a == 0 || b == 0) {
    out = 0;
    return true;
  }
  int ea = 0, eb = 0;
  const double ma = std::frexp(a, &ea), mb = std::frexp(b, &eb);
  const double m = ma * mb;
  if (std::fma(ma, mb, -m) != 0) return false;
  const double p = std::ldexp(m, ea + eb);
  if (!std::isfinite(p) || p == 0 || std::ldexp(p, -(ea + eb)) != m) return false;
  out = p;
  return true;
}
// Ascending, duplicates kept. Terms built in order (a sum of squares lowered element by element) come sorted:
// checking is linear. Millions of ids (a gradient norm's partial sums flattened) take two linear counting
// passes on 16-bit digits instead of a comparison sort's n log n.
void sortIds(std::vector<ExprId>& ids) {
  if (std::is_sorted(ids.begin(), ids.end())) return;
  if (ids.size() < (size_t{1} << 16)) {
    std::sort(ids.begin(), ids.end());
    return;
  }
  std::vector<ExprId> buf(ids.size());
  std::vector<size_t> count(size_t{1} << 16);
  for (int shift : {0, 16}) {
    std::fill(count.begin(), count.end(), 0);
    for (ExprId x : ids)
      ++count[(x >> shift) & 0xffff];
    size_t at = 0;
    for (size_t& c : count)
      at += std::exchange(c, at);
    for (ExprId x : ids)
      buf[count[(x >> shift) & 0xffff]++] = x;
    ids.swap(buf);
  }
}
bool exactIntegerOp(bool sum, int64_t a, int64_t b, int64_t& out) {
  return sum ? !__builtin_add_overflow(a, b, &out) : !__builtin_mul_overflow(a, b, &out);
}
}  // namespace

// Two atoms (the common case: x*x, a+b) need no flattening and no folding.
ExprId ExprPool::pair(Kind k, ExprId x, ExprId y) {
  const Node &a = node(x), &b = node(y);
  if (a.kind != k && b.kind != k && a.kind != Kind::Const && b.kind != Kind::Const)
    return intern(k, a.sort, {std::min(x, y), std::max(x, y)});
  return nary(k, {x, y});
}

ExprId ExprPool::nary(Kind k, std::vector<ExprId> in) {
  Sort s = in.empty() ? Sort::Real : node(in[0]).sort;
  if (in.size() == 2) {
    const Node &a = node(in[0]), &b = node(in[1]);
    if (a.kind != k && b.kind != k && a.kind != Kind::Const && b.kind != Kind::Const)
      return intern(k, s, {std::min(in[0], in[1]), std::max(in[0], in[1])});
  }
  // Flatten nested nodes of the same kind, and fold constants exactly (unfoldable constants stay separate
  // terms), in one pass.
  std::vector<ExprId> rest;
  rest.reserve(in.size());
  std::vector<double> consts;
  std::vector<int64_t> iconsts;
  auto take = [&](ExprId a) {
    const Node& n = node(a);
    if (n.kind == Kind::Const && n.sort == Sort::Int) {
      for (int64_t& c : iconsts) {
        int64_t r;
        if (exactIntegerOp(k == Kind::Add, c, n.ivalue, r)) {
          c = r;
          return;
        }
      }
      iconsts.push_back(n.ivalue);
    } else if (n.kind == Kind::Const && n.sort == Sort::Real) {
      for (double& c : consts) {
        double r;
        if ((k == Kind::Add) ? exactSum(c, n.value, r) : exactProduct(c, n.value, r)) {
          c = r;
          return;
        }
      }
      consts.push_back(n.value);
    } else {
      rest.push_back(a);
    }
  };
  for (ExprId a : in) {
    const Node& n = node(a);
    if (n.kind == k) {
      for (ExprId b : n.args)
        take(b);
    } else {
      take(a);
    }
  }
  if (k == Kind::Mul) {
    for (double c : consts)
      if (c == 0.0) return real(0.0);
    for (int64_t c : iconsts)
      if (c == 0) return integer(0);
  }
  for (double c : consts)
    if (!((k == Kind::Add && c == 0.0) || (k == Kind::Mul && c == 1.0))) rest.push_back(real(c));
  for (int64_t c : iconsts)
    if (!((k == Kind::Add && c == 0) || (k == Kind::Mul && c == 1))) rest.push_back(integer(c));
  if (rest.empty()) {
    if (s == Sort::Int) return integer(k == Kind::Add ? 0 : 1);
    return real(k == Kind::Add ? 0.0 : 1.0);
  }
  if (rest.size() == 1) return rest[0];
  sortIds(rest);
  Node n{k, s};
  n.args = std::move(rest);
  return intern(std::move(n));
}

ExprId ExprPool::extremum(Kind k, std::vector<ExprId> in) {
  if (in.empty()) throw std::invalid_argument("max/min of no terms");
  const Sort s = node(in[0]).sort;
  for (ExprId a : in)
    if (node(a).sort != s) {  // mixed sorts: compare as reals through the binary form
      ExprId r = in[0];
      for (size_t i = 1; i < in.size(); ++i)
        r = k == Kind::Max ? ite(le(in[i], r), r, in[i]) : ite(le(r, in[i]), r, in[i]);
      return r;
    }
  std::vector<ExprId> args;
  std::optional<ExprId> best;  // constants fold into the most extreme one
  // One sort here: integers compare as integers (a double would round two large ones to a tie).
  auto less = [&](ExprId x, ExprId y) {
    return s == Sort::Int ? node(x).ivalue < node(y).ivalue : node(x).value < node(y).value;
  };
  for (ExprId a : in)
    for (ExprId b :
         node(a).kind == k ? std::span<const ExprId>(node(a).args) : std::span<const ExprId>(&a, 1)) {
      if (node(b).kind != Kind::Const) {
        args.push_back(b);
      } else if (!best || (k == Kind::Max ? less(*best, b) : less(b, *best))) {
        best = b;
      }
    }
  if (best) args.push_back(*best);
  std::sort(args.begin(), args.end());
  args.erase(std::unique(args.begin(), args.end()), args.end());
  if (args.size() == 1) return args[0];
  Node n{k, s};
  n.args = std::move(args);
  return intern(std::move(n));
}

ExprId ExprPool::add(ExprId a, ExprId b) {
  return pair(Kind::Add, a, b);
}
ExprId ExprPool::add(std::vector<ExprId> t) {
  return nary(Kind::Add, std::move(t));
}
ExprId ExprPool::mul(ExprId a, ExprId b) {
  return pair(Kind::Mul, a, b);
}
ExprId ExprPool::mul(std::vector<ExprId> f) {
  return nary(Kind::Mul, std::move(f));
}

ExprId ExprPool::neg(ExprId a) {
  return sort(a) == Sort::Int ? mul(integer(-1), a) : mul(real(-1.0), a);
}

ExprId ExprPool::sub(ExprId a, ExprId b) {
  return add(a, neg(b));
}

ExprId ExprPool::div(ExprId a, ExprId b) {
  if (isConst(b, 1.0)) return a;
  const Node& nb = node(b);
  // 0/b folds only for a nonzero constant b: 0/d is undefined at d = 0, and 0/0 must stay visible to the
  // lowering, which rejects a division by a constant zero.
  if (isConst(a, 0.0) && nb.kind == Kind::Const && !isConst(b, 0.0)) return a;
  if (nb.kind == Kind::Const && nb.sort == Sort::Real && nb.value != 0) {
    // Division by a power of two is a multiplication by its reciprocal, when that is a double (2^-1074 has
    // none: 2^1074 overflows).
    int e;
    double m = std::frexp(nb.value, &e), r = 0;
    if ((m == 0.5 || m == -0.5) && exactProduct(1.0 / nb.value, nb.value, r) && r == 1.0)
      return mul(real(1.0 / nb.value), a);
  }
  return intern(Kind::Div, Sort::Real, {a, b});
}

ExprId ExprPool::apply(Fn f, std::vector<ExprId> args) {
  Node n{Kind::Apply, Sort::Real};
  n.fn = f;
  n.args = std::move(args);
  return intern(std::move(n));
}

ExprId ExprPool::lt(ExprId a, ExprId b) {
  return intern(Kind::Lt, Sort::Bool, {a, b});
}

ExprId ExprPool::le(ExprId a, ExprId b) {
  if (a == b) return boolean(true);
  return intern(Kind::Le, Sort::Bool, {a, b});
}

ExprId ExprPool::eq(ExprId a, ExprId b) {
  if (a == b) return boolean(true);
  const Node &na = node(a), &nb = node(b);
  if (na.kind == Kind::Const && nb.kind == Kind::Const && na.sort == Sort::Int && nb.sort == Sort::Int)
    return boolean(na.ivalue == nb.ivalue);
  return intern(Kind::Eq, Sort::Bool, {std::min(a, b), std::max(a, b)});
}

ExprId ExprPool::land(ExprId a, ExprId b) {
  if (isConst(a)) return node(a).ivalue ? b : a;
  if (isConst(b)) return node(b).ivalue ? a : b;
  return intern(Kind::And, Sort::Bool, {std::min(a, b), std::max(a, b)});
}

ExprId ExprPool::lor(ExprId a, ExprId b) {
  if (isConst(a)) return node(a).ivalue ? a : b;
  if (isConst(b)) return node(b).ivalue ? b : a;
  return intern(Kind::Or, Sort::Bool, {std::min(a, b), std::max(a, b)});
}

ExprId ExprPool::lnot(ExprId a) {
  if (isConst(a)) return boolean(!node(a).ivalue);
  return intern(Kind::Not, Sort::Bool, {a});
}

ExprId ExprPool::ite(ExprId c, ExprId t, ExprId e) {
  if (t == e) return t;
  if (isConst(c)) return node(c).ivalue ? t : e;
  return intern(Kind::Ite, node(t).sort, {c, t, e});
}

ExprId ExprPool::toReal(ExprId i) {
  const Node& n = node(i);
  // Folds only when a double holds the integer exactly (|i| > 2^53 may not be one).
  if (n.kind == Kind::Const) {
    const double d = static_cast<double>(n.ivalue);
    if (std::fabs(d) < 0x1p63 && static_cast<int64_t>(d) == n.ivalue) return real(d);
  }
  return intern(Kind::ToReal, Sort::Real, {i});
}

std::string ExprPool::str(ExprId e, int depth) const {
  const Node& n = node(e);
  std::ostringstream os;
  if (n.kind == Kind::Const) {
    if (n.sort == Sort::Real)
      os << n.value;
    else if (n.sort == Sort::Bool)
      os << (n.ivalue ? "true" : "false");
    else
      os << n.ivalue;
    return os.str();
  }
  if (n.kind == Kind::Var) return varName(n.var);
  if (depth <= 0) return "...";
  auto join = [&](const char* sep) {
    os << '(';
    for (size_t i = 0; i < n.args.size(); ++i)
      os << (i ? sep : "") << str(n.args[i], depth - 1);
    os << ')';
  };
  switch (n.kind) {
    case Kind::Add:
      join(" + ");
      break;
    case Kind::Mul:
      join(" * ");
      break;
    case Kind::Div:
      join(" / ");
      break;
    case Kind::Lt:
      join(" < ");
      break;
    case Kind::Le:
      join(" <= ");
      break;
    case Kind::Eq:
      join(" == ");
      break;
    case Kind::And:
      join(" && ");
      break;
    case Kind::Or:
      join(" || ");
      break;
    case Kind::Not:
      os << '!';
      join("");
      break;
    case Kind::Ite:
      os << "ite";
      join(", ");
      break;
    case Kind::ToReal:
      os << "real";
      join("");
      break;
    case Kind::Apply:
      os << fnName(n.fn);
      join(", ");
      break;
    case Kind::Max:
    case Kind::Min:
      os << (n.kind == Kind::Max ? "max" : "min");
      join(", ");
      break;
    default:
      break;
  }
  return os.str();
}

}  // namespace paraproof::sym
