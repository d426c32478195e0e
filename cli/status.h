// What a `cuswap` command hands back to main() (cli/commands.h), apart from
// CLI11, so the code that renders results need not compile it.
//
// Exit codes (docs: DESIGN.md, cli/): 0 ok, 1 failed (the output cannot be
// written, the budget cannot be met), 2 bad usage or input (an unreadable,
// truncated or corrupt file included).
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

namespace cuswap::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitBadInput = 2;

// The exit code and, when the command failed, one line that main() prints on
// stderr as "cuswap: error: LINE". A failure without a line is one the
// command's own output already explains (the report of a plan that does not
// fit).
struct [[nodiscard]] Status {
  int exit_code = kExitOk;
  std::string error;
};

inline Status failure(int exit_code, std::string error) {
  return {exit_code, std::move(error)};
}

// Writes a command's result to `out`; a failure says why.
inline Status write_result(std::FILE* out, std::string_view text) {
  if (std::fwrite(text.data(), 1, text.size(), out) == text.size() && std::fflush(out) == 0)
    return {};
  return failure(kExitFailed, std::string("cannot write the output: ") + std::strerror(errno));
}

}  // namespace cuswap::cli
