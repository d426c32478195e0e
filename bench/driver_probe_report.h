// What cuswap-driver-probe measured (bench/driver_probe.cpp), and its two
// renderings: text for a person, JSON for scripts/gpu-check.sh, and from
// either the SIMCUDA_CONF that makes simcuda charge the same.
//
// A header and not a second .cpp: the probe is built from driver_probe.cpp
// alone with a bare g++ where cmake cannot run (Note [A standalone probe]),
// so everything here is inline and, like the probe, uses only the standard
// library.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace cuswap::probe {

// What is measured, and how often (the report states the counts).
constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kCopyBytes = 64 * kMiB;  // each copy, and each pinning
constexpr int kCopyRepeats = 10;
constexpr int kVmmRepeats = 20;
constexpr int kOrderingRepeats = 100;
constexpr int kPinRepeats = 5;

struct VmmCost {
  size_t size_bytes = 0;
  double create_us = 0, map_us = 0, set_access_us = 0, unmap_us = 0, release_us = 0;
  double reserve_us = 0, address_free_us = 0;
};

// One range of `handles` 2 MiB pages, each its own handle: every map is a
// call, access is set and the range unmapped in one call each.
struct RangeCost {
  int handles = 0;
  double map_all_us = 0, set_access_us = 0, unmap_us = 0;
};

// The calls that order work, on work already finished (medians, us).
struct OrderingCost {
  double event_record_us = 0, event_query_us = 0, stream_wait_us = 0;
  double stream_sync_us = 0, event_sync_us = 0;
};

// Pinning host memory (cuMemHostAlloc) and letting it go, per MiB.
struct PinCost {
  double alloc_us_per_mib = 0, free_us_per_mib = 0;
};

struct UnmapWait {
  bool measured = false;
  double spin_ms = 0;       // the kernel's intended duration
  double unmap_us = 0;      // cuMemUnmap of an unrelated mapping while it ran
  double release_us = 0;    // then cuMemRelease of that mapping's handle
  bool busy_after = false;  // the kernel's stream was still busy after both
};

struct Report {
  std::string driver = "system", clock = "wall", device, error;
  int driver_version = 0;
  double h2d_bytes_per_s = 0, d2h_bytes_per_s = 0;
  std::vector<VmmCost> vmm;
  std::vector<RangeCost> ranges;
  OrderingCost ordering;
  PinCost pin;
  UnmapWait unmap;
};

inline std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out + "\"";
}

// The SIMCUDA_CONF that charges what this driver charged (Note [Host
// costs] in tests/simcuda/host_costs.h): per-call costs from the 2 MiB
// figures; for calls that grow with size, a cost per 2 MiB page from the
// difference to the 64 MiB ones (31 pages more), and the rest per call.
inline std::string simcuda_conf(const Report& r) {
  if (r.vmm.size() < 2) return "";
  const VmmCost& one = r.vmm[0];
  const VmmCost& many = r.vmm[1];
  const double extra_pages = static_cast<double>(many.size_bytes - one.size_bytes) / (2.0 * kMiB);
  char out[1024];
  auto fit = [&](double at_one, double at_many, double& call, double& page) {
    page = std::max(0.0, (at_many - at_one) / extra_pages);
    call = std::max(0.0, at_one - page);
  };
  double set_call, set_page, unmap_call, unmap_page, release_call, release_page;
  fit(one.set_access_us, many.set_access_us, set_call, set_page);
  fit(one.unmap_us, many.unmap_us, unmap_call, unmap_page);
  fit(one.release_us, many.release_us, release_call, release_page);
  std::snprintf(out, sizeof out,
                "h2d_gbps:%.1f,d2h_gbps:%.1f,mem_create_us:%.2f,mem_map_us:%.2f,"
                "mem_set_access_us:%.2f,mem_set_access_page_us:%.3f,mem_unmap_us:%.2f,"
                "mem_unmap_page_us:%.3f,mem_release_us:%.2f,mem_release_page_us:%.3f,"
                "address_reserve_us:%.2f,address_free_us:%.2f,event_record_us:%.2f,"
                "query_cost_us:%.2f,stream_wait_us:%.2f,sync_us:%.2f,host_alloc_page_us:%.1f,"
                "host_free_page_us:%.1f",
                r.h2d_bytes_per_s / 1e9, r.d2h_bytes_per_s / 1e9, one.create_us, one.map_us,
                set_call, set_page, unmap_call, unmap_page, release_call, release_page,
                one.reserve_us, one.address_free_us, r.ordering.event_record_us,
                r.ordering.event_query_us, r.ordering.stream_wait_us, r.ordering.stream_sync_us,
                2 * r.pin.alloc_us_per_mib, 2 * r.pin.free_us_per_mib);
  return out;
}

// "yes", "no" or "unclear" (the call returned late but the kernel had
// finished, or early with the stream idle: neither proves anything).
inline const char* unmap_verdict(const UnmapWait& u) {
  if (u.busy_after) return "no";
  return u.unmap_us * 1e-3 > u.spin_ms / 2 ? "yes" : "unclear";
}

inline void print_text(const Report& r) {
  std::printf("driver: %s (%s, version %d), device 0: %s; clock: %s\n", r.driver.c_str(),
              r.driver == "simcuda" ? "simcuda" : "libcuda.so.1", r.driver_version,
              r.device.empty() ? "-" : r.device.c_str(), r.clock.c_str());
  if (r.h2d_bytes_per_s > 0)
    std::printf(
        "pinned copies, 64 MiB (median of %d): host->device %.1f GB/s, "
        "device->host %.1f GB/s\n",
        kCopyRepeats, r.h2d_bytes_per_s / 1e9, r.d2h_bytes_per_s / 1e9);
  for (const VmmCost& v : r.vmm)
    std::printf(
        "VMM at %zu MiB (median of %d, us): cuMemCreate %.1f, cuMemMap %.1f, "
        "cuMemSetAccess %.1f, cuMemUnmap %.1f, cuMemRelease %.1f, "
        "cuMemAddressReserve %.1f, cuMemAddressFree %.1f\n",
        v.size_bytes / kMiB, kVmmRepeats, v.create_us, v.map_us, v.set_access_us, v.unmap_us,
        v.release_us, v.reserve_us, v.address_free_us);
  for (const RangeCost& g : r.ranges)
    std::printf(
        "a range of %d 2 MiB handles (us): %d maps %.1f, one cuMemSetAccess %.1f, one "
        "cuMemUnmap %.1f\n",
        g.handles, g.handles, g.map_all_us, g.set_access_us, g.unmap_us);
  const OrderingCost& o = r.ordering;
  std::printf(
      "on finished work (median of %d, us): cuEventRecord %.2f, cuEventQuery %.2f, "
      "cuStreamWaitEvent %.2f, cuStreamSynchronize %.2f, cuEventSynchronize %.2f\n",
      kOrderingRepeats, o.event_record_us, o.event_query_us, o.stream_wait_us, o.stream_sync_us,
      o.event_sync_us);
  std::printf("pinning host memory, 64 MiB (median of %d): %.1f us/MiB, unpinning %.1f us/MiB\n",
              kPinRepeats, r.pin.alloc_us_per_mib, r.pin.free_us_per_mib);
  if (const std::string conf = simcuda_conf(r); !conf.empty())
    std::printf("as SIMCUDA_CONF: %s\n", conf.c_str());
  if (r.unmap.measured)
    std::printf(
        "cuMemUnmap waits for a kernel on another stream: %s (unmap %.1f us, release "
        "%.1f us, during a %.0f ms kernel; stream %s afterwards; wall clock)\n",
        unmap_verdict(r.unmap), r.unmap.unmap_us, r.unmap.release_us, r.unmap.spin_ms,
        r.unmap.busy_after ? "still busy" : "idle");
  if (!r.error.empty()) std::printf("error: %s\n", r.error.c_str());
}

inline void print_json(const Report& r) {
  std::printf(
      "{\n  \"driver\": %s,\n  \"driver_version\": %d,\n  \"device\": %s,\n"
      "  \"clock\": %s,\n  \"copy_bytes\": %zu,\n  \"h2d_bytes_per_s\": %.0f,\n"
      "  \"d2h_bytes_per_s\": %.0f,\n  \"vmm\": [",
      json_string(r.driver).c_str(), r.driver_version, json_string(r.device).c_str(),
      json_string(r.clock).c_str(), kCopyBytes, r.h2d_bytes_per_s, r.d2h_bytes_per_s);
  for (size_t i = 0; i < r.vmm.size(); ++i) {
    const VmmCost& v = r.vmm[i];
    std::printf(
        "%s\n    {\"size_bytes\": %zu, \"cuMemCreate_us\": %.2f, \"cuMemMap_us\": %.2f, "
        "\"cuMemSetAccess_us\": %.2f, \"cuMemUnmap_us\": %.2f, \"cuMemRelease_us\": %.2f, "
        "\"cuMemAddressReserve_us\": %.2f, \"cuMemAddressFree_us\": %.2f}",
        i ? "," : "", v.size_bytes, v.create_us, v.map_us, v.set_access_us, v.unmap_us,
        v.release_us, v.reserve_us, v.address_free_us);
  }
  std::printf("%s],\n  \"ranges\": [", r.vmm.empty() ? "" : "\n  ");
  for (size_t i = 0; i < r.ranges.size(); ++i) {
    const RangeCost& g = r.ranges[i];
    std::printf(
        "%s\n    {\"handles\": %d, \"cuMemMap_all_us\": %.2f, \"cuMemSetAccess_us\": %.2f, "
        "\"cuMemUnmap_us\": %.2f}",
        i ? "," : "", g.handles, g.map_all_us, g.set_access_us, g.unmap_us);
  }
  const OrderingCost& o = r.ordering;
  std::printf(
      "%s],\n  \"ordering_us\": {\"cuEventRecord\": %.2f, \"cuEventQuery\": %.2f, "
      "\"cuStreamWaitEvent\": %.2f, \"cuStreamSynchronize\": %.2f, "
      "\"cuEventSynchronize\": %.2f},\n",
      r.ranges.empty() ? "" : "\n  ", o.event_record_us, o.event_query_us, o.stream_wait_us,
      o.stream_sync_us, o.event_sync_us);
  std::printf("  \"pin_us_per_mib\": %.2f,\n  \"unpin_us_per_mib\": %.2f,\n",
              r.pin.alloc_us_per_mib, r.pin.free_us_per_mib);
  const std::string conf = simcuda_conf(r);
  std::printf("  \"simcuda_conf\": %s,\n", conf.empty() ? "null" : json_string(conf).c_str());
  if (r.unmap.measured)
    std::printf(
        "  \"unmap_waits\": %s,\n  \"unmap_during_kernel_us\": %.1f,\n"
        "  \"release_during_kernel_us\": %.1f,\n  \"kernel_ms\": %.0f,\n"
        "  \"stream_busy_after_unmap\": %s,\n",
        std::strcmp(unmap_verdict(r.unmap), "unclear") == 0
            ? "null"
            : (std::strcmp(unmap_verdict(r.unmap), "yes") == 0 ? "true" : "false"),
        r.unmap.unmap_us, r.unmap.release_us, r.unmap.spin_ms,
        r.unmap.busy_after ? "true" : "false");
  else
    std::printf("  \"unmap_waits\": null,\n");
  std::printf("  \"error\": %s\n}\n", r.error.empty() ? "null" : json_string(r.error).c_str());
}

}  // namespace cuswap::probe
