// simcuda: the hazard detector (Note [Hazards by vector clocks] in sim.h).
//
// Accesses are kept per 2 MiB granule. A new access that covers an older one
// with at least its mode, and that the older one happens before, replaces
// it: anything that would race with the older access and not with the newer
// would have to be ordered after the newer and so after the older too.
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "tests/simcuda/sim.h"

namespace simcuda {
namespace {

constexpr int kMaxPrintedHazards = 20;

const char* kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::kernel:
      return "kernel";
    case OpKind::copy:
      return "copy";
    case OpKind::set:
      return "set";
    case OpKind::free_async:
      return "cuMemFreeAsync";
    case OpKind::record:
      return "event record";
    case OpKind::wait:
      return "event wait";
  }
  return "op";
}

std::string describe(const char* what, const std::string& name, int stream, int mode, uintptr_t lo,
                     uintptr_t hi) {
  return fmt::format("{}{}{} on stream {} {} [{:#x}, +{})", what, name.empty() ? "" : " ", name,
                     stream, (mode & SIMCUDA_WRITE) ? "writing" : "reading", lo, hi - lo);
}

int device_at(uintptr_t address) {
  Region* region = find_region(address);
  return region ? region->device : -1;
}

template <typename Fn>
void for_granules(uintptr_t lo, uintptr_t hi, Fn fn) {
  for (uintptr_t g = lo >> kGranuleShift; g <= (hi - 1) >> kGranuleShift; ++g)
    fn(g);
}

}  // namespace

void report_hazard(int device, const std::string& text) {
  State& s = state();
  if (device >= 0 && device < static_cast<int>(s.devices.size()))
    ++s.devices[static_cast<size_t>(device)].stats.hazards;
  else
    ++s.hazards_without_device;
  s.last_hazard = text;
  static int printed = 0;
  if (printed++ < kMaxPrintedHazards) std::fprintf(stderr, "simcuda: hazard: %s\n", text.c_str());
}

void record_access(const Op& op, const Range& range) {
  if (range.hi <= range.lo) return;
  State& s = state();
  const Completion& me = *op.completion;
  std::string name = op.kernel ? op.kernel->name : std::string();
  bool reported = false;
  for_granules(range.lo, range.hi, [&](uintptr_t g) {
    uintptr_t g_lo = std::max(range.lo, g << kGranuleShift);
    uintptr_t g_hi = std::min(range.hi, (g + 1) << kGranuleShift);
    auto& list = s.shadow[g];
    for (auto it = list.begin(); it != list.end();) {
      const State::Access& a = *it;
      bool overlap = a.lo < g_hi && g_lo < a.hi;
      bool before = happens_before(*a.op, me);
      if (overlap && !reported && ((a.mode | range.mode) & SIMCUDA_WRITE) && !before &&
          !happens_before(me, *a.op)) {
        reported = true;
        report_hazard(
            device_at(range.lo),
            describe(kind_name(op.kind), name, me.stream, range.mode, range.lo, range.hi) +
                " is unordered with " + describe(a.what, a.name, a.op->stream, a.mode, a.lo, a.hi));
      }
      bool covered = g_lo <= a.lo && a.hi <= g_hi && (a.mode & ~range.mode) == 0;
      it = before && covered ? list.erase(it) : std::next(it);
    }
    list.push_back({g_lo, g_hi, range.mode, op.completion, kind_name(op.kind), name});
  });
}

void forget_accesses(uintptr_t lo, uintptr_t hi) {
  if (hi <= lo) return;
  State& s = state();
  for_granules(lo, hi, [&](uintptr_t g) {
    auto found = s.shadow.find(g);
    if (found == s.shadow.end()) return;
    auto& list = found->second;
    std::erase_if(list, [&](const State::Access& a) { return a.lo < hi && lo < a.hi; });
    if (list.empty()) s.shadow.erase(found);
  });
}

void check_release(uintptr_t lo, uintptr_t hi, const char* what) {
  State& s = state();
  std::string culprit;
  for_granules(lo, hi, [&](uintptr_t g) {
    auto found = s.shadow.find(g);
    if (found == s.shadow.end() || !culprit.empty()) return;
    for (const State::Access& a : found->second)
      if (a.lo < hi && lo < a.hi && !host_has_seen(*a.op)) {
        culprit = describe(a.what, a.name, a.op->stream, a.mode, a.lo, a.hi);
        break;
      }
  });
  for (const auto& stream : s.all_streams) {
    if (!culprit.empty()) break;
    for (const OpPtr& op : stream->queue) {
      if (op->completion->done) continue;
      for (const Range& r : op->ranges)
        if (r.lo < hi && lo < r.hi) {
          culprit = describe(kind_name(op->kind), "", stream->index, r.mode, r.lo, r.hi) +
                    " (still queued)";
          break;
        }
      if (!culprit.empty()) break;
    }
  }
  if (!culprit.empty())
    report_hazard(device_at(lo), fmt::format("{} of [{:#x}, +{}) while {} is not known complete",
                                             what, lo, hi - lo, culprit));
  forget_accesses(lo, hi);
}

}  // namespace simcuda
