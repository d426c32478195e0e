// JSON string quoting for everything cuswap writes as JSON (inspect, plans,
// simulate/compare output, Perfetto export): `"`, `\` and control bytes are
// escaped, and bytes that are not valid UTF-8 (names come from trace files)
// become U+FFFD, so the output is always valid JSON.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace cuswap::trace {

// The length of the valid UTF-8 sequence at the start of `s` (non-empty), or 0.
inline size_t utf8_sequence(std::string_view s) {
  const auto b0 = static_cast<unsigned char>(s[0]);
  size_t n = 0;
  uint32_t min = 0, cp = 0;
  if ((b0 & 0xe0) == 0xc0) {
    n = 2, min = 0x80, cp = b0 & 0x1f;
  } else if ((b0 & 0xf0) == 0xe0) {
    n = 3, min = 0x800, cp = b0 & 0x0f;
  } else if ((b0 & 0xf8) == 0xf0) {
    n = 4, min = 0x10000, cp = b0 & 0x07;
  } else {
    return 0;
  }
  if (s.size() < n) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[k]);
    if ((b & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (b & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

// Appends `s` to `out` as a quoted JSON string.
inline void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\u{:04x}", c);
    } else if (c < 0x80) {
      out += static_cast<char>(c);
    } else {
      const size_t n = utf8_sequence(s.substr(i));
      if (n == 0) {
        out += "\\ufffd";
        ++i;
        continue;
      }
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    ++i;
  }
  out += '"';
}

inline std::string json_string(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

}  // namespace cuswap::trace
