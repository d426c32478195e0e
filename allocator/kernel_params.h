// Which buffers a kernel launch touches, found from its parameters.
//
// Note [Scanning launch parameters]: cuFuncGetParamInfo gives each
// parameter's offset and size but not its type, so every 8-byte-aligned word
// of every parameter is looked up in the buffer table: a word inside a live
// buffer counts as an access to it. Pointers inside by-value structs are
// found the same way. An `extra` argument buffer is scanned raw. Words that
// only look like pointers (an integer that happens to fall in a buffer) make
// a launch look like it touches more than it does, which costs a needless
// prefetch, never correctness. Pointers stored in device memory are
// invisible: the allocator must assume a launch may reach more than this
// finds (see Note [Eviction keeps the address mapped]). When the parameters
// cannot be read at all (no cuFuncGetParamInfo, an unknown layout), the
// launch is "unknown".
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "allocator/buffer_table.h"
#include "allocator/driver.h"

namespace cuswap {

// What cuswap knows about one CUfunction; created once, never freed.
struct KernelInfo {
  struct Param {
    uint32_t offset = 0, size = 0;
  };
  bool layout_known = false;
  std::vector<Param> params;
  size_t args_bytes = 0;              // end of the last parameter
  std::string name;                   // cuFuncGetName, or "" if unknown
  // An NCCL kernel: it reaches peers' buffers through pointers it keeps on
  // the device, so what it names is not all it touches. Its name is mangled
  // (`_Z..ncclDevKernel_AllReduce..`), so searched, not prefixed, once.
  bool nccl = false;
  std::atomic<uint32_t> trace_id{0};  // the recorder's name id, 0 until interned
};

// The buffers one launch touches (ids and bases, no duplicates, in scan
// order).
struct TouchedBuffers {
  static constexpr size_t kCapacity = 256;
  uint64_t ids[kCapacity];
  uintptr_t bases[kCapacity];
  size_t count = 0;
  bool unknown = false;  // the layout is unknown, or more than kCapacity buffers

  void add(uint64_t id, uintptr_t base) noexcept;
};

class KernelCache {
 public:
  explicit KernelCache(const Driver& driver) : driver_(driver) {}
  // Its owner outlives every launch that reads it (the shim's lives as long
  // as the process); the entries go with it.
  ~KernelCache();
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  // The function's info, queried from the driver on first sight. Lock-free
  // after that. Never null: past the cache's capacity a shared "unknown"
  // entry is returned.
  KernelInfo& get(CUfunction function) noexcept;

 private:
  static constexpr size_t kSlots = size_t{1} << 14;
  struct Slot {
    std::atomic<CUfunction> key{nullptr};
    std::atomic<KernelInfo*> info{nullptr};
  };
  KernelInfo* query(CUfunction function) noexcept;

  const Driver& driver_;
  Slot slots_[kSlots];
  std::mutex insert_mu_;
  KernelInfo unknown_;
};

// Scans `kernelParams` (one pointer per parameter) or `extra` (a
// CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE list) of a launch of `kernel`.
void scan_launch(const KernelInfo& kernel, void** kernel_params, void** extra,
                 const BufferTable& buffers, TouchedBuffers& out) noexcept;

}  // namespace cuswap
