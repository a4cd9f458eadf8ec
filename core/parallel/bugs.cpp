#include "core/parallel/bugs.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>
#include <stdexcept>

#include "core/parallel/bug_catalog.h"
#include "core/parallel/generate.h"

namespace paraproof::parallel {

namespace {

using namespace catalog;

const std::vector<Item>& items() {
  static const std::vector<Item> all = buildCatalog();  // immutable after first use
  return all;
}

const Item& itemFor(const std::string& id) {
  for (const Item& i : items())
    if (i.entry.id == id) return i;
  std::string known;
  for (const Item& i : items())
    known += (known.empty() ? "" : ", ") + i.entry.id;
  throw BadInjection("unknown bug '" + id + "' (known: " + known + ")");
}

int intAttr(const std::string& key, const std::string& value) {
  try {
    size_t used = 0;
    const int n = std::stoi(value, &used);
    if (used == value.size() && n >= 0) return n;
  } catch (const std::exception&) {
  }
  throw BadInjection("--inject: " + key + " needs a non-negative integer, got '" + value + "'");
}

}  // namespace

const std::vector<BugEntry>& bugCatalog() {
  static const std::vector<BugEntry> entries = [] {
    std::vector<BugEntry> e;
    for (const Item& i : items())
      e.push_back(i.entry);
    return e;
  }();
  return entries;
}

const BugEntry* findBug(const std::string& id) {
  for (const BugEntry& b : bugCatalog())
    if (b.id == id) return &b;
  return nullptr;
}

BugRequest parseInjection(const std::string& text) {
  BugRequest r;
  const auto at = text.find('@');
  r.id = text.substr(0, at);
  if (at == std::string::npos) return r;
  std::stringstream in(text.substr(at + 1));
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) throw BadInjection("--inject: '" + item + "' is not key=value");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "layer")
      r.site.layer = intAttr(key, value);
    else if (key == "rank")
      r.site.rank = intAttr(key, value);
    else if (key == "mb")
      r.site.microBatch = intAttr(key, value);
    else
      throw BadInjection("--inject: unknown key '" + key + "' (known: layer, rank, mb)");
  }
  return r;
}

bool bugIsPerLayer(const std::string& id) {
  return itemFor(id).needs.layer;
}

Injection injectBug(Plan& plan, const Generation& generation, const std::string& text) {
  const BugRequest req = parseInjection(text);
  const Item& item = itemFor(req.id);
  const ParallelSpec& spec = generation.spec;
  const int layers = generation.layers;
  const Needs& n = item.needs;
  auto need = [&](bool ok, const std::string& what) {
    if (!ok) throw BadInjection(req.id + " needs " + what + " (try --parallel " + item.entry.parallel + ")");
  };
  need(spec.dp >= n.dp, "dp >= " + std::to_string(n.dp));
  need(spec.tp >= n.tp, "tp >= " + std::to_string(n.tp));
  need(spec.pp >= n.pp, "pp >= " + std::to_string(n.pp));
  need(spec.mb >= n.mb, "mb >= " + std::to_string(n.mb));
  need(spec.cp >= n.cp, "cp >= " + std::to_string(n.cp));
  need(spec.zero >= n.zero, "zero >= " + std::to_string(n.zero));
  need(spec.sp || !n.sp, "sp (sequence parallelism)");
  need(spec.ep >= n.ep, "ep >= " + std::to_string(n.ep));
  if (n.tied && !generation.model.tiedEmbedding)
    throw BadInjection(req.id + " needs a model with tied embedding/output (try --model gpt-tiny)");
  const bool llama = generation.transformerBlocks();
  if (n.llama && !llama) throw BadInjection(req.id + " needs a Llama-style model (try --model gpt-tiny)");

  Injection inj;
  inj.id = req.id;
  Where w{plan, spec, layers, llama, req.site, inj};
  if (w.site.microBatch < 0) w.site.microBatch = 0;
  if (w.site.microBatch >= spec.mb)
    throw BadInjection("--inject: mb=" + std::to_string(w.site.microBatch) + " but the plan has " +
                       std::to_string(spec.mb) + " micro-batches");
  if (n.moe) {
    const int firstMoe = generation.firstMoeLayer();
    if (firstMoe < 0)
      throw BadInjection(req.id + " needs a MoE layer (try --model " + item.entry.model + ")");
    if (w.site.layer < 0) w.site.layer = firstMoe;
    if (w.site.layer < firstMoe)
      throw BadInjection("--inject: layer " + std::to_string(w.site.layer) +
                         " has a dense FFN (the first MoE layer is " + std::to_string(firstMoe) + ")");
  }
  if (n.layer) {
    if (w.site.layer < 0) w.site.layer = 0;
    if (w.site.layer >= layers)
      throw BadInjection("--inject: layer=" + std::to_string(w.site.layer) + " but the plan has " +
                         std::to_string(layers) + " layers");
  } else {
    w.site.layer = -1;
  }
  if (w.site.rank < 0) {
    // The first rank holding the layer (or, for step-level bugs, where the mutation applies).
    for (const Device& d : plan.devices) {
      const bool holds = !n.layer || std::any_of(d.graph.ops.begin(), d.graph.ops.end(), [&](const Op& o) {
        return o.scope.starts_with("layers." + std::to_string(w.site.layer) + ".");
      });
      if (!holds) continue;
      Plan trial = plan;
      Injection scratch;
      Where tw{trial, spec, layers, llama, w.site, scratch};
      tw.site.rank = d.rank;
      try {
        item.mutate(tw);
        w.site.rank = d.rank;
        break;
      } catch (const std::invalid_argument&) {
      }
    }
    if (w.site.rank < 0) throw std::invalid_argument(req.id + ": no rank of this plan where it applies");
  } else if (plan.deviceIndex(w.site.rank) == kNone) {
    throw BadInjection("--inject: rank=" + std::to_string(w.site.rank) + " is not a device of the plan");
  } else if (n.layer) {
    const Device& d = *plan.deviceByRank(w.site.rank);
    const std::string prefix = "layers." + std::to_string(w.site.layer) + ".";
    if (!std::any_of(d.graph.ops.begin(), d.graph.ops.end(),
                     [&](const Op& o) { return o.scope.starts_with(prefix); }))
      throw BadInjection("--inject: rank " + std::to_string(w.site.rank) + " does not hold layer " +
                         std::to_string(w.site.layer) + " (another pipeline stage does)");
  }
  item.mutate(w);
  inj.site = w.site;
  Json ops = Json::array();
  for (const auto& [r, op] : inj.changedOps)
    ops.push_back({{"rank", r}, {"op", op}});
  plan.metadata["injected"] = {{"id", inj.id},        {"class", item.entry.cls}, {"layer", w.site.layer},
                               {"rank", w.site.rank}, {"mb", w.site.microBatch}, {"ops", ops}};
  return inj;
}

std::string injectedBugNote(const Json& m) {
  if (!m.is_object()) return {};
  for (const char* key : {"injected", "inject", "bug"}) {
    if (!m.contains(key)) continue;
    const Json& b = m[key];
    if (b.is_string()) return b.get<std::string>();
    if (!b.is_object()) continue;
    const std::string id = b.contains("id") && b["id"].is_string() ? b["id"].get<std::string>() : "";
    std::string desc = b.contains("description") && b["description"].is_string()
                           ? b["description"].get<std::string>()
                           : std::string();
    if (const BugEntry* entry = findBug(id); entry && desc.empty()) desc = entry->description;
    if (desc.empty()) desc = b.dump();
    return id.empty() ? desc : id + ": " + desc;
  }
  // Hand-made fixtures say what they break in metadata.expect.why.
  if (m.contains("expect") && m["expect"].is_object() && m["expect"].contains("why") &&
      m["expect"]["why"].is_string() && m["expect"].value("verdict", "") == "not_equivalent")
    return m["expect"]["why"].get<std::string>();
  return {};
}

}  // namespace paraproof::parallel
