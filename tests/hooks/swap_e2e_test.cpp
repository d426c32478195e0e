// The swapping allocator end to end: an unmodified program that needs more
// device memory than simcuda has, run with LD_PRELOAD=libcuswap.so and a
// budget, in both eviction modes, and through `cuswap run`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tests/support/process.h"
#include "tracer/cst_reader.h"
#include "tracer/trace_summary.h"

namespace {

using cuswap::testing::ProgramResult;
using cuswap::testing::run_program;
using cuswap::testing::TempDir;
using Env = std::map<std::string, std::string>;

// The sanitizer's runtime first, where the shim is built with it.
std::string with_sanitizer(const std::string& preload) {
  const std::string runtime = SANITIZER_RUNTIME;
  if (runtime.empty()) return preload;
  return preload.empty() ? runtime : runtime + ":" + preload;
}

Env environment(const std::string& cuswap_conf, const std::string& simcuda_conf, bool shim) {
  Env env = {{"CUSWAP_CONF", cuswap_conf},
             {"SIMCUDA_CONF", simcuda_conf},
             {"LD_LIBRARY_PATH", SIMCUDA_DIR},
             {"LD_PRELOAD", ""}};
  if (shim) env["LD_PRELOAD"] = with_sanitizer(CUSWAP_SHIM);
  return env;
}

// Each of `lines`, followed by a newline, is in the program's output.
void expect_lines(const ProgramResult& r, std::initializer_list<const char*> lines,
                  const std::string& who = "") {
  for (const char* line : lines)
    EXPECT_NE(r.out.find(std::string(line) + "\n"), std::string::npos)
        << who << "missing '" << line << "' in:\n"
        << r.out << r.err;
}

// cuswap's counters at exit (stats:true) show evictions.
std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void expect_evictions(const ProgramResult& r) {
  EXPECT_NE(r.err.find("stats: evictions = "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("stats: evictions = 0\n"), std::string::npos) << r.err;
}

// The small counter buffer takes the first few bytes, so the second 32 MiB
// buffer is already one too many.
TEST(SwapEndToEnd, WithoutCuswapTheSecondBufferFails) {
  ProgramResult r = run_program({PROG_OVERSUBSCRIBE}, environment("", "memory:64MiB", false));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("allocation 1: CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("allocated 1 of 8"), std::string::npos) << r.out;
}

class SwapModes : public ::testing::TestWithParam<const char*> {};

// The oversubscription program on a 64 MiB device under `budget_mib`: every
// buffer allocated, every byte intact, cuswap evicted; the peak simcuda
// measured, in MiB (-1 when the program did not print it).
int oversubscribe_under(int budget_mib, const char* host_vmm) {
  const std::string simcuda_conf = std::string("memory:64MiB,host_vmm:") + host_vmm;
  ProgramResult r = run_program(
      {PROG_OVERSUBSCRIBE},
      environment(fmt::format("budget:{}MiB,stats:true", budget_mib), simcuda_conf, true));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string total = fmt::format("total {} MiB", budget_mib);
  expect_lines(r, {total.c_str(), "allocated 8 of 8", "wrong bytes read back 0",
                   "wrong bytes seen by kernels 0", "failures 0", "hazards 0"});
  expect_evictions(r);
  std::smatch m;
  if (!std::regex_search(r.out, m, std::regex("peak device MiB ([0-9]+)"))) {
    ADD_FAILURE() << "no peak in:\n" << r.out;
    return -1;
  }
  return std::stoi(m[1]);
}

TEST_P(SwapModes, EveryBufferFitsAndEveryByteSurvives) {
  const int peak = oversubscribe_under(64, GetParam());
  EXPECT_GE(peak, 32);
  EXPECT_LE(peak, 64);
}

// A budget well below the device's memory: the device would take more, so
// only cuswap's own accounting keeps the peak simcuda measures under it.
TEST_P(SwapModes, ABudgetBelowTheDevicesMemoryBoundsItsPeak) {
  const int peak = oversubscribe_under(40, GetParam());
  EXPECT_GE(peak, 32);  // one 32 MiB buffer at a time
  EXPECT_LE(peak, 40);
}

INSTANTIATE_TEST_SUITE_P(Modes, SwapModes, ::testing::Values("true", "false"));

// The value of `"key": N` in a JSON text, or -1.
long long json_number(const std::string& json, const std::string& key) {
  std::smatch m;
  if (!std::regex_search(json, m, std::regex("\"" + key + "\": (-?[0-9]+)"))) return -1;
  return std::stoll(m[1]);
}

uint64_t counter(const cuswap::trace::CstTrace& t, const std::string& name) {
  for (const cuswap::trace::Counter& c : t.end->counters)
    if (c.name == name) return c.value;
  ADD_FAILURE() << "no counter " << name;
  return 0;
}

// Sixteen kernels of 2 ms each (eight fills, eight checks) under a budget
// that makes cuswap swap: the recording holds their durations, and every
// eviction and prefetch, with totals equal to the allocator's counters.
class RecordedSwap : public ::testing::TestWithParam<const char*> {};

constexpr uint64_t kKernelNs = 2'000'000;
constexpr uint64_t kKernels = 16;

TEST_P(RecordedSwap, HoldsKernelTimesAndEveryCopyCuswapMade) {
  TempDir dir;
  const std::string path = dir.path("run.cst");
  const ProgramResult r =
      run_program({PROG_OVERSUBSCRIBE, std::to_string(kKernelNs)},
                  environment("budget:64MiB,record:" + path,
                              std::string("memory:64MiB,host_vmm:") + GetParam(), true));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  ASSERT_NE(r.out.find("allocated 8 of 8\n"), std::string::npos) << r.out;

  cuswap::trace::CstTrace t;
  std::string error;
  ASSERT_TRUE(cuswap::trace::read_cst_file(path, {}, t, error)) << error;
  ASSERT_TRUE(t.end.has_value());
  EXPECT_EQ(t.header.format_major, 2);
  const cuswap::trace::TraceSummary s = cuswap::trace::summarize(t);
  EXPECT_EQ(s.launches, kKernels);
  EXPECT_EQ(s.timed_launches, kKernels);
  EXPECT_GT(counter(t, "evictions"), 0u);
  EXPECT_GT(counter(t, "prefetches"), 0u);
  EXPECT_EQ(s.evictions, counter(t, "evictions"));
  EXPECT_EQ(s.prefetches, counter(t, "prefetches"));
  EXPECT_EQ(s.prefetches_on_demand, counter(t, "prefetches_on_demand"));
  EXPECT_EQ(s.bytes_to_host, counter(t, "bytes_to_host"));
  EXPECT_EQ(s.bytes_to_device, counter(t, "bytes_to_device"));
  EXPECT_GT(s.prefetch_waits, 0u);  // every on-demand prefetch is waited for
  // Virtual time: each timed launch is its declared duration, plus at most
  // the host's few microseconds of launch latency when the host was behind.
  EXPECT_GE(s.kernel_time_ns, kKernels * kKernelNs);
  EXPECT_LE(s.kernel_time_ns, kKernels * kKernelNs * 101 / 100);

  const Env cli = environment("", "", false);
  const ProgramResult j = run_program({CUSWAP_CLI, "inspect", path, "--json"}, cli);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  for (const char* key :
       {"evictions", "prefetches", "prefetches_on_demand", "bytes_to_host", "bytes_to_device"})
    EXPECT_EQ(json_number(j.out, key), static_cast<long long>(counter(t, key))) << key;
  EXPECT_EQ(json_number(j.out, "kernel_time_ns"), static_cast<long long>(s.kernel_time_ns));
  // In text, each of the allocator's counters says what it counts.
  const ProgramResult text = run_program({CUSWAP_CLI, "inspect", path}, cli);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  const std::regex described(
      fmt::format("\n  evictions +{} +buffers copied to host memory\n", counter(t, "evictions")));
  EXPECT_TRUE(std::regex_search(text.out, described)) << text.out;

  const ProgramResult sim =
      run_program({CUSWAP_CLI, "simulate", path, "--budget", "100%", "--json"}, cli);
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  const long long infinite_ns = json_number(sim.out, "infinite_memory_ns");
  const auto kernels_ns = static_cast<long long>(kKernels * kKernelNs);
  EXPECT_GE(infinite_ns, kernels_ns * 95 / 100) << sim.out;
  EXPECT_LE(infinite_ns, kernels_ns * 105 / 100) << sim.out;

  // The report draws what cuswap moved: the program marks no iterations, so
  // its window is the whole recording and its counts are the recorder's.
  const std::string page = dir.path("run.html");
  const ProgramResult rep =
      run_program({CUSWAP_CLI, "report", path, "--budget", "64MiB", "-o", page}, cli);
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  const std::string html = read_text(page);
  EXPECT_NE(html.find("<section id=\"recorded\">"), std::string::npos);
  const std::string moved = fmt::format("cuswap evicted {} buffers", counter(t, "evictions"));
  EXPECT_NE(html.find(moved), std::string::npos) << moved;
  const std::string back = fmt::format("brought {} back", counter(t, "prefetches"));
  EXPECT_NE(html.find(back), std::string::npos) << back;
}

INSTANTIATE_TEST_SUITE_P(Modes, RecordedSwap, ::testing::Values("true", "false"));

TEST(RecordedSwap, WithoutTimingsTheOfflineCommandsSaySoAndExit2) {
  TempDir dir;
  const std::string path = dir.path("untimed.cst");
  const ProgramResult r = run_program(
      {PROG_OVERSUBSCRIBE},
      environment("budget:64MiB,record_timing:false,record:" + path, "memory:64MiB", true));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const Env cli = environment("", "", false);
  for (const char* command : {"simulate", "compare", "plan", "report"}) {
    std::vector<std::string> argv = {CUSWAP_CLI, command, path, "--budget", "50%"};
    if (std::string_view(command) == "report") argv.insert(argv.end(), {"-o", dir.path("out")});
    const ProgramResult c = run_program(argv, cli);
    EXPECT_EQ(c.exit_code, 2) << command << ": " << c.out << c.err;
    EXPECT_NE(c.err.find("no op durations"), std::string::npos) << command << ": " << c.err;
    EXPECT_EQ(c.err.find('\n'), c.err.size() - 1) << "one line: " << c.err;
    EXPECT_EQ(c.out.find("0.0%"), std::string::npos) << c.out;
  }
}

// `cuswap run` sets LD_PRELOAD and CUSWAP_CONF itself: the program is the
// same one that fails without cuswap above.
TEST(CuswapRun, AnUnmodifiedProgramOversubscribesAndCompletes) {
  Env env = environment("", "memory:64MiB", false);
  env["LD_PRELOAD"] = with_sanitizer("");  // and cuswap run keeps it first
  const ProgramResult r = run_program(
      {CUSWAP_CLI, "run", "--budget", "64MiB", "--stats", "--", PROG_OVERSUBSCRIBE}, env);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  expect_lines(r, {"allocated 8 of 8", "wrong bytes read back 0", "wrong bytes seen by kernels 0",
                   "failures 0", "hazards 0"});
  expect_evictions(r);
}

TEST(CuswapRun, TheCommandsExitStatusComesBack) {
  Env env = environment("", "", false);
  env["LD_PRELOAD"] = with_sanitizer("");
  EXPECT_EQ(run_program({CUSWAP_CLI, "run", "--", "/bin/sh", "-c", "exit 7"}, env).exit_code, 7);
  // The words after the command's own `--` are the command's.
  const ProgramResult echo = run_program(
      {CUSWAP_CLI, "run", "/bin/sh", "-c", "echo \"$1 $2\"", "sh", "--", "--budget"}, env);
  EXPECT_EQ(echo.exit_code, 0) << echo.err;
  EXPECT_EQ(echo.out, "-- --budget\n");
  const ProgramResult missing = run_program({CUSWAP_CLI, "run", "--", "/nonexistent/prog"}, env);
  EXPECT_EQ(missing.exit_code, 127);
  EXPECT_EQ(missing.err,
            "cuswap: error: run: cannot run /nonexistent/prog: No such file or "
            "directory\n");
}

TEST(CuswapRun, DryRunPrintsTheEnvironment) {
  TempDir dir;
  Env env = environment("stats:false", "", false);
  env["LD_PRELOAD"] = "/opt/other.so";
  env["TF_GPU_ALLOCATOR"] = "bfc";  // the user's switch stays
  env["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "";
  env["XLA_PYTHON_CLIENT_ALLOCATOR"] = "";
  const ProgramResult r =
      run_program({"/bin/sh", "-c",
                   std::string("cd '") + dir.path("") + "' && exec '" + CUSWAP_CLI +
                       "' run --dry-run --budget 1GiB --record run.cst --stats --conf "
                       "online:false -- prog --arg"},
                  env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string record = std::filesystem::weakly_canonical(dir.path("run.cst")).string();
  EXPECT_EQ(r.out, std::string("LD_PRELOAD=") + CUSWAP_SHIM +
                       ":/opt/other.so\n"
                       "CUSWAP_CONF=stats:false,budget:1GiB,record:" +
                       record +
                       ",stats:true,online:false\n"
                       "PYTORCH_NO_CUDA_MEMORY_CACHING=1\n"
                       "XLA_PYTHON_CLIENT_ALLOCATOR=platform\n");
  EXPECT_FALSE(std::filesystem::exists(dir.path("run.cst")));
  // CUSWAP_LIBRARY names the shim; one already preloaded is not added again.
  const std::string custom = dir.path("libcuswap.so");
  std::filesystem::copy_file(CUSWAP_SHIM, custom);
  env["CUSWAP_LIBRARY"] = custom;
  env["LD_PRELOAD"] = with_sanitizer(custom);
  const ProgramResult again =
      run_program({CUSWAP_CLI, "run", "--dry-run", "--torch-pluggable", "--", "prog"}, env);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, "XLA_PYTHON_CLIENT_ALLOCATOR=platform\n");
  env["CUSWAP_LIBRARY"] = dir.path("none.so");
  const ProgramResult none = run_program({CUSWAP_CLI, "run", "--", "prog"}, env);
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_EQ(none.err,
            "cuswap: error: run: CUSWAP_LIBRARY=" + dir.path("none.so") + ": no such file\n");
}

// PyTorch's pluggable allocator ABI, called as PyTorch calls it, from a
// library it loads itself (tests/hooks/programs/torch_abi.cpp).
TEST(TorchAllocatorAbi, BlocksSwapUnderABudgetAndEveryByteSurvives) {
  const ProgramResult r = run_program({PROG_TORCH_ABI, CUSWAP_SHIM},
                                      environment("budget:64MiB,stats:true", "memory:64MiB", true));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  expect_lines(
      r, {"zero bytes null", "round 0: allocated 8 of 8", "round 1: allocated 8 of 8",
          "wrong bytes read back 0", "wrong bytes seen by kernels 0", "failures 0", "hazards 0"});
  expect_evictions(r);
}

// Loaded by PyTorch but not preloaded, cuswap cannot see the kernels, so it
// swaps nothing: the blocks are the driver's, and one warning says why.
TEST(TorchAllocatorAbi, LoadedButNotPreloadedPassesThrough) {
  Env env = environment("budget:64MiB", "memory:64MiB", false);
  // Room for the shim's initial-exec TLS (its private jemalloc's) in a
  // library loaded after the start; preloaded, it needs none.
  env["GLIBC_TUNABLES"] = "glibc.rtld.optional_static_tls=65536";
  const ProgramResult r = run_program({PROG_TORCH_ABI, CUSWAP_SHIM}, env);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  expect_lines(
      r, {"round 0: block 1: null", "round 0: allocated 1 of 8", "round 1: allocated 1 of 8",
          "wrong bytes read back 0", "wrong bytes seen by kernels 0", "failures 0", "hazards 0"});
  const std::string warning =
      "preload it (LD_PRELOAD, or cuswap run); until then nothing is swapped";
  ASSERT_NE(r.err.find(warning), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(warning), r.err.rfind(warning)) << "said once: " << r.err;
}

// A pool's figures, as tests/hooks/programs/pools.cpp prints them.
struct PoolLine {
  long long reserved = -1, reserved_high = -1, used = -1, used_high = -1, simcuda = -1;
};

PoolLine pool_line(const std::string& out, const std::string& when) {
  std::smatch m;
  PoolLine p;
  if (std::regex_search(out, m,
                        std::regex(when + ": reserved ([0-9]+) high ([0-9]+), used ([0-9]+) "
                                          "high ([0-9]+), simcuda in use ([0-9]+)\n")))
    p = {std::stoll(m[1]), std::stoll(m[2]), std::stoll(m[3]), std::stoll(m[4]), std::stoll(m[5])};
  return p;
}

// The default pool as TensorFlow's cuda_malloc_async uses it, under a budget
// smaller than what is allocated from it: the pool answers cuswap's figures
// (Note [Memory pools under a budget]), and trimming gives its cache back.
TEST(MemoryPools, AnswerCuswapsFiguresAndTrimmingGivesTheCacheBack) {
  const ProgramResult r =
      run_program({PROG_POOLS}, environment("budget:64MiB", "memory:64MiB", true));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  expect_lines(r, {"release threshold 48", "allocated 8 of 8",
                   "a high-water mark set to 5: CUDA_ERROR_INVALID_VALUE",
                   "wrong bytes seen by kernels 0", "failures 0", "hazards 0"});
  // In MiB. All 256 are allocated, within 64 of device memory.
  const PoolLine allocated = pool_line(r.out, "allocated");
  EXPECT_EQ(allocated.used, 256) << r.out;
  EXPECT_EQ(allocated.used_high, 256) << r.out;
  EXPECT_GT(allocated.reserved, 32) << r.out;
  EXPECT_LE(allocated.reserved, 64) << r.out;
  EXPECT_EQ(allocated.reserved, allocated.simcuda) << r.out;
  // Freed: nothing used, the memory cached.
  const PoolLine freed = pool_line(r.out, "freed");
  EXPECT_EQ(freed.used, 0) << r.out;
  EXPECT_EQ(freed.used_high, 256) << r.out;
  EXPECT_EQ(freed.reserved, allocated.reserved) << r.out;
  const PoolLine reset = pool_line(r.out, "reset");
  EXPECT_EQ(reset.used_high, 0) << r.out;
  EXPECT_EQ(reset.reserved_high, reset.reserved) << r.out;
  // Trimmed to 0: only the slab of the 8-byte counter (a 2 MiB page) stays.
  const PoolLine trimmed = pool_line(r.out, "trimmed");
  EXPECT_LE(trimmed.reserved, 2) << r.out;
  EXPECT_EQ(trimmed.simcuda, trimmed.reserved) << r.out;
  EXPECT_EQ(trimmed.reserved_high, reset.reserved) << r.out;
}

// Copies past a buffer's end get the driver's error under a budget too
// (Note [Copies stay within their buffer]), and the application's own
// cuMemCreate gets the memory cuswap caches (tests/hooks/programs/limits.cpp).
TEST(Limits, OutOfBoundsCopiesFailAsOnTheDriverAndCachedMemoryGoesBack) {
  const ProgramResult driver = run_program({PROG_LIMITS}, environment("", "memory:64MiB", false));
  const ProgramResult cuswap =
      run_program({PROG_LIMITS}, environment("budget:64MiB", "memory:64MiB", true));
  ASSERT_EQ(driver.exit_code, 0) << driver.out << driver.err;
  ASSERT_EQ(cuswap.exit_code, 0) << cuswap.out << cuswap.err;
  for (const ProgramResult* r : {&driver, &cuswap})
    expect_lines(*r,
                 {"write 1 MiB: CUDA_SUCCESS", "write 1 MiB + 1: CUDA_ERROR_INVALID_VALUE",
                  "read 8 bytes at 1 MiB - 8: CUDA_SUCCESS",
                  "read 8 bytes at 1 MiB - 4: CUDA_ERROR_INVALID_VALUE",
                  "set 1 MiB + 1: CUDA_ERROR_INVALID_VALUE", "set 1 MiB / 4 words: CUDA_SUCCESS",
                  "allocate 48 MiB: CUDA_SUCCESS", "own cuMemCreate of 48 MiB: CUDA_SUCCESS",
                  "own cuMemRelease: CUDA_SUCCESS"},
                 r == &driver ? "the driver: " : "cuswap: ");
}

// At log:info the shim says once what it runs with, every key with its
// value as CUSWAP_CONF would read it back; below info it says nothing.
TEST(Configuration, TheEffectiveConfigurationIsLoggedOnceAtInfo) {
  const ProgramResult r =
      run_program({PROG_OVERSUBSCRIBE},
                  environment("budget:64MiB,log:info,online:false", "memory:64MiB", true));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string line =
      "info: configuration in effect: passthrough:false,budget:64MiB,swap_min:1MiB,online:false,"
      "log:info,stats:false\n";
  const size_t at = r.err.find(line);
  EXPECT_NE(at, std::string::npos) << r.err;
  EXPECT_EQ(at, r.err.rfind(line)) << "said once: " << r.err;
  const ProgramResult quiet =
      run_program({PROG_OVERSUBSCRIBE}, environment("budget:64MiB", "memory:64MiB", true));
  EXPECT_EQ(quiet.err.find("configuration in effect"), std::string::npos) << quiet.err;
}

// A budget below one page, or a swap_min above the budget, leaves the
// allocator useless: one warning says so.
TEST(Configuration, UselessSettingsSayWhyOnce) {
  for (const auto& [conf, warning] : std::vector<std::pair<std::string, std::string>>{
           {"budget:1MiB",
            "is below one page (2097152 bytes), the least cuswap maps: every "
            "allocation will be refused"},
           {"budget:64MiB,swap_min:1GiB", "swap_min of 1073741824 bytes is above the budget"}}) {
    // The program itself may fail: that is what the warning is for.
    const ProgramResult r =
        run_program({PROG_OVERSUBSCRIBE}, environment(conf, "memory:64MiB", true));
    const size_t at = r.err.find(warning);
    EXPECT_NE(at, std::string::npos) << conf << ": " << r.err;
    EXPECT_EQ(at, r.err.rfind(warning)) << conf << ": said once: " << r.err;
  }
  const ProgramResult fine =
      run_program({PROG_OVERSUBSCRIBE}, environment("budget:64MiB", "memory:64MiB", true));
  EXPECT_EQ(fine.err.find("below one page"), std::string::npos) << fine.err;
  EXPECT_EQ(fine.err.find("above the budget"), std::string::npos) << fine.err;
}

// Threads competing for a budget of three pages, well below the device's
// memory (tests/hooks/programs/contention.cpp): every launch fits by
// itself, so none may fail (Note [Waiting for room]), in both eviction modes.
class Contention : public ::testing::TestWithParam<const char*> {};

TEST_P(Contention, EightThreadsOnThreePagesNeverFail) {
  const ProgramResult r = run_program(
      {PROG_CONTENTION}, environment("budget:6MiB,swap_min:64KiB,stats:true",
                                     std::string("memory:64MiB,host_vmm:") + GetParam(), true));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  expect_lines(r, {"failed calls 0", "wrong bytes seen by kernels 0", "hazards 0"});
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("peak device MiB ([0-9]+)\n"))) << r.out;
  EXPECT_LE(std::stoi(m[1]), 6) << "the budget's peak, by simcuda";
  EXPECT_NE(r.err.find("stats: out_of_memory = 0\n"), std::string::npos) << r.err;
}

INSTANTIATE_TEST_SUITE_P(Modes, Contention, ::testing::Values("true", "false"));

}  // namespace
