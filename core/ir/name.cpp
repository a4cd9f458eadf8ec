#include "core/ir/name.h"

#include <array>
#include <atomic>
#include <deque>
#include <mutex>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace paraproof {

namespace {

// Shards by hash, so that the generator's and the passes' two threads rarely wait on each other.
constexpr size_t kShards = 64;

struct Text {
  std::string_view text;
  size_t hash;
  bool operator==(const Text& o) const { return text == o.text; }
};
struct TextHash {
  size_t operator()(const Text& t) const { return t.hash; }
};

}  // namespace

struct NamePool {
  struct Shard {
    std::mutex mu;
    std::deque<Name::Entry> entries;                               // stable addresses
    std::unordered_map<Text, const Name::Entry*, TextHash> index;  // keys view into `entries`
  };
  std::array<Shard, kShards> shards;
  std::atomic<size_t> size{0}, bytes{0};
};

namespace {

// Never destroyed: names outlive every static that holds a plan.
NamePool& pool() {
  static NamePool* p = new NamePool;
  return *p;
}

}  // namespace

const Name::Entry& Name::emptyEntry() {
  static const Entry* e = new Entry{std::string(), NameHash{}(std::string_view())};
  return *e;
}

const Name::Entry& Name::intern(std::string_view s) {
  if (s.empty()) return emptyEntry();
  const size_t h = NameHash{}(s);  // the hash a lookup by string view computes
  NamePool::Shard& shard = pool().shards[h % kShards];
  std::lock_guard lock(shard.mu);
  auto it = shard.index.find(Text{s, h});
  if (it != shard.index.end()) return *it->second;
  const Entry& e = shard.entries.emplace_back(Entry{std::string(s), h});
  shard.index.emplace(Text{e.text, h}, &e);
  pool().size.fetch_add(1, std::memory_order_relaxed);
  // The entry, its text when it does not fit inline, and about a hash node and a bucket of the index.
  const size_t heapText = e.text.size() >= sizeof(std::string) - sizeof(size_t) ? e.text.capacity() + 1 : 0;
  pool().bytes.fetch_add(sizeof(Entry) + heapText + sizeof(std::pair<Text, const Entry*>) + 2 * sizeof(void*),
                         std::memory_order_relaxed);
  return e;
}

size_t Name::pooled() {
  return pool().size.load(std::memory_order_relaxed);
}

size_t Name::pooledBytes() {
  return pool().bytes.load(std::memory_order_relaxed);
}

void to_json(nlohmann::json& j, const Name& n) {
  j = n.str();
}

void from_json(const nlohmann::json& j, Name& n) {
  n = Name(j.get_ref<const std::string&>());
}

}  // namespace paraproof
