// The configuration module (common/config.h): value parsers, the pair
// reader, warnings, and cuswap's option table (its describe() echo is in
// config_describe.cpp).
//
// Invariant: nothing here allocates (see config.h). Text is only ever sliced
// as string_views, numbers go through std::from_chars, and every line is
// formatted with fmt::format_to_n into a stack buffer, which fmt fills
// without touching the heap. tests/allocator/config_test.cpp counts
// operator new around parse_options to keep it that way.
#include "common/config.h"

#include "common/log.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <utility>

#include <fmt/format.h>

namespace cuswap::conf {
namespace {

constexpr std::string_view kSpaces = " \t\r\n\f\v";

// Long enough for any warning about a quoted key and value (each capped at
// kQuotedBytes); a longer line is cut, still ending in a newline.
constexpr size_t kLineBytes = 512;
constexpr size_t kQuotedBytes = 64;

std::string_view trim(std::string_view text) {
  const size_t first = text.find_first_not_of(kSpaces);
  if (first == std::string_view::npos) return {};
  const size_t last = text.find_last_not_of(kSpaces);
  return text.substr(first, last - first + 1);
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// ASCII only: <cctype> consults the locale, which the shim must not depend on.
char to_lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

bool equals_ignoring_case(std::string_view text, std::string_view lower_word) {
  if (text.size() != lower_word.size()) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    if (to_lower(text[i]) != lower_word[i]) return false;
  }
  return true;
}

// Bytes per unit, or nullopt for an unknown unit. The empty unit is bytes.
std::optional<uint64_t> unit_bytes(std::string_view unit) {
  if (unit.empty() || equals_ignoring_case(unit, "b")) return 1;
  constexpr std::string_view kPrefixes = "kmgt";  // 2^10, 2^20, 2^30, 2^40
  const size_t prefix = kPrefixes.find(to_lower(unit[0]));
  if (prefix == std::string_view::npos) return std::nullopt;
  const std::string_view rest = unit.substr(1);
  if (rest.empty() || equals_ignoring_case(rest, "b") || equals_ignoring_case(rest, "ib")) {
    return uint64_t{1} << (10 * (prefix + 1));
  }
  return std::nullopt;
}

// Text shown inside a warning: capped, and with control bytes escaped so that
// a newline in CUSWAP_CONF cannot start a forged line of its own.
struct Escaped {
  std::string_view text;
  size_t cap_bytes;
};

}  // namespace
}  // namespace cuswap::conf

template <>
struct fmt::formatter<cuswap::conf::Escaped> {
  constexpr auto parse(format_parse_context& ctx) { return ctx.begin(); }

  template <typename Context>
  auto format(const cuswap::conf::Escaped& escaped, Context& ctx) const {
    auto out = ctx.out();
    const size_t shown = std::min(escaped.text.size(), escaped.cap_bytes);
    for (size_t i = 0; i < shown; ++i) {
      const auto byte = static_cast<unsigned char>(escaped.text[i]);
      if (byte < 0x20 || byte == 0x7f) {
        out = fmt::format_to(out, "\\x{:02x}", byte);
      } else {
        *out++ = static_cast<char>(byte);
      }
    }
    if (shown < escaped.text.size()) out = fmt::format_to(out, "...");
    return out;
  }
};

namespace cuswap::conf {
namespace {

// Formats "SOURCE: " + the message into a stack buffer, makes it a log line
// ("cuswap[pid]: warning: ...") and hands it to the sink, or to stderr.
template <typename... Args>
void emit(Warner& warner, fmt::format_string<Args...> format, Args&&... args) {
  std::array<char, kLineBytes> message;
  const auto source = fmt::format_to_n(message.data(), message.size(),
                                       "{}: ", Escaped{warner.source, kQuotedBytes});
  size_t length = std::min(source.size, message.size());
  const auto text = fmt::format_to_n(message.data() + length, message.size() - length, format,
                                     std::forward<Args>(args)...);
  length += std::min(text.size, message.size() - length);
  std::array<char, kLineBytes - 1> line;  // with its newline, a line is at most kLineBytes
  const size_t line_length =
      log::format_line(LogLevel::warn, std::string_view(message.data(), length), line);
  ++warner.count;
  const std::string_view whole(line.data(), line_length);
  if (warner.sink != nullptr)
    warner.sink(warner.context, whole);
  else
    log::write_stderr_line(whole);
}

// Reading a value of each kind (config.h's kind::).
bool read(kind::Bool, bool& field, const Pair& pair) {
  if (!pair.has_value) {  // a bare key switches a flag on
    field = true;
    return true;
  }
  const auto value = parse_bool(pair.value);
  if (!value) return false;
  field = *value;
  return true;
}

bool read(kind::Size, uint64_t& field, const Pair& pair) {
  const auto value = pair.has_value ? parse_size(pair.value) : std::nullopt;
  if (!value) return false;
  field = *value;
  return true;
}

bool read(kind::DeviceSizes, PerDevice<uint64_t>& field, const Pair& pair) {
  auto value = pair.has_value ? parse_per_device_size(pair.value) : std::nullopt;
  if (!value) return false;
  field = *value;  // replaces every entry: the last pair wins as a whole
  return true;
}

// Paths with ',' '[' or ']' would not read back from describe()'s output, so
// they are refused here rather than echoed wrongly later.
bool read(kind::Path, FixedString& field, const Pair& pair) {
  if (!pair.has_value || pair.value.empty()) return false;
  if (pair.value.find_first_of(",[]") != std::string_view::npos) return false;
  return field.assign(pair.value);
}

bool read(kind::Level, LogLevel& field, const Pair& pair) {
  for (size_t level = 0; level < std::size(kLogNames); ++level) {
    if (pair.has_value && equals_ignoring_case(pair.value, kLogNames[level])) {
      field = static_cast<LogLevel>(level);
      return true;
    }
  }
  return false;
}

bool read(kind::Name, FixedString& field, const Pair& pair) {
  if (!pair.has_value || pair.value.empty() || pair.value.size() > 32) return false;
  for (char ch : pair.value)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_')) return false;
  return field.assign(pair.value);
}

#define CUSWAP_OPTION_SPEC(key, kind_name, field, default_value, echo, form, doc) \
  {#key, form, [](Options& o, const Pair& p) { return read(kind::kind_name{}, o.field, p); }},
#define CUSWAP_OPTION_COUNT(...) +1
constexpr std::array<OptionSpec<Options>, 0 CUSWAP_OPTIONS(CUSWAP_OPTION_COUNT)> kOptionSpecs{
    {CUSWAP_OPTIONS(CUSWAP_OPTION_SPEC)}};
#undef CUSWAP_OPTION_COUNT
#undef CUSWAP_OPTION_SPEC
static_assert(kLogNames[static_cast<size_t>(LogLevel::debug)] == "debug");

}  // namespace

// ---------------------------------------------------------------------------
// Value parsers.

std::optional<uint64_t> parse_uint(std::string_view text) {
  text = trim(text);
  if (text.empty() || !std::all_of(text.begin(), text.end(), is_digit)) return std::nullopt;
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc{} || stop != end) return std::nullopt;
  return value;
}

std::optional<double> parse_number(std::string_view text) {
  text = trim(text);
  // from_chars takes a '-' (and "-0" is not below zero), so refuse signs here.
  if (text.empty() || text.front() == '-' || text.front() == '+') return std::nullopt;
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value, std::chars_format::general);
  if (error != std::errc{} || stop != end || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::optional<uint64_t> parse_size(std::string_view text) {
  text = trim(text);
  size_t cursor = 0;
  while (cursor < text.size() && is_digit(text[cursor]))
    ++cursor;
  if (cursor == 0) return std::nullopt;  // empty, a sign, ".5", or a unit alone
  const auto whole = parse_uint(text.substr(0, cursor));
  if (!whole) return std::nullopt;  // more than 64 bits

  std::string_view fraction;
  if (cursor < text.size() && text[cursor] == '.') {
    const size_t start = ++cursor;
    while (cursor < text.size() && is_digit(text[cursor]))
      ++cursor;
    fraction = text.substr(start, cursor - start);
    if (fraction.empty()) return std::nullopt;  // "1.GiB"
  }
  const auto unit = unit_bytes(trim(text.substr(cursor)));
  if (!unit) return std::nullopt;

  // Integers, not double, so 1.1TiB cannot round. Right to left,
  // bytes = (digit * unit + bytes) / 10 stays whole at every step exactly when
  // the final result is whole, so the first remainder means "not whole bytes".
  // bytes < unit throughout, so nothing here exceeds 10 TiB.
  uint64_t fraction_bytes = 0;
  for (size_t i = fraction.size(); i-- > 0;) {
    const uint64_t scaled = static_cast<uint64_t>(fraction[i] - '0') * *unit + fraction_bytes;
    if (scaled % 10 != 0) return std::nullopt;
    fraction_bytes = scaled / 10;
  }
  if (*whole > (std::numeric_limits<uint64_t>::max() - fraction_bytes) / *unit) {
    return std::nullopt;
  }
  return *whole * *unit + fraction_bytes;
}

std::optional<bool> parse_bool(std::string_view text) {
  text = trim(text);
  constexpr std::string_view kTrue[] = {"true", "1", "yes", "on", "y", "t", "enable", "enabled"};
  constexpr std::string_view kFalse[] = {"false", "0", "no",      "off",
                                         "n",     "f", "disable", "disabled"};
  for (const std::string_view word : kTrue) {
    if (equals_ignoring_case(text, word)) return true;
  }
  for (const std::string_view word : kFalse) {
    if (equals_ignoring_case(text, word)) return false;
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------
// Lists and per-device values.

ListReader::ListReader(std::string_view text) {
  text = trim(text);
  const bool bracketed = !text.empty() && text.front() == '[';
  if (bracketed) {
    if (text.size() < 2 || text.back() != ']') {
      ok_ = false;
      return;
    }
    text = text.substr(1, text.size() - 2);
  }
  // A comma in a bare value could be one item or two; refuse to guess.
  const std::string_view refused = bracketed ? "[]" : "[],";
  if (text.find_first_of(refused) != std::string_view::npos) {
    ok_ = false;
    return;
  }
  for (std::string_view scan = text;;) {
    const size_t comma = scan.find(',');
    if (trim(scan.substr(0, comma)).empty()) {
      ok_ = false;
      return;
    }
    if (comma == std::string_view::npos) break;
    scan.remove_prefix(comma + 1);
  }
  rest_ = text;
}

bool ListReader::next(std::string_view& item) {
  if (!ok_ || done_) return false;
  const size_t comma = rest_.find(',');
  item = trim(rest_.substr(0, comma));
  if (comma == std::string_view::npos) {
    done_ = true;
    rest_ = {};
  } else {
    rest_.remove_prefix(comma + 1);
  }
  return true;
}

std::optional<PerDevice<uint64_t>> parse_per_device_size(std::string_view text) {
  text = trim(text);
  PerDevice<uint64_t> result;
  if (text.empty() || text.front() != '[') {
    result.all = parse_size(text);
    if (!result.all) return std::nullopt;
    return result;
  }
  ListReader list(text);
  std::string_view item;
  while (list.next(item)) {
    const size_t colon = item.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    const auto ordinal = parse_uint(item.substr(0, colon));
    if (!ordinal || *ordinal >= static_cast<uint64_t>(kMaxDevices)) return std::nullopt;
    const auto bytes = parse_size(item.substr(colon + 1));
    if (!bytes) return std::nullopt;
    auto& slot = result.device[static_cast<size_t>(*ordinal)];
    if (slot) return std::nullopt;  // the same device twice: which one was meant?
    slot = bytes;
  }
  if (!list.ok()) return std::nullopt;
  return result;
}

// ---------------------------------------------------------------------------
// Pairs.

bool PairReader::next(Pair& pair) {
  while (pos_ < text_.size()) {
    const size_t start = pos_;
    size_t end = start;
    int depth = 0;
    bool unbalanced = false;
    for (; end < text_.size(); ++end) {
      const char c = text_[end];
      if (c == '[') {
        ++depth;
      } else if (c == ']') {
        if (depth == 0) {
          unbalanced = true;
          break;
        }
        --depth;
      } else if (c == ',' && depth == 0) {
        break;
      }
    }
    if (depth > 0) unbalanced = true;

    if (unbalanced) {
      // No comma after this point can be trusted to end a pair, so the rest is
      // one malformed pair: one warning, and the loop ends.
      const std::string_view rest = text_.substr(start);
      const size_t lead = rest.find_first_not_of(kSpaces);
      pair = Pair{{}, trim(rest), false, start + lead};
      pos_ = text_.size();
      return true;
    }

    pos_ = end < text_.size() ? end + 1 : end;
    const std::string_view piece = text_.substr(start, end - start);
    const size_t lead = piece.find_first_not_of(kSpaces);
    if (lead == std::string_view::npos) continue;  // ",," or ", ,"
    const size_t colon = piece.find(':');
    if (colon == std::string_view::npos) {
      pair = Pair{trim(piece), {}, false, start + lead};
    } else {
      pair = Pair{trim(piece.substr(0, colon)), trim(piece.substr(colon + 1)), true, start + lead};
    }
    return true;
  }
  return false;
}

// ---------------------------------------------------------------------------
// Warnings.

void Warner::warn(size_t offset, std::string_view message) {
  emit(*this, "{} at offset {}", Escaped{message, kLineBytes}, offset);
}

namespace detail {

void report(Warner& warner, const Pair& pair, PairFault fault, std::string_view expected,
            bool was_set) {
  const Escaped key{pair.key, kQuotedBytes};
  const Escaped value{pair.value, kQuotedBytes};
  const std::string_view kept = was_set ? "earlier value kept" : "default kept";
  const std::string_view open = expected.empty() ? "" : " (expected ";
  const std::string_view close = expected.empty() ? "" : ")";
  switch (fault) {
    case PairFault::unbalanced:
      emit(warner, "unbalanced bracket in '{}' at offset {}; rest of the string ignored", value,
           pair.offset);
      return;
    case PairFault::no_key:
      emit(warner, "missing key before ':{}' at offset {}; ignored", value, pair.offset);
      return;
    case PairFault::unknown_key:
      emit(warner, "unknown key '{}' at offset {}; ignored", key, pair.offset);
      return;
    case PairFault::missing_value:
      emit(warner, "missing value for '{}' at offset {}{}{}{}; {}", key, pair.offset, open,
           expected, close, kept);
      return;
    case PairFault::bad_value:
      emit(warner, "bad value '{}' for '{}' at offset {}{}{}{}; {}", value, key, pair.offset, open,
           expected, close, kept);
      return;
  }
}

}  // namespace detail

bool FixedString::assign(std::string_view text) {
  if (text.size() >= bytes.size() || text.find('\0') != std::string_view::npos) return false;
  std::copy_n(text.data(), text.size(), bytes.data());
  bytes[text.size()] = '\0';
  size = text.size();
  return true;
}

// ---------------------------------------------------------------------------
// cuswap's options.

std::span<const OptionSpec<Options>> option_specs() {
  return kOptionSpecs;
}

Options parse_options(std::string_view text, Warner& warner) {
  Options options;
  apply(text, option_specs(), options, warner);
  return options;
}

Options options_from_environment(Warner& warner) {
  const char* text = std::getenv("CUSWAP_CONF");
  if (text == nullptr) return Options{};
  return parse_options(text, warner);
}

}  // namespace cuswap::conf
