#include "common/log.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace cuswap::log {
namespace {

std::atomic<LogLevel> g_level{LogLevel::warn};

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::error:
      return "error";
    case LogLevel::warn:
      return "warning";
    case LogLevel::info:
      return "info";
    case LogLevel::debug:
      return "debug";
  }
  return "log";
}

constexpr size_t kLineBytes = 2048;

}  // namespace

size_t format_line(LogLevel level, std::string_view message, std::span<char> out) noexcept {
  auto result = fmt::format_to_n(out.data(), out.size(), "cuswap[{}]: {}: {}", getpid(),
                                 level_name(level), message);
  return result.size < out.size() ? result.size : out.size();
}

void write_stderr_line(std::string_view line) noexcept {
  char buffer[kLineBytes + 1];
  size_t size = line.size() < kLineBytes ? line.size() : kLineBytes;
  std::copy_n(line.data(), size, buffer);
  buffer[size++] = '\n';  // one write, so lines from threads do not interleave
  for (size_t written = 0; written < size;) {
    ssize_t n = ::write(STDERR_FILENO, buffer + written, size - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
}

void set_level(LogLevel level) noexcept {
  g_level.store(level, std::memory_order_relaxed);
}

bool enabled(LogLevel level) noexcept {
  return level <= g_level.load(std::memory_order_relaxed);
}

void write_line(LogLevel level, std::string_view message) noexcept {
  char line[kLineBytes];
  write_stderr_line({line, format_line(level, message, line)});
}

void write_report_line(std::string_view message) noexcept {
  char line[kLineBytes];
  auto result = fmt::format_to_n(line, sizeof line, "cuswap[{}]: {}", getpid(), message);
  write_stderr_line({line, result.size < sizeof line ? result.size : sizeof line});
}

bool Limited::allow() noexcept {
  int n = count_.fetch_add(1, std::memory_order_relaxed);
  if (n < limit_) return true;
  if (n == limit_) write_line(LogLevel::warn, "(further messages like the last one suppressed)");
  return false;
}

}  // namespace cuswap::log
