#include "core/models/zoo.h"

namespace paraproof::models {

const char* familyName(Family f) {
  switch (f) {
    case Family::Mlp:
      return "mlp";
    case Family::Llama:
      return "llama";
    case Family::DeepSeek:
      return "deepseek";
  }
  return "?";
}

namespace {

ModelConfig llama(std::string name, int layers, int hidden, int heads, int ffn) {
  ModelConfig c;
  c.name = std::move(name);
  c.family = Family::Llama;
  c.layers = layers;
  c.hidden = hidden;
  c.heads = heads;
  c.kvHeads = 8;
  c.ffn = ffn;
  c.vocab = 128256;
  c.ropeTheta = 500000;
  c.normEps = 1e-5;
  c.note = "Llama 3: RMSNorm, RoPE, GQA, SwiGLU, untied embedding/output";
  return c;
}

ModelConfig deepseek(std::string name, int layers, int hidden, int heads, int ffn, int vocab, MlaConfig mla,
                     MoeConfig moe) {
  ModelConfig c;
  c.name = std::move(name);
  c.family = Family::DeepSeek;
  c.layers = layers;
  c.hidden = hidden;
  c.heads = heads;
  c.kvHeads = heads;
  c.ffn = ffn;
  c.vocab = vocab;
  c.ropeTheta = 10000;
  c.normEps = 1e-6;
  c.mla = mla;
  c.moe = moe;
  c.note = "DeepSeek: MLA attention, MoE with shared experts and group-limited top-k routing";
  return c;
}

std::vector<ModelConfig> buildZoo() {
  std::vector<ModelConfig> zoo;

  ModelConfig mlp;
  mlp.name = "mlp";
  mlp.family = Family::Mlp;
  mlp.layers = 2;
  mlp.hidden = 16;
  mlp.ffn = 32;
  mlp.vocab = 32;
  mlp.note = "test model: token embedding, residual GELU MLP layers, output head";
  zoo.push_back(mlp);

  ModelConfig tiny = llama("gpt-tiny", 2, 64, 4, 128);
  tiny.kvHeads = 2;
  tiny.vocab = 128;
  tiny.tiedEmbedding = true;  // as GPT-2: the output head reuses the token embedding
  tiny.note = "test model: Llama structure (RMSNorm, RoPE, GQA, SwiGLU) at toy size, tied embedding/output";
  zoo.push_back(tiny);

  // Micro models: small enough that a whole training step can be evaluated at full shape (the end-to-end
  // oracle of `paraproof mutate` does that for every mutant).
  ModelConfig micro = llama("llama-micro", 2, 8, 4, 16);
  micro.kvHeads = 2;
  micro.vocab = 16;
  micro.note =
      "test model: Llama structure (RMSNorm, RoPE, GQA, SwiGLU) at micro size, untied embedding/output";
  zoo.push_back(micro);
  ModelConfig gptMicro = micro;
  gptMicro.name = "gpt-micro";
  gptMicro.tiedEmbedding = true;
  gptMicro.note = "test model: as llama-micro with the output head tied to the token embedding";
  zoo.push_back(gptMicro);
  // Layer 0 dense, layer 1 MoE: V3 routing (sigmoid scores, 2 groups of 2 experts, best group only),
  // a shared expert, routed scaling; MLA with a q low-rank projection.
  MoeConfig microMoe{4, 1, 2, 4, 2, 1, true, 2.5, 1};
  ModelConfig dsMicro = deepseek("dsv3-micro", 2, 8, 2, 16, 16, MlaConfig{4, 4, 2, 2, 2}, microMoe);
  dsMicro.note =
      "test model: DeepSeek structure (MLA, MoE with a shared expert, group-limited top-k) at micro size";
  zoo.push_back(dsMicro);

  zoo.push_back(llama("llama3-8b", 32, 4096, 32, 14336));
  zoo.push_back(llama("llama3-70b", 80, 8192, 64, 28672));
  zoo.push_back(llama("llama3-405b", 126, 16384, 128, 53248));

  MoeConfig lite{64, 2, 6, 1408, 1, 1, false, 1.0, 1};
  zoo.push_back(deepseek("dsv3-16b", 27, 2048, 16, 10944, 102400, MlaConfig{0, 512, 128, 64, 128}, lite));
  MoeConfig v2{160, 2, 6, 1536, 8, 3, false, 16.0, 1};
  zoo.push_back(deepseek("dsv3-236b", 60, 5120, 128, 12288, 102400, MlaConfig{1536, 512, 128, 64, 128}, v2));
  MoeConfig v3{256, 1, 8, 2048, 8, 4, true, 2.5, 3};
  ModelConfig big =
      deepseek("dsv3-671b", 61, 7168, 128, 18432, 129280, MlaConfig{1536, 512, 128, 64, 128}, v3);
  big.mtpLayers = 1;
  zoo.push_back(big);
  return zoo;
}

}  // namespace

std::vector<ModelConfig> modelZoo() {
  return buildZoo();
}

const ModelConfig* findModel(const std::string& name) {
  static const std::vector<ModelConfig> zoo = buildZoo();  // immutable after first use
  for (const ModelConfig& c : zoo)
    if (c.name == name) return &c;
  return nullptr;
}

}  // namespace paraproof::models
