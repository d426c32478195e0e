// TensorFlow helpers (tf_common.h): allocator classification and the text
// format of TensorDescription.
#include "tracer/import/tf_common.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <vector>

#include <fmt/format.h>

namespace cuswap::trace::import {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

}  // namespace

AllocatorKind classify_allocator(std::string_view name) {
  const std::string n = lower(name);
  if (contains(n, "host") || contains(n, "pinned")) return AllocatorKind::host;
  if (contains(n, "cpu") || n.empty()) return AllocatorKind::cpu;
  if (n.starts_with("gpu") || n.starts_with("cuda") || contains(n, "device:gpu") ||
      contains(n, "/gpu:"))
    return AllocatorKind::gpu;
  return AllocatorKind::cpu;
}

int device_ordinal(std::string_view name) {
  // The last run of digits after "GPU_", "GPU:", "gpu:" or "cuda:".
  const std::string n = lower(name);
  for (std::string_view key : {"gpu_", "gpu:", "cuda:", "cuda_"}) {
    const size_t at = n.rfind(key);
    if (at == std::string::npos) continue;
    int ordinal = 0;
    const char* begin = n.data() + at + key.size();
    const auto [end, ec] = std::from_chars(begin, n.data() + n.size(), ordinal);
    if (ec == std::errc() && end != begin && ordinal >= 0) return ordinal;
  }
  return 0;
}

void AllocatorSpaces::decide(TraceBuilder& builder) {
  any_gpu_ = false;
  device_allocator_.clear();
  uint64_t best = 0;
  for (const auto& [name, bytes] : bytes_) {
    const AllocatorKind kind = classify_allocator(name);
    // Of several GPUs, the one that served the most bytes (the one planned).
    if (kind == AllocatorKind::gpu) {
      if (!any_gpu_ || bytes > best) {
        device_allocator_ = name;
        best = bytes;
      }
      any_gpu_ = true;
    }
  }
  if (any_gpu_) return;
  best = 0;
  for (const auto& [name, bytes] : bytes_) {
    if (classify_allocator(name) != AllocatorKind::cpu) continue;
    if (device_allocator_.empty() || bytes > best) {
      device_allocator_ = name;
      best = bytes;
    }
  }
  if (!device_allocator_.empty())
    builder.note(fmt::format("captured without a GPU: {} stands for device memory",
                             device_allocator_));
}

MemorySpace AllocatorSpaces::space(const std::string& allocator) const {
  if (any_gpu_) return classify_allocator(allocator) == AllocatorKind::gpu ? MemorySpace::device
                                                                          : MemorySpace::host;
  return allocator == device_allocator_ ? MemorySpace::device : MemorySpace::host;
}

int AllocatorSpaces::device(const std::string& allocator) const {
  return any_gpu_ ? device_ordinal(allocator) : 0;
}

// ---------------------------------------------------------------------------
// Text format: `key: value`, `key { … }`, values bare or quoted.

namespace {

class TextTokens {
 public:
  explicit TextTokens(std::string_view s) : s_(s) {}
  size_t offset() const { return i_; }
  void skip_ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool at_end() {
    skip_ws();
    return i_ >= s_.size();
  }
  char peek() {
    skip_ws();
    return i_ < s_.size() ? s_[i_] : '\0';
  }
  void take() { ++i_; }
  // A bare word or a quoted string.
  std::string_view word() {
    skip_ws();
    if (i_ < s_.size() && s_[i_] == '"') {
      const size_t start = ++i_;
      while (i_ < s_.size() && s_[i_] != '"') ++i_;
      const std::string_view w = s_.substr(start, i_ - start);
      if (i_ < s_.size()) ++i_;
      return w;
    }
    const size_t start = i_;
    while (i_ < s_.size() && !std::isspace(static_cast<unsigned char>(s_[i_])) && s_[i_] != '{' &&
           s_[i_] != '}' && s_[i_] != ':')
      ++i_;
    return s_.substr(start, i_ - start);
  }

 private:
  std::string_view s_;
  size_t i_ = 0;
};

bool to_u64(std::string_view s, uint64_t& out) {
  if (!s.empty() && s[0] == '-') {  // pointers or ids printed signed
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    out = static_cast<uint64_t>(v);
    return ec == std::errc() && end == s.data() + s.size();
  }
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

}  // namespace

bool parse_tensor_description(std::string_view text, TensorDescriptionText& out, size_t& offset,
                              std::string& what) {
  TextTokens t(text);
  std::vector<std::string> scopes;  // enclosing message field names
  std::vector<uint64_t> dims;
  constexpr size_t kMaxDepth = 16;
  while (true) {
    if (t.at_end()) break;
    if (t.peek() == '}') {
      if (scopes.empty()) {
        offset = t.offset();
        what = "a field name, not '}'";
        return false;
      }
      t.take();
      scopes.pop_back();
      continue;
    }
    const size_t key_at = t.offset();
    const std::string_view key = t.word();
    if (key.empty()) {
      offset = key_at;
      what = "a field name";
      return false;
    }
    const char next = t.peek();
    if (next == '{') {
      t.take();
      if (scopes.size() >= kMaxDepth) {
        offset = t.offset();
        what = "at most 16 nested messages";
        return false;
      }
      scopes.emplace_back(key);
      continue;
    }
    if (next != ':') {
      offset = t.offset();
      what = fmt::format("':' or '{{' after the field name \"{}\"", key);
      return false;
    }
    t.take();
    // "key: {" is also valid text format for messages.
    if (t.peek() == '{') {
      t.take();
      if (scopes.size() >= kMaxDepth) {
        offset = t.offset();
        what = "at most 16 nested messages";
        return false;
      }
      scopes.emplace_back(key);
      continue;
    }
    const size_t value_at = t.offset();
    const std::string_view value = t.word();
    if (value.empty()) {
      offset = value_at;
      what = fmt::format("a value for the field \"{}\"", key);
      return false;
    }
    const std::string_view scope = scopes.empty() ? std::string_view() : scopes.back();
    uint64_t number = 0;
    auto need_number = [&]() {
      if (to_u64(value, number)) return true;
      offset = value_at;
      what = fmt::format("an integer for the field \"{}\"", key);
      return false;
    };
    if (scopes.empty() && key == "dtype") {
      out.dtype = value;
    } else if (scope == "dim" && key == "size") {
      if (!need_number()) return false;
      dims.push_back(number);
    } else if (scope == "allocation_description") {
      out.has_allocation = true;
      if (key == "allocator_name") {
        out.allocator_name = value;
      } else if (key == "requested_bytes" || key == "allocated_bytes" ||
                 key == "allocation_id" || key == "ptr") {
        if (!need_number()) return false;
        if (key == "requested_bytes") out.requested_bytes = number;
        else if (key == "allocated_bytes") out.allocated_bytes = number;
        else if (key == "allocation_id") out.allocation_id = number;
        else out.ptr = number;
      }
    }
  }
  if (!scopes.empty()) {
    offset = text.size();
    what = fmt::format("'}}' closing \"{}\"", scopes.back());
    return false;
  }
  out.shape = "[";
  for (size_t i = 0; i < dims.size(); ++i) out.shape += (i ? "," : "") + std::to_string(dims[i]);
  out.shape += "]";
  return true;
}

}  // namespace cuswap::trace::import
