// describe(): the effective options written back as one CUSWAP_CONF
// string, every key that differs from its default (and those always
// echoed), in the form the reader takes back. Like the reader, it never
// allocates: each pair is formatted into a stack buffer first.
#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "common/config.h"
#include "common/log.h"

namespace cuswap::conf {
namespace {

// A byte count in the largest binary unit that divides it exactly, the form
// describe() writes: 12GiB, 1536MiB, 1000 (parse_size reads each back).
struct ExactSize {
  uint64_t bytes;
};

}  // namespace
}  // namespace cuswap::conf

template <>
struct fmt::formatter<cuswap::conf::ExactSize> {
  constexpr auto parse(format_parse_context& ctx) { return ctx.begin(); }

  template <typename Context>
  auto format(const cuswap::conf::ExactSize& size, Context& ctx) const {
    constexpr std::pair<int, std::string_view> kUnits[] = {
        {40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}};
    for (const auto& [shift, name] : kUnits) {
      const uint64_t unit = uint64_t{1} << shift;
      if (size.bytes != 0 && size.bytes % unit == 0) {
        return fmt::format_to(ctx.out(), "{}{}", size.bytes / unit, name);
      }
    }
    return fmt::format_to(ctx.out(), "{}", size.bytes);
  }
};

namespace cuswap::conf {
namespace {

// Collects describe()'s pairs: each is formatted whole into a scratch buffer
// first, so that one which does not fit is never half-written to `out`.
class PairWriter {
 public:
  explicit PairWriter(std::span<char> out) : out_(out) {}

  void begin() {
    pair_bytes_ = 0;
    if (needed_bytes_ > 0) put(",");
  }

  template <typename... Args>
  void put(fmt::format_string<Args...> format, Args&&... args) {
    const size_t used = std::min(pair_bytes_, scratch_.size());
    const auto result = fmt::format_to_n(scratch_.data() + used, scratch_.size() - used, format,
                                         std::forward<Args>(args)...);
    pair_bytes_ += result.size;
  }

  void end() {
    // Once one pair is left out, later ones are too: the output stays a prefix.
    const bool fits = pair_bytes_ <= scratch_.size() && written_bytes_ + pair_bytes_ <= out_.size();
    if (!truncated_ && fits) {
      std::copy_n(scratch_.data(), pair_bytes_, out_.data() + written_bytes_);
      written_bytes_ += pair_bytes_;
    } else {
      truncated_ = true;
    }
    needed_bytes_ += pair_bytes_;
  }

  size_t finish() {
    if (written_bytes_ < out_.size()) out_[written_bytes_] = '\0';
    return needed_bytes_;
  }

 private:
  std::span<char> out_;
  std::array<char, kMaxPathBytes + 64> scratch_;  // the longest pair is a path
  size_t pair_bytes_ = 0;
  size_t needed_bytes_ = 0;
  size_t written_bytes_ = 0;
  bool truncated_ = false;
};

std::string_view bool_name(bool value) {
  return value ? "true" : "false";
}

// An out-of-range level (only a cast can make one) is echoed as the default.
std::string_view log_name(LogLevel level) {
  const auto index = static_cast<size_t>(level);
  return index < std::size(kLogNames) ? kLogNames[index] : "warn";
}

// describe(): when a key is echoed, and how each kind is written.
enum class Echo { always, changed };
constexpr Echo always = Echo::always;
constexpr Echo changed = Echo::changed;

template <typename T>
bool same(const T& a, const T& b) {
  return a == b;
}
bool same(const FixedString& a, const FixedString& b) {
  return a.view() == b.view();
}
bool same(const PerDevice<uint64_t>& a, const PerDevice<uint64_t>& b) {
  return a.all == b.all && a.device == b.device;
}

void write(kind::Bool, PairWriter& w, std::string_view key, bool value) {
  w.begin();
  w.put("{}:{}", key, bool_name(value));
  w.end();
}
void write(kind::Size, PairWriter& w, std::string_view key, uint64_t bytes) {
  w.begin();
  w.put("{}:{}", key, ExactSize{bytes});
  w.end();
}
void write(kind::DeviceSizes, PairWriter& w, std::string_view key,
           const PerDevice<uint64_t>& sizes) {
  const bool per_device = std::any_of(sizes.device.begin(), sizes.device.end(),
                                      [](const auto& bytes) { return bytes.has_value(); });
  if (!per_device) {
    if (sizes.all) write(kind::Size{}, w, key, *sizes.all);
    return;
  }
  w.begin();
  w.put("{}:[", key);
  bool first = true;
  for (size_t ordinal = 0; ordinal < sizes.device.size(); ++ordinal) {
    const std::optional<uint64_t> bytes = sizes.device[ordinal] ? sizes.device[ordinal] : sizes.all;
    if (!bytes) continue;
    w.put("{}{}:{}", first ? "" : ",", ordinal, ExactSize{*bytes});
    first = false;
  }
  w.put("]");
  w.end();
}
void write_string(PairWriter& w, std::string_view key, const FixedString& text) {
  w.begin();
  w.put("{}:{}", key, text.view());
  w.end();
}
void write(kind::Path, PairWriter& w, std::string_view key, const FixedString& path) {
  write_string(w, key, path);
}
void write(kind::Name, PairWriter& w, std::string_view key, const FixedString& name) {
  write_string(w, key, name);
}
void write(kind::Level, PairWriter& w, std::string_view key, LogLevel level) {
  w.begin();
  w.put("{}:{}", key, log_name(level));
  w.end();
}

}  // namespace

size_t describe(const Options& options, std::span<char> out) {
  PairWriter writer(out);
  static const Options kDefaults;
#define CUSWAP_OPTION_ECHO(key, kind_name, field, default_value, echo, form, doc) \
  if (echo == Echo::always || !same(options.field, kDefaults.field))              \
    write(kind::kind_name{}, writer, #key, options.field);
  CUSWAP_OPTIONS(CUSWAP_OPTION_ECHO)
#undef CUSWAP_OPTION_ECHO
  return writer.finish();
}

}  // namespace cuswap::conf
