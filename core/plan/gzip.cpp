#include "core/plan/gzip.h"

#include <zlib.h>

#include <stdexcept>

namespace paraproof {
namespace {

constexpr int kGzipWindow = 15 + 16;  // zlib's window bits plus 16: a gzip header and trailer
constexpr size_t kChunk = size_t{1} << 20;

}  // namespace

bool isGzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string gzipCompress(std::string_view text) {
  z_stream z{};
  if (deflateInit2(&z, 1, Z_DEFLATED, kGzipWindow, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("cannot start gzip compression");
  std::string out;
  out.resize(deflateBound(&z, static_cast<uLong>(text.size())));
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  // deflateBound guarantees one Z_FINISH call suffices; inputs beyond 4 GiB are not plans (limits.h).
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::runtime_error("gzip compression failed");
  return out;
}

std::string gzipDecompress(std::string_view bytes, int64_t maxBytes) {
  z_stream z{};
  if (inflateInit2(&z, kGzipWindow) != Z_OK) throw std::runtime_error("cannot start gzip decompression");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  std::string out;
  int rc = Z_OK;
  while (true) {
    const size_t at = out.size();
    out.resize(at + kChunk);
    z.next_out = reinterpret_cast<Bytef*>(out.data() + at);
    z.avail_out = static_cast<uInt>(kChunk);
    rc = inflate(&z, Z_NO_FLUSH);
    out.resize(at + (kChunk - z.avail_out));
    if (static_cast<int64_t>(out.size()) > maxBytes) {
      inflateEnd(&z);
      throw std::runtime_error("decompresses to more than " + std::to_string(maxBytes) + " bytes, the limit");
    }
    if (rc == Z_STREAM_END) {
      if (z.avail_in == 0) break;
      inflateReset(&z);  // a further gzip member (as `cat a.gz b.gz` makes)
      continue;
    }
    if (rc != Z_OK && !(rc == Z_BUF_ERROR && z.avail_in > 0)) {
      const std::string why = z.msg ? z.msg : (rc == Z_BUF_ERROR ? "the stream ends early" : "corrupt data");
      inflateEnd(&z);
      throw std::runtime_error("not a valid gzip stream: " + why);
    }
    if (rc == Z_BUF_ERROR && z.avail_in == 0) {
      inflateEnd(&z);
      throw std::runtime_error("not a valid gzip stream: the stream ends early");
    }
  }
  inflateEnd(&z);
  return out;
}

}  // namespace paraproof
