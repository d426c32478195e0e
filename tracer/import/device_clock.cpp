#include "tracer/import/device_clock.h"

#include <algorithm>
#include <climits>

namespace cuswap::trace::import {

void DeviceClock::finish() {
  by_device_.clear();
  for (const auto& [correlation, w] : work_) {
    const auto it = launch_host_ns_.find(correlation);
    if (it == launch_host_ns_.end()) continue;
    by_device_[w.device].launches.push_back({it->second, w.start_ns, w.end_ns});
  }
  for (auto& [device, lane] : by_device_) {
    std::vector<Launch>& list = lane.launches;
    std::sort(list.begin(), list.end(), [](const Launch& a, const Launch& b) {
      return a.host_ns != b.host_ns ? a.host_ns < b.host_ns : a.start_ns < b.start_ns;
    });
    lane.min_start.assign(list.size() + 1, INT64_MAX);
    for (size_t k = list.size(); k-- > 0;)
      lane.min_start[k] = std::min(lane.min_start[k + 1], list[k].start_ns);
    lane.max_end.assign(list.size() + 1, INT64_MIN);
    for (size_t k = 0; k < list.size(); ++k)
      lane.max_end[k + 1] = std::max(lane.max_end[k], list[k].end_ns);
  }
}

size_t DeviceClock::Lane::first_at_or_after(int64_t host_ns) const {
  return static_cast<size_t>(
      std::lower_bound(launches.begin(), launches.end(), host_ns,
                       [](const Launch& l, int64_t t) { return l.host_ns < t; }) -
      launches.begin());
}

int64_t DeviceClock::alloc_ns(int device, int64_t host_ns) const {
  const auto it = by_device_.find(device);
  if (it == by_device_.end()) return host_ns;
  const Lane& lane = it->second;
  const int64_t start = lane.min_start[lane.first_at_or_after(host_ns)];
  return start != INT64_MAX ? start : std::max(host_ns, lane.max_end.back());
}

int64_t DeviceClock::free_ns(int device, int64_t host_ns) const {
  const auto it = by_device_.find(device);
  if (it == by_device_.end()) return host_ns;
  const Lane& lane = it->second;
  const int64_t end = lane.max_end[lane.first_at_or_after(host_ns)];
  return end != INT64_MIN ? end : host_ns;
}

bool DeviceClock::to_device_clock(Tensor& t) const {
  if (!mapped(t.device)) return false;
  if (!t.persistent) t.alloc_ns = alloc_ns(t.device, t.alloc_ns);
  if (t.free_ns) t.free_ns = std::max(free_ns(t.device, *t.free_ns), t.alloc_ns);
  return true;
}

int busiest_device(const std::vector<Op>& ops) {
  std::map<int, size_t> work;
  for (const Op& op : ops)
    if (op.device >= 0 && !op.is_copy) ++work[op.device];
  int best = -1;
  size_t most = 0;
  for (const auto& [device, count] : work)
    if (count > most) best = device, most = count;
  return best;
}

}  // namespace cuswap::trace::import
