// One training step of a zoo model - forward, masked cross-entropy (mean over the valid tokens of the global
// batch), backward, gradient accumulation, data-parallel reduction, global-norm clipping, AdamW - emitted
// block by block under a sharding context. The same code emits the logical graph (every degree 1) and every
// device graph, so the two cannot drift apart.
//
// Blocks: 0 = token embedding, 1..L = layers 0..L-1, L+1 = output head and loss. A pipeline stage owns a
// contiguous range of blocks; the caller (core/parallel) orders forward/backward per micro-batch and moves
// hidden states and their gradients between stages.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/models/emitter.h"
#include "core/models/zoo.h"

namespace paraproof::models {

struct StepShape {
  int layers = 0;
  int64_t seq = 8;
  int64_t batch = 2;  // global batch (sequences)
};

struct ParamInfo {
  std::string name;    // "layers.3.mlp.w1.weight"
  std::string scope;   // "layers.3.mlp.w1"
  Shape shape;         // logical
  int tpDim = -1;      // dimension sharded over tp; -1 = replicated
  int block = 0;       // the block whose backward finishes its gradient (the head for a tied copy)
  int tpReplicas = 1;  // consecutive tp ranks holding the same shard (kv heads replicated when tp > kv heads)
  bool sequenceParallel = false;  // replicated over tp; under sp each tp rank sees only its sequence shard
  int epDim = -1;  // dimension sharded over expert parallelism (routed experts); -1 = not an expert
};

class TrainingStep {
 public:
  TrainingStep(const ModelConfig& cfg, StepShape shape, const ShardContext& ctx, Emitter& em);

  int blockCount() const { return shape_.layers + 2; }
  int headBlock() const { return shape_.layers + 1; }
  std::vector<ParamInfo> params(int block) const;
  // Hidden state leaving `block` (the head has none) and its layout in the current micro-batch.
  std::string hiddenName(int block) const;
  Layout hiddenLayout(int block) const;
  Layout hiddenGradLayout(int block) const;

  // Declares parameters, optimizer state and data of the blocks [first, last], and the step-wide values
  // (positions, valid-token count) they need.
  void begin(int firstBlock, int lastBlock);
  void setMicroBatch(int m);
  // Context parallel (cp > 1): a device holds two sequence chunks (zig-zag: cp rank r holds chunks r and
  // 2cp-1-r of 2cp), emitted as separate values "~c0", "~c1"; otherwise one chunk, the whole sequence.
  int chunks() const { return ctx_.deg().cp > 1 ? 2 : 1; }
  void setChunk(int c);
  void forward(int block);
  void backward(int block);
  // After the last micro-batch's backward of `block`: accumulates its gradients and reduces them over dp.
  void finishGradients(int block);
  // Loss reduction, clipping and AdamW over the owned parameters; declares the program outputs.
  void finish();
  // The step's state (logical names): each owned parameter and its AdamW moments, with the outputs that
  // succeed them. On the logical graph (every block owned) this is the plan's state declaration.
  std::vector<StatePair> state() const;

  void put(const Val& v);  // into the current micro-batch's environment, keyed by logical name
  const Val& get(const std::string& logicalName) const;

 private:
  // Layouts under the current sharding, micro-batch and sequence chunk.
  Layout act(const std::string& name, Shape logical) const;      // [batch, seq, ...]: rows, chunk of seq
  Layout fullSeq(const std::string& name, Shape logical) const;  // the rows, the whole sequence
  int64_t chunkStart(int chunk) const;                           // first position of this rank's chunk
  int64_t chunkLength() const;
  void stepWide();  // names without micro-batch and chunk suffix (parameters, accumulators)
  std::map<std::string, Val>& env(int mb, int chunk);
  Layout param(const ParamInfo& p) const;
  Layout grad(const ParamInfo& p) const;  // this micro-batch's gradient contribution
  // The contribution of one use (module `scope`) of `weight`: a tied weight's uses get their own names.
  Layout gradUse(const std::string& weight, const std::string& scope) const;
  std::string outputWeight() const;  // the output head's weight (the embedding when tied)

  // ZeRO: the data-parallel group shards optimizer state (1), gradients (2) and parameters (3) along dim 0.
  int zeroStage() const;  // 0 when the group has one rank
  // Per parameter: routed experts under ep are sharded over the expert-data-parallel group instead.
  Group zeroGroup(const ParamInfo& p) const;
  int zeroStage(const ParamInfo& p) const;  // 0 when p's group has one rank
  Layout shardOf(Layout l, const ParamInfo& p) const;
  Layout optimizerLayout(const ParamInfo& p) const;  // what AdamW updates on this rank
  void declareParam(const ParamInfo& p);
  void gatherParams(int block);
  Val accumulatedGrad(const ParamInfo& p);
  // Tied embedding under pp: the last stage holds a copy of the embedding; Megatron's embedding group.
  bool tiedCopy(const ParamInfo& p) const;
  bool tiedAcrossStages() const;
  Group embeddingGroup() const;
  std::vector<ParamInfo> gradParams(int block) const;
  Layout lossPart(const std::string& name) const;
  int gradPart() const;
  int gradParts() const;
  const ParamInfo& paramInfo(const std::string& name) const;

  Val linear(const std::string& scope, const Val& x, const std::string& weight, const Layout& out);
  Val linearDx(const std::string& scope, const Val& dy, const std::string& weight, const Layout& dx);
  void linearDw(const std::string& scope, const Val& dy, const Val& x, const std::string& weight);
  void addGrad(const std::string& param, const Val& g);

  void embeddingForward();
  void embeddingBackward();
  // A transformer layer is two residual sublayers, each owning its norm: attention (reads the layer input,
  // puts "<layer>.attention.residual") and FFN (reads that, puts the layer output); backward mirrors them.
  std::vector<ParamInfo> attentionParams(int layer) const;
  std::vector<ParamInfo> ffnParams(int layer) const;
  void attentionForward(int layer);  // GQA (Llama): input, core, output below
  void attentionBackward(int layer);
  // DeepSeek multi-head latent attention (mla_blocks.cpp); the same sublayer contract as attentionForward,
  // split the same way around its core so context parallelism can run the core across both chunks.
  std::vector<ParamInfo> mlaParams(int layer) const;
  void mlaForward(int layer);
  void mlaBackward(int layer);
  void mlaInput(int layer);         // norm, q and kv projections, RoPE: puts q_full, k_full, v
  void mlaCore(int layer);          // puts core.out
  void mlaCoreBackward(int layer);  // puts q_full.grad, k_full.grad, v.grad
  void mlaInputBackward(int layer);
  // The attention core's operands (value names after "layers.L.attention") and sizes: GQA's rotated q/k
  // and v, or MLA's concatenated [nope, rope] q/k (dn + dr wide) and v (dv wide).
  struct CoreOperands {
    std::string q, k, v;
    int64_t kvHeads = 0, qkDim = 0, vDim = 0;
    Json attrs;
  };
  CoreOperands coreOperands() const;
  // The attention sublayer's part before its core, GQA or MLA (used by context parallelism); the part after
  // it, attentionOutput, is shared.
  void coreInput(int layer);
  void coreInputBackward(int layer);
  void attentionInput(int layer);           // norm, q/k/v projections, RoPE: puts q_rot, k_rot, v
  void attentionCore(int layer);            // puts core.out
  void attentionOutput(int layer);          // GQA and MLA: wo (row-parallel) and the residual
  void attentionOutputBackward(int layer);  // puts core.out.grad
  void attentionCoreBackward(int layer);    // puts q_rot.grad, k_rot.grad, v.grad
  void attentionInputBackward(int layer);
  Json attentionAttrs() const;
  // Context parallel (context_parallel.cpp): the chunks share all-gathered keys and values.
  void forEachChunk(bool reverse, const std::function<void()>& fn);
  void sliceRopeTables();
  void contextParallelAttentionForward(int layer);
  void contextParallelAttentionBackward(int layer);
  Group cpReversed() const;
  void ffnForward(int layer);  // dense SwiGLU, or MoE on DeepSeek's MoE layers
  void ffnBackward(int layer);
  void swigluForward(int layer);  // dense SwiGLU MLP
  void swigluBackward(int layer);
  // DeepSeek MoE FFN (moe_blocks.cpp) for layers >= moe.denseLayers: router, routed experts modelled densely
  // (every expert sees every token, gates zero the unselected) and dispatched over the expert-parallel
  // group with all_to_all, shared experts; expert gradients are reduced over the expert-data-parallel group.
  bool moeLayer(int layer) const;
  std::vector<ParamInfo> moeParams(int layer) const;
  void moeForward(int layer);
  void moeBackward(int layer);
  void moeRouterForward(int layer, const Val& normed);  // normed: the sequence shard under sp
  void moeRouterBackward(int layer, const Val& dGates);
  // Layout of a per-expert token tensor [E, B, S, width]: `dispatched` = this rank's experts with the
  // tokens of its whole expert-parallel group (after the dispatch all_to_all), else every expert with the
  // rank's own tokens; `tpSharded` shards the last dim over tp.
  // `source` >= 0 (ep > 1): the chunk of a dispatched tensor holding group member `source`'s tokens. The
  // expert FFN runs per chunk so every intermediate has lineage (the rows of the whole group are not a box
  // when micro-batches interleave).
  Layout expertAct(const std::string& name, int64_t width, bool dispatched, bool tpSharded,
                   int source = -1) const;
  std::vector<Val> expertChunks(const Val& dispatched, const std::string& name, int64_t width,
                                const std::string& scope);
  Val expertConcat(const std::vector<Val>& chunks, const Layout& out, const std::string& scope);
  Layout expertGradChunk(const std::string& weight, int source) const;  // tokens of one source rank
  void addExpertGrad(const std::string& weight, const std::vector<Val>& chunkContributions);
  int expertGradPart() const;
  int expertGradParts() const;
  void mlpLayerForward(int layer);
  void mlpLayerBackward(int layer);
  void headForward();
  void headBackward();
  void vocabParallelLoss(const Val& logits, const Val& labels, const Val& mask);
  void vocabParallelLossBackward(const Val& logits, const Val& labels, const Val& mask);

  // Sequence parallelism and kv-head replication (sp_blocks.cpp).
  bool seqParallel() const;                                     // sp with tp > 1
  Layout seqAct(const std::string& name, Shape logical) const;  // act(), sequence-sharded over tp under sp
  Val gatherSeq(const Val& x, const std::string& scope);  // full sequence before a column-parallel block
  Val reduceRowOutput(const Val& partial, const std::string& scope);  // after a row-parallel linear
  int kvReplicas() const;                                             // tp ranks sharing one kv head
  Layout kvSharded(Layout l, int dim) const;                          // this rank's kv head(s)
  Layout kvGrad(const std::string& name, Shape logical) const;        // kvSharded, one of the replicas' parts
  // The tp ranks whose contributions to p's gradient are partial sums of one shard (one rank when none).
  Group gradSumGroup(const ParamInfo& p) const;
  void reduceGradOverShardReplicas(const std::vector<ParamInfo>& ps, std::vector<Val>& accs);
  bool countedInGradNorm(const ParamInfo& p) const;

  const ModelConfig& cfg_;
  StepShape shape_;
  const ShardContext& ctx_;
  Emitter& em_;
  int mb_ = 0;
  int chunk_ = 0;
  int firstBlock_ = 0, lastBlock_ = 0;
  std::vector<ParamInfo> owned_;
  std::vector<std::map<std::string, Val>> env_;  // per micro-batch and chunk
  std::map<std::string, Val> global_;            // parameters, optimizer state, step-wide values
  std::map<std::string, std::vector<Val>> mbGrads_;
  std::map<std::string, Val> grads_;  // reduced gradients, by parameter name
  std::vector<Val> lossParts_;
};

}  // namespace paraproof::models
