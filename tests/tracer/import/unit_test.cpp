// The importers' building blocks: TraceBuilder's sorting and remapping, the
// TensorDescription text format, allocator classification, the JSON syntax
// scanner, and the .cst path end to end on the recorder's fixture.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "tests/tracer/support.h"
#include "tracer/import/builder.h"
#include "tracer/import/import.h"
#include "tracer/import/json_util.h"
#include "tracer/import/tf_common.h"

namespace cuswap::trace::import {
namespace {

TEST(Builder, SortsOpsAndRemapsTensorIndices) {
  Trace trace;
  TraceBuilder b(trace);
  Op late, early;
  late.name = "late";
  late.start_ns = 1'000'500;
  early.name = "early";
  early.start_ns = 1'000'100;
  const uint32_t l = b.add_op(late);   // source index 0
  const uint32_t e = b.add_op(early);  // source index 1
  Tensor t;
  t.name = "x";
  t.alloc_ns = 1'000'100;
  t.free_ns = 1'000'900;
  t.producer = e;
  t.accesses = {l, e, l};
  b.add_tensor(t);
  Tensor first;
  first.alloc_ns = 1'000'050;
  b.add_tensor(first);
  b.add_iteration(1'000'000, 1'000'400);
  b.add_iteration(1'000'300, 1'001'000);  // overlaps: clipped
  b.finish();

  EXPECT_EQ(validate(trace), "");
  ASSERT_EQ(trace.ops.size(), 2u);
  EXPECT_EQ(trace.ops[0].name, "early");
  EXPECT_EQ(trace.ops[0].start_ns, 100);  // origin: the first iteration start
  ASSERT_EQ(trace.tensors.size(), 2u);
  EXPECT_EQ(trace.tensors[0].alloc_ns, 50);
  const Tensor& x = trace.tensors[1];
  EXPECT_EQ(x.producer, 0u);
  EXPECT_EQ(x.accesses, (std::vector<uint32_t>{0, 1}));
  ASSERT_EQ(trace.iterations.size(), 2u);
  EXPECT_EQ(trace.iterations[1].start_ns, 400);
  EXPECT_EQ(trace.iterations[0].first_op, 0u);
  EXPECT_EQ(trace.iterations[0].end_op, 1u);
  EXPECT_EQ(trace.iterations[1].first_op, 1u);
  EXPECT_EQ(trace.ops[1].iteration, 1u);
  EXPECT_EQ(x.iteration, 0u);
}

TEST(TensorDescription, ParsesTheTimelineText) {
  const std::string text =
      "dtype: DT_FLOAT\nshape {\n  dim {\n    size: 32\n  }\n  dim {\n    size: 128\n  }\n}\n"
      "allocation_description {\n  requested_bytes: 16384\n  allocated_bytes: 16640\n"
      "  allocator_name: GPU_0_bfc\n  allocation_id: 12\n  has_single_reference: true\n"
      "  ptr: 140689375426624\n}\n";
  TensorDescriptionText d;
  size_t offset = 0;
  std::string what;
  ASSERT_TRUE(parse_tensor_description(text, d, offset, what)) << what;
  EXPECT_EQ(d.dtype, "DT_FLOAT");
  EXPECT_EQ(d.shape, "[32,128]");
  EXPECT_EQ(d.requested_bytes, 16384u);
  EXPECT_EQ(d.allocated_bytes, 16640u);
  EXPECT_EQ(d.allocator_name, "GPU_0_bfc");
  EXPECT_EQ(d.allocation_id, 12u);
  EXPECT_EQ(d.ptr, 140689375426624u);
  EXPECT_TRUE(d.has_allocation);
}

TEST(TensorDescription, RejectsAnUnclosedMessage) {
  TensorDescriptionText d;
  size_t offset = 0;
  std::string what;
  EXPECT_FALSE(parse_tensor_description("shape { dim { size: 1 }", d, offset, what));
  EXPECT_EQ(what, "'}' closing \"shape\"");
  EXPECT_EQ(offset, 23u);
}

TEST(Allocators, DeviceOrHost) {
  EXPECT_EQ(classify_allocator("GPU_0_bfc"), AllocatorKind::gpu);
  EXPECT_EQ(classify_allocator("gpu_host_bfc"), AllocatorKind::host);
  EXPECT_EQ(classify_allocator("cuda_host_bfc"), AllocatorKind::host);
  EXPECT_EQ(classify_allocator("bfc_cpu_allocator_for_gpu"), AllocatorKind::cpu);
  EXPECT_EQ(classify_allocator("cpu"), AllocatorKind::cpu);
  EXPECT_EQ(device_ordinal("GPU_3_bfc"), 3);
  EXPECT_EQ(device_ordinal("/job:localhost/replica:0/task:0/device:GPU:1"), 1);

  Trace trace;
  TraceBuilder b(trace);
  AllocatorSpaces with_gpu;
  with_gpu.count("GPU_0_bfc", 10);
  with_gpu.count("cpu", 1000);
  with_gpu.count("gpu_host_bfc", 5);
  with_gpu.decide(b);
  EXPECT_EQ(with_gpu.space("GPU_0_bfc"), MemorySpace::device);
  EXPECT_EQ(with_gpu.space("cpu"), MemorySpace::host);
  EXPECT_EQ(with_gpu.space("gpu_host_bfc"), MemorySpace::host);
  EXPECT_TRUE(trace.notes.empty());

  AllocatorSpaces cpu_only;
  cpu_only.count("cpu", 10);
  cpu_only.count("bfc_cpu_allocator_for_gpu", 1000);
  cpu_only.decide(b);
  EXPECT_EQ(cpu_only.space("bfc_cpu_allocator_for_gpu"), MemorySpace::device);
  EXPECT_EQ(cpu_only.space("cpu"), MemorySpace::host);
  ASSERT_EQ(trace.notes.size(), 1u);
  EXPECT_EQ(trace.notes[0],
            "captured without a GPU: bfc_cpu_allocator_for_gpu stands for device memory");
}

TEST(JsonSyntax, FindsTheFirstBadByte) {
  EXPECT_FALSE(find_json_syntax_error(R"({"a": [1, 2, {"b": null}]})").found);
  const JsonSyntaxError e = find_json_syntax_error(R"({"a": [1, 2,, 3]})");
  ASSERT_TRUE(e.found);
  EXPECT_EQ(e.offset, 12u);
  EXPECT_EQ(find_json_syntax_error(R"({"a" 1})").expected, "':' after a key");
  EXPECT_EQ(find_json_syntax_error("\"abc").expected, "the closing quote of a string");
  EXPECT_EQ(find_json_syntax_error("[1] x").offset, 4u);
}

TEST(JsonPath, RendersAPointer) {
  const JsonPath top;
  const JsonPath a = top.at("traceEvents");
  const JsonPath b = a.at(size_t{12});
  const JsonPath c = b.at("a/b~");
  EXPECT_EQ(top.str(), "/");
  EXPECT_EQ(c.str(), "/traceEvents/12/a~1b~0");
}

std::string read_seed(const std::string& relative) {
  std::ifstream in(std::string(CUSWAP_IMPORT_CORPUS_DIR) + "/" + relative, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST(StepStats, AWholeRunMetadataReadsTheSame) {
  const std::string step_stats = read_seed("tf1_step_stats/seed.pb");
  ASSERT_FALSE(step_stats.empty());
  ASSERT_LT(step_stats.size(), 16384u);
  // RunMetadata{step_stats = 1}: tag, varint length, the StepStats.
  std::string run_metadata = "\x0a";
  run_metadata += static_cast<char>(0x80 | (step_stats.size() & 0x7f));
  run_metadata += static_cast<char>(step_stats.size() >> 7);
  run_metadata += step_stats;
  Trace direct, wrapped;
  std::string error;
  ASSERT_TRUE(import_trace_bytes(step_stats, "s.pb", {}, direct, error)) << error;
  ASSERT_TRUE(import_trace_bytes(run_metadata, "r.pb", {}, wrapped, error)) << error;
  EXPECT_EQ(wrapped.format, TraceFormat::tf1_step_stats);
  EXPECT_GT(direct.ops.size(), 0u);
  EXPECT_EQ(wrapped.ops.size(), direct.ops.size());
  EXPECT_EQ(wrapped.tensors.size(), direct.tensors.size());
  EXPECT_EQ(wrapped.reported_peak_device_bytes, direct.reported_peak_device_bytes);
}

TEST(Cst, TheRecordersFixtureImports) {
  namespace fx = test::fixture;
  test::TempDir dir;
  const std::string path = dir.path("fixture.cst");
  test::write_fixture(path);
  Trace trace;
  std::string error;
  ASSERT_TRUE(import_trace(path, ImportOptions{}, trace, error)) << error;
  EXPECT_EQ(validate(trace), "");
  EXPECT_EQ(trace.format, TraceFormat::cst);
  EXPECT_EQ(trace.tensors.size(), fx::kBuffers);
  size_t kernels = 0, copies = 0, sets = 0;
  for (const Op& op : trace.ops) {
    kernels += op.type != "memcpy" && op.type != "memset";
    copies += op.type == "memcpy";
    sets += op.type == "memset";
  }
  EXPECT_EQ(kernels, fx::kLaunches);
  EXPECT_EQ(copies, 4u);  // the input in, one output back per iteration
  EXPECT_EQ(sets, 1u);
  EXPECT_EQ(trace.iterations.size(), fx::kIterations);
  EXPECT_EQ(device_live_peak(trace).bytes, fx::kPeakBytes);
  size_t live_at_end = 0;
  for (const Tensor& t : trace.tensors) live_at_end += !t.free_ns;
  EXPECT_EQ(live_at_end, fx::kLiveAtEnd);
  // The weights are read by every matmul.
  const Tensor& weights = trace.tensors[0];
  EXPECT_EQ(weights.size_bytes, 64 * fx::kMiB);
  EXPECT_GE(weights.accesses.size(), 3u);
  EXPECT_FALSE(trace.reported_peak_device_bytes.has_value());
}

TEST(Cst, ATruncatedRecordingNeedsAllowIncomplete) {
  test::TempDir dir;
  const std::string path = dir.path("fixture.cst");
  test::write_fixture(path);
  std::vector<uint8_t> bytes = test::read_bytes(path);
  bytes.resize(bytes.size() - 10);
  const std::string_view view(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  Trace trace;
  std::string error;
  EXPECT_FALSE(import_trace_bytes(view, "cut.cst", ImportOptions{}, trace, error));
  EXPECT_EQ(error.rfind("cut.cst: offset ", 0), 0u) << error;
  ImportOptions partial;
  partial.allow_incomplete = true;
  ASSERT_TRUE(import_trace_bytes(view, "cut.cst", partial, trace, error)) << error;
  EXPECT_EQ(validate(trace), "");
  ASSERT_FALSE(trace.notes.empty());
  EXPECT_EQ(trace.notes[0].rfind("the recording never finished", 0), 0u);
}

}  // namespace
}  // namespace cuswap::trace::import
