// Link presets. Figures: pinned-copy bandwidth measured per direction on
// ×16 links (PCIe3 12.15-13.1, PCIe4 25-26, PCIe5 51-52 GB/s on H100/H200,
// NVLink-C2C 346 GB/s on GH200); latency ~10 µs per copy over PCIe and
// 5 µs over NVLink-C2C (launch + completion, the cudaMemcpyAsync floor).
#include "policy/link.h"

#include <array>
#include <cmath>

namespace cuswap::policy {

namespace {

constexpr std::array<std::string_view, 4> kNames = {"pcie3", "pcie4", "pcie5", "nvlink-c2c"};

}  // namespace

int64_t Link::copy_ns(uint64_t size_bytes) const {
  return latency_ns + static_cast<int64_t>(
                          std::ceil(static_cast<double>(size_bytes) * 1e9 / bandwidth_bytes_per_s));
}

std::optional<Link> find_link(std::string_view name) {
  if (name == "pcie3") return Link{"pcie3", 12e9, 10'000, false};
  if (name == "pcie4") return Link{"pcie4", 25e9, 10'000, false};
  if (name == "pcie5") return Link{"pcie5", 52e9, 10'000, false};
  if (name == "nvlink-c2c") return Link{"nvlink-c2c", 350e9, 5'000, false};
  return std::nullopt;
}

std::span<const std::string_view> link_names() {
  return kNames;
}

}  // namespace cuswap::policy
