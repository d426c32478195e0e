// gunzip: transparent decompression of `.gz` traces with zlib, members
// concatenated as gzip(1) does. The output is capped (Note [Bounded input])
// before it grows past the cap, so a small bomb cannot exhaust memory.
#include <zlib.h>

#include <fmt/format.h>

#include "tracer/import/importers.h"

namespace cuswap::trace::import {
bool gunzip(std::string_view bytes, std::string_view name, uint64_t max_out_bytes,
            std::string_view limit_hint, std::string& out, std::string& error) {
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
      const size_t produced = sizeof buffer - stream.avail_out;
      if (out.size() + produced > max_out_bytes) {
        const size_t at = consumed + stream.total_in;
        inflateEnd(&stream);
        error = fmt::format("{}: offset {}: expected at most {} bytes once inflated{}", name, at,
                            max_out_bytes, limit_hint);
        return false;
      }
      out.append(buffer, produced);
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
