#include "tests/tracer/support.h"

#include <fstream>
#include <iterator>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace cuswap::trace::test {

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

RecorderOptions options_for(const std::string& path) {
  RecorderOptions o;
  o.path = path;
  o.cuswap_version = "0.1.0-test";
  o.configuration = "record:" + path + ",budget:8GiB";
  o.devices = {{0, "Test GPU", 8ull << 30}, {1, "Second GPU", 4ull << 30}};
  return o;
}

CstTrace read_ok(const std::string& path, ReadOptions options) {
  CstTrace trace;
  std::string error;
  EXPECT_TRUE(read_cst_file(path, options, trace, error)) << error;
  return trace;
}

std::string describe(const Event& e) {
  std::string fields = std::visit(
      [](const auto& d) -> std::string {
        using T = std::decay_t<decltype(d)>;
        if constexpr (std::is_same_v<T, AllocEvent>)
          return fmt::format("id {} addr {:#x} size {} stream {} dev {} kind {}", d.buffer_id,
                             d.address, d.size_bytes, d.stream, d.device, to_string(d.kind));
        else if constexpr (std::is_same_v<T, FreeEvent>)
          return fmt::format("id {} stream {} kind {}", d.buffer_id, d.stream, to_string(d.kind));
        else if constexpr (std::is_same_v<T, LaunchEvent>)
          return fmt::format("kernel {} stream {} dev {} flags {} buffers [{}]", d.kernel_id,
                             d.stream, d.device, d.flags, fmt::join(d.buffers, ","));
        else if constexpr (std::is_same_v<T, CopyEvent>)
          return fmt::format("dst {} src {} bytes {} {} stream {} set {}", d.dst_buffer,
                             d.src_buffer, d.bytes, to_string(d.direction), d.stream, d.is_set);
        else if constexpr (std::is_same_v<T, VmmEvent>)
          return fmt::format("{} addr {:#x} size {} handle {}", to_string(d.op), d.address,
                             d.size_bytes, d.handle);
        else if constexpr (std::is_same_v<T, IterationEvent>)
          return fmt::format("ordinal {}", d.ordinal);
        else if constexpr (std::is_same_v<T, TimingEvent>)
          return fmt::format("of #{} start {} duration {}", d.target_seq, d.start_ns,
                             d.duration_ns);
        else if constexpr (std::is_same_v<T, EvictionEvent>)
          return fmt::format("id {} bytes {} {} start {} duration {}", d.buffer_id, d.bytes,
                             to_string(d.reason), d.start_ns, d.duration_ns);
        else if constexpr (std::is_same_v<T, PrefetchEvent>)
          return fmt::format("id {} bytes {} {} stream {}", d.buffer_id, d.bytes,
                             to_string(d.reason), d.stream);
        else if constexpr (std::is_same_v<T, WaitEvent>)
          return fmt::format("id {} stream {}", d.buffer_id, d.stream);
        else
          return fmt::format(
              "iteration {} planned {} on demand {} late {} ({} ns) evictions {} out {} in {}{}",
              d.iteration, d.prefetches_planned, d.prefetches_on_demand, d.late_prefetches,
              d.late_ns, d.evictions, d.bytes_to_host, d.bytes_to_device,
              d.followed ? " followed" : "");
      },
      e.data);
  return fmt::format("#{} t={} thread {} {}: {}", e.seq, e.time_ns, e.thread, to_string(e.type()),
                     fields);
}

void write_fixture(const std::string& path) {
  using fixture::kMiB;
  RecorderOptions o = options_for(path);
  o.buffer_bytes = 256;  // several chunks and names records
  std::string error;
  auto r = Recorder::open(o, error);
  ASSERT_TRUE(r) << error;
  const uint64_t stream = 0x5000;
  r->record_alloc(1, 0x7f0000000000, 64 * kMiB, stream, 0, AllocKind::linear);
  r->record_alloc(2, 0x7f0004000000, 8 * kMiB, stream, 0, AllocKind::async);
  r->record_copy(2, kNoBuffer, 8 * kMiB, CopyDirection::host_to_device, stream, false);
  const uint32_t matmul = r->kernel_id("matmul");
  uint64_t next_id = 3;
  for (int i = 0; i < 3; ++i) {
    const uint32_t relu = r->kernel_id("relu");  // interned again: same id
    const uint32_t softmax = r->kernel_id("softmax");
    const uint64_t act = next_id++, out = next_id++;
    r->record_iteration();
    r->record_alloc(act, 0x7f0010000000 + act * 0x2000000, 16 * kMiB, stream, 0, AllocKind::linear);
    const uint64_t mm[] = {1, 2, act};
    r->record_launch(matmul, stream, 0, mm, 0);
    r->record_alloc(out, 0x7f0010000000 + out * 0x2000000, 4 * kMiB, stream, 0, AllocKind::linear);
    const uint64_t rl[] = {act, out};
    r->record_launch(relu, stream, 0, rl, 0);
    r->record_free(act, stream, FreeKind::async);
    const uint64_t sm[] = {out};
    r->record_launch(softmax, stream, 0, sm, kLaunchUnknownAccess);
    r->record_copy(kNoBuffer, out, 4 * kMiB, CopyDirection::device_to_host, stream, false);
    if (i < 2) r->record_free(out, stream, FreeKind::sync);
  }
  r->record_copy(2, kNoBuffer, kMiB, CopyDirection::unknown, stream, true);
  r->record_vmm(VmmOp::create, 0, 2 * kMiB, 0x77);
  r->record_vmm(VmmOp::map, 0x7f8000000000, 2 * kMiB, 0x77);
  r->record_free(2, stream, FreeKind::sync);
  const Counter counters[] = {{"cuMemAlloc_v2", 8}, {"cuLaunchKernel", 9}};
  r->close(counters);
}

}  // namespace cuswap::trace::test
