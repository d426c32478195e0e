// Names of the trace's enums, as the CLI, JSON output and
// docs/trace-format.md spell them.
#include "tracer/cst_reader.h"

namespace cuswap::trace {

std::string_view to_string(EventType type) noexcept {
  switch (type) {
    case EventType::alloc:
      return "alloc";
    case EventType::free:
      return "free";
    case EventType::launch:
      return "launch";
    case EventType::copy:
      return "copy";
    case EventType::vmm:
      return "vmm";
    case EventType::iteration:
      return "iteration";
    case EventType::timing:
      return "timing";
    case EventType::eviction:
      return "eviction";
    case EventType::prefetch:
      return "prefetch";
    case EventType::wait:
      return "wait";
    case EventType::iteration_stats:
      return "iteration_stats";
  }
  return "unknown";
}

std::string_view to_string(EvictReason reason) noexcept {
  switch (reason) {
    case EvictReason::budget:
      return "budget";
    case EvictReason::plan:
      return "plan";
  }
  return "unknown";
}

std::string_view to_string(PrefetchReason reason) noexcept {
  switch (reason) {
    case PrefetchReason::on_demand:
      return "on_demand";
    case PrefetchReason::planned:
      return "planned";
    case PrefetchReason::unseen_use:
      return "unseen_use";
  }
  return "unknown";
}

std::string_view to_string(AllocKind kind) noexcept {
  switch (kind) {
    case AllocKind::linear:
      return "linear";
    case AllocKind::pitch:
      return "pitch";
    case AllocKind::async:
      return "async";
    case AllocKind::pool_async:
      return "pool_async";
    case AllocKind::pluggable:
      return "pluggable";
  }
  return "unknown";
}

std::string_view to_string(FreeKind kind) noexcept {
  switch (kind) {
    case FreeKind::sync:
      return "sync";
    case FreeKind::async:
      return "async";
  }
  return "unknown";
}

std::string_view to_string(CopyDirection direction) noexcept {
  switch (direction) {
    case CopyDirection::host_to_device:
      return "host_to_device";
    case CopyDirection::device_to_host:
      return "device_to_host";
    case CopyDirection::device_to_device:
      return "device_to_device";
    case CopyDirection::host_to_host:
      return "host_to_host";
    case CopyDirection::peer:
      return "peer";
    case CopyDirection::unknown:
      return "unknown";
  }
  return "unknown";
}

std::string_view to_string(VmmOp op) noexcept {
  switch (op) {
    case VmmOp::create:
      return "create";
    case VmmOp::map:
      return "map";
    case VmmOp::unmap:
      return "unmap";
    case VmmOp::release:
      return "release";
  }
  return "unknown";
}

}  // namespace cuswap::trace
