#include "allocator/log.h"

#include <unistd.h>

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

void write_all(const char* bytes, size_t size) noexcept {
  size_t written = 0;
  while (written < size) {
    ssize_t n = ::write(STDERR_FILENO, bytes + written, size - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
}

template <typename... Args>
void write_formatted(fmt::format_string<Args...> format, Args&&... args) noexcept {
  char line[640];
  auto result = fmt::format_to_n(line, sizeof line - 1, format, std::forward<Args>(args)...);
  size_t size = result.size < sizeof line - 1 ? result.size : sizeof line - 1;
  line[size++] = '\n';
  write_all(line, size);
}

}  // namespace

void set_level(LogLevel level) noexcept {
  g_level.store(level, std::memory_order_relaxed);
}

bool enabled(LogLevel level) noexcept {
  return level <= g_level.load(std::memory_order_relaxed);
}

void write_line(LogLevel level, std::string_view message) noexcept {
  write_formatted("cuswap[{}]: {}: {}", getpid(), level_name(level), message);
}

void write_report_line(std::string_view message) noexcept {
  write_formatted("cuswap[{}]: {}", getpid(), message);
}

bool Limited::allow() noexcept {
  int n = count_.fetch_add(1, std::memory_order_relaxed);
  if (n < limit_) return true;
  if (n == limit_) write_line(LogLevel::warn, "(further messages like the last one suppressed)");
  return false;
}

}  // namespace cuswap::log
