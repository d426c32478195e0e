// gunzip: transparent decompression of `.gz` traces with zlib, members
// concatenated as gzip(1) does. The output is capped so that a small bomb
// cannot exhaust memory.
#include <zlib.h>

#include <fmt/format.h>

#include "tracer/import/importers.h"

namespace cuswap::trace::import {
namespace {
constexpr size_t kMaxInflatedBytes = size_t{16} << 30;  // 16 GiB
}

bool gunzip(std::string_view bytes, std::string_view name, std::string& out, std::string& error) {
  out.clear();
  size_t consumed = 0;
  while (consumed < bytes.size()) {
    z_stream stream{};
    if (inflateInit2(&stream, 15 + 16) != Z_OK) {
      error = fmt::format("{}: offset {}: cannot start inflating (zlib)", name, consumed);
      return false;
    }
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data() + consumed));
    const size_t member_in = bytes.size() - consumed;
    stream.avail_in = static_cast<uInt>(std::min<size_t>(member_in, UINT32_MAX));
    int rc = Z_OK;
    char buffer[1 << 16];
    while (rc == Z_OK) {
      stream.next_out = reinterpret_cast<Bytef*>(buffer);
      stream.avail_out = sizeof buffer;
      rc = inflate(&stream, Z_NO_FLUSH);
      out.append(buffer, sizeof buffer - stream.avail_out);
      if (out.size() > kMaxInflatedBytes) {
        inflateEnd(&stream);
        error = fmt::format("{}: offset {}: expected at most {} bytes once inflated", name,
                            consumed + stream.total_in, kMaxInflatedBytes);
        return false;
      }
      if (rc == Z_BUF_ERROR && stream.avail_in == 0 && member_in > stream.total_in) {
        stream.avail_in = static_cast<uInt>(
            std::min<size_t>(member_in - stream.total_in, UINT32_MAX));
        rc = Z_OK;
      }
    }
    const size_t at = consumed + stream.total_in;
    const char* const message = stream.msg;
    inflateEnd(&stream);
    if (rc != Z_STREAM_END) {
      error = rc == Z_BUF_ERROR
                  ? fmt::format("{}: offset {}: expected more gzip data (the file is truncated)",
                                name, at)
                  : fmt::format("{}: offset {}: expected valid gzip data ({})", name, at,
                                message ? message : "corrupt stream");
      return false;
    }
    consumed = at;
    // Trailing zeros after the last member are padding some tools write.
    while (consumed < bytes.size() && bytes[consumed] == '\0') ++consumed;
    if (consumed < bytes.size() &&
        (bytes.size() - consumed < 2 || static_cast<uint8_t>(bytes[consumed]) != 0x1f ||
         static_cast<uint8_t>(bytes[consumed + 1]) != 0x8b)) {
      error = fmt::format("{}: offset {}: expected another gzip member or the end of the file",
                          name, consumed);
      return false;
    }
  }
  return true;
}

}  // namespace cuswap::trace::import
