// The host<->device copy link the simulator and the planners assume, by
// preset name. Bandwidths are measured pinned-copy figures per direction
// (docs/simulator.md cites them); the latency is the fixed cost of one copy
// (launch, DMA setup, completion event), paid once per copy.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace cuswap::policy {

struct Link {
  std::string name;
  double bandwidth_bytes_per_s = 0;  // each direction
  int64_t latency_ns = 0;            // per copy
  // Both directions share the bandwidth while both run (docs/simulator.md).
  bool duplex_contention = false;

  // The time one copy of `size_bytes` takes on an idle link.
  int64_t copy_ns(uint64_t size_bytes) const;
};

inline constexpr std::string_view kDefaultLink = "pcie5";

// pcie3, pcie4, pcie5, nvlink-c2c; nullopt for any other name.
std::optional<Link> find_link(std::string_view name);
std::span<const std::string_view> link_names();

}  // namespace cuswap::policy
