#include "core/plan/value_names.h"

namespace paraproof {

CopyTag copyTagOf(const std::string& s) {
  const size_t h = s.rfind('#');
  if (h == std::string::npos) return {-1, s};
  size_t e = h + 1;
  while (e < s.size() && e - h <= 6 && s[e] >= '0' && s[e] <= '9')
    ++e;
  const bool digits = e > h + 1 && (e == h + 2 || s[h + 1] != '0');  // no leading zeros
  if (!digits || (e < s.size() && s[e] >= '0' && s[e] <= '9')) return {-1, s};
  // One allocation, not four: every value and op name of every device is tagged when a plan is folded.
  int mb = 0;
  for (size_t i = h + 1; i < e; ++i)
    mb = mb * 10 + (s[i] - '0');
  std::string key;
  key.reserve(s.size() - (e - h) + 2);
  key.append(s, 0, h).append("#*").append(s, e, std::string::npos);
  return {mb, std::move(key)};
}

namespace names {

std::string microBatchSuffix(int m, int count) {
  return m >= 0 && count > 1 ? "#" + std::to_string(m) : std::string();
}

std::string chunkSuffix(int k, int count) {
  return k >= 0 && count > 1 ? "~c" + std::to_string(k) : std::string();
}

std::string collectiveOutput(const std::string& input, std::string_view tag) {
  return input + "/" + std::string(tag);
}

std::string copyMarker(const std::string& name) {
  const CopyTag tag = copyTagOf(name);
  return tag.mb < 0 ? std::string() : "#" + std::to_string(tag.mb);
}

std::string withoutCopyMarker(const std::string& name, int* microBatch) {
  const CopyTag tag = copyTagOf(name);
  if (microBatch) *microBatch = tag.mb;
  if (tag.mb < 0) return name;
  const size_t star = tag.key.rfind("#*");
  return tag.key.substr(0, star) + tag.key.substr(star + 2);
}

std::string taggedBeforeCopyMarker(const std::string& name, const std::string& tag) {
  const std::string marker = copyMarker(name);
  if (marker.empty()) return name + "." + tag;
  const size_t h = name.rfind(marker);
  return name.substr(0, h) + "." + tag + name.substr(h);
}

}  // namespace names
}  // namespace paraproof
