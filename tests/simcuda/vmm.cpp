// simcuda: virtual memory management.
//
// A reservation is a PROT_NONE mapping; a physical handle is a memfd; mapping
// puts the memfd at a fixed address, still PROT_NONE until cuMemSetAccess, so
// a range used before access is granted faults as on a GPU. Unmapping
// overlays a fresh PROT_NONE mapping instead of releasing the address space:
// the reservation stays, and an access to it keeps faulting rather than
// landing in whatever the host maps there next.
//
// Host-located handles (CU_MEM_LOCATION_TYPE_HOST, HOST_NUMA,
// HOST_NUMA_CURRENT) are memfds like device ones but are not charged to the
// device; with `host_vmm:false` they are CUDA_ERROR_NOT_SUPPORTED, as on
// drivers before 12.2.
//
// Ranges given to cuMemSetAccess and cuMemUnmap must consist of whole
// mappings (what cuMemMap mapped in one call).
#include <sys/mman.h>
#include <unistd.h>

#include "tests/simcuda/sim.h"

namespace simcuda {
namespace {

bool aligned(uint64_t value) {
  return value % kGranularity == 0;
}

bool host_location(CUmemLocationType type) {
  return type == CU_MEM_LOCATION_TYPE_HOST || type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
         type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
}

CUresult check_location(const CUmemLocation& location) {
  State& s = state();
  if (location.type == CU_MEM_LOCATION_TYPE_DEVICE)
    return location.id >= 0 && location.id < static_cast<int>(s.devices.size())
               ? CUDA_SUCCESS
               : CUDA_ERROR_INVALID_DEVICE;
  if (host_location(location.type)) {
    if (!s.config->host_vmm) return CUDA_ERROR_NOT_SUPPORTED;
    if (location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA && location.id != 0)
      return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult check_prop(const CUmemAllocationProp* prop) {
  if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
  return check_location(prop->location);
}

Handle* find_handle(CUmemGenericAllocationHandle id) {
  auto& handles = state().handles;
  auto it = handles.find(id);
  return it == handles.end() ? nullptr : it->second.get();
}

void destroy_handle(Handle* handle) {
  State& s = state();
  close(handle->fd);
  Device& device = s.devices[static_cast<size_t>(handle->device)];
  uncharge_device(device, handle->charged_bytes);
  if (handle->host_located) note_host_pinned(device, -static_cast<int64_t>(handle->size));
  s.handles.erase(handle->id);
}

// The reservation holding all of [ptr, ptr+size), or nullptr.
Region* reservation_for(uintptr_t ptr, size_t size) {
  Region* region = find_region(ptr);
  if (!region || region->kind != Region::Kind::reservation) return nullptr;
  return size <= region->base + region->size - ptr ? region : nullptr;
}

// Collects the mappings that make up exactly [ptr, ptr+size); false if the
// range is not a run of whole, contiguous mappings.
bool whole_mappings(Region& reservation, uintptr_t ptr, size_t size, std::vector<Mapping*>& out) {
  uintptr_t at = ptr, end = ptr + size;
  auto it = reservation.mappings.find(ptr);
  while (at < end) {
    if (it == reservation.mappings.end() || it->first != at) return false;
    if (it->second.size > end - at) return false;
    out.push_back(&it->second);
    at += it->second.size;
    ++it;
  }
  return !out.empty();
}

void unmap_one(Region& reservation, Mapping& m, bool overlay) {
  if (overlay)
    mmap(reinterpret_cast<void*>(m.start), m.size, PROT_NONE,
         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  Handle* handle = m.handle;
  uintptr_t start = m.start;
  reservation.mappings.erase(start);
  if (--handle->mappings == 0 && handle->released) destroy_handle(handle);
}

// Every VMM call is counted and charged, whatever it answers: the driver
// takes its time either way.
const HostCosts& vmm_call() {
  count_vmm_call();
  return state().config->costs;
}

int prot_for(int access) {
  int prot = PROT_NONE;
  if (access & SIMCUDA_READ) prot |= PROT_READ;
  if (access & SIMCUDA_WRITE) prot |= PROT_WRITE;
  return prot;
}

}  // namespace

void unmap_all(Region& reservation) {
  while (!reservation.mappings.empty())
    unmap_one(reservation, reservation.mappings.begin()->second, /*overlay=*/false);
}

void destroy_all_handles() {
  State& s = state();
  while (!s.handles.empty())
    destroy_handle(s.handles.begin()->second.get());
}

}  // namespace simcuda

using namespace simcuda;

extern "C" {

CUresult CUDAAPI cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                               CUmemAllocationGranularity_flags option) {
  SIM_ENTER();
  if (!granularity) return CUDA_ERROR_INVALID_VALUE;
  if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  if (CUresult r = check_prop(prop); r != CUDA_SUCCESS) return r;
  *granularity = kGranularity;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment,
                                     CUdeviceptr addr, unsigned long long flags) {
  SIM_ENTER();
  (void)addr;  // a hint only
  std::lock_guard lock(state().mu);
  charge_call(vmm_call().address_reserve_us);
  if (!ptr || size == 0 || !aligned(size) || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (alignment == 0) alignment = kGranularity;
  if ((alignment & (alignment - 1)) != 0 || !aligned(alignment)) return CUDA_ERROR_INVALID_VALUE;
  size_t span = size + alignment;
  void* p = mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  auto raw = reinterpret_cast<uintptr_t>(p);
  uintptr_t base = (raw + alignment - 1) / alignment * alignment;
  if (base > raw) munmap(p, base - raw);
  if (raw + span > base + size)
    munmap(reinterpret_cast<void*>(base + size), raw + span - base - size);
  add_reservation(base, size, 0);
  *ptr = base;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  SIM_ENTER();
  State& s = state();
  std::lock_guard lock(s.mu);
  charge_call(vmm_call().address_free_us);
  auto it = s.regions.find(ptr);
  if (it == s.regions.end() || it->second->kind != Region::Kind::reservation ||
      it->second->size != size || !it->second->mappings.empty())
    return CUDA_ERROR_INVALID_VALUE;
  free_region(it->second.get());
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                             const CUmemAllocationProp* prop, unsigned long long flags) {
  SIM_ENTER();
  State& s = state();
  std::lock_guard lock(s.mu);
  const HostCosts& costs = vmm_call();
  if (!handle || size == 0 || !aligned(size) || flags != 0) {
    charge_call(costs.mem_create_us);
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (CUresult r = check_prop(prop); r != CUDA_SUCCESS) {
    charge_call(costs.mem_create_us);
    return r;
  }
  bool host = host_location(prop->location.type);
  // Host-located memory is pinned as it is made.
  if (host)
    charge_call(costs.mem_create_us + costs.host_alloc_us, costs.host_alloc_page_us, size);
  else
    charge_call(costs.mem_create_us);
  int device = host ? 0 : prop->location.id;
  Device& d = s.devices[static_cast<size_t>(device)];
  if (!host && d.stats.in_use + size > d.capacity) return CUDA_ERROR_OUT_OF_MEMORY;
  int fd = memfd_create("simcuda", MFD_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    close(fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  auto h = std::make_unique<Handle>();
  h->id = s.next_handle_id++;
  h->fd = fd;
  h->size = size;
  h->host_located = host;
  h->device = device;
  if (host) {
    note_host_pinned(d, static_cast<int64_t>(size));
  } else {
    h->charged_bytes = size;
    charge_device(d, size);
  }
  *handle = h->id;
  s.handles[h->id] = std::move(h);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle) {
  SIM_ENTER();
  std::lock_guard lock(state().mu);
  const HostCosts& costs = vmm_call();
  Handle* h = find_handle(handle);
  if (!h || h->released) {
    charge_call(costs.mem_release_us);
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (h->host_located)
    charge_call(costs.mem_release_us + costs.host_free_us,
                costs.mem_release_page_us + costs.host_free_page_us, h->size);
  else
    charge_call(costs.mem_release_us, costs.mem_release_page_us, h->size);
  h->released = true;
  if (h->mappings == 0) destroy_handle(h);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                          CUmemGenericAllocationHandle handle, unsigned long long flags) {
  SIM_ENTER();
  std::lock_guard lock(state().mu);
  charge_call(vmm_call().mem_map_us);
  if (size == 0 || !aligned(ptr) || !aligned(size) || !aligned(offset) || flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  Handle* h = find_handle(handle);
  if (!h || h->released || offset > h->size || size > h->size - offset)
    return CUDA_ERROR_INVALID_VALUE;
  Region* reservation = reservation_for(ptr, size);
  if (!reservation) return CUDA_ERROR_INVALID_VALUE;
  // No overlap with an existing mapping.
  auto next = reservation->mappings.lower_bound(ptr);
  if (next != reservation->mappings.end() && next->first < ptr + size)
    return CUDA_ERROR_INVALID_VALUE;
  if (next != reservation->mappings.begin()) {
    auto prev = std::prev(next);
    if (prev->second.start + prev->second.size > ptr) return CUDA_ERROR_INVALID_VALUE;
  }
  void* p = mmap(reinterpret_cast<void*>(ptr), size, PROT_NONE, MAP_SHARED | MAP_FIXED, h->fd,
                 static_cast<off_t>(offset));
  if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  reservation->mappings[ptr] = Mapping{ptr, size, h, offset, 0};
  ++h->mappings;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size) {
  SIM_ENTER();
  std::lock_guard lock(state().mu);
  const HostCosts& costs = vmm_call();
  charge_call(costs.mem_unmap_us, costs.mem_unmap_page_us, size);
  if (size == 0 || !aligned(ptr) || !aligned(size)) return CUDA_ERROR_INVALID_VALUE;
  Region* reservation = reservation_for(ptr, size);
  std::vector<Mapping*> pieces;
  if (!reservation || !whole_mappings(*reservation, ptr, size, pieces))
    return CUDA_ERROR_INVALID_VALUE;
  check_release(ptr, ptr + size, "cuMemUnmap");
  for (Mapping* m : pieces)
    unmap_one(*reservation, *m, /*overlay=*/true);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc,
                                size_t count) {
  SIM_ENTER();
  std::lock_guard lock(state().mu);
  const HostCosts& costs = vmm_call();
  charge_call(costs.mem_set_access_us, costs.mem_set_access_page_us, size);
  if (!desc || count == 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
  int access = 0;
  for (size_t i = 0; i < count; ++i) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult r = check_location(desc[i].location); r != CUDA_SUCCESS) return r;
    switch (desc[i].flags) {
      case CU_MEM_ACCESS_FLAGS_PROT_NONE:
        break;
      case CU_MEM_ACCESS_FLAGS_PROT_READ:
        access |= SIMCUDA_READ;
        break;
      case CU_MEM_ACCESS_FLAGS_PROT_READWRITE:
        access |= SIMCUDA_READ | SIMCUDA_WRITE;
        break;
      default:
        return CUDA_ERROR_INVALID_VALUE;
    }
  }
  Region* reservation = reservation_for(ptr, size);
  std::vector<Mapping*> pieces;
  if (!reservation || !whole_mappings(*reservation, ptr, size, pieces))
    return CUDA_ERROR_INVALID_VALUE;
  if (mprotect(reinterpret_cast<void*>(ptr), size, prot_for(access)) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  for (Mapping* m : pieces)
    m->access = access;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetAccess(unsigned long long* flags, const CUmemLocation* location,
                                CUdeviceptr ptr) {
  SIM_ENTER();
  if (!flags || !location) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  if (CUresult r = check_location(*location); r != CUDA_SUCCESS) return r;
  Region* reservation = reservation_for(ptr, 1);
  if (!reservation) return CUDA_ERROR_INVALID_VALUE;
  auto it = reservation->mappings.upper_bound(ptr);
  if (it == reservation->mappings.begin()) return CUDA_ERROR_INVALID_VALUE;
  --it;
  if (ptr >= it->second.start + it->second.size) return CUDA_ERROR_INVALID_VALUE;
  int access = it->second.access;
  *flags = access == (SIMCUDA_READ | SIMCUDA_WRITE) ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
           : access == SIMCUDA_READ                 ? CU_MEM_ACCESS_FLAGS_PROT_READ
                                                    : CU_MEM_ACCESS_FLAGS_PROT_NONE;
  return CUDA_SUCCESS;
}

}  // extern "C"
