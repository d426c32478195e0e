// The swapping allocator end to end: an unmodified program that needs more
// device memory than simcuda has, run with LD_PRELOAD=libcuswap.so and a
// budget, in both eviction modes.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tests/support/process.h"

namespace {

using cuswap::testing::ProgramResult;
using cuswap::testing::run_program;
using Env = std::map<std::string, std::string>;

Env environment(const std::string& cuswap_conf, const std::string& simcuda_conf, bool shim) {
  Env env = {{"CUSWAP_CONF", cuswap_conf},
             {"SIMCUDA_CONF", simcuda_conf},
             {"LD_LIBRARY_PATH", SIMCUDA_DIR},
             {"LD_PRELOAD", ""}};
  if (shim)
    env["LD_PRELOAD"] = std::string(ASAN_RUNTIME).empty()
                            ? std::string(CUSWAP_SHIM)
                            : std::string(ASAN_RUNTIME) + ":" + CUSWAP_SHIM;
  return env;
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

TEST_P(SwapModes, EveryBufferFitsAndEveryByteSurvives) {
  const std::string simcuda_conf = std::string("memory:64MiB,host_vmm:") + GetParam();
  ProgramResult r =
      run_program({PROG_OVERSUBSCRIBE}, environment("budget:64MiB,stats:true", simcuda_conf, true));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* line : {"total 64 MiB", "allocated 8 of 8", "wrong bytes read back 0",
                           "wrong bytes seen by kernels 0", "failures 0", "hazards 0"})
    EXPECT_NE(r.out.find(std::string(line) + "\n"), std::string::npos)
        << "missing '" << line << "' in:\n"
        << r.out << r.err;
  EXPECT_EQ(r.out.find("peak device MiB 6"), r.out.find("peak device MiB 64\n")) << r.out;
  EXPECT_NE(r.err.find("stats: evictions = "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("stats: evictions = 0\n"), std::string::npos) << r.err;
}

INSTANTIATE_TEST_SUITE_P(Modes, SwapModes, ::testing::Values("true", "false"));

}  // namespace
