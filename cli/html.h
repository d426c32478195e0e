// Text for HTML and SVG that `cuswap report` writes. Names come from trace
// files, which are untrusted: everything written between tags or inside an
// attribute goes through html_text, which escapes the five characters that
// could end a text run or an attribute (& < > " '), and replaces bytes that
// are not valid UTF-8, and control characters other than tab and newline,
// with U+FFFD, so the page stays well-formed whatever a trace holds.
#pragma once

#include <string>
#include <string_view>

#include "tracer/json_quote.h"

namespace cuswap::cli {

inline void append_html_text(std::string& out, std::string_view s) {
  while (!s.empty()) {
    const auto c = static_cast<unsigned char>(s[0]);
    if (c >= 0x80) {
      const size_t n = trace::utf8_sequence(s);
      if (n == 0) {
        out += "\xef\xbf\xbd";
        s.remove_prefix(1);
      } else {
        out.append(s.substr(0, n));
        s.remove_prefix(n);
      }
      continue;
    }
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      case '\t':
      case '\n':
        out += static_cast<char>(c);
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += "\xef\xbf\xbd";
        } else {
          out += static_cast<char>(c);
        }
    }
    s.remove_prefix(1);
  }
}

inline std::string html_text(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  append_html_text(out, s);
  return out;
}

}  // namespace cuswap::cli
