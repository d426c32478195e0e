// import_trace: read the file, inflate gzip, detect the format from the first
// bytes and dispatch (importers.h). Nothing here throws: allocation failure
// on a huge file is the one exception, caught and reported as a line.
#include "tracer/import/import.h"

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
    static constexpr uint8_t kGzipMagic[] = {0x1f, 0x8b};
    if (starts_with_bytes(bytes, kGzipMagic, sizeof kGzipMagic)) {
      std::string inflated;
      if (!import::gunzip(bytes, name, inflated, error)) return false;
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
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (!file) {
      error = fmt::format("{}: cannot read: {}", path, std::strerror(errno));
      return false;
    }
    char buffer[1 << 16];
    size_t got = 0;
    while ((got = std::fread(buffer, 1, sizeof buffer, file)) > 0) bytes.append(buffer, got);
    const bool failed = std::ferror(file) != 0;
    const int saved_errno = errno;
    std::fclose(file);
    if (failed) {
      error = fmt::format("{}: cannot read: {}", path, std::strerror(saved_errno));
      return false;
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
