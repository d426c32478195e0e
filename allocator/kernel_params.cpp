#include "allocator/kernel_params.h"

#include <algorithm>
#include <cstring>
#include <memory>

namespace cuswap {
namespace {

size_t slot_of(CUfunction function, size_t slots) {
  auto key = reinterpret_cast<uintptr_t>(function);
  key ^= key >> 17;
  key *= 0x9e3779b97f4a7c15ull;
  return static_cast<size_t>(key >> 40) & (slots - 1);
}

void scan_bytes(const unsigned char* bytes, size_t size, const BufferTable::Reader& buffers,
                TouchedBuffers& out) {
  for (size_t offset = 0; offset + sizeof(uint64_t) <= size; offset += sizeof(uint64_t)) {
    uint64_t word;
    std::memcpy(&word, bytes + offset, sizeof word);
    if (word == 0) continue;
    if (auto hit = buffers.find(static_cast<uintptr_t>(word))) out.add(hit->id, hit->base);
  }
}

}  // namespace

void TouchedBuffers::add(uint64_t id, uintptr_t base) noexcept {
  for (size_t i = 0; i < count; ++i)
    if (ids[i] == id) return;
  if (count == kCapacity) {
    unknown = true;
    return;
  }
  ids[count] = id;
  bases[count++] = base;
}

KernelCache::~KernelCache() {
  for (Slot& slot : slots_)
    delete slot.info.load(std::memory_order_relaxed);
}

KernelInfo& KernelCache::get(CUfunction function) noexcept {
  for (size_t i = slot_of(function, kSlots), probes = 0; probes < kSlots;
       i = (i + 1) & (kSlots - 1), ++probes) {
    CUfunction key = slots_[i].key.load(std::memory_order_acquire);
    if (key == function) {
      if (KernelInfo* info = slots_[i].info.load(std::memory_order_acquire)) return *info;
      break;  // being published: take the slow path
    }
    if (!key) break;
  }
  std::lock_guard lock(insert_mu_);
  size_t i = slot_of(function, kSlots);
  for (size_t probes = 0; probes < kSlots; i = (i + 1) & (kSlots - 1), ++probes) {
    CUfunction key = slots_[i].key.load(std::memory_order_relaxed);
    if (key == function) return *slots_[i].info.load(std::memory_order_relaxed);
    if (!key) {
      KernelInfo* info = query(function);
      if (!info) return unknown_;
      // The info is visible before the key that leads to it.
      slots_[i].info.store(info, std::memory_order_release);
      slots_[i].key.store(function, std::memory_order_release);
      return *info;
    }
  }
  return unknown_;  // full: every later new function is scanned as unknown
}

KernelInfo* KernelCache::query(CUfunction function) noexcept {
  try {
    auto info = std::make_unique<KernelInfo>();
    if (driver_.cuFuncGetName) {
      const char* name = nullptr;
      if (driver_.cuFuncGetName(&name, function) == CUDA_SUCCESS && name) info->name = name;
      info->nccl = info->name.find("nccl") != std::string::npos;
    }
    if (driver_.cuFuncGetParamInfo) {
      for (size_t index = 0;; ++index) {
        size_t offset = 0, size = 0;
        CUresult r = driver_.cuFuncGetParamInfo(function, index, &offset, &size);
        if (r == CUDA_ERROR_INVALID_VALUE) {  // past the last parameter
          info->layout_known = true;
          break;
        }
        if (r != CUDA_SUCCESS) break;
        info->params.push_back({static_cast<uint32_t>(offset), static_cast<uint32_t>(size)});
        info->args_bytes = std::max(info->args_bytes, offset + size);
      }
    }
    return info.release();
  } catch (...) {
    return nullptr;
  }
}

void scan_launch(const KernelInfo& kernel, void** kernel_params, void** extra,
                 const BufferTable& table, TouchedBuffers& out) noexcept {
  BufferTable::Reader buffers(table);  // one announcement for every word of the launch
  if (kernel_params) {
    if (!kernel.layout_known) {
      out.unknown = true;
      return;
    }
    for (size_t i = 0; i < kernel.params.size(); ++i)
      if (kernel_params[i])
        scan_bytes(static_cast<const unsigned char*>(kernel_params[i]), kernel.params[i].size,
                   buffers, out);
    return;
  }
  if (extra) {
    const void* buffer = nullptr;
    size_t size = 0;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
        buffer = extra[i + 1];
      else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1])
        size = *static_cast<const size_t*>(extra[i + 1]);
    }
    if (!buffer) {
      out.unknown = true;
      return;
    }
    scan_bytes(static_cast<const unsigned char*>(buffer), size, buffers, out);
    return;
  }
  // No arguments at all: fine for a kernel without parameters.
  if (!kernel.layout_known || !kernel.params.empty()) out.unknown = true;
}

}  // namespace cuswap
