// The shim end to end, on simcuda: programs that reach the driver by direct
// link, dlopen + dlsym and cuGetProcAddress, run with and without
// LD_PRELOAD=libcuswap.so. With cuswap they must behave exactly as without
// it, and their recorded traces must hold what they did.
#include <cuda.h>
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <string>

#include "tests/support/process.h"
#include "tracer/cst_reader.h"

namespace {

using cuswap::testing::ProgramResult;
using cuswap::testing::run_program;
using cuswap::testing::TempDir;
using Env = std::map<std::string, std::string>;

Env plain(const std::string& simcuda_conf = "") {
  return {{"LD_PRELOAD", ""},
          {"CUSWAP_CONF", ""},
          {"SIMCUDA_CONF", simcuda_conf},
          {"LD_LIBRARY_PATH", SIMCUDA_DIR}};
}

Env with_cuswap(const std::string& cuswap_conf, const std::string& simcuda_conf = "") {
  Env env = plain(simcuda_conf);
  env["LD_PRELOAD"] = std::string(SANITIZER_RUNTIME).empty()
                          ? std::string(CUSWAP_SHIM)
                          : std::string(SANITIZER_RUNTIME) + ":" + CUSWAP_SHIM;
  env["CUSWAP_CONF"] = cuswap_conf;
  return env;
}

// The program's transcript without cuswap, and with it under `conf`.
void expect_same_behaviour(const std::vector<std::string>& argv, const std::string& conf,
                           const std::string& simcuda_conf = "") {
  ProgramResult base = run_program(argv, plain(simcuda_conf));
  ProgramResult shim = run_program(argv, with_cuswap(conf, simcuda_conf));
  EXPECT_EQ(shim.exit_code, base.exit_code) << shim.err;
  EXPECT_EQ(shim.out, base.out) << "stderr with cuswap:\n" << shim.err;
  EXPECT_NE(base.out.find("failures"), std::string::npos) << base.out << base.err;
}

namespace trace = cuswap::trace;

trace::CstTrace load_trace(const std::string& path) {
  trace::CstTrace t;
  std::string error;
  EXPECT_TRUE(trace::read_cst_file(path, {}, t, error)) << error;
  return t;
}

std::vector<trace::EventType> types_of(const std::vector<trace::Event>& events) {
  std::vector<trace::EventType> types;
  for (const trace::Event& e : events)
    types.push_back(e.type());
  return types;
}

// The program's own events, without the device timings the shim reads back
// whenever their kernels are done (at a later launch, a mark or exit).
std::vector<trace::Event> program_events(const trace::CstTrace& t) {
  std::vector<trace::Event> out;
  for (const trace::Event& e : t.events)
    if (e.type() != trace::EventType::timing) out.push_back(e);
  return out;
}

// The workload's trace, event by event (tests/hooks/programs/workload.cpp).
void expect_workload_trace(const trace::CstTrace& t, bool per_thread) {
  using T = trace::EventType;
  using D = trace::CopyDirection;
  ASSERT_TRUE(t.complete());
  EXPECT_EQ(t.header.cuswap_version, "0.1.0");
  ASSERT_EQ(t.header.devices.size(), 1u);
  EXPECT_EQ(t.header.devices[0].name, "simcuda device 0");
  EXPECT_EQ(t.header.devices[0].total_bytes, 1ull << 30);
  EXPECT_NE(t.header.configuration.find("record:"), std::string::npos) << t.header.configuration;

  const std::vector<T> expected = {
      T::alloc,     T::alloc,  T::alloc,  T::alloc,  // a b c d
      T::copy,      T::copy,   T::copy,              // h2d a, set b, set d
      T::iteration,                                  //
      T::launch,    T::launch, T::launch,            // copy, fill, fill_struct
      T::copy,      T::copy,   T::copy,   T::copy,   // d2h b, 2d c, d2d, d2h a
      T::vmm,       T::vmm,    T::vmm,    T::vmm,    // create map unmap release
      T::free,      T::free,   T::free,   T::free};  // d a b c
  const std::vector<trace::Event> ev = program_events(t);
  ASSERT_EQ(types_of(ev), expected);
  // Each launch has its device time, read back once its kernel was done.
  std::multiset<uint64_t> timed;
  for (const trace::Event& e : t.events)
    if (e.type() == T::timing) timed.insert(e.as<trace::TimingEvent>().target_seq);
  EXPECT_EQ(timed, (std::multiset<uint64_t>{ev[8].seq, ev[9].seq, ev[10].seq}));
  const uint64_t MiB = 1 << 20;
  auto alloc = [&](size_t i) { return ev[i].as<trace::AllocEvent>(); };
  uint64_t a = alloc(0).buffer_id, b = alloc(1).buffer_id, c = alloc(2).buffer_id,
           d = alloc(3).buffer_id;
  EXPECT_EQ(std::set<uint64_t>({a, b, c, d}).size(), 4u) << "buffer ids are distinct";
  EXPECT_EQ(alloc(0).size_bytes, MiB);
  EXPECT_EQ(alloc(0).kind, trace::AllocKind::linear);
  EXPECT_EQ(alloc(0).device, 0);
  EXPECT_EQ(alloc(2).size_bytes, 1024u * 64) << "pitch x height";
  EXPECT_EQ(alloc(2).kind, trace::AllocKind::pitch);
  EXPECT_EQ(alloc(3).size_bytes, 2 * MiB);
  EXPECT_EQ(alloc(3).kind, trace::AllocKind::async);
  uint64_t work = alloc(3).stream;
  // Synchronous calls run on the NULL stream, or the per-thread stream for
  // the _ptds flavours.
  const uint64_t sync = per_thread ? reinterpret_cast<uint64_t>(CU_STREAM_PER_THREAD) : 0;
  if (per_thread)
    EXPECT_EQ(work, reinterpret_cast<uint64_t>(CU_STREAM_PER_THREAD));
  else
    EXPECT_NE(work, 0u);

  auto copy = [&](size_t i) { return ev[i].as<trace::CopyEvent>(); };
  EXPECT_EQ(copy(4), (trace::CopyEvent{a, trace::kNoBuffer, MiB, D::host_to_device, sync, false}));
  EXPECT_EQ(copy(5), (trace::CopyEvent{b, trace::kNoBuffer, MiB, D::device_to_device, work, true}));
  EXPECT_EQ(copy(6),
            (trace::CopyEvent{d, trace::kNoBuffer, 2 * MiB, D::device_to_device, sync, true}));

  auto launch = [&](size_t i) { return ev[i].as<trace::LaunchEvent>(); };
  EXPECT_EQ(t.kernel_name(launch(8).kernel_id), "copy");
  EXPECT_EQ(launch(8).buffers, (std::vector<uint64_t>{b, a}));
  EXPECT_EQ(launch(8).stream, work);
  EXPECT_EQ(launch(8).flags, 0);
  EXPECT_EQ(t.kernel_name(launch(9).kernel_id), "fill");
  EXPECT_EQ(launch(9).buffers, (std::vector<uint64_t>{c})) << "scanned from the extra buffer";
  EXPECT_EQ(t.kernel_name(launch(10).kernel_id), "fill_struct");
  EXPECT_EQ(launch(10).buffers, (std::vector<uint64_t>{d})) << "a pointer inside a struct";

  EXPECT_EQ(copy(11), (trace::CopyEvent{trace::kNoBuffer, b, MiB, D::device_to_host, work, false}));
  EXPECT_EQ(copy(12),
            (trace::CopyEvent{trace::kNoBuffer, c, 64000, D::device_to_host, sync, false}));
  EXPECT_EQ(copy(13), (trace::CopyEvent{a, d, 4096, D::device_to_device, sync, false}));
  EXPECT_EQ(copy(14),
            (trace::CopyEvent{trace::kNoBuffer, a, 4096, D::device_to_host, sync, false}));

  auto vmm = [&](size_t i) { return ev[i].as<trace::VmmEvent>(); };
  EXPECT_EQ(vmm(15).op, trace::VmmOp::create);
  EXPECT_EQ(vmm(15).size_bytes, 2 * MiB);
  EXPECT_EQ(vmm(16).op, trace::VmmOp::map);
  EXPECT_EQ(vmm(16).handle, vmm(15).handle);
  EXPECT_NE(vmm(16).address, 0u);
  EXPECT_EQ(vmm(17).op, trace::VmmOp::unmap);
  EXPECT_EQ(vmm(17).address, vmm(16).address);
  EXPECT_EQ(vmm(18).op, trace::VmmOp::release);
  EXPECT_EQ(vmm(18).handle, vmm(15).handle);

  auto free_event = [&](size_t i) { return ev[i].as<trace::FreeEvent>(); };
  EXPECT_EQ(free_event(19), (trace::FreeEvent{d, work, trace::FreeKind::async}));
  EXPECT_EQ(free_event(20), (trace::FreeEvent{a, 0, trace::FreeKind::sync}));
  EXPECT_EQ(free_event(21), (trace::FreeEvent{b, 0, trace::FreeKind::sync}));
  EXPECT_EQ(free_event(22), (trace::FreeEvent{c, 0, trace::FreeKind::sync}));
  for (size_t i = 1; i < ev.size(); ++i)
    EXPECT_GE(ev[i].time_ns, ev[i - 1].time_ns);
}

uint64_t stat_value(const std::string& err, const std::string& name) {
  std::smatch m;
  std::regex pattern("stats: " + name + " = ([0-9]+)");
  return std::regex_search(err, m, pattern) ? std::stoull(m[1]) : 0;
}

// ---------------------------------------------------------------------------
// Pass-through is exact: every call returns what the driver returned.

TEST(PassThrough, DirectLinkWithoutRecording) {
  ProgramResult base = run_program({PROG_DIRECT}, plain());
  ASSERT_EQ(base.exit_code, 0) << base.out << base.err;
  expect_same_behaviour({PROG_DIRECT}, "");
}

TEST(PassThrough, EveryDoorWhileRecording) {
  TempDir dir;
  std::string trace = dir.path("doors.cst");
  expect_same_behaviour({PROG_DIRECT}, "record:" + trace);
  expect_same_behaviour({PROG_DLOPEN}, "record:" + trace);
  expect_same_behaviour({PROG_PROCADDRESS}, "record:" + trace);
  expect_same_behaviour({PROG_PROCADDRESS, "per-thread"}, "record:" + trace);
}

TEST(PassThrough, ErrorsInjectedByTheDriverComeThroughUnchanged) {
  TempDir dir;
  std::string trace = dir.path("errors.cst");
  for (const char* fail : {"fail:cuMemAlloc_v2@2", "fail:[cuLaunchKernel@1,cuMemcpyHtoD@1]",
                           "fail:[cuMemFreeAsync@1,cuMemCreate@1]", "fail:cuMemAllocPitch@1+",
                           "fail:[cuMemcpyDtoHAsync@1=999,cuLaunchKernelEx@1]"}) {
    SCOPED_TRACE(fail);
    ProgramResult base = run_program({PROG_DIRECT}, plain(fail));
    EXPECT_NE(base.exit_code, 0) << "the injected failure shows in the transcript";
    expect_same_behaviour({PROG_DIRECT}, "record:" + trace, fail);
    expect_same_behaviour({PROG_PROCADDRESS}, "record:" + trace, fail);
  }
}

TEST(PassThrough, PassthroughModeChangesNothing) {
  expect_same_behaviour({PROG_DLOPEN}, "passthrough:true,record:/dev/null");
}

// ---------------------------------------------------------------------------
// Doors: each way of reaching the driver, recorded event by event.

void record_workload(const std::vector<std::string>& argv, bool per_thread) {
  TempDir dir;
  std::string path = dir.path("workload.cst");
  ProgramResult r = run_program(argv, with_cuswap("record:" + path));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  trace::CstTrace t = load_trace(path);
  expect_workload_trace(t, per_thread);
}

TEST(Doors, DirectLink) {
  record_workload({PROG_DIRECT}, false);
}
TEST(Doors, DlopenAndDlsym) {
  record_workload({PROG_DLOPEN}, false);
}
TEST(Doors, CuGetProcAddress) {
  record_workload({PROG_PROCADDRESS}, false);
}
TEST(Doors, CuGetProcAddressPerThreadStreams) {
  record_workload({PROG_PROCADDRESS, "per-thread"}, true);
}

TEST(Doors, CuGetProcAddressGivesTheHookForItself) {
  ProgramResult r = run_program({PROG_PROCADDRESS}, with_cuswap(""));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("self lookup consistent"), std::string::npos) << r.err;
}

TEST(Doors, TheCudaRuntimeFindsTheDriverThroughCuswap) {
  // libcudart leaves allocations behind at exit, which is not cuswap's.
  Env base_env = plain(), shim_env = with_cuswap("stats:true");
  base_env["ASAN_OPTIONS"] = shim_env["ASAN_OPTIONS"] = "detect_leaks=0";
  ProgramResult base = run_program({PROG_CUDART}, base_env);
  ProgramResult shim = run_program({PROG_CUDART}, shim_env);
  EXPECT_EQ(shim.exit_code, 0) << shim.err;
  EXPECT_EQ(shim.out, base.out);
  // libcudart dlsym's cuGetProcAddress from libcuda, then asks it for every
  // driver entry point: both answers must have come from cuswap.
  EXPECT_GE(stat_value(shim.err, "dlsym_answered"), 1u) << shim.err;
  EXPECT_GT(stat_value(shim.err, "cuGetProcAddress_v2"), 100u) << shim.err;
  EXPECT_GT(stat_value(shim.err, "procaddress_answered"), 20u) << shim.err;
}

TEST(Doors, RtldNextStillResolvesRelativeToTheCaller) {
  ProgramResult base = run_program({PROG_RTLD_NEXT}, plain());
  ASSERT_EQ(base.exit_code, 0) << base.out;
  ProgramResult shim = run_program({PROG_RTLD_NEXT}, with_cuswap(""));
  EXPECT_EQ(shim.exit_code, 0) << shim.out << shim.err;
  EXPECT_EQ(shim.out, "next probe_value 1\n");
}

TEST(Doors, IterationMarksThroughCtypes) {
  // What a Python training loop does: the driver is reached through ctypes
  // (dlopen + dlsym, like the frameworks), iterations are marked the same way.
  TempDir dir;
  std::string path = dir.path("ctypes.cst");
  const char* script = R"(
import ctypes
cuda = ctypes.CDLL("libcuda.so.1")
assert cuda.cuInit(0) == 0
marks = ctypes.CDLL(None)  # libcuswap.so is preloaded into the process
for step in range(3):
    marks.cuswap_iteration_begin()
print("marked")
)";
  Env env = with_cuswap("record:" + path);
  env["ASAN_OPTIONS"] = "detect_leaks=0";  // the interpreter's leaks are not cuswap's
  ProgramResult r = run_program({"/usr/bin/env", "python3", "-c", script}, env);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  trace::CstTrace t = load_trace(path);
  std::vector<uint64_t> ordinals;
  for (const trace::Event& e : t.events)
    if (e.type() == trace::EventType::iteration)
      ordinals.push_back(e.as<trace::IterationEvent>().ordinal);
  EXPECT_EQ(ordinals, (std::vector<uint64_t>{0, 1, 2}));
}

// ---------------------------------------------------------------------------
// Never break the host

TEST(Robustness, MalformedConfigurationWarnsAndRunsOn) {
  ProgramResult base = run_program({PROG_DIRECT}, plain());
  ProgramResult shim = run_program({PROG_DIRECT}, with_cuswap("budget:lots,colour:blue,stats"));
  EXPECT_EQ(shim.exit_code, base.exit_code);
  EXPECT_EQ(shim.out, base.out);
  EXPECT_NE(shim.err.find("'budget'"), std::string::npos) << shim.err;
  EXPECT_NE(shim.err.find("'colour'"), std::string::npos) << shim.err;
}

TEST(Robustness, UnwritableRecordPathWarnsAndRunsOn) {
  ProgramResult base = run_program({PROG_DIRECT}, plain());
  ProgramResult shim =
      run_program({PROG_DIRECT}, with_cuswap("record:/nonexistent-cuswap-dir/run.cst"));
  EXPECT_EQ(shim.exit_code, base.exit_code);
  EXPECT_EQ(shim.out, base.out);
  EXPECT_NE(shim.err.find("/nonexistent-cuswap-dir/run.cst"), std::string::npos) << shim.err;
}

std::map<trace::EventType, size_t> count_types(const trace::CstTrace& t) {
  std::map<trace::EventType, size_t> counts;
  for (const trace::Event& e : t.events)
    ++counts[e.type()];
  return counts;
}

TEST(Robustness, ForkLeavesAWorkingChild) {
  TempDir dir;
  std::string path = dir.path("fork.cst");
  ProgramResult r = run_program({PROG_FORKER}, with_cuswap("record:" + path));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("child ok, parent ok"), std::string::npos) << r.out;
  trace::CstTrace t = load_trace(path);
  ASSERT_TRUE(t.complete()) << "the parent's recording survived the fork";
  auto counts = count_types(t);
  EXPECT_EQ(counts[trace::EventType::alloc], 2u) << "the child recorded nothing";
  EXPECT_EQ(counts[trace::EventType::launch], 1u);
  EXPECT_EQ(counts[trace::EventType::free], 2u);
}

TEST(Robustness, ManyThreadsAtOnce) {
  TempDir dir;
  std::string path = dir.path("threads.cst");
  ProgramResult r = run_program({PROG_THREADS}, with_cuswap("record:" + path));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  trace::CstTrace t = load_trace(path);
  ASSERT_TRUE(t.complete());
  auto counts = count_types(t);
  EXPECT_EQ(counts[trace::EventType::alloc], 640u);
  EXPECT_EQ(counts[trace::EventType::free], 640u);
  EXPECT_EQ(counts[trace::EventType::launch], 640u);
  EXPECT_EQ(counts[trace::EventType::copy], 320u);
  std::set<uint64_t> live, seen;
  std::set<uint32_t> threads;
  for (const trace::Event& e : t.events) {
    threads.insert(e.thread);
    if (e.type() == trace::EventType::alloc) {
      uint64_t id = e.as<trace::AllocEvent>().buffer_id;
      EXPECT_TRUE(seen.insert(id).second) << "buffer id " << id << " reused";
      live.insert(id);
    } else if (e.type() == trace::EventType::free) {
      EXPECT_EQ(live.erase(e.as<trace::FreeEvent>().buffer_id), 1u) << "free of a dead buffer";
    } else if (e.type() == trace::EventType::launch) {
      for (uint64_t id : e.as<trace::LaunchEvent>().buffers)
        EXPECT_TRUE(live.count(id)) << "a launch touched a buffer not live at the time";
      EXPECT_FALSE(e.as<trace::LaunchEvent>().buffers.empty());
    }
  }
  EXPECT_TRUE(live.empty());
  EXPECT_GE(threads.size(), 8u);
}

}  // namespace
