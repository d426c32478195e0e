// --max-input: the limit on what a command reads from a trace (Note [Bounded
// input] in tracer/import/import.h), shared by every command that imports.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include <fmt/format.h>

#include "common/config.h"
#include "tracer/import/import.h"

namespace cuswap::cli {

inline void add_max_input_option(CLI::App* sub, std::string& text) {
  sub->add_option("--max-input", text,
                  fmt::format("Read at most SIZE bytes of trace, before and after gzip "
                              "(default {} GiB; also lifts the limit of 200x on how far gzip "
                              "may inflate)",
                              trace::kDefaultMaxInputBytes >> 30));
}

// Applies --max-input to `import`; false + one line on a bad size.
[[nodiscard]] inline bool apply_max_input(const std::string& text, trace::ImportOptions& import,
                                          std::string& error) {
  if (text.empty()) return true;
  const std::optional<uint64_t> size = conf::parse_size(text);
  if (!size || *size == 0) {
    error = fmt::format("--max-input: expected a size such as 4GiB or 512MiB, got \"{}\"", text);
    return false;
  }
  import.max_input_bytes = *size;
  import.max_inflation_ratio = 0;  // the user said how much to read
  return true;
}

}  // namespace cuswap::cli
