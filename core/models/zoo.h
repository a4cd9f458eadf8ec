// The model zoo: real published configurations (docs/models.md) plus tiny models for tests.
#pragma once

#include <string>
#include <vector>

namespace paraproof::models {

enum class Family { Mlp, Llama, DeepSeek };
const char* familyName(Family f);

struct MoeConfig {
  int routedExperts = 0;
  int sharedExperts = 0;
  int topk = 0;
  int expertFfn = 0;
  int groups = 1;      // group-limited routing: experts split into `groups`
  int topkGroups = 1;  // only the best `topkGroups` groups are eligible
  bool sigmoidScoring = false;
  double routedScaling = 1.0;
  int denseLayers = 0;  // the first `denseLayers` layers use a dense FFN
};

struct MlaConfig {
  int qLora = 0;  // 0: q is projected directly
  int kvLora = 0;
  int qkNope = 0;
  int qkRope = 0;
  int vHead = 0;
};

struct ModelConfig {
  std::string name;
  Family family = Family::Llama;
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kvHeads = 0;
  int ffn = 0;  // dense FFN width
  int vocab = 0;
  double ropeTheta = 500000;
  double normEps = 1e-5;
  bool tiedEmbedding = false;
  MlaConfig mla;  // DeepSeek only
  MoeConfig moe;  // DeepSeek only
  int mtpLayers = 0;
  std::string note;  // one line for `paraproof models`

  int headDim() const { return heads ? hidden / heads : 0; }
};

std::vector<ModelConfig> modelZoo();
// nullptr when unknown.
const ModelConfig* findModel(const std::string& name);

}  // namespace paraproof::models
