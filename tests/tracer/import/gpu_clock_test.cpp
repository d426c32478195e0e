// GPU captures on the device's clock, on small timelines written here for
// what no public capture has (a TF1 GPU timeline with tensor objects) or to
// pin one rule at a time (PyTorch's pairing without addresses, the clock
// through launches). The real GPU fixtures are checked in golden_test.cpp.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "tracer/import/device_clock.h"
#include "tracer/import/import.h"

namespace cuswap::trace::import {
namespace {

Trace import_json(const std::string& json) {
  Trace trace;
  std::string error;
  EXPECT_TRUE(import_trace_bytes(json, "test.json", ImportOptions{}, trace, error)) << error;
  EXPECT_EQ(validate(trace), "");
  return trace;
}

const Op* find_op(const Trace& t, std::string_view name) {
  for (const Op& op : t.ops)
    if (op.name == name) return &op;
  return nullptr;
}

const Tensor* find_tensor(const Trace& t, std::string_view name) {
  for (const Tensor& x : t.tensors)
    if (x.name == name) return &x;
  return nullptr;
}

std::string tensor_events(std::string_view name, int pid, int id, int ts, int end_ts, int bytes) {
  return fmt::format(
      R"({{"ph":"N","cat":"Tensor","name":"{0}","pid":{1},"tid":0,"id":{2},"ts":{3}}},)"
      R"({{"ph":"O","cat":"Tensor","name":"{0}","pid":{1},"tid":0,"id":{2},"ts":{3},"args":{{"snapshot":{{"tensor_description":"dtype: DT_FLOAT shape {{ dim {{ size: 1 }} }} allocation_description {{ requested_bytes: {5} allocated_bytes: {5} allocator_name: GPU_0_bfc allocation_id: {2} }}"}}}}}},)"
      R"({{"ph":"D","cat":"Tensor","name":"{0}","pid":{1},"tid":0,"id":{2},"ts":{4}}},)",
      name, pid, id, ts, end_ts, bytes);
}

// Executor ops enqueue at 10..40 µs; their kernels run at 1000..2300 µs on
// stream 7, repeated on stream:all; a copy on stream 13, repeated on memcpy.
std::string tf1_gpu_timeline() {
  std::string e = R"({"traceEvents":[)";
  const char* lanes[] = {"/job:localhost/replica:0/task:0/device:GPU:0 Compute",
                         "/job:localhost/replica:0/task:0/device:GPU:0 Tensors",
                         "/device:GPU:0/stream:all Compute", "/device:GPU:0/stream:7 Compute",
                         "/device:GPU:0/stream:13 Compute", "/device:GPU:0/memcpy Compute"};
  for (int pid = 0; pid < 6; ++pid)
    e += fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":"{}"}}}},)", pid,
                     lanes[pid]);
  const auto x = [&](int pid, std::string_view type, std::string_view node, int ts, int dur,
                     std::string_view inputs) {
    e += fmt::format(
        R"({{"ph":"X","cat":"Op","name":"{}","pid":{},"tid":0,"ts":{},"dur":{},"args":{{"name":"{}","op":"{}"{}}}}},)",
        type, pid, ts, dur, node, type, inputs);
  };
  x(0, "Conv2D", "conv", 10, 5, R"(,"input0":"x")");
  x(0, "Relu", "relu", 20, 5, R"(,"input0":"conv")");
  x(0, "Shape", "shape", 30, 2, R"(,"input0":"relu")");
  x(0, "MatMul", "fc", 40, 5, R"(,"input0":"relu")");
  for (int pid : {2, 3}) {  // the same kernels on stream:all and stream:7
    x(pid, "Conv2D", "conv", 1000, 300, "");
    x(pid, "Conv2D", "conv", 1300, 200, "");  // a second kernel of the same op
    x(pid, "Relu", "relu", 1600, 100, "");
    x(pid, "MatMul", "fc", 2000, 300, "");
  }
  for (int pid : {4, 5}) x(pid, "MEMCPYHtoD", "edge_1_x", 900, 50, "");
  e += tensor_events("conv", 1, 1, 10, 25, 4096);
  e += tensor_events("relu", 1, 2, 20, 45, 8192);
  e += R"({"ph":"C","cat":"Memory","name":"GPU_0_bfc","pid":0,"ts":10,"args":{"GPU_0_bfc":12288}})";
  return e + "]}";
}

TEST(Tf1GpuTimeline, OpsTakeTheirKernelsDeviceTime) {
  const Trace t = import_json(tf1_gpu_timeline());
  // Executor ops (4), the copy (1): the aggregates and the joined kernels are gone.
  ASSERT_EQ(t.ops.size(), 5u);
  const Op* conv = find_op(t, "conv");
  const Op* shape = find_op(t, "shape");
  const Op* copy = find_op(t, "edge_1_x");
  ASSERT_TRUE(conv && shape && copy);
  // Origin: the first op left on the host's clock (shape, at 30 µs).
  EXPECT_EQ(shape->start_ns, 0);
  EXPECT_EQ(conv->start_ns, 970'000);     // 1000 µs - 30 µs
  EXPECT_EQ(conv->duration_ns, 500'000);  // both kernels: 1000..1500 µs
  EXPECT_EQ(conv->stream, 7u);
  EXPECT_TRUE(copy->is_copy);
  EXPECT_EQ(copy->stream, 13u);
}

TEST(Tf1GpuTimeline, TensorsLiveOnTheDeviceClock) {
  const Trace t = import_json(tf1_gpu_timeline());
  const Tensor* conv = find_tensor(t, "conv:0");
  const Tensor* relu = find_tensor(t, "relu:0");
  ASSERT_TRUE(conv && relu);
  // conv:0 from conv's first kernel to the end of relu's kernel.
  EXPECT_EQ(conv->alloc_ns, 970'000);
  EXPECT_EQ(conv->free_ns, 1'670'000);
  // relu:0 to the end of its last consumer's kernel (fc), not the executor's D.
  EXPECT_EQ(relu->alloc_ns, 1'570'000);
  EXPECT_EQ(relu->free_ns, 2'270'000);
}

TEST(Tf1GpuTimeline, ScaledTimesMoveTheTensors) {
  // The same timeline with the device lanes a millisecond later: tensors follow.
  std::string json = tf1_gpu_timeline();
  for (const char* from : {"\"ts\":2000,", "\"ts\":1600,", "\"ts\":1300,", "\"ts\":1000,"}) {
    const std::string to = fmt::format("\"ts\":{},", std::stoi(std::string(from).substr(5)) + 1000);
    for (size_t at = json.find(from); at != std::string::npos; at = json.find(from, at + 1))
      json.replace(at, std::string_view(from).size(), to);
  }
  const Trace t = import_json(json);
  EXPECT_EQ(find_tensor(t, "conv:0")->alloc_ns, 1'970'000);
  EXPECT_EQ(find_tensor(t, "relu:0")->free_ns, 3'270'000);
}

std::string memory_event(int ts, int64_t bytes) {
  return fmt::format(
      R"({{"ph":"i","s":"t","name":"[memory]","pid":1,"tid":1,"ts":{},"args":{{"Device Type":1,"Device Id":0,"Bytes":{}}}}},)",
      ts, bytes);
}

uint64_t live_at(const Trace& t, int64_t time_ns) {
  uint64_t live = 0;
  for (const Tensor& x : t.tensors)
    if ((x.persistent || x.alloc_ns <= time_ns) && (!x.free_ns || *x.free_ns > time_ns))
      live += x.size_bytes;
  return live;
}

TEST(TorchProfilerWithoutAddresses, LiveBytesFollowTheRunningSum) {
  // Two allocations of one size live at once, then a free of a size nothing
  // has (it gives back 300 of the 400 held), then one beyond what is live.
  std::string e = R"({"traceEvents":[)";
  const int64_t deltas[] = {100, 100, -100, 200, -300, -150, 50};
  int ts = 10;
  for (int64_t d : deltas) e += memory_event(ts += 10, d);
  e += R"({"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":0,"dur":200}]})";
  const Trace t = import_json(e);
  // Running sum: 100 200 100 300 0 -150 -100; 150 bytes were there before.
  int64_t sum = 150;
  ts = 10;
  for (int64_t d : deltas) {
    sum += d;
    ts += 10;
    EXPECT_EQ(live_at(t, ts * 1000), static_cast<uint64_t>(sum)) << "at " << ts << " µs";
  }
  uint64_t persistent = 0;
  for (const Tensor& x : t.tensors) persistent += x.persistent ? x.size_bytes : 0;
  EXPECT_EQ(persistent, 150u);
}

TEST(DeviceClock, MapsHostTimesThroughLaunches) {
  DeviceClock clock;
  clock.add_launch(1, 100);
  clock.add_work(1, 0, 1000, 1200);
  clock.add_launch(2, 200);
  clock.add_work(2, 0, 1200, 1500);
  clock.add_work(3, 0, 5000, 6000);  // no launch: not used
  clock.finish();
  EXPECT_TRUE(clock.mapped(0));
  EXPECT_FALSE(clock.mapped(1));
  EXPECT_EQ(clock.alloc_ns(0, 50), 1000);   // before the first launch: its kernel
  EXPECT_EQ(clock.alloc_ns(0, 150), 1200);  // the next launch's kernel
  EXPECT_EQ(clock.alloc_ns(0, 300), 1500);  // after the last: the device's end
  EXPECT_EQ(clock.free_ns(0, 50), 50);      // nothing launched before
  EXPECT_EQ(clock.free_ns(0, 150), 1200);   // after the first kernel
  EXPECT_EQ(clock.free_ns(0, 300), 1500);
  EXPECT_EQ(clock.alloc_ns(1, 77), 77);  // another device: unchanged
}

}  // namespace
}  // namespace cuswap::trace::import
