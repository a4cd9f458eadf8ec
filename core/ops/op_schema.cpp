// The plan author's contract of every op kind: family, ports and attribute schema. One table, so the
// load check (attr_schema.cpp), `paraproof ops` and docs/operators.md cannot drift apart; the registry
// refuses to start when an op has no entry here or an entry names no op.
#include <map>
#include <stdexcept>

#include "core/ops/attr_schema.h"
#include "core/ops/families.h"

namespace paraproof::ops {

namespace {

struct Entry {
  const char* family;
  const char* inputs;
  const char* outputs;
  std::vector<AttrSpec> attrs;
};

AttrSpec req(const char* name, AttrType t, const char* doc) {
  return AttrSpec{name, t, true, "", doc, {}, std::nullopt};
}
AttrSpec opt(const char* name, AttrType t, const char* dflt, const char* doc) {
  return AttrSpec{name, t, false, dflt, doc, {}, std::nullopt};
}
AttrSpec reqInt(const char* name, int64_t min, const char* doc) {
  return AttrSpec{name, AttrType::Int, true, "", doc, {}, min};
}
AttrSpec optInt(const char* name, int64_t min, const char* dflt, const char* doc) {
  return AttrSpec{name, AttrType::Int, false, dflt, doc, {}, min};
}
AttrSpec choice(const char* name, std::vector<std::string> choices, bool required, const char* dflt,
                const char* doc) {
  return AttrSpec{name, AttrType::Choice, required, dflt, doc, std::move(choices), std::nullopt};
}

// Shared attributes.
AttrSpec dim(const char* doc = "the axis") {
  return req("dim", AttrType::Dim, doc);
}
AttrSpec eps() {
  return req("eps", AttrType::Number, "added to the variance / mean square before rsqrt");
}
AttrSpec approximate() {
  return choice("approximate", {"tanh", "none"}, false, "tanh", "\"none\": the exact erf form");
}
AttrSpec group() {
  return req("group", AttrType::RankList,
             "the member ranks, in order (the order of gathered pieces and scattered shards)");
}
AttrSpec instance() {
  return req(
      "instance", AttrType::String,
      "the id shared by the matching call on every member; plan-wide: distinct calls need distinct ids, "
      "even in disjoint groups");
}
AttrSpec keepdim() {
  return opt("keepdim", AttrType::Bool, "false", "keep the reduced axes with extent 1");
}
AttrSpec dtype(const char* dflt) {
  return opt("dtype", AttrType::DType, dflt, "the output dtype");
}

const std::map<std::string, Entry>& table() {
  static const std::map<std::string, Entry> t = [] {
    std::map<std::string, Entry> m;
    const char* const unaryFamily = "Elementwise, one input";
    for (const char* n : {"identity", "neg", "exp", "log", "sqrt", "sigmoid", "tanh", "sin", "cos", "erf",
                          "rsqrt", "reciprocal", "square", "relu", "silu"})
      m[n] = {unaryFamily, "x", "y (the shape of x)", {}};
    m["gelu"] = {unaryFamily, "x", "y", {approximate()}};
    m["pow"] = {unaryFamily, "x", "y", {req("exponent", AttrType::Number, "the exponent")}};
    m["scale"] = {unaryFamily, "x", "y", {req("factor", AttrType::Number, "the multiplier")}};
    m["div_scalar"] = {unaryFamily, "x", "y", {req("divisor", AttrType::Number, "the divisor (nonzero)")}};
    m["add_scalar"] = {unaryFamily, "x", "y", {req("value", AttrType::Number, "the addend (e.g. an eps)")}};
    m["cast"] = {unaryFamily, "x", "y", {req("dtype", AttrType::DType, "the output dtype")}};

    const char* const binaryFamily = "Elementwise, two inputs (numpy broadcasting)";
    for (const char* n : {"add", "sub", "mul", "div", "maximum", "minimum"})
      m[n] = {binaryFamily, "a, b", "y (the broadcast shape)", {}};
    m["add_n"] = {"Elementwise, 1..n inputs of one shape", "x0, x1, ...", "y (their sum)", {}};

    const char* const selection = "Comparison and selection (numpy broadcasting; masks are i64 0/1)";
    m["compare"] = {selection,
                    "a, b (both float or both integer)",
                    "y (i64 0/1, the broadcast shape)",
                    {choice("cmp", {"eq", "ne", "lt", "le", "gt", "ge"}, true, "", "the relation")}};
    m["where"] = {selection, "cond (integer), a, b", "y (the broadcast shape, a's dtype)", {}};

    const char* const creation = "Creation";
    m["constant"] = {creation,
                     "none",
                     "y [shape]",
                     {req("shape", AttrType::Shape, "the output shape"),
                      req("value", AttrType::Number, "the fill value"), dtype("f32")}};
    m["iota"] = {
        creation,
        "none",
        "y [n]",
        {reqInt("n", 0, "the length"), opt("start", AttrType::Int, "0", "the first value"), dtype("i64")}};

    const char* const shape = "Shape and data movement";
    m["reshape"] = {
        shape, "x", "y [shape]", {req("shape", AttrType::IntList, "the new shape; one entry may be -1")}};
    m["transpose"] = {shape,
                      "x",
                      "y",
                      {req("perm", AttrType::IntList, "a permutation: output axis i is input axis perm[i]")}};
    m["slice"] = {shape,
                  "x",
                  "y",
                  {dim(), req("start", AttrType::Int, "the first index kept"),
                   req("end", AttrType::Int, "one past the last index kept")}};
    m["concat"] = {shape, "x0, x1, ... (variadic)", "y", {dim()}};
    m["split"] = {
        shape,
        "x",
        "one output per piece",
        {dim(), req("sizes", AttrType::IntList, "the pieces' extents along dim (they sum to its extent)")}};
    m["broadcast_to"] = {shape, "x", "y [shape]", {req("shape", AttrType::Shape, "the target shape")}};
    m["gather"] = {shape, "x, idx (integer, the rank of x)", "y (the shape of idx)", {dim()}};

    const char* const linalg = "Linear algebra";
    m["matmul"] = {linalg, "a [..., m, k], b [..., k, n]", "y [..., m, n]", {}};
    m["linear"] = {linalg, "x [..., in], w [out, in], optional bias [out]", "y [..., out]", {}};
    m["einsum"] = {linalg,
                   "1..n operands",
                   "y",
                   {req("equation", AttrType::String, "like \"bij,bjk->bik\" (no ellipsis)")}};

    const char* const reductions = "Reductions";
    for (const char* n : {"sum", "mean", "max"})
      m[n] = {reductions,
              "x",
              "y",
              {opt("dims", AttrType::IntList, "all dims", "the axes reduced over (distinct)"), keepdim()}};
    m["softmax"] = {reductions, "x", "y", {dim()}};
    m["log_softmax"] = {reductions, "x", "y", {dim()}};
    m["softmax_backward"] = {reductions, "y (the softmax output), dy", "dx", {dim()}};
    m["log_softmax_backward"] = {reductions, "y (the log_softmax output), dy", "dx", {dim()}};

    const char* const nn = "Neural-network ops";
    m["rmsnorm"] = {nn, "x [..., h], w [h]", "y", {eps()}};
    m["rmsnorm_backward"] = {nn, "x, w, dy", "dx, dw", {eps()}};
    m["layernorm"] = {nn, "x [..., h], w [h], b [h]", "y", {eps()}};
    m["layernorm_backward"] = {nn, "x, w, dy", "dx, dw, db", {eps()}};
    m["silu_backward"] = {nn, "x, dy", "dx", {}};
    m["gelu_backward"] = {nn, "x, dy", "dx", {approximate()}};
    m["relu_backward"] = {nn, "x, dy", "dx", {}};
    m["sigmoid_backward"] = {nn, "y (the forward output), dy", "dx", {}};
    m["tanh_backward"] = {nn, "y (the forward output), dy", "dx", {}};
    m["rope"] = {nn, "x [b, s, h, d], cos [s, d], sin [s, d]", "y", {}};
    m["rope_backward"] = {nn, "dy, cos, sin", "dx", {}};
    m["causal_mask"] = {nn,
                        "scores [..., sq, sk], qpos [sq] int, kpos [sk] int",
                        "masked scores",
                        {opt("fill", AttrType::Number, "-1e9", "the value of masked scores")}};
    std::vector<AttrSpec> attention{
        opt("scale", AttrType::Number, "1/sqrt(d)", "the score scale"),
        opt("causal", AttrType::Bool, "true", "mask keys after the query position")};
    m["attention"] = {nn, "q [b, s, h, d], k [b, t, hk, d], v [b, t, hk, dv], qpos [s], kpos [t]",
                      "o [b, s, h, dv]", attention};
    m["attention_backward"] = {nn, "q, k, v, qpos, kpos, do", "dq, dk, dv", attention};
    AttrSpec start = optInt("start", 0, "0", "the first id this shard holds (vocab-parallel shards)");
    m["embedding"] = {nn, "ids [...] int, table [v, h]", "y [..., h]", {start}};
    m["embedding_backward"] = {nn,
                               "ids, dy [..., h]",
                               "dtable [num_embeddings, h]",
                               {reqInt("num_embeddings", 0, "the rows of the table (of this shard)"), start}};
    m["one_hot"] = {nn,
                    "ids int",
                    "y [..., num_classes]",
                    {reqInt("num_classes", 0, "the classes (of this shard)"), start, dtype("f32")}};
    AttrSpec reduction = choice("reduction", {"mean", "sum", "none"}, false, "mean",
                                "\"mean\" divides by sum(mask), \"none\" gives the per-token losses");
    m["cross_entropy"] = {
        nn, "logits [n, v], labels [n] int, mask [n]", "loss [] (or [n] for none)", {reduction}};
    m["cross_entropy_backward"] = {nn, "logits, labels, mask, dloss", "dlogits", {reduction}};
    AttrSpec k = reqInt("k", 0, "how many to select");
    m["topk"] = {nn, "x [..., e]", "values [..., k], indices [..., k] (i64)", {k}};
    m["topk_mask"] = {nn, "x [..., e]", "y", {k}};
    m["topk_indicator"] = {nn, "x [..., e]", "y", {k}};
    m["global_norm_sq"] = {nn, "1..n tensors", "[]", {}};
    m["clip_coef"] = {nn, "norm_sq []", "coef []", {req("max_norm", AttrType::Number, "the clipping norm")}};
    m["adamw"] = {nn,
                  "param, grad, m, v",
                  "param', m', v'",
                  {req("lr", AttrType::Number, "the learning rate"),
                   req("beta1", AttrType::Number, "the first moment decay"),
                   req("beta2", AttrType::Number, "the second moment decay"),
                   req("eps", AttrType::Number, "added to sqrt(v_hat)"),
                   opt("weight_decay", AttrType::Number, "0", "decoupled weight decay"),
                   reqInt("step", 1, "the step number (for the bias correction)")}};

    const char* const comm = "Communication (device graphs only)";
    m["all_reduce"] = {comm,
                       "n tensors (a coalesced bucket when n > 1)",
                       "n tensors",
                       {group(), instance(),
                        choice("reduce", {"sum", "avg", "max"}, true, "", "the elementwise reduction")}};
    m["all_gather"] = {comm,
                       "x",
                       "y (dim times the group size)",
                       {group(), instance(), dim("the axis the pieces are concatenated along")}};
    m["reduce_scatter"] = {comm,
                           "x",
                           "y (shard i of the reduction on member i)",
                           {group(), instance(), dim("the axis the result is sharded along"),
                            choice("reduce", {"sum", "avg"}, true, "", "the elementwise reduction")}};
    m["all_to_all"] = {
        comm,
        "x",
        "y",
        {group(), instance(), req("split_dim", AttrType::Dim, "the axis split into chunks sent out"),
         req("concat_dim", AttrType::Dim, "the axis received chunks are concatenated along")}};
    AttrSpec optGroup = group(), optInstance = instance();
    optGroup.required = optInstance.required = false;
    optGroup.dflt = optInstance.dflt = "none: broadcast_to";
    m["broadcast"] = {comm,
                      "x",
                      "y",
                      {optGroup, optInstance,
                       AttrSpec{"src",
                                AttrType::Int,
                                false,
                                "required with instance",
                                "the rank whose input every member gets",
                                {},
                                0},
                       opt("shape", AttrType::Shape, "required without instance",
                           "without instance: the broadcast_to target shape")}};
    AttrSpec peer = reqInt("peer", 0, "the other rank");
    AttrSpec p2pInstance = req("instance", AttrType::String,
                               "pairs the send with its recv: unique per (sender, receiver, transfer)");
    m["send"] = {comm, "x", "none", {peer, p2pInstance}};
    m["recv"] = {comm,
                 "none",
                 "y [shape]",
                 {peer, p2pInstance, req("shape", AttrType::Shape, "the received shape"), dtype("f32")}};
    return m;
  }();
  return t;
}

}  // namespace

void attachSchemas(std::vector<OpDef>& defs) {
  const auto& t = table();
  size_t found = 0;
  for (OpDef& d : defs) {
    auto it = t.find(d.name);
    if (it == t.end()) throw std::logic_error("op '" + d.name + "' has no entry in core/ops/op_schema.cpp");
    d.family = it->second.family;
    d.inputsDoc = it->second.inputs;
    d.outputsDoc = it->second.outputs;
    d.attrs = it->second.attrs;
    ++found;
  }
  if (found != t.size()) throw std::logic_error("core/ops/op_schema.cpp describes an op the registry lacks");
}

}  // namespace paraproof::ops
