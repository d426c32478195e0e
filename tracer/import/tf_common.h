// What the TensorFlow importers share: deciding whether an allocator is the
// device's or the host's, device ordinals from TensorFlow's names, and the
// protobuf text format of TensorDescription that TF1 timelines carry.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "tracer/import/builder.h"
#include "tracer/trace.h"

namespace cuswap::trace::import {

enum class AllocatorKind : uint8_t { gpu, host, cpu };

// GPU_0_bfc, gpu_bfc, cuda…: gpu; cuda_host_bfc, gpu_host_bfc, pinned…:
// host; cpu, mklcpu, bfc_cpu_allocator_for_gpu, "": cpu.
AllocatorKind classify_allocator(std::string_view name);

// The ordinal in "GPU_1_bfc", "/device:GPU:1", "/gpu:1" (0 when none).
int device_ordinal(std::string_view name);

// Decides each allocator's memory space. With any GPU allocator, GPU ones are
// device memory and the rest host; without one (a capture on a CPU-only
// machine) the allocator that served the most bytes stands for the device,
// and a note says so.
class AllocatorSpaces {
 public:
  void count(const std::string& allocator, uint64_t bytes) { bytes_[allocator] += bytes; }
  // Call once every allocator has been counted; adds the note.
  void decide(TraceBuilder& builder);
  MemorySpace space(const std::string& allocator) const;
  int device(const std::string& allocator) const;
  bool any_gpu() const { return any_gpu_; }
  // The allocator whose peak is the device peak ("" when none).
  const std::string& device_allocator() const { return device_allocator_; }

 private:
  std::map<std::string, uint64_t> bytes_;
  bool any_gpu_ = false;
  std::string device_allocator_;
};

// The fields of TensorDescription (tensorflow/core/framework/tensor_description.proto)
// that the importers use.
struct TensorDescriptionText {
  std::string dtype;
  std::string shape;  // "[2,8]"; "[]" for a scalar
  uint64_t requested_bytes = 0;
  uint64_t allocated_bytes = 0;
  std::string allocator_name;
  uint64_t allocation_id = 0;
  uint64_t ptr = 0;
  bool has_allocation = false;
};

// Parses the text format, with or without quotes around strings. On failure
// returns false and sets `what` to what was expected and `offset` to where.
[[nodiscard]] bool parse_tensor_description(std::string_view text, TensorDescriptionText& out,
                                            size_t& offset, std::string& what);

}  // namespace cuswap::trace::import
