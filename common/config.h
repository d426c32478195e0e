// CUSWAP_CONF: one configuration string, `key:value` pairs separated by
// commas, e.g. `budget:12GiB,record:run.cst,stats:true`.
//
// The grammar is documented in docs/configuration.md. This module has two
// halves: value parsers and a pair reader that any option table can use
// (simcuda reads SIMCUDA_CONF with the same grammar), and cuswap's own option
// table (`Options`).
//
// Invariants:
// - Nothing here allocates. The environment string is read through
//   string_views; strings that must outlive it are copied into fixed buffers.
//   The shim parses its configuration before the process's allocator may be
//   safe to call.
// - A malformed pair never aborts parsing: it produces exactly one warning
//   naming the key (and the offset in the string) and leaves that option as
//   it was (its default, or what an earlier pair set); every other pair still
//   applies.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "common/log.h"

namespace cuswap::conf {

inline constexpr int kMaxDevices = 16;
inline constexpr size_t kMaxPathBytes = 1024;

// ---------------------------------------------------------------------------
// Value parsers. Each accepts surrounding spaces and returns nullopt on any
// malformed input (never a partial value).

// Sizes: an unsigned decimal with an optional fraction and an optional unit,
// case-insensitive: B, K/KB/KiB, M/MB/MiB, G/GB/GiB, T/TB/TiB. All units are
// binary (K = 1024). "1.5GiB" is 1610612736 bytes; the result must be a whole
// number of bytes and fit in 64 bits. Spaces may separate number and unit.
std::optional<uint64_t> parse_size(std::string_view text);

// Booleans: true/false, 1/0, yes/no, on/off, y/n, t/f, enable(d)/disable(d),
// case-insensitive.
std::optional<bool> parse_bool(std::string_view text);

// Unsigned decimal integer that fits in 64 bits.
std::optional<uint64_t> parse_uint(std::string_view text);

// Finite, non-negative decimal number ("52", "0.5", "1e3").
std::optional<double> parse_number(std::string_view text);

// ---------------------------------------------------------------------------
// Lists: `[a,b,c]`; a bare value without brackets is a one-item list. Items
// are trimmed; empty items (so also `[]`), nested or stray brackets, missing
// closing brackets and commas in a bare value are malformed. The whole list is
// checked up front: a malformed list yields no items at all.
class ListReader {
 public:
  explicit ListReader(std::string_view text);
  // False once the list is exhausted or malformed; check ok() afterwards.
  bool next(std::string_view& item);
  bool ok() const { return ok_; }

 private:
  std::string_view rest_;
  bool ok_ = true;
  bool done_ = false;
};

// Per-device values: a plain value applies to every device;
// `[0:12GiB,1:10GiB]` sets devices individually (device ordinals below
// kMaxDevices). Devices not named fall back to the caller's default.
template <typename T>
struct PerDevice {
  std::optional<T> all;
  std::array<std::optional<T>, kMaxDevices> device{};

  T get(int ordinal, T fallback) const {
    if (ordinal >= 0 && ordinal < kMaxDevices && device[static_cast<size_t>(ordinal)])
      return *device[static_cast<size_t>(ordinal)];
    return all ? *all : fallback;
  }
};

// Parses a per-device size; nullopt if any part is malformed.
std::optional<PerDevice<uint64_t>> parse_per_device_size(std::string_view text);

// ---------------------------------------------------------------------------
// Pair reader: splits a configuration string into `key:value` pairs at commas
// outside brackets. The key ends at the first colon; key and value are
// trimmed. A pair with no colon has an empty value and `has_value == false`
// (booleans accept a bare key as `true`). An empty key means a malformed pair:
// with `has_value` it was `:value`; without, an unbalanced bracket made
// `value` the whole rest of the string.
struct Pair {
  std::string_view key;
  std::string_view value;
  bool has_value = false;
  size_t offset = 0;  // byte offset of the key in the whole string
};

class PairReader {
 public:
  explicit PairReader(std::string_view text) : text_(text) {}
  // Returns false at the end. Empty pieces (",,") are skipped silently;
  // an unbalanced bracket makes the rest of the string one malformed pair
  // with an empty key, reported by the caller.
  bool next(Pair& pair);

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

// ---------------------------------------------------------------------------
// Warnings go to a sink: by default one line on stderr,
// `cuswap[pid]: warning: CUSWAP_CONF: ...`, written with write(2) from a stack
// buffer. Tests install their own sink, which gets the same line without the
// newline. Lines are capped at a few hundred bytes and control bytes in them
// are escaped, so a configuration string cannot forge log lines.
using WarnSink = void (*)(void* context, std::string_view line);

struct Warner {
  WarnSink sink = nullptr;  // nullptr: stderr
  void* context = nullptr;
  std::string_view source = "CUSWAP_CONF";  // named in every warning
  int count = 0;                            // warnings emitted so far

  // Emits "cuswap[pid]: warning: SOURCE: <message> at offset N". apply<>
  // words its own warnings (offset mid-sentence) through detail::report.
  void warn(size_t offset, std::string_view message);
};

// A string kept in a fixed buffer (paths, names).
struct FixedString {
  std::array<char, kMaxPathBytes> bytes{};
  size_t size = 0;

  // False (unchanged) if too long for the buffer and its terminator, or if
  // `text` holds a NUL byte (c_str() and view() would disagree).
  bool assign(std::string_view text);
  std::string_view view() const { return {bytes.data(), size}; }
  const char* c_str() const { return bytes.data(); }
  bool empty() const { return size == 0; }
};

// ---------------------------------------------------------------------------
// Generic option tables. `set` parses the value into the target and returns
// false if it is malformed; the pair is then reported and the target left as
// it was.
template <typename Target>
struct OptionSpec {
  std::string_view name;  // the key, case-sensitive
  std::string_view doc;   // the value's form, quoted in warnings as "(expected <doc>)"
  bool (*set)(Target& target, const Pair& pair);
};

// Applies every pair of `text` to `target` through `specs`. Unknown keys,
// missing values and malformed values are warned about, once each. A key
// given twice is set twice: the last valid value wins. Pass the table as a
// std::span (an std::array does not deduce `Target`).
template <typename Target>
void apply(std::string_view text, std::span<const OptionSpec<Target>> specs, Target& target,
           Warner& warner);

// ---------------------------------------------------------------------------
// cuswap's options. Keys and defaults are documented in
// docs/configuration.md; the CLI's flags map onto the same keys.
using LogLevel = log::LogLevel;
// The levels' names in LogLevel's order, as `log:` reads and writes them.
inline constexpr std::string_view kLogNames[] = {"error", "warn", "info", "debug"};

// What a key's value is: its type here, and how config.cpp reads it and
// echoes it.
namespace kind {
struct Bool {
  using type = bool;
};
struct Size {
  using type = uint64_t;
};
struct DeviceSizes {
  using type = PerDevice<uint64_t>;
};
struct Path {
  using type = FixedString;
};
struct Name {
  using type = FixedString;
};
struct Level {
  using type = LogLevel;
};
}  // namespace kind

// Every CUSWAP_CONF key, once: X(key, kind, field, default, echo, form, doc).
// It makes the Options struct, the parser's table (`form` is quoted in a
// warning as "expected <form>") and describe()'s echo, in this order;
// `always` keys are echoed every time, `changed` ones only when they are
// not their default.
#define CUSWAP_OPTIONS(X)                                                                    \
  X(passthrough, Bool, passthrough, false, always, "true or false", "turn everything off")   \
  X(budget, DeviceSizes, budget_bytes, {}, changed,                                          \
    "a size like 12GiB, or per device like [0:12GiB,1:10GiB]",                               \
    "device memory cap (default: the card's total)")                                         \
  X(swap_min, Size, swap_min_bytes, uint64_t{1} << 20, always, "a size like 1MiB",           \
    "smallest buffer given its own range")                                                   \
  X(record, Path, record_path, {}, changed, kPathForm, "write a .cst trace here")            \
  X(record_timing, Bool, record_timing, true, changed, "true or false",                      \
    "time launches on the device when recording")                                            \
  X(plan, Path, plan_path, {}, changed, kPathForm, "follow this plan")                       \
  X(online, Bool, online, true, changed, "true or false",                                    \
    "with a budget and no plan, plan the first iteration")                                   \
  X(planner, Name, planner, {}, changed, "a planner's name like cuswap",                     \
    "which planner plans online (default cuswap)")                                           \
  X(link, Name, link, {}, changed, "pcie3, pcie4, pcie5 or nvlink-c2c",                      \
    "the copy link the online planner assumes")                                              \
  X(log, Level, log, LogLevel::warn, always, "error, warn, info or debug", "what is logged") \
  X(stats, Bool, stats, false, always, "true or false", "print counters at exit")

inline constexpr std::string_view kPathForm =
    "a path of at most 1023 bytes without ',', '[' or ']'";

struct Options {
#define CUSWAP_OPTION_FIELD(key, kind_name, field, default_value, echo, form, doc) \
  kind::kind_name::type field = default_value;
  CUSWAP_OPTIONS(CUSWAP_OPTION_FIELD)
#undef CUSWAP_OPTION_FIELD
};

std::span<const OptionSpec<Options>> option_specs();

// Parses `text` over the defaults. Never fails; malformed parts are warned
// about and skipped.
Options parse_options(std::string_view text, Warner& warner);

// Reads CUSWAP_CONF from the environment (absent: defaults).
Options options_from_environment(Warner& warner);

// Writes the effective configuration as a configuration string that
// parse_options reads back to the same Options (`confirm_conf`-style echo,
// also stored in trace headers). Returns the bytes needed, not counting a
// terminator; writes at most `out.size()` bytes and never a partial pair. When
// a byte is left after the last whole pair written it is set to NUL, so a
// truncated result is still a usable string. A budget that has both `all` and
// per-device entries is written as all kMaxDevices devices (the grammar has
// no "every other device"); it reads back with the same get() for every
// device. Paths are written verbatim (parse_options refuses the ones that
// would not read back).
size_t describe(const Options& options, std::span<char> out);

}  // namespace cuswap::conf

// ---------------------------------------------------------------------------
// The definition of apply<>.
namespace cuswap::conf {
namespace detail {

enum class PairFault : uint8_t { unbalanced, no_key, unknown_key, missing_value, bad_value };

// Words and emits apply<>'s one warning about `pair`, naming its key and
// offset. `expected` is the option's doc; `was_set` says an earlier pair set
// the option, so the warning says that value is kept rather than the default.
void report(Warner& warner, const Pair& pair, PairFault fault, std::string_view expected,
            bool was_set);

}  // namespace detail

template <typename Target>
void apply(std::string_view text, std::span<const OptionSpec<Target>> specs, Target& target,
           Warner& warner) {
  // Only for the wording of warnings: which options an earlier pair set. Past
  // the 64th option of a table a warning says "default kept" regardless.
  uint64_t set_mask = 0;
  PairReader reader(text);
  Pair pair;
  while (reader.next(pair)) {
    if (pair.key.empty()) {
      detail::report(warner, pair,
                     pair.has_value ? detail::PairFault::no_key : detail::PairFault::unbalanced, {},
                     false);
      continue;
    }
    size_t index = 0;
    while (index < specs.size() && specs[index].name != pair.key)
      ++index;
    if (index == specs.size()) {
      detail::report(warner, pair, detail::PairFault::unknown_key, {}, false);
      continue;
    }
    const uint64_t bit = index < 64 ? uint64_t{1} << index : 0;
    if (specs[index].set(target, pair)) {
      set_mask |= bit;
      continue;
    }
    const bool missing = !pair.has_value || pair.value.empty();
    detail::report(warner, pair,
                   missing ? detail::PairFault::missing_value : detail::PairFault::bad_value,
                   specs[index].doc, (set_mask & bit) != 0);
  }
}

}  // namespace cuswap::conf
