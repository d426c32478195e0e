// A small JSON emitter for the CLI's --json output: objects, arrays,
// integers, booleans, null and strings, indented two spaces. Strings are
// escaped, and bytes that are not valid UTF-8 (kernel names come from
// trace files) become U+FFFD, so the output is always valid JSON.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace cuswap::cli {

class JsonWriter {
 public:
  void begin_object() { open('{'); }
  void end_object() { close('}'); }
  void begin_array() { open('['); }
  void end_array() { close(']'); }

  void key(std::string_view name) {
    separate();
    string(name);
    out_ += ": ";
    after_key_ = true;
  }

  void value(uint64_t v) { scalar(fmt::format("{}", v)); }
  void value(int v) { scalar(fmt::format("{}", v)); }
  void value(bool v) { scalar(v ? "true" : "false"); }
  void value(std::string_view v) {
    separate();
    string(v);
  }
  void value(const char* v) { value(std::string_view(v)); }
  void null() { scalar("null"); }

  template <typename T>
  void field(std::string_view name, const T& v) {
    key(name);
    value(v);
  }

  // The document, ending in a newline.
  std::string finish() { return out_ + "\n"; }

 private:
  void open(char bracket) {
    separate();
    out_ += bracket;
    first_.push_back(true);
  }

  void close(char bracket) {
    const bool empty = first_.back();
    first_.pop_back();
    if (!empty) newline();
    out_ += bracket;
  }

  void scalar(std::string_view text) {
    separate();
    out_ += text;
  }

  // Before any value or key: a comma and a new line, unless it follows a key.
  void separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (first_.empty()) return;
    if (!first_.back()) out_ += ',';
    first_.back() = false;
    newline();
  }

  void newline() {
    out_ += '\n';
    out_.append(2 * first_.size(), ' ');
  }

  void string(std::string_view s) {
    out_ += '"';
    for (size_t i = 0; i < s.size();) {
      const auto c = static_cast<unsigned char>(s[i]);
      if (c == '"' || c == '\\') {
        out_ += '\\';
        out_ += static_cast<char>(c);
      } else if (c == '\n') {
        out_ += "\\n";
      } else if (c == '\t') {
        out_ += "\\t";
      } else if (c < 0x20 || c == 0x7f) {
        out_ += fmt::format("\\u{:04x}", c);
      } else if (c < 0x80) {
        out_ += static_cast<char>(c);
      } else {
        const size_t n = utf8_sequence(s.substr(i));
        if (n == 0) {
          out_ += "\\ufffd";
          ++i;
          continue;
        }
        out_.append(s.substr(i, n));
        i += n;
        continue;
      }
      ++i;
    }
    out_ += '"';
  }

  // The length of the valid UTF-8 sequence at the start of `s`, or 0.
  static size_t utf8_sequence(std::string_view s) {
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

  std::string out_;
  std::vector<bool> first_;  // per open container: nothing written in it yet
  bool after_key_ = false;
};

}  // namespace cuswap::cli
