// gzip (RFC 1952) for plan files: a plan written to PATH.gz is its JSON text compressed, and a loaded file
// that starts with gzip's magic bytes is inflated first (docs/plan-format.md, "Compressed plans").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace paraproof {

bool isGzip(std::string_view bytes);  // starts with the gzip magic 1f 8b
// Fast compression (zlib level 1): plans repeat names and attributes, so speed costs little size.
std::string gzipCompress(std::string_view text);
// Inflates every gzip member; throws std::runtime_error on a corrupt stream or when the text would exceed
// `maxBytes` (a small file must not expand into an unbounded one).
std::string gzipDecompress(std::string_view bytes, int64_t maxBytes);

}  // namespace paraproof
