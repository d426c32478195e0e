// Logging for code that runs inside other people's processes: one line,
// `cuswap[pid]: level: message`, formatted into a stack buffer and written
// to stderr with write(2). No allocation, no iostreams, no locks.
#pragma once

#include <fmt/format.h>

#include <atomic>
#include <cstdint>
#include <span>
#include <string_view>

// The lowest layer of cuswap's own code: it includes nothing of cuswap's,
// and the configuration reader (common/config.h) logs through it.
namespace cuswap::log {

enum class LogLevel : uint8_t { error, warn, info, debug };

// Messages above this level are dropped (default: warn).
void set_level(LogLevel level) noexcept;
bool enabled(LogLevel level) noexcept;

// Writes one line; lines longer than the buffer are cut. A report line
// (what the user asked for, such as stats) carries no level and is never
// filtered.
void write_line(LogLevel level, std::string_view message) noexcept;
void write_report_line(std::string_view message) noexcept;

// The pieces, for code that hands lines elsewhere (configuration warnings
// go to a sink in tests): `cuswap[pid]: level: message` formatted into `out`,
// cut to fit, and its length; and one line written to stderr with a newline.
size_t format_line(LogLevel level, std::string_view message, std::span<char> out) noexcept;
void write_stderr_line(std::string_view line) noexcept;

template <typename... Args>
void emit(LogLevel level, fmt::format_string<Args...> format, Args&&... args) noexcept {
  if (!enabled(level)) return;
  char buffer[512];
  auto result = fmt::format_to_n(buffer, sizeof buffer, format, std::forward<Args>(args)...);
  size_t size = result.size < sizeof buffer ? result.size : sizeof buffer;
  write_line(level, std::string_view(buffer, size));
}

template <typename... Args>
void report(fmt::format_string<Args...> format, Args&&... args) noexcept {
  char buffer[512];
  auto result = fmt::format_to_n(buffer, sizeof buffer, format, std::forward<Args>(args)...);
  write_report_line(
      std::string_view(buffer, result.size < sizeof buffer ? result.size : sizeof buffer));
}

template <typename... Args>
void info(fmt::format_string<Args...> format, Args&&... args) noexcept {
  emit(LogLevel::info, format, std::forward<Args>(args)...);
}

template <typename... Args>
void warn(fmt::format_string<Args...> format, Args&&... args) noexcept {
  emit(LogLevel::warn, format, std::forward<Args>(args)...);
}

template <typename... Args>
void error(fmt::format_string<Args...> format, Args&&... args) noexcept {
  emit(LogLevel::error, format, std::forward<Args>(args)...);
}

// A message that may repeat many times: the first `limit` get through, then
// one line says the rest are suppressed.
class Limited {
 public:
  explicit constexpr Limited(int limit) : limit_(limit) {}
  bool allow() noexcept;

 private:
  int limit_;
  std::atomic<int> count_{0};
};

}  // namespace cuswap::log
