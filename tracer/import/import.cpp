// import_trace: read the file, inflate gzip, detect the format from the first
// bytes and dispatch (importers.h). Nothing here throws: allocation failure
// on a huge file is the one exception, caught and reported as a line.
#include "tracer/import/import.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

#include <fmt/format.h>

#include "tracer/cst_format.h"
#include "tracer/import/importers.h"

namespace cuswap::trace {
namespace {

bool starts_with_bytes(std::string_view bytes, const uint8_t* magic, size_t size) {
  return bytes.size() >= size && std::memcmp(bytes.data(), magic, size) == 0;
}

constexpr uint8_t kGzipMagic[] = {0x1f, 0x8b};
constexpr std::string_view kLimitHint = " (the input limit: --max-input SIZE raises it)";

// Note [Bounded input]: could these first bytes start a trace? gzip, .cst,
// JSON (after a byte-order mark and whitespace) or a protobuf message,
// whose first byte is a field tag: a field number of at least 1 and a wire
// type of 0, 1, 2 or 5. Returns "" when they could, else what was found.
std::string implausible_start(std::string_view first) {
  if (first.empty()) return "";
  if (starts_with_bytes(first, kGzipMagic, sizeof kGzipMagic)) return "";
  if (first.size() < cst::kMagic.size()
          ? std::memcmp(first.data(), cst::kMagic.data(), first.size()) == 0
          : starts_with_bytes(first, cst::kMagic.data(), cst::kMagic.size()))
    return "";
  size_t i = first.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
  while (i < first.size() && (first[i] == ' ' || first[i] == '\n' || first[i] == '\r' || first[i] == '\t'))
    ++i;
  if (i == first.size() || first[i] == '{' || first[i] == '[') return "";
  const auto tag = static_cast<uint8_t>(first[0]);
  const unsigned wire_type = tag & 7u;
  if ((tag >> 3) >= 1 && (wire_type == 0 || wire_type == 1 || wire_type == 2 || wire_type == 5))
    return "";
  return fmt::format("byte 0x{:02x}", tag);
}

bool dispatch(std::string_view bytes, std::string_view name, const ImportOptions& options,
              Trace& out, std::string& error) {
  if (starts_with_bytes(bytes, cst::kMagic.data(), cst::kMagic.size()))
    return import::import_cst(bytes, name, options, out, error);
  size_t i = 0;
  // A UTF-8 byte-order mark, then JSON's whitespace.
  if (bytes.substr(0, 3) == "\xEF\xBB\xBF") i = 3;
  while (i < bytes.size() &&
         (bytes[i] == ' ' || bytes[i] == '\n' || bytes[i] == '\r' || bytes[i] == '\t'))
    ++i;
  if (i < bytes.size() && (bytes[i] == '{' || bytes[i] == '['))
    return import::import_json(bytes, name, options, out, error);
  if (bytes.empty()) {
    error = fmt::format("{}: offset 0: expected a trace, found an empty file", name);
    return false;
  }
  return import::import_proto(bytes, name, options, out, error);
}

}  // namespace

bool import_trace_bytes(std::string_view bytes, std::string_view name,
                        const ImportOptions& options, Trace& out, std::string& error) {
  try {
    out = Trace{};
    out.source = std::string(name);
    if (starts_with_bytes(bytes, kGzipMagic, sizeof kGzipMagic)) {
      // Note [Bounded input]: the input limit, and a ratio to the compressed size.
      uint64_t cap = options.max_input_bytes;
      std::string hint(kLimitHint);
      if (options.max_inflation_ratio) {
        const uint64_t by_ratio =
            std::max<uint64_t>(options.inflation_floor_bytes,
                               uint64_t{options.max_inflation_ratio} * bytes.size());
        if (by_ratio < cap) {
          cap = by_ratio;
          hint = fmt::format(" ({}x the compressed size: a gzip bomb? --max-input SIZE allows it)",
                             options.max_inflation_ratio);
        }
      }
      std::string inflated;
      if (!import::gunzip(bytes, name, cap, hint, inflated, error)) return false;
      if (starts_with_bytes(inflated, kGzipMagic, sizeof kGzipMagic)) {
        error = fmt::format("{}: offset 0: expected one level of gzip, found gzip inside gzip",
                            name);
        return false;
      }
      return dispatch(inflated, name, options, out, error);
    }
    return dispatch(bytes, name, options, out, error);
  } catch (const std::bad_alloc&) {
    error = fmt::format("{}: offset 0: out of memory while reading the trace", name);
    return false;
  } catch (const std::exception& e) {
    error = fmt::format("{}: offset 0: cannot read the trace: {}", name, e.what());
    return false;
  }
}

bool import_trace(const std::string& path, const ImportOptions& options, Trace& out,
                  std::string& error) {
  std::string bytes;
  try {
    // Note [Bounded input]: regular files, pipes and devices alike.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      error = fmt::format("{}: cannot read: {}", path, std::strerror(errno));
      return false;
    }
    struct FdCloser {
      int fd;
      ~FdCloser() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) st = {};
    if (S_ISDIR(st.st_mode)) {
      error = fmt::format("{}: cannot read: it is a directory", path);
      return false;
    }
    const uint64_t limit = options.max_input_bytes;
    if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > limit) {
      error = fmt::format("{}: offset {}: expected at most {} bytes, the file has {}{}", path, limit,
                          limit, st.st_size, kLimitHint);
      return false;
    }
    if (S_ISREG(st.st_mode)) bytes.reserve(static_cast<size_t>(st.st_size));
    char buffer[1 << 16];
    for (;;) {
      const ssize_t got = ::read(fd, buffer, sizeof buffer);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) {
        error = fmt::format("{}: cannot read: {}", path, std::strerror(errno));
        return false;
      }
      if (got == 0) break;
      if (bytes.size() + static_cast<size_t>(got) > limit) {
        error = fmt::format("{}: offset {}: expected at most {} bytes{}", path, limit, limit,
                            kLimitHint);
        return false;
      }
      bytes.append(buffer, static_cast<size_t>(got));
      // The first bytes must start a trace: a device of zeros is refused here.
      if (bytes.size() == static_cast<size_t>(got)) {
        if (const std::string found = implausible_start(std::string_view(bytes).substr(0, 16));
            !found.empty()) {
          error = fmt::format(
              "{}: offset 0: expected a trace (gzip, JSON, .cst or protobuf), found {}", path, found);
          return false;
        }
      }
    }
  } catch (const std::bad_alloc&) {
    error = fmt::format("{}: cannot read: out of memory", path);
    return false;
  }
  // Progress only where the caller asked (a terminal) and the wait is long
  // enough to wonder about.
  constexpr size_t kProgressBytes = size_t{16} << 20;
  const bool progress = options.progress && bytes.size() >= kProgressBytes;
  if (progress)
    fmt::print(stderr, "cuswap: importing {} ({:.1f} MiB)...\n", path,
               static_cast<double>(bytes.size()) / (1 << 20));
  if (!import_trace_bytes(bytes, path, options, out, error)) return false;
  out.source = path;
  if (progress)
    fmt::print(stderr, "cuswap: imported {}: {} ops, {} tensors\n", path, out.ops.size(),
               out.tensors.size());
  return true;
}

}  // namespace cuswap::trace
