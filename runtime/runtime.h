// The runtime behind the hooks: one per process, created on the first call
// into cuswap (cuInit, cuGetProcAddress, a dlsym of a driver name, any hook).
//
// Note [Initialisation]: nothing allocates, locks or logs before
// initialisation: the hooks may run inside the dynamic loader, or before the
// process's allocator is ready. Initialisation reads CUSWAP_CONF without
// allocating, opens the real driver with its own dlopen and the real dlsym,
// fills the Driver table, maps each real entry point to its hook, opens the
// recorder, and registers fork and exit handlers. A hook entered again on
// the same thread (the driver or dlsym calling back during our own work) is
// passed straight through. If initialisation fails, or anything inside
// cuswap fails later, the runtime latches pass-through and says so once on
// stderr: the process goes on as if cuswap were not there.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "allocator/buffer_table.h"
#include "allocator/driver.h"
#include "allocator/kernel_params.h"
#include "allocator/swap_allocator.h"
#include "common/config.h"
#include "runtime/counters.h"
#include "runtime/device_timer.h"
#include "runtime/plan_follow.h"
#include "runtime/swap_recording.h"
#include "tracer/recorder.h"

// The real dlsym, and its resolver (hooks/dlsym.cpp, which overrides dlsym).
extern "C" void* (*cuswap_real_dlsym)(void*, const char*);
extern "C" void* cuswap_resolve_real_dlsym();

namespace cuswap::hooks {

enum class HookId : uint16_t {
#define CUSWAP_HOOK_ID(name, params, args, handler) name,
  CUSWAP_DRIVER_HOOKED(CUSWAP_HOOK_ID)
#undef CUSWAP_HOOK_ID
      count
};
inline constexpr size_t kHookCount = static_cast<size_t>(HookId::count);
static_assert(kHookCount <= CallCounters::kMaxCounters);

extern const char* const kHookNames[kHookCount];
// Whether a hook is a per-thread-stream flavour (`_ptsz`, `_ptds`).
extern const bool kHookPerThread[kHookCount];
// The exported hook functions, by id (exports.cpp).
extern void* const kHookAddresses[kHookCount];

struct Runtime {
  conf::Options options;
  Driver driver;
  void* libcuda = nullptr;
  std::atomic<bool> passthrough{false};
  std::atomic<bool> forked{false};
  BufferTable buffers;
  KernelCache kernels{driver};
  // Opened at the first successful cuInit (the header names the devices);
  // never deleted, since other threads may still record while the process exits.
  std::atomic<trace::Recorder*> recorder{nullptr};
  std::atomic<bool> recorder_opened{false};
  std::atomic<bool> plan_loaded{false};  // `plan:` read, at the first cuInit
  // With the recorder (record_timing): launch and prefetch durations
  // (Note [Device durations]); and the allocator's observer. Never deleted.
  std::atomic<DeviceTimer*> timer{nullptr};
  SwapRecording* swap_recording = nullptr;
  std::atomic<uint64_t> next_buffer_id{1};
  // The swapping allocator, when a budget is set (`budget:`); without one
  // cuswap only observes.
  std::unique_ptr<Allocator> allocator;
  // With an allocator: the plan it follows (`plan:`) or makes (`online:`).
  std::unique_ptr<PlanFollow> follow;
  CallCounters calls;
  std::atomic<uint64_t> procaddress_answered{0};  // cuGetProcAddress answers given a hook
  std::atomic<uint64_t> dlsym_answered{0};        // dlsym answers given a hook

  // Sorted (real entry point, hook) pairs, for dlsym and cuGetProcAddress.
  struct RealToHook {
    void* real;
    HookId id;
  };
  std::unique_ptr<RealToHook[]> real_to_hook;
  size_t real_to_hook_count = 0;

  // The hook for a real driver entry point, or nullptr if it has none.
  void* hook_for(void* real) const noexcept;

  // Something inside cuswap failed: stop doing anything but passing calls
  // through, and say so once.
  void latch_passthrough(const char* why) noexcept;
};

// Initialises on first use; nullptr while initialising on this thread or if
// no driver could be loaded (hooks/entry.cpp).
Runtime* runtime() noexcept;

// Sets up what `options` ask for, on a runtime whose Driver table is
// filled: pass-through, or with a budget (or a plan's own, when only
// `plan:` is set) the allocator and the plan follower; one error line when
// a plan cannot be followed. Logs the configuration in effect at log:info.
// Throws std::bad_alloc.
void configure(Runtime& rt, conf::Options options);

// The runtime's own counters at exit, X(name, what it counts, its value):
// the value is an expression over `rt` and `timer` (the device timer,
// drained; null when none ran).
#define CUSWAP_RUNTIME_COUNTERS(X)                                                             \
  X(procaddress_answered, "cuGetProcAddress lookups answered with a hook",                    \
    rt.procaddress_answered.load())                                                          \
  X(dlsym_answered, "dlsym lookups answered with a hook", rt.dlsym_answered.load())            \
  X(live_buffers_at_exit, "buffers still allocated at exit", rt.buffers.size())                \
  X(ops_timed, "launches and prefetches whose device time was measured",                       \
    timer ? timer->timed() : 0)                                                               \
  X(ops_not_timed, "launches and prefetches the device timer could not time",                  \
    timer ? timer->untimed() : 0)

// What the trace's footer and `stats:true` report at exit: calls per hook
// (by the hook's name), CUSWAP_RUNTIME_COUNTERS, then the allocator's
// CUSWAP_SWAP_STATS when it runs.
std::vector<trace::Counter> exit_counters(Runtime& rt);
// At exit: the counters logged (`stats:true`) and written, the trace closed.
void close_out(Runtime& rt) noexcept;

// Brackets every hook: counts the call, guards re-entry, initialises once.
class Entry {
 public:
  explicit Entry(HookId id) noexcept;
  ~Entry();
  Entry(const Entry&) = delete;
  Entry& operator=(const Entry&) = delete;

  // The runtime, when this call should be observed (not nested, not
  // pass-through, initialised).
  Runtime* active() const noexcept { return active_; }
  const Driver* driver() const noexcept { return driver_; }
  HookId id() const noexcept { return id_; }
  // The stream as recorded: stream 0 in a per-thread (_ptsz/_ptds) call is
  // CU_STREAM_PER_THREAD.
  uint64_t stream_value(CUstream stream) const noexcept;
  CUstream stream_handle(CUstream stream) const noexcept {
    return reinterpret_cast<CUstream>(stream_value(stream));
  }

 private:
  HookId id_;
  Runtime* active_ = nullptr;
  const Driver* driver_ = nullptr;
};

// Whether anything needs the buffer table: an allocator (what a launch
// touches) or a recorder (buffers named in the trace).
bool tracking(Runtime& rt) noexcept;

// What the hooks observe. Each runs after the driver call succeeded, never
// throws, and latches pass-through if something inside fails.
void note_alloc(Runtime& rt, uintptr_t address, uint64_t size_bytes, uint64_t stream,
                trace::AllocKind kind) noexcept;
// A free is two steps: the buffer leaves the table before the driver call,
// since once the driver has freed it another thread may be handed the same
// address; it comes back if the call fails.
std::optional<BufferRef> begin_free(Runtime& rt, uintptr_t address) noexcept;
void finish_free(Runtime& rt, const std::optional<BufferRef>& buffer, CUresult result,
                 uint64_t stream, trace::FreeKind kind) noexcept;
// A launch, copy or set: what it touches is found before the driver call,
// so that the allocator can make it resident (begin_*), and recorded after
// (end_*). Without an allocator or a recorder, nothing is looked up.
struct Use {
  TouchedBuffers touched;
  KernelInfo* kernel = nullptr;
  uint8_t flags = 0;                    // trace::kLaunch*
  DeviceTimer::Pair* timing = nullptr;  // a launch being timed
};
[[nodiscard]] CUresult begin_launch(Runtime& rt, CUfunction function, CUstream stream,
                                    void** kernel_params, void** extra, Use& use) noexcept;
void end_launch(Runtime& rt, CUstream stream, uint64_t stream_value, const Use& use,
                CUresult result) noexcept;
// A copy's or set's device sides (0 for none); `host_source` is the host
// side of a host-to-device copy, whose words may be pointers.
[[nodiscard]] CUresult begin_copy(Runtime& rt, CUstream stream, uintptr_t dst, uintptr_t src,
                                  const void* host_source, uint64_t bytes, Use& use) noexcept;
void end_copy(Runtime& rt, CUstream stream, const Use& use, CUresult result) noexcept;
void note_copy(Runtime& rt, uintptr_t dst, uintptr_t src, uint64_t bytes,
               trace::CopyDirection direction, uint64_t stream, bool is_set) noexcept;
void note_vmm(Runtime& rt, trace::VmmOp op, uintptr_t address, uint64_t size_bytes,
              uint64_t handle) noexcept;

// Opens the recorder (once, if `record:` is set) after the driver is
// initialised, so the trace's header can name the devices; and reads the
// plan (`plan:`), which names a device.
void open_recorder(Runtime& rt) noexcept;

// Resolves the device timings that are complete (never waits): at
// iteration marks, so that a trace on disk lags little.
void poll_timings(Runtime& rt) noexcept;

}  // namespace cuswap::hooks
