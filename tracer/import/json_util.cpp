// JSON helpers (json_util.h): typed access with pointers in errors, and a
// small validating scanner used only after simdjson rejected a document, to
// say at which byte and what was expected there.
#include "tracer/import/json_util.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <vector>

#include <fmt/format.h>

namespace cuswap::trace::import {

std::string JsonPath::str() const {
  std::vector<const JsonPath*> chain;
  for (const JsonPath* p = this; p && (p->parent || p->is_index || !p->key.empty()); p = p->parent)
    chain.push_back(p);
  if (chain.empty()) return "/";
  std::string out;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    out += '/';
    if ((*it)->is_index) {
      out += std::to_string((*it)->index);
      continue;
    }
    for (char c : (*it)->key) {  // RFC 6901 escapes
      if (c == '~') out += "~0";
      else if (c == '/') out += "~1";
      else out += c;
    }
  }
  return out;
}

bool JsonErrors::fail(const JsonPath& path, std::string_view what) const {
  error_ = fmt::format("{}: {}: expected {}", name_, path.str(), what);
  return false;
}

bool JsonErrors::object(simdjson::dom::element e, const JsonPath& p,
                        simdjson::dom::object& out) const {
  if (e.get_object().get(out) != simdjson::SUCCESS) return fail(p, "an object");
  return true;
}

bool JsonErrors::array(simdjson::dom::element e, const JsonPath& p,
                       simdjson::dom::array& out) const {
  if (e.get_array().get(out) != simdjson::SUCCESS) return fail(p, "an array");
  return true;
}

bool JsonErrors::string(simdjson::dom::element e, const JsonPath& p,
                        std::string_view& out) const {
  if (e.get_string().get(out) != simdjson::SUCCESS) return fail(p, "a string");
  return true;
}

namespace {
template <typename T>
bool integer_from_string(std::string_view s, T& out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}
}  // namespace

bool JsonErrors::int64(simdjson::dom::element e, const JsonPath& p, int64_t& out,
                       bool strings) const {
  switch (e.type()) {
    case simdjson::dom::element_type::INT64: out = e.get_int64().value_unsafe(); return true;
    case simdjson::dom::element_type::UINT64: break;  // above INT64_MAX
    case simdjson::dom::element_type::DOUBLE: {
      const double d = e.get_double().value_unsafe();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18) {
        out = static_cast<int64_t>(d);
        return true;
      }
      break;
    }
    case simdjson::dom::element_type::STRING:
      if (strings && integer_from_string(e.get_string().value_unsafe(), out)) return true;
      break;
    default: break;
  }
  return fail(p, strings ? "an integer (or a string holding one)" : "an integer");
}

bool JsonErrors::uint64(simdjson::dom::element e, const JsonPath& p, uint64_t& out,
                        bool strings) const {
  switch (e.type()) {
    case simdjson::dom::element_type::UINT64: out = e.get_uint64().value_unsafe(); return true;
    case simdjson::dom::element_type::INT64: {
      const int64_t v = e.get_int64().value_unsafe();
      if (v >= 0) {
        out = static_cast<uint64_t>(v);
        return true;
      }
      break;
    }
    case simdjson::dom::element_type::DOUBLE: {
      const double d = e.get_double().value_unsafe();
      if (std::isfinite(d) && d >= 0 && d == std::floor(d) && d < 1.8e19) {
        out = static_cast<uint64_t>(d);
        return true;
      }
      break;
    }
    case simdjson::dom::element_type::STRING:
      if (strings && integer_from_string(e.get_string().value_unsafe(), out)) return true;
      break;
    default: break;
  }
  return fail(p, strings ? "a non-negative integer (or a string holding one)"
                         : "a non-negative integer");
}

bool JsonErrors::number(simdjson::dom::element e, const JsonPath& p, double& out) const {
  switch (e.type()) {
    case simdjson::dom::element_type::INT64:
      out = static_cast<double>(e.get_int64().value_unsafe());
      return true;
    case simdjson::dom::element_type::UINT64:
      out = static_cast<double>(e.get_uint64().value_unsafe());
      return true;
    case simdjson::dom::element_type::DOUBLE:
      out = e.get_double().value_unsafe();
      if (std::isfinite(out)) return true;
      break;
    default: break;
  }
  return fail(p, "a number");
}

bool JsonErrors::member(simdjson::dom::object o, std::string_view key, const JsonPath& p,
                        simdjson::dom::element& out) const {
  if (o.at_key(key).get(out) != simdjson::SUCCESS)
    return fail(p, fmt::format("an object with the key \"{}\"", key));
  return true;
}

bool find_member(simdjson::dom::element o, std::string_view key, simdjson::dom::element& out) {
  simdjson::dom::object obj;
  if (o.get_object().get(obj) != simdjson::SUCCESS) return false;
  return obj.at_key(key).get(out) == simdjson::SUCCESS;
}

namespace {

// The offset of the first byte that does not start a valid UTF-8 sequence
// (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF), or npos.
size_t first_invalid_utf8(std::string_view b) {
  size_t i = 0;
  while (i < b.size()) {
    const auto c = static_cast<uint8_t>(b[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n = 0;
    uint8_t low = 0x80, high = 0xbf;  // the range of the second byte
    if (c >= 0xc2 && c <= 0xdf) n = 1;
    else if (c == 0xe0) n = 2, low = 0xa0;
    else if (c == 0xed) n = 2, high = 0x9f;
    else if (c >= 0xe1 && c <= 0xef) n = 2;
    else if (c == 0xf0) n = 3, low = 0x90;
    else if (c == 0xf4) n = 3, high = 0x8f;
    else if (c >= 0xf1 && c <= 0xf3) n = 3;
    else return i;
    for (size_t k = 1; k <= n; ++k) {
      if (i + k >= b.size()) return i;
      const auto d = static_cast<uint8_t>(b[i + k]);
      if (k == 1 ? (d < low || d > high) : (d < 0x80 || d > 0xbf)) return i;
    }
    i += n + 1;
  }
  return std::string_view::npos;
}

}  // namespace

bool parse_json(std::string_view bytes, std::string_view name, simdjson::dom::parser& parser,
                simdjson::dom::element& root, std::string& error) {
  const auto code = parser.parse(bytes.data(), bytes.size(), true).get(root);
  if (code == simdjson::SUCCESS) return true;
  const JsonSyntaxError syntax = find_json_syntax_error(bytes);
  const size_t bad_utf8 = code == simdjson::UTF8_ERROR ? first_invalid_utf8(bytes)
                                                       : std::string_view::npos;
  if (bad_utf8 != std::string_view::npos && (!syntax.found || bad_utf8 < syntax.offset))
    error = fmt::format("{}: offset {}: expected UTF-8 text, found byte 0x{:02x}", name, bad_utf8,
                        bad_utf8 < bytes.size() ? static_cast<uint8_t>(bytes[bad_utf8]) : 0);
  else if (syntax.found)
    error = fmt::format("{}: offset {}: expected {}", name, syntax.offset, syntax.expected);
  else
    error = fmt::format("{}: offset 0: expected valid JSON ({})", name,
                        simdjson::error_message(code));
  return false;
}

// ---------------------------------------------------------------------------
// The scanner: a JSON grammar over bytes with an explicit stack, no values.

namespace {

class Scanner {
 public:
  explicit Scanner(std::string_view s) : s_(s) {}

  JsonSyntaxError run() {
    skip_ws();
    if (!value()) return error_;
    skip_ws();
    if (i_ != s_.size()) return fail("the end of the document");
    return {};
  }

 private:
  JsonSyntaxError fail(std::string_view expected) {
    error_ = {i_, expected, true};
    return error_;
  }
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t'))
      ++i_;
  }
  bool literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) {
      fail("a JSON value");
      return false;
    }
    i_ += word.size();
    return true;
  }
  bool string() {
    ++i_;  // the opening quote
    while (i_ < s_.size()) {
      const auto c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        ++i_;
        return true;
      }
      if (c < 0x20) {
        fail("a character or an escape inside a string");
        return false;
      }
      if (c == '\\') {
        ++i_;
        if (i_ >= s_.size()) break;
        const char e = s_[i_];
        if (e == 'u') {
          for (int k = 1; k <= 4; ++k)
            if (i_ + k >= s_.size() || !std::isxdigit(static_cast<unsigned char>(s_[i_ + k]))) {
              i_ += k;
              fail("four hex digits after \\u");
              return false;
            }
          i_ += 4;
        } else if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) {
          fail("a valid escape after a backslash");
          return false;
        }
      }
      ++i_;
    }
    fail("the closing quote of a string");
    return false;
  }
  bool digits() {
    const size_t start = i_;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
    if (i_ == start) {
      fail("a digit");
      return false;
    }
    return true;
  }
  bool number() {
    if (s_[i_] == '-') ++i_;
    if (i_ < s_.size() && s_[i_] == '0') ++i_;
    else if (!digits()) return false;
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (!digits()) return false;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (!digits()) return false;
    }
    return true;
  }
  bool scalar() {
    if (i_ >= s_.size()) {
      fail("a JSON value (the document ends early)");
      return false;
    }
    const char c = s_[i_];
    if (c == '"') return string();
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    if (c == 't') return literal("true");
    if (c == 'f') return literal("false");
    if (c == 'n') return literal("null");
    fail("a JSON value");
    return false;
  }
  // Values with containers, iteratively: the stack holds '{' or '['.
  bool value() {
    std::vector<char> stack;
    for (;;) {
      skip_ws();
      if (i_ < s_.size() && (s_[i_] == '{' || s_[i_] == '[')) {
        const char open = s_[i_++];
        stack.push_back(open);
        skip_ws();
        const char close = open == '{' ? '}' : ']';
        if (i_ < s_.size() && s_[i_] == close) {
          ++i_;
          stack.pop_back();
        } else {
          if (open == '{' && !key()) return false;
          continue;
        }
      } else if (!scalar()) {
        return false;
      }
      // After a value: a comma, or closers.
      for (;;) {
        if (stack.empty()) return true;
        skip_ws();
        const char close = stack.back() == '{' ? '}' : ']';
        if (i_ >= s_.size()) {
          fail(stack.back() == '{' ? "',' or '}' (the document ends early)"
                                   : "',' or ']' (the document ends early)");
          return false;
        }
        if (s_[i_] == close) {
          ++i_;
          stack.pop_back();
          continue;
        }
        if (s_[i_] != ',') {
          fail(stack.back() == '{' ? "',' or '}'" : "',' or ']'");
          return false;
        }
        ++i_;
        if (stack.back() == '{' && !key()) return false;
        break;
      }
    }
  }
  bool key() {
    skip_ws();
    if (i_ >= s_.size() || s_[i_] != '"') {
      fail("a string key");
      return false;
    }
    if (!string()) return false;
    skip_ws();
    if (i_ >= s_.size() || s_[i_] != ':') {
      fail("':' after a key");
      return false;
    }
    ++i_;
    return true;
  }

  std::string_view s_;
  size_t i_ = 0;
  JsonSyntaxError error_;
};

}  // namespace

JsonSyntaxError find_json_syntax_error(std::string_view bytes) { return Scanner(bytes).run(); }

}  // namespace cuswap::trace::import
