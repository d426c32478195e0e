// simcuda internals: the state behind the driver functions.
//
// The words (region, handle, op, engine, seq) are defined in
// docs/architecture.md ("Words of one component").
//
// Note [One lock]: all tables, queues and clocks are guarded by State::mu.
// Op bodies (kernel functions, memcpy) run on stream workers without it; a
// kernel takes it briefly in simcuda_access. Nothing here is on a hot path
// that matters more than test clarity.
//
// Note [Virtual time is placed in enqueue order]: an op's virtual start is
// max(its stream's previous end, the ends of the ops it waits on, the host
// clock when it was enqueued), then the earliest gap in its engine's busy
// intervals that fits its duration. Durations of kernels are known only
// after they run, so ops are *placed* on the virtual timeline strictly in
// seq order (a worker waits for its turn after running the body). Every
// dependency of an op has a smaller seq, so this cannot deadlock, and the
// same single-threaded program always produces the same virtual times.
//
// Note [Hazards by vector clocks]: each stream has an index; an op's vector
// clock is its stream's clock joined with the clocks of the events it waits
// on, the implicit legacy-stream dependencies, and the host clock (what the
// host has seen complete before enqueueing it), then its own component
// incremented. Op A happens before op B iff B.vc[A.stream] >= A.epoch. Every
// access to device-visible memory is recorded per 2 MiB granule; two
// overlapping accesses from different streams, one a write, neither before
// the other, are a hazard. The host clock is one for the whole process: the
// host threads' own synchronisation (mutexes) is invisible here, so a
// per-thread clock would report false hazards.
//
// Note [Host time is per thread]: the cost of a driver call (tests/simcuda/
// host_costs.h) is charged to the virtual clock of the thread that made it,
// and only there, as a call on a GPU blocks only its caller: a thread that
// hands its driver calls to another is not slowed by them. A thread's clock
// starts where the latest thread's clock is when it first calls in (it was
// started by one of them, at the earliest then), moves on by the cost of
// each call it makes and jumps to the end of the work it waits for. An op
// is ready when its enqueuing thread's clock says so; a query answers by
// the asking thread's clock. What host threads do to order themselves is
// invisible here: simcuda_host_clock_join lets a thread that takes over
// work from another say when it was handed over.
#pragma once

#include <cuda.h>
#include <setjmp.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/config.h"
#include "tests/simcuda/host_costs.h"
#include "tests/simcuda/simcuda.h"

namespace simcuda {

inline constexpr uint64_t kGranularity = 2ull << 20;
inline constexpr uint64_t kGranuleShift = 21;
inline constexpr int kMaxFailRules = 16;

// ---------------------------------------------------------------------------
// Configuration (SIMCUDA_CONF).
struct FailRule {
  cuswap::conf::FixedString name;  // exported name or base name
  uint64_t nth = 0;                // 1-based call number
  bool and_after = false;          // `NAME@N+`: the N-th and every later call
  CUresult code = CUDA_SUCCESS;    // CUDA_SUCCESS: the function's natural error
  std::atomic<uint64_t> calls{0};
};

struct Config {
  int devices = 1;
  cuswap::conf::PerDevice<uint64_t> memory_bytes;  // default 1 GiB
  double h2d_gbps = 52, d2h_gbps = 52, d2d_gbps = 1000;
  double copy_latency_us = 10;
  HostCosts costs;         // Note [Host costs] (host_costs.h)
  bool host_costs = true;  // false: only launches and unanswered queries cost (the old model)
  bool host_vmm = true;
  uint64_t queue_depth = 1024;  // Note [A stream's queue is finite]; 0: no limit
  FailRule fail[kMaxFailRules];
  int n_fail = 0;
};

// Parses `text` into a fresh Config; sets `warnings` to the number of
// malformed pairs (each reported on stderr).
std::unique_ptr<Config> parse_config(std::string_view text, int& warnings);

// ---------------------------------------------------------------------------
using VectorClock = std::vector<uint32_t>;

enum class Engine : uint8_t { compute, h2d, d2h, none };

// Completion of one op, shared with the events recorded on it.
struct Completion {
  bool done = false;    // placed on the virtual timeline (body finished)
  bool failed = false;  // skipped or faulted
  uint64_t end_ns = 0;  // virtual end
  int stream = -1;      // stream index
  uint32_t epoch = 0;   // the op's own component of its vector clock
  VectorClock vc;
};
using CompletionPtr = std::shared_ptr<Completion>;

struct Range {
  uintptr_t lo = 0, hi = 0;  // [lo, hi)
  int mode = 0;              // SIMCUDA_READ | SIMCUDA_WRITE
};

enum class OpKind : uint8_t { kernel, copy, set, record, wait, free_async };

// A strided copy or set: `depth` slices of `height` rows of `width` bytes.
struct Strided {
  uintptr_t dst = 0, src = 0;
  size_t width = 0, height = 1, depth = 1;
  size_t dst_pitch = 0, src_pitch = 0;  // bytes between rows
  size_t dst_slice = 0, src_slice = 0;  // bytes between slices
  uint32_t value = 0;                   // sets: the element value
  unsigned element_bytes = 1;           // sets: 1, 2 or 4
};

struct Kernel;
struct Region;
}  // namespace simcuda

struct CUctx_st;
struct CUstream_st;
struct CUmemPoolHandle_st;

namespace simcuda {
using Context = CUctx_st;
using Stream = CUstream_st;
using Pool = CUmemPoolHandle_st;

struct Op {
  uint64_t seq = 0;
  OpKind kind = OpKind::record;
  Engine engine = Engine::none;
  Stream* stream = nullptr;
  Context* ctx = nullptr;
  CompletionPtr completion;
  std::vector<CompletionPtr> waits;  // cross-stream dependencies
  uint64_t host_ready_ns = 0;
  std::vector<Range> ranges;  // known at enqueue (copies, sets, frees)
  // kernel
  const Kernel* kernel = nullptr;
  std::vector<uint8_t> args;
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1}, shared_mem_bytes = 0;
  // copy / set
  Strided strided;
  uint64_t copy_bytes = 0;
  // peer: device to device across devices, over the D2H engine
  enum class Direction : uint8_t { h2d, d2h, d2d, h2h, peer } direction = Direction::d2d;
  // free_async
  Region* region = nullptr;
};
using OpPtr = std::shared_ptr<Op>;

// ---------------------------------------------------------------------------
// Memory.
struct Handle {
  uint64_t id = 0;
  int fd = -1;
  size_t size = 0;
  bool host_located = false;
  int device = 0;
  int mappings = 0;
  bool released = false;
  uint64_t charged_bytes = 0;  // device bytes counted against capacity
};

struct Mapping {
  uintptr_t start = 0;
  size_t size = 0;
  Handle* handle = nullptr;
  size_t offset = 0;
  int access = 0;  // SIMCUDA_READ | SIMCUDA_WRITE granted by cuMemSetAccess
};

struct Region {
  enum class Kind : uint8_t { linear, pool, host, reservation } kind = Kind::linear;
  uintptr_t base = 0;
  size_t size = 0;          // requested size (reservation: reserved size)
  size_t mapped_bytes = 0;  // bytes of address space mmap-ed for it
  int device = 0;
  Context* ctx = nullptr;
  uint64_t charged_bytes = 0;
  uint64_t id = 0;  // CU_POINTER_ATTRIBUTE_BUFFER_ID
  Pool* pool = nullptr;
  bool freeing = false;                   // a stream-ordered free is pending
  std::map<uintptr_t, Mapping> mappings;  // reservation: by start address
};

// ---------------------------------------------------------------------------
// Execution.
struct Timeline {
  std::map<uint64_t, uint64_t> busy;  // start -> end, disjoint
  // Places an op of `duration` starting no earlier than `ready`; returns the
  // start. Intervals ending at or before `horizon` are forgotten: no future
  // op can be ready before it.
  uint64_t place(uint64_t ready, uint64_t duration, uint64_t horizon);
};

struct DeviceStats {
  uint64_t in_use = 0, peak = 0, host_pinned = 0;
  uint64_t h2d_bytes = 0, d2h_bytes = 0, d2d_bytes = 0;
  uint64_t kernels = 0, copies = 0, hazards = 0, faults = 0, stall_ns = 0;
};

struct Device {
  int ordinal = 0;
  uint64_t capacity = 0;
  Context* primary = nullptr;
  int primary_retains = 0;
  Pool* default_pool = nullptr;
  Timeline engines[3];  // compute, h2d, d2h
  DeviceStats stats;
};

struct Kernel {
  std::string name;
  simcuda_kernel_fn fn = nullptr;
  std::vector<size_t> offsets, sizes;
  size_t args_bytes = 0;
};
}  // namespace simcuda

// The driver's opaque handle types, which cuda.h only declares.
struct CUmemPoolHandle_st {
  int device = 0;
  int reuse_follow_event_dependencies = 1;
  int reuse_allow_opportunistic = 1;
  int reuse_allow_internal_dependencies = 1;
  uint64_t release_threshold = 0;
  uint64_t used = 0, used_high = 0, reserved_high = 0;
};

struct CUctx_st {
  int device = 0;
  bool primary = false;
  CUresult sticky = CUDA_SUCCESS;
  CUstream_st* legacy = nullptr;  // the NULL stream
  std::map<std::thread::id, CUstream_st*> per_thread;
};

struct CUstream_st {
  int index = 0;  // vector-clock component
  CUctx_st* ctx = nullptr;
  unsigned flags = 0;
  bool legacy = false;      // the context's NULL stream
  bool per_thread = false;  // a thread's per-thread default stream
  // enqueue side (guarded by mu)
  simcuda::VectorClock vc;
  simcuda::CompletionPtr last;                // last op enqueued, null when none yet
  std::deque<simcuda::CompletionPtr> queued;  // its ops the host has not seen end, oldest first
  // worker side
  std::deque<simcuda::OpPtr> queue;
  bool stopping = false;
  uint64_t stall_carry_ns = 0;  // wait delay not yet charged to a compute op
  uint64_t last_end_ns = 0;     // virtual end of the last op placed
  std::condition_variable cv;
  std::thread worker;

  bool blocking() const { return !legacy && !(flags & CU_STREAM_NON_BLOCKING); }
};

struct CUevent_st {
  CUctx_st* ctx = nullptr;
  unsigned flags = 0;
  simcuda::CompletionPtr recorded;  // null until the first record
};

struct CUfunc_st {
  const simcuda::Kernel* kernel = nullptr;
};

struct CUmod_st {
  CUctx_st* ctx = nullptr;
  std::map<std::string, std::unique_ptr<CUfunc_st>, std::less<>> functions;
};

namespace simcuda {
using Event = CUevent_st;
using Module = CUmod_st;

// ---------------------------------------------------------------------------
struct State {
  std::mutex mu;
  std::condition_variable done_cv;  // completions and placement

  std::unique_ptr<Config> config;
  std::atomic<bool> initialized{false};
  uint64_t generation = 1;  // bumps on reset; invalidates thread-local caches

  std::vector<Device> devices;
  std::set<Context*> contexts;                         // live
  std::vector<std::unique_ptr<Context>> all_contexts;  // live and destroyed
  std::set<Stream*> streams;
  std::vector<std::unique_ptr<Stream>> all_streams;
  std::set<Event*> events;
  std::vector<std::unique_ptr<Event>> all_events;
  std::set<CUmod_st*> modules;
  std::set<CUfunc_st*> functions;  // owned by their modules
  std::vector<std::unique_ptr<CUmod_st>> all_modules;
  std::set<Pool*> pools;
  std::vector<std::unique_ptr<Pool>> all_pools;

  std::map<uintptr_t, std::unique_ptr<Region>> regions;  // by base address
  std::map<uint64_t, std::unique_ptr<Handle>> handles;   // by id (= CUmemGenericAllocationHandle)
  uint64_t next_handle_id = 1;
  uint64_t next_buffer_id = 1;

  // virtual time and ordering
  uint64_t next_seq = 1;
  uint64_t next_to_place = 1;
  // Note [Host time is per thread]: each host thread's clock, by thread.
  std::unordered_map<std::thread::id, uint64_t> host_clocks;
  uint64_t max_end_ns = 0;
  uint64_t host_wait_ns = 0;  // all threads
  uint64_t vmm_calls = 0;     // the seven VMM calls, all callers
  uint64_t host_syncs = 0;    // calls that made the host wait for the device
  VectorClock host_vc;
  int next_stream_index = 0;

  // hazards
  struct Access {
    uintptr_t lo, hi;
    int mode;
    CompletionPtr op;
    const char* what;  // static description of the op kind
    std::string name;  // kernel name, if any
  };
  std::unordered_map<uintptr_t, std::vector<Access>> shadow;  // by granule
  uint64_t hazards_without_device = 0;
  std::string last_hazard;
  CUdeviceptr last_fault = 0;
  uint64_t injected = 0;
};

State& state();

// Kernels outlive resets, so they have their own lock.
struct KernelRegistry {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<Kernel>, std::less<>> kernels;
};
KernelRegistry& kernel_registry();

// ---------------------------------------------------------------------------
// Host time (host_costs.cpp). All require mu.
// The calling thread's clock (Note [Host time is per thread]).
uint64_t& host_clock();
// The latest of all threads' clocks.
uint64_t latest_host_clock();
// Moves the calling thread's clock on by `us`.
void advance_host_clock(double us);
// Charges the calling thread for a call: `call_us`, plus `page_us` per 2 MiB
// of `bytes`; nothing under `host_costs:false`.
void charge_call(double call_us, double page_us = 0, uint64_t bytes = 0);
// Counts a call that made the host wait for the device.
void count_host_sync();
// Counts (and costs nothing more) one of the seven VMM calls.
void count_vmm_call();
// The cost of enqueueing an op of this kind (launch, record, wait, free).
double enqueue_cost_us(OpKind kind);

// ---------------------------------------------------------------------------
// Entry checks (state.cpp). Every exported driver function starts with one.
CUresult enter(const char* name);                // initialised, not forked, no injected failure
CUresult enter_uninitialised(const char* name);  // for cuInit and lookups
#define SIM_ENTER()                                                                                \
  do {                                                                                             \
    if (CUresult entered_ = ::simcuda::enter(__func__); entered_ != CUDA_SUCCESS) return entered_; \
  } while (0)

// The calling thread's current context (nullptr if none or destroyed).
// Requires mu.
Context* current_context();
// Current context usable for work: INVALID_CONTEXT or its sticky error.
CUresult usable_context(Context*& out);
CUresult device_of(CUdevice dev, Device*& out);
void charge_device(Device& device, uint64_t bytes);
void uncharge_device(Device& device, uint64_t bytes);
void note_host_pinned(Device& device, int64_t delta_bytes);
uint64_t ns_from_us(double us);

// Memory (memory.cpp). All require mu.
Region* find_region(uintptr_t address);
// Checks that [address, address+bytes) is device-visible now with `mode`.
bool accessible(uintptr_t address, size_t bytes, int mode);
// The whole range lies in one known region (mapped or not).
bool known_range(uintptr_t address, size_t bytes);
bool is_device_address(uintptr_t address);
void free_region(Region* region);  // releases its memory and forgets it
void destroy_context_memory(Context* ctx);
Region* add_reservation(uintptr_t base, size_t size, int device);
void finish_free_async(Op& op);

// VMM (vmm.cpp).
void unmap_all(Region& reservation);
void destroy_all_handles();

// Streams (streams.cpp). Require mu unless noted.
enum class DefaultStream : uint8_t { legacy, per_thread };
CUresult resolve_stream(CUstream handle, DefaultStream default_stream, Stream*& out);
Stream* create_stream(Context* ctx, unsigned flags, bool legacy, bool per_thread);
// Enqueues `op` on `stream`: assigns seq, clocks, implicit dependencies;
// first waits (releasing mu) while the stream's queue is full (Note [A
// stream's queue is finite]).
void enqueue(std::unique_lock<std::mutex>& lock, Stream* stream, OpPtr op);
// Waits (releasing mu) until `completion` is placed; advances the host clock
// and the host's vector clock.
void host_wait(std::unique_lock<std::mutex>& lock, const CompletionPtr& completion);
// Whether `completion` is done by the host's clock (Note [Queries answer in
// virtual time]): CUDA_SUCCESS, and seen by the host, or CUDA_ERROR_NOT_READY.
CUresult query(std::unique_lock<std::mutex>& lock, const CompletionPtr& completion);
// Waits for every op enqueued so far (joins the host clock with `ctx`'s
// streams, or with every stream when ctx is null).
void wait_all(std::unique_lock<std::mutex>& lock, Context* ctx);
void stop_stream(std::unique_lock<std::mutex>& lock, Stream* stream);
void destroy_context_streams(std::unique_lock<std::mutex>& lock, Context* ctx);
bool happens_before(const Completion& a, const Completion& b);
bool host_has_seen(const Completion& op);

// Hazards (hazards.cpp). Require mu.
void record_access(const Op& op, const Range& range);
// Reports ops that the host has not seen complete and that use the range
// (recorded or still queued); then forgets the range's records.
void check_release(uintptr_t lo, uintptr_t hi, const char* what);
void forget_accesses(uintptr_t lo, uintptr_t hi);
void report_hazard(int device, const std::string& text);

// Kernels (kernels.cpp).
void install_fault_handler();
// Runs an op's body (kernel, copy, set) under the fault guard; returns a
// kernel's duration in virtual ns.
struct GuardedRun {
  sigjmp_buf jump;
  volatile uintptr_t fault_address = 0;
};
extern thread_local GuardedRun* tl_guard;
uint64_t run_op_body(Op& op, bool& faulted, uintptr_t& fault_address);

// Copies (copies.cpp).
void execute_copy(const Op& op);
void execute_set(const Op& op);

}  // namespace simcuda
