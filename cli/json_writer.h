// The one JSON emitter of the CLI (its --json output, plan summaries, the
// Perfetto export): objects, arrays, integers, doubles, booleans, null and
// strings. Containers are indented two spaces, one member a line, unless
// opened one-line (Note [One-line containers]). Strings are quoted by
// trace::append_json_string (tracer/json_quote.h).
#pragma once

#include <cmath>
#include <concepts>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "tracer/json_quote.h"

namespace cuswap::cli {

// Note [One-line containers]
// A container opened with Layout::line is written on one line, members
// separated by ", ", and so is everything inside it:
//   {"ph": "X", "pid": 1, "args": {"bytes": 4096}}
// The Perfetto export writes each trace event so: one event a line is the
// layout Chrome's own traces use, a large export stays greppable event by
// event, and fully indented it would take about twelve times the lines
// (and a fifth more bytes) of a 2,500-event trace. The --json outputs use
// it where a value reads as one row: `plan --max-batch`'s rows, a
// shortfall, the list of notes, the batch sizes.
enum class Layout { indented, line };

// A number written with `digits` after the point (fmt's {:.Nf}), for the
// values that have always been printed so: an overhead to six digits, a
// time in microseconds to three.
struct Fixed {
  double value;
  int digits;
};

// Any integer type but bool, which is written true or false.
template <typename T>
concept Integer = std::integral<T> && !std::same_as<T, bool>;

class JsonWriter {
 public:
  void begin_object(Layout layout = Layout::indented) { open('{', layout); }
  void end_object() { close('}'); }
  void begin_array(Layout layout = Layout::indented) { open('[', layout); }
  void end_array() { close(']'); }

  void key(std::string_view name) {
    separate();
    string(name);
    out_ += ": ";
    after_key_ = true;
  }

  template <Integer T>
  void value(T v) {
    separate();
    fmt::format_to(std::back_inserter(out_), "{}", v);
  }
  // The shortest text that reads back as the same double. JSON has no
  // infinity or NaN: they are written as null, which a reader can parse.
  void value(double v) {
    if (!std::isfinite(v)) {
      null();
      return;
    }
    separate();
    fmt::format_to(std::back_inserter(out_), "{}", v);
  }
  void value(Fixed v) {
    if (!std::isfinite(v.value)) {
      null();
      return;
    }
    separate();
    fmt::format_to(std::back_inserter(out_), "{:.{}f}", v.value, v.digits);
  }
  void value(bool v) { scalar(v ? "true" : "false"); }
  void value(std::string_view v) {
    separate();
    string(v);
  }
  void value(const char* v) { value(std::string_view(v)); }
  void null() { scalar("null"); }
  // A value where there is one, else null.
  template <typename T>
  void value(const std::optional<T>& v) {
    if (v)
      value(*v);
    else
      null();
  }

  template <typename T>
  void field(std::string_view name, const T& v) {
    key(name);
    value(v);
  }

  // The document, ending in a newline.
  std::string finish() { return out_ + "\n"; }

 private:
  struct Level {
    bool empty = true;  // nothing written in it yet
    bool line = false;  // Note [One-line containers]
  };

  void open(char bracket, Layout layout) {
    separate();
    out_ += bracket;
    const bool inside_line = !levels_.empty() && levels_.back().line;
    levels_.push_back({true, inside_line || layout == Layout::line});
  }

  void close(char bracket) {
    const Level level = levels_.back();
    levels_.pop_back();
    if (!level.empty && !level.line) newline();
    out_ += bracket;
  }

  void scalar(std::string_view text) {
    separate();
    out_ += text;
  }

  // Before any value or key: a comma and a new line (in a one-line
  // container, a space), unless it follows a key.
  void separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (levels_.empty()) return;
    Level& level = levels_.back();
    if (!level.empty) out_ += ',';
    if (level.line) {
      if (!level.empty) out_ += ' ';
    } else {
      newline();
    }
    level.empty = false;
  }

  void newline() {
    out_ += '\n';
    out_.append(2 * levels_.size(), ' ');
  }

  void string(std::string_view s) { trace::append_json_string(out_, s); }

  std::string out_;
  std::vector<Level> levels_;  // the open containers, outermost first
  bool after_key_ = false;
};

}  // namespace cuswap::cli
