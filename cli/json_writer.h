// A small JSON emitter for the CLI's --json output: objects, arrays,
// integers, booleans, null and strings, indented two spaces. Strings are
// quoted by trace::append_json_string (tracer/json_quote.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "tracer/json_quote.h"

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

  void string(std::string_view s) { trace::append_json_string(out_, s); }

  std::string out_;
  std::vector<bool> first_;  // per open container: nothing written in it yet
  bool after_key_ = false;
};

}  // namespace cuswap::cli
