// The bug catalog as data: one row per bug (id, class, description, where it is seen, what it needs of the
// plan, its mutation, and a model and parallelism it applies to). Adding a bug class is adding a row.
#include <stdexcept>

#include "core/parallel/bug_catalog.h"
#include "core/parallel/plan_edit.h"

namespace paraproof::parallel::catalog {
namespace {

const char* kLlamaPlan = "dp=2,tp=2,pp=2,mb=2";

}  // namespace

std::vector<Item> buildCatalog() {
  std::vector<Item> c;
  auto add = [&](std::string id, std::string cls, std::string desc, std::string source, Needs needs,
                 Mutation m, std::string model = "llama3-8b", std::string par = kLlamaPlan) {
    c.push_back(Item{
        {std::move(id), std::move(cls), std::move(desc), std::move(source), std::move(model), std::move(par)},
        needs,
        std::move(m)});
  };
  const std::string tv = "TrainVerify case study (Llama3-8B, Megatron-style dp2 tp2 pp2)";

  add("tv01-allreduce-missing", "missing collective",
      "The tensor-parallel all-reduce after the MLP's row-parallel linear is replaced by a no-op, so each "
      "rank "
      "continues with its partial sum instead of the full output; shapes and data flow look intact.",
      tv, {.tp = 2}, [](Where& w) { onEveryMember(w, mlpOutputReduce(w), toIdentity); });

  add("tv02-allreduce-dataflow-broken", "missing collective",
      "The all-reduce after the MLP's row-parallel linear is deleted and its consumer reads a buffer nobody "
      "wrote (modelled as zeros), so the MLP contributes nothing to the residual stream.",
      tv, {.tp = 2}, [](Where& w) {
        onEveryMember(w, mlpOutputReduce(w), [](Device& d, Op& o) {
          const TensorType& t = d.graph.values[o.outputs[0]].type;
          o.kind = "constant";
          o.inputs.clear();
          o.attrs = {{"shape", t.shape}, {"value", 0}, {"dtype", dtypeName(t.dtype)}};
        });
      });

  add("tv03-allreduce-as-allgather", "wrong collective",
      "The all-reduce after the MLP's row-parallel linear is replaced by an all-gather whose first chunk is "
      "read back, so every rank uses rank 0's partial sum instead of the reduced output.",
      tv, {.tp = 2}, [](Where& w) {
        const std::string id = mlpOutputReduce(w);
        Op& first = opById(w.here(), id);
        for (int r : groupOf(first)) {
          Device& d = w.dev(r);
          const Op o = opById(d, id);
          const std::string in = nameOf(d, o.inputs[0]), outName = nameOf(d, o.outputs[0]);
          const int64_t rows = d.graph.values[o.outputs[0]].type.shape[0];
          replaceOp(d, id,
                    {NewOp{id + ".gather",
                           "all_gather",
                           {in},
                           {{"group", o.attrs["group"]}, {"instance", o.attrs["instance"]}, {"dim", 0}},
                           {outName + ".gathered"},
                           o.scope,
                           ""},
                     NewOp{id,
                           "slice",
                           {outName + ".gathered"},
                           {{"dim", 0}, {"start", 0}, {"end", rows}},
                           {outName},
                           o.scope,
                           ""}});
          w.changed(r, id);
        }
      });

  add(
      "tv04-allgather-as-allreduce", "wrong collective",
      "Under sequence parallelism the all-gather restoring the full sequence before the MLP's "
      "column-parallel "
      "linears is replaced by an all-reduce of the sequence shards, copied tp times along the sequence: "
      "shapes "
      "and data flow look intact, but every chunk holds the sum of all shards.",
      tv, {.tp = 2, .sp = true},
      [](Where& w) {
        Device& h = w.here();
        const Op& linear = opById(h, w.mb(w.layer(w.llama ? "mlp.w1.out" : "mlp.fc1.out")));
        const Op& gather = producerOf(h, nameOf(h, linear.inputs[0]));
        if (gather.kind != "all_gather")
          throw std::invalid_argument("no sequence all-gather before the MLP of layer " +
                                      std::to_string(w.site.layer) + " (needs sp)");
        const std::string id = gather.id;
        for (int r : groupOf(gather)) {
          Device& d = w.dev(r);
          const Op o = opById(d, id);
          const std::string in = nameOf(d, o.inputs[0]), out = nameOf(d, o.outputs[0]);
          const std::vector<std::string> copies(groupOf(o).size(), out + ".reduced");
          replaceOp(
              d, id,
              {NewOp{id + ".reduce",
                     "all_reduce",
                     {in},
                     {{"group", o.attrs["group"]}, {"instance", o.attrs["instance"]}, {"reduce", "sum"}},
                     {out + ".reduced"},
                     o.scope,
                     ""},
               NewOp{id, "concat", copies, {{"dim", o.attrs["dim"]}}, {out}, o.scope, ""}});
          w.changed(r, id);
        }
      },
      "llama3-8b", kLlamaPlan + std::string(",sp"));

  add("tv05-fused-reduction-missing", "missing collective",
      "One gradient inside the layer's coalesced data-parallel all-reduce bucket is left out of the "
      "reduction "
      "and passed through unreduced, so that weight is updated with one replica's gradient only.",
      tv, {.dp = 2}, [](Where& w) {
        const std::string id = gradBucket(w);
        Op& first = opById(w.here(), id);
        for (int r : groupOf(first)) {
          Device& d = w.dev(r);
          const Op o = opById(d, id);
          NewOp rest{id, "all_reduce", {}, o.attrs, {}, o.scope, ""};
          for (size_t i = 1; i < o.inputs.size(); ++i) {
            rest.inputs.push_back(nameOf(d, o.inputs[i]));
            rest.outputs.push_back(nameOf(d, o.outputs[i]));
          }
          NewOp skipped{id + ".skipped", "identity", {nameOf(d, o.inputs[0])}, {}, {nameOf(d, o.outputs[0])},
                        o.scope,         ""};
          replaceOp(d, id, {skipped, rest});
          w.changed(r, id + ".skipped");
          w.changed(r, id);
        }
      });

  add("tv06-pp-wrong-peer", "pipeline communication",
      "Pipeline send/recv pairs of two data-parallel replicas are crossed: the next stage receives the "
      "activations of the other replica's micro-batch, so its layers run on the wrong sequences.",
      tv, {.dp = 2, .pp = 2, .layer = false}, [](Where& w) {
        Device& r = w.here();
        std::string name;
        for (const Op& o : r.graph.ops)
          if (o.kind == "recv" && nameOf(r, o.outputs[0]).find(".grad") == std::string::npos &&
              (w.spec.mb == 1 || o.id.ends_with("#" + std::to_string(w.site.microBatch)))) {
            name = o.id;
            break;
          }
        if (name.empty())
          throw std::invalid_argument("rank " + std::to_string(w.site.rank) +
                                      " receives no activations (choose a rank of a later pipeline stage)");
        const int a = opById(r, name).attrs.at("peer").get<int>();
        const int r2 = neighbour(w, {"dp"});  // a data-parallel partner of the same stage
        const int a2 = opById(w.dev(r2), name).attrs.at("peer").get<int>();
        auto relink = [&](int src, int dst) {
          const std::string inst = "p2p:" + name + ":" + std::to_string(src) + "->" + std::to_string(dst);
          Op& s = opById(w.dev(src), "send:" + name);
          s.attrs.set("peer", dst);
          s.attrs.set("instance", inst);
          Op& rv = opById(w.dev(dst), name);
          rv.attrs.set("peer", src);
          rv.attrs.set("instance", inst);
          w.changed(src, "send:" + name);
          w.changed(dst, name);
        };
        relink(a2, w.site.rank);
        relink(a, r2);
      });

  add("tv07-eps", "inconsistent constant",
      "One rank's attention RMSNorm uses eps = 1e-3 instead of the model's 1e-5, so its normalised "
      "activations differ slightly from the other ranks'.",
      tv, {.llama = true}, [](Where& w) { setEps(w, w.site.rank); });

  add("tv08-pow-exponent", "inconsistent constant",
      "One rank computes its attention RMSNorm by hand and squares with pow(x, 3) instead of pow(x, 2), so "
      "its normalisation statistic is wrong.",
      tv, {.llama = true}, [](Where& w) {
        Device& d = w.here();
        const std::string id = w.mb(w.layer("attention_norm.out"));
        const Op o = opById(d, id);
        const std::string x = nameOf(d, o.inputs[0]), wt = nameOf(d, o.inputs[1]),
                          y = nameOf(d, o.outputs[0]);
        const double eps = o.attrs.at("eps").get<double>();
        auto n = [&](const std::string& k, std::string kind, std::vector<std::string> in, Json attrs) {
          return NewOp{id + "." + k,  std::move(kind), std::move(in), std::move(attrs),
                       {y + "." + k}, o.scope,         o.origin};
        };
        std::vector<NewOp> ops = {n("pow", "pow", {x}, {{"exponent", 3}}),
                                  n("mean", "mean", {y + ".pow"}, {{"dims", {-1}}, {"keepdim", true}}),
                                  n("eps", "add_scalar", {y + ".mean"}, {{"value", eps}}),
                                  n("rsqrt", "rsqrt", {y + ".eps"}, Json::object()),
                                  n("normed", "mul", {x, y + ".rsqrt"}, Json::object()),
                                  NewOp{id, "mul", {y + ".normed", wt}, {}, {y}, o.scope, o.origin}};
        replaceOp(d, id, ops);
        w.changed(w.site.rank, id);
      });

  add("tv09-eps-several-ranks", "inconsistent constant",
      "As tv07, but every rank holding the layer uses the wrong RMSNorm eps, so the ranks agree with each "
      "other and only the comparison with the model reveals it.",
      tv, {.llama = true}, [](Where& w) {
        for (Device& d : w.plan.devices)
          if (d.graph.findOp(w.mb(w.layer("attention_norm.out"))) != kNone) setEps(w, d.rank);
      });

  add("tv10-backward-wrong-input", "wrong backward dataflow",
      "The activation's backward reads the activation's output instead of its input (silu'(y) instead of "
      "silu'(x)), a classic slip when a fused kernel saves the wrong tensor for backward.",
      tv, {}, [](Where& w) {
        Device& d = w.here();
        const std::string id = w.mb(w.layer(w.llama ? "mlp.w1.out.grad" : "mlp.fc1.out.grad"));
        Op& o = opById(d, id);
        o.inputs[0] = valueByName(d, w.mb(w.layer("mlp.act")));
        w.changed(w.site.rank, id);
      });

  add("tv11-backward-outputs-swapped", "wrong backward dataflow",
      "The attention backward's key and value gradients are returned in swapped order, so wk is trained with "
      "dV and wv with dK (their shapes agree under GQA, nothing crashes).",
      tv, {.llama = true}, [](Where& w) {
        Device& d = w.here();
        const std::string id = w.mb(w.layer("attention.q_rot.grad"));
        Op& o = opById(d, id);
        std::swap(o.outputs[1], o.outputs[2]);
        d.graph.values[o.outputs[1]].producerOutput = 1;
        d.graph.values[o.outputs[2]].producerOutput = 2;
        w.changed(w.site.rank, id);
      });

  add("tv12-scale-one-rank", "inconsistent scaling",
      "One rank scales its attention scores by 1/head_dim instead of 1/sqrt(head_dim), a wrong divisor "
      "that only that rank's heads see.",
      tv, {.llama = true}, [](Where& w) { setAttentionScale(w, w.site.rank); });

  add("tv13-scale-two-ranks", "inconsistent scaling", "As tv12, on two ranks holding the same layer.", tv,
      {.llama = true}, [](Where& w) {
        setAttentionScale(w, w.site.rank);
        setAttentionScale(w, neighbour(w));
      });

  add("tv14-early-grad-reduce", "schedule order",
      "The data-parallel gradient reduction of the layer is launched before the last micro-batch's backward "
      "finished: it reduces the gradient accumulated so far and the last micro-batch's contribution is lost.",
      tv, {.dp = 2, .mb = 2}, [](Where& w) {
        const std::string id = gradBucket(w);
        Op& first = opById(w.here(), id);
        for (int r : groupOf(first)) {
          Device& d = w.dev(r);
          Op& o = opById(d, id);
          for (ValueId& in : o.inputs) {
            const Value& acc = d.graph.values[in];
            if (acc.producer != kNone && d.graph.ops[acc.producer].kind == "add")
              in = d.graph.ops[acc.producer].inputs[0];
          }
          w.changed(r, id);
        }
      });

  // Classes seen in public trackers of real training frameworks.
  add("rw01-grad-reduce-wrong-group", "gradient reduction group",
      "The layer's gradient all-reduce is issued over the tensor-parallel group instead of the data-parallel "
      "group: different weight shards are summed together and replicas never agree.",
      "Megatron-LM / DeepSpeed process-group mix-ups", {.dp = 2, .tp = 2}, [](Where& w) {
        const std::string id = gradBucket(w);
        for (Device& d : w.plan.devices) {
          if (d.graph.findOp(id) == kNone) continue;
          Op& o = opById(d, id);
          // The tp group of this rank: the ranks sharing every coordinate except tp (innermost axis).
          const int tp = w.spec.tp, base = d.rank - d.rank % tp;
          std::vector<int> g;
          for (int i = 0; i < tp; ++i)
            g.push_back(base + i);
          o.attrs.set("group", g);
          o.attrs.set("instance", id + "@tpgrad" + std::to_string(base));
          w.changed(d.rank, id);
        }
      });

  add("rw02-grad-scaled-by-dp", "gradient scaling",
      "The data-parallel gradient all-reduce averages instead of summing although the loss is already "
      "divided "
      "by the global token count, so gradients come out dp times too small.",
      "Megatron-LM / PyTorch DDP loss-scaling changes", {.dp = 2}, [](Where& w) {
        onEveryMember(w, gradBucket(w), [](Device&, Op& o) { o.attrs.set("reduce", "avg"); });
      });

  add("rw03-loss-local-token-count", "loss normalisation",
      "Each data-parallel rank divides its loss by its own number of valid tokens instead of the global "
      "count; "
      "with unequal padding per rank the loss and gradients are mis-weighted.",
      "Hugging Face Transformers / Megatron-LM gradient-accumulation loss fix", {.dp = 2, .layer = false},
      [](Where& w) {
        for (const Op& o : w.here().graph.ops)
          if (o.kind == "all_reduce" && o.scope == "loss" &&
              nameOf(w.here(), o.inputs[0]).starts_with("loss.valid_tokens")) {
            onEveryMember(w, o.id, toIdentity);
            return;
          }
        throw std::invalid_argument("rank " + std::to_string(w.site.rank) +
                                    " does not compute the loss (choose a rank of the last pipeline stage)");
      });

  add("rw04-clip-counts-replicas", "gradient clipping",
      "The global grad-norm counts the RMSNorm weights, which are replicated over tensor parallelism, on "
      "every "
      "tp rank instead of once, so the norm is too large and clipping too strong.",
      "Megatron-LM / DeepSpeed grad-norm with tensor parallelism", {.tp = 2, .llama = true, .layer = false},
      [](Where& w) {
        Device& d = w.here();
        if (w.site.rank % w.spec.tp == 0)
          throw std::invalid_argument(
              "rank " + std::to_string(w.site.rank) +
              " is tp rank 0, which counts replicated weights by design; choose another");
        // The replicated norm weights' squares, added to this rank's sum of per-tensor squares.
        NewOp sum = asNewOp(d, opById(d, "optimizer.grad_norm_sq"));
        std::vector<NewOp> ops;
        for (const Op& o : d.graph.ops)
          if (o.kind == "mul" && nameOf(d, o.outputs[0]).ends_with("norm.weight.grad_clipped")) {
            const std::string squares = nameOf(d, o.inputs[0]) + std::string(names::kGradSquares);
            ops.push_back({squares,
                           "global_norm_sq",
                           {nameOf(d, o.inputs[0])},
                           Json::object(),
                           {squares},
                           sum.scope,
                           ""});
            sum.inputs.push_back(squares);
          }
        ops.push_back(std::move(sum));
        replaceOp(d, "optimizer.grad_norm_sq", ops);
        w.changed(w.site.rank, "optimizer.grad_norm_sq");
      });

  add("rw05-vocab-parallel-local-max", "vocab-parallel loss",
      "The vocab-parallel cross-entropy shifts logits by each shard's local maximum instead of the global "
      "one, "
      "so the shards' sums of exponentials are on different scales and the log-partition is wrong.",
      "Megatron-LM vocab-parallel cross-entropy", {.tp = 2, .layer = false}, [](Where& w) {
        onEveryMember(w, names::collectiveOutput(w.mb("loss.local_max"), names::kAllReduce), toIdentity);
      });

  add("rw06-positions-offset", "position offsets",
      "One rank's attention uses key positions starting at 1 instead of 0 (an off-by-one chunk offset), so "
      "its "
      "causal mask lets each query see one key too few.",
      "context / sequence parallel RoPE and mask offsets (Megatron-LM, TransformerEngine)", {.llama = true},
      [](Where& w) {
        Device& d = w.here();
        const std::string id = w.mb(w.layer("attention.core.out"));
        Op o = opById(d, id);
        const int64_t n = d.graph.values[o.inputs[4]].type.shape[0];
        NewOp pos{id + ".kpos",   "iota",  {}, {{"n", n}, {"start", 1}, {"dtype", "i64"}},
                  {id + ".kpos"}, o.scope, ""};
        NewOp attn{id, o.kind, {}, o.attrs, {nameOf(d, o.outputs[0])}, o.scope, o.origin};
        for (ValueId v : o.inputs)
          attn.inputs.push_back(nameOf(d, v));
        attn.inputs[4] = id + ".kpos";
        replaceOp(d, id, {pos, attn});
        w.changed(w.site.rank, id);
      });

  add("rw08-collective-result-discarded", "collective result discarded",
      "The residual add after the MLP reads the row-parallel linear's local partial sum instead of the "
      "all-reduce's result: the collective runs, but its output is never used.",
      "Megatron-LM / custom fused kernels (async all-reduce handles)", {.tp = 2}, [](Where& w) {
        Device& d = w.here();
        const std::string id = w.mb(w.layer("out"));
        Op& o = opById(d, id);
        Op& ar = producerOf(d, nameOf(d, o.inputs[1]));
        if (ar.kind != "all_reduce")
          throw std::logic_error("bug injection: expected an all_reduce before " + id);
        o.inputs[1] = ar.inputs[0];
        w.changed(w.site.rank, id);
      });

  add("rw09-operands-swapped", "operand order",
      "A non-commutative op under vocab sharding gets its operands swapped: the shard computes max - logits "
      "instead of logits - max before the exponential.",
      "vocab-parallel cross-entropy rewrites", {.tp = 2, .layer = false}, [](Where& w) {
        Device& d = w.here();
        const std::string id = w.mb("loss.shifted");
        Op& o = opById(d, id);
        std::swap(o.inputs[0], o.inputs[1]);
        w.changed(w.site.rank, id);
      });

  // ZeRO and tied embeddings.
  const std::string zero = "ZeRO / distributed-optimizer implementations (DeepSpeed, Megatron)";
  add(
      "rw10-zero-wrong-shard", "optimizer shard (ZeRO)",
      "One rank slices the neighbouring rank's shard of the layer's first MLP weight (wrong shard offset) "
      "before AdamW, so it updates that shard with its own gradient and optimizer state and the all-gather "
      "publishes the wrong rows.",
      zero, {.dp = 2, .zero = 1},
      [](Where& w) {
        Device& d = w.here();
        const std::string id = w.layer(w.llama ? "mlp.w1.weight.shard" : "mlp.fc1.weight.shard");
        if (d.graph.findOp(id) == kNone)
          throw std::invalid_argument("rank " + std::to_string(w.site.rank) +
                                      " slices no parameter shard (ZeRO stages 1 and 2 do)");
        Op& o = opById(d, id);
        const int64_t start = o.attrs.at("start").get<int64_t>(), end = o.attrs.at("end").get<int64_t>();
        const int64_t extent = d.graph.values[o.inputs[0]].type.shape.at(0);
        o.attrs.set("start", (start + (end - start)) % extent);
        o.attrs.set("end", o.attrs["start"].get<int64_t>() + (end - start));
        w.changed(w.site.rank, id);
      },
      "llama3-8b", "dp=2,tp=2,pp=2,mb=2,zero=2");

  add(
      "rw11-tied-embedding-unsynced", "tied weights",
      "The embedding-group all-reduce between the first and the last pipeline stage is missing: each copy "
      "of the tied embedding/output weight is updated with only its own stage's gradient contribution, and "
      "the copies drift apart.",
      "Megatron-LM / GPT-NeoX tied embeddings under pipeline parallelism",
      {.pp = 2, .tied = true, .layer = false},
      [](Where& w) {
        for (const Op& o : w.here().graph.ops)
          if (o.kind == "all_reduce" &&
              o.attrs.at("instance").get<std::string>().find("@emb") != std::string::npos) {
            onEveryMember(w, o.id, toIdentity);
            return;
          }
        throw std::invalid_argument("rank " + std::to_string(w.site.rank) +
                                    " holds no tied embedding copy (choose a first- or last-stage rank)");
      },
      "gpt-tiny", "dp=2,tp=2,pp=2,mb=2");

  add(
      "rw12-zero3-gather-order", "parameter gather (ZeRO-3)",
      "ZeRO-3's all-gather of the layer's first MLP weight lists the data-parallel ranks in another order "
      "than the shards were partitioned, so the layer computes with a row-permuted weight.",
      zero, {.dp = 2, .zero = 3},
      [](Where& w) {
        const std::string id = w.layer(w.llama ? "mlp.w1.weight/ag" : "mlp.fc1.weight/ag");
        if (w.here().graph.findOp(id) == kNone)
          throw std::invalid_argument("rank " + std::to_string(w.site.rank) + " does not gather " + id);
        onEveryMember(w, id, [](Device&, Op& o) {
          std::vector<int> g = groupOf(o);
          std::reverse(g.begin(), g.end());
          o.attrs.set("group", g);
        });
      },
      "llama3-8b", "dp=2,tp=2,pp=2,mb=2,zero=3");

  add("rw13-sp-norm-grad-unreduced", "gradient reduction group",
      "Under sequence parallelism the tensor-parallel all-reduce of the FFN RMSNorm weight's gradient is "
      "missing: each tp rank updates the replicated norm weight with only its own sequence shard's gradient.",
      "Megatron-LM sequence parallelism (all-reduce of sequence-parallel layernorm gradients)",
      {.tp = 2, .llama = true, .sp = true}, unreduced("ffn_norm.weight.grad", "tp"), "llama3-8b",
      kLlamaPlan + std::string(",sp"));
  add("rw14-gqa-kv-grad-unreduced", "gradient reduction group",
      "With more tensor-parallel ranks than kv heads each kv head is replicated; the all-reduce of the wk "
      "gradient over the ranks sharing the head is missing, so each replica is updated with only its own "
      "query heads' contribution.",
      "Megatron-LM GQA with tp > kv heads (replicated kv projections)", {.tp = 4, .llama = true},
      unreduced("attention.wk.weight.grad", "kv"), "gpt-tiny", "dp=2,tp=4");
  // Context parallel (zig-zag chunks, all-gathered keys/values).
  const std::string cpSource =
      "context parallel with zig-zag load balancing (Megatron-LM, TransformerEngine)";
  add(
      "rw15-cp-zigzag-positions", "position offsets",
      "One rank takes the RoPE tables and query positions of its second sequence chunk as if the layout "
      "were contiguous (chunk r+cp) instead of zig-zag (chunk 2cp-1-r): its queries and keys are rotated "
      "and masked for the wrong positions.",
      cpSource, {.cp = 2, .llama = true, .layer = false},
      [](Where& w) {
        Device& d = w.here();
        const int cp = w.spec.cp;
        for (const char* table : {"rope.cos", "rope.sin", "rope.positions"}) {
          const std::string id = std::string(table) + names::chunkSuffix(1, w.spec.cp);
          if (d.graph.findOp(id) == kNone)
            throw std::invalid_argument("rank " + std::to_string(w.site.rank) +
                                        " holds no attention layer (choose a rank of a layer stage)");
          Op& o = opById(d, id);
          const int64_t start = o.attrs.at("start").get<int64_t>(),
                        len = o.attrs.at("end").get<int64_t>() - start;
          const int64_t r = 2 * cp - 1 - start / len, contiguous = (r + cp) * len;
          if (contiguous == start)
            throw std::invalid_argument(
                "on rank " + std::to_string(w.site.rank) +
                " the zig-zag and the contiguous chunk coincide; choose another rank");
          o.attrs.set("start", contiguous);
          o.attrs.set("end", contiguous + len);
          w.changed(w.site.rank, id);
        }
      },
      "llama3-8b", "cp=2");

  add(
      "rw16-cp-kv-grad-not-scattered", "missing collective",
      "The backward of the context-parallel key/value all-gather keeps each rank's own slice of its local "
      "dK/dV (as if the keys were replicated) instead of reduce-scattering: the other ranks' queries' "
      "contributions to this rank's keys and values are lost.",
      cpSource, {.cp = 2, .llama = true},
      [](Where& w) {
        for (const char* name : {"attention.k_rot.grad.half", "attention.v.grad.half"})
          for (int half = 0; half < 2; ++half) {
            const std::string id = names::collectiveOutput(w.microBatch(w.layer(name + std::to_string(half))),
                                                           names::kReduceScatter);
            if (w.here().graph.findOp(id) == kNone)
              throw std::invalid_argument("rank " + std::to_string(w.site.rank) +
                                          " does not reduce-scatter " + id);
            const std::vector<int> group = groupOf(opById(w.here(), id));
            for (size_t i = 0; i < group.size(); ++i) {
              Device& d = w.dev(group[i]);
              const Op o = opById(d, id);
              const int64_t n = d.graph.values[o.outputs[0]].type.shape.at(1);
              const auto at = static_cast<int64_t>(i) * n;
              replaceOp(d, id,
                        {NewOp{id,
                               "slice",
                               {nameOf(d, o.inputs[0])},
                               {{"dim", 1}, {"start", at}, {"end", at + n}},
                               {nameOf(d, o.outputs[0])},
                               o.scope,
                               o.origin}});
              w.changed(group[i], id);
            }
          }
      },
      "llama3-8b", "cp=2");
  // DeepSeek multi-head latent attention.
  add(
      "rw17-mla-rope-shared-key", "wrong backward dataflow",
      "MLA's decoupled rope key is one key broadcast to every head; one rank's backward takes the first "
      "head's gradient of it instead of summing over its heads, so the kv down-projection (wkv_a) and "
      "everything before it get a wrong gradient.",
      "DeepSeek MLA implementations (hand-written MLA backward, expand() of the shared rope key)", {},
      [](Where& w) {
        Device& d = w.here();
        const std::string id = w.mb(w.layer("attention.k_pe_rot.grad"));
        if (d.graph.findOp(id) == kNone)
          throw std::invalid_argument("rank " + std::to_string(w.site.rank) +
                                      " has no MLA rope key gradient " + id +
                                      " (needs an MLA model, try --model dsv3-16b)");
        Op& o = opById(d, id);
        o.kind = "slice";
        o.attrs = {{"dim", 2}, {"start", 0}, {"end", 1}};
        w.changed(w.site.rank, id);
      },
      "dsv3-16b", "tp=2");
  // DeepSeek MoE under expert parallelism.
  const std::string moe = "DeepSeek MoE expert parallelism (Megatron-LM / DeepSpeed-MoE token dispatch)";
  add(
      "rw18-ep-dispatch-permutation", "expert-parallel dispatch",
      "The combine all_to_all of one expert-parallel group lists the group's ranks in another order than the "
      "dispatch did, so each rank receives the expert outputs computed for another rank's tokens (and in a "
      "permuted expert order) and mixes them with its own gates.",
      moe, {.ep = 2, .moe = true},
      [](Where& w) {
        const std::string id = names::collectiveOutput(w.mb(w.layer("mlp.experts.out")), names::kAllToAll);
        if (w.here().graph.findOp(id) == kNone)
          throw std::invalid_argument("rank " + std::to_string(w.site.rank) + " has no combine all_to_all " +
                                      id);
        for (int r : groupOf(opById(w.here(), id))) {
          Op& o = opById(w.dev(r), id);
          std::vector<int> g = groupOf(o);
          std::reverse(g.begin(), g.end());
          o.attrs.set("group", g);
          w.changed(r, id);
        }
      },
      "dsv3-16b", "dp=2,ep=2");

  add(
      "rw19-expert-grad-wrong-group", "gradient reduction group",
      "The routed experts' gradient all-reduce runs over the whole data-parallel group instead of the "
      "expert-data-parallel group (the dp ranks holding the same experts): gradients of different experts "
      "are summed together.",
      moe, {.dp = 4, .ep = 2, .moe = true},
      [](Where& w) {
        const std::string scope = w.layer("mlp.experts");
        std::string id;
        for (const Op& o : w.here().graph.ops)
          if (o.kind == "all_reduce" && o.scope == scope &&
              o.attrs.at("instance").get<std::string>().find("@edp") != std::string::npos)
            id = o.id;
        if (id.empty())
          throw std::invalid_argument("rank " + std::to_string(w.site.rank) +
                                      " reduces no expert gradients over an expert-data-parallel group");
        const std::vector<int> dp = groupOf(opById(w.here(), gradBucket(w)));
        for (int r : dp) {
          Op& o = opById(w.dev(r), id);
          o.attrs.set("group", dp);
          o.attrs.set("instance", id + "@dp" + std::to_string(dp.front()));
          w.changed(r, id);
        }
      },
      "dsv3-16b", "dp=4,ep=2");

  add(
      "rw20-zero-expert-shard-group", "optimizer shard (ZeRO)",
      "Under ZeRO with expert parallelism the routed experts' optimizer shards live on the "
      "expert-data-parallel group (the dp ranks holding the same experts), but the all-gather of the "
      "updated expert shards runs over the expert-parallel group (ranks holding different experts), so the "
      "layer's w1 experts are reassembled from other experts' shards.",
      moe, {.dp = 4, .ep = 2, .moe = true, .zero = 1},
      [](Where& w) {
        const std::string id = w.layer("mlp.experts.w1.weight.out/ag");
        const std::string dispatch =
            names::collectiveOutput(w.mb(w.layer("mlp.experts.in")), names::kAllToAll);
        if (w.here().graph.findOp(id) == kNone)
          throw std::invalid_argument("rank " + std::to_string(w.site.rank) +
                                      " gathers no expert optimizer shards (needs zero=1 or 2 and an "
                                      "expert-data-parallel group of several ranks)");
        // Every rank of the stage makes the same mistake, so the collectives stay well matched.
        for (Device& d : w.plan.devices) {
          if (d.graph.findOp(id) == kNone) continue;
          const std::vector<int> ep = groupOf(opById(d, dispatch));
          Op& o = opById(d, id);
          o.attrs.set("group", ep);
          o.attrs.set("instance", id + "@ep" + std::to_string(ep.front()));
          w.changed(d.rank, id);
        }
      },
      "dsv3-16b", "dp=4,ep=2,zero=1");
  // State: every holder of a piece of state must output its successor (the state contract).
  add("rw21-replica-skips-update", "dropped state update",
      "One data-parallel replica skips the AdamW update of the layer's second MLP weight and keeps its old "
      "weight as the step's result; the other replica outputs the updated weight, so every logical output "
      "is still produced, but after the step the replicas diverge.",
      "data-parallel training with per-replica optimizer steps (a rank skipping the step after a local "
      "overflow check or an early exit)",
      {.dp = 2, .llama = true}, keepsOldState("mlp.w2.weight"), "llama3-8b", kLlamaPlan);
  add("rw22-zero-shard-keeps-old-moment", "dropped state update",
      "Under ZeRO with tensor parallelism a norm weight is replicated over tp, so two tp ranks own the same "
      "shard of its AdamW moments; one of them outputs its old first-moment shard instead of the updated "
      "one.",
      zero, {.dp = 2, .tp = 2, .zero = 1, .llama = true}, keepsOldState("ffn_norm.weight.m"), "llama3-8b",
      "dp=2,tp=2,zero=1");
  return c;
}

}  // namespace paraproof::parallel::catalog
