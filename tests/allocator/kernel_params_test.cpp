// Tests for scan_launch (allocator/kernel_params.h, Note [Scanning launch
// parameters]) without a driver: a KernelInfo written by hand, a buffer
// table of made-up addresses (nothing is dereferenced but the parameters),
// and pointers in every parameter position, inside by-value structs, and
// in an `extra` buffer, including the last word of each.
#include "allocator/kernel_params.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

namespace cuswap {
namespace {

constexpr uintptr_t kBase = 0x7f00'0000'0000;
constexpr uint64_t kBufferBytes = uint64_t{2} << 20;

// Buffer i: id i + 1 at kBase + i * 4 MiB, 2 MiB long.
uintptr_t base_of(size_t i) {
  return kBase + i * 2 * kBufferBytes;
}

class ScanLaunch : public ::testing::Test {
 protected:
  void SetUp() override {
    for (size_t i = 0; i < 300; ++i)
      ASSERT_TRUE(table_.insert({i + 1, base_of(i), kBufferBytes}));
  }

  // A kernel whose parameters cuFuncGetParamInfo would give as `params`
  // (KernelInfo holds an atomic: it is filled in place, not returned).
  static void layout(KernelInfo& k, std::vector<KernelInfo::Param> params) {
    k.layout_known = true;
    for (const KernelInfo::Param& p : params)
      k.args_bytes = std::max<size_t>(k.args_bytes, p.offset + p.size);
    k.params = std::move(params);
  }

  std::vector<uint64_t> scan(const KernelInfo& k, void** params, void** extra,
                             bool* unknown = nullptr) const {
    TouchedBuffers out;
    scan_launch(k, params, extra, table_, out);
    if (unknown) *unknown = out.unknown;
    for (size_t i = 0; i < out.count; ++i)
      EXPECT_EQ(out.bases[i], base_of(out.ids[i] - 1));
    return {out.ids, out.ids + out.count};
  }

  BufferTable table_;
};

TEST_F(ScanLaunch, APointerInAnyPositionIsFound) {
  constexpr size_t kParams = 7;
  std::vector<KernelInfo::Param> params;
  for (uint32_t i = 0; i < kParams; ++i)
    params.push_back({i * 8, 8});
  KernelInfo k;
  layout(k, params);
  for (size_t p = 0; p < kParams; ++p) {
    uint64_t words[kParams] = {};
    for (size_t i = 0; i < kParams; ++i)
      words[i] = 1000 + i;           // small integers, in no buffer
    words[p] = base_of(p) + 64 * p;  // inside buffer p, not at its start
    void* argv[kParams];
    for (size_t i = 0; i < kParams; ++i)
      argv[i] = &words[i];
    bool unknown = true;
    EXPECT_EQ(scan(k, argv, nullptr, &unknown), std::vector<uint64_t>{p + 1}) << "position " << p;
    EXPECT_FALSE(unknown);
  }
}

TEST_F(ScanLaunch, EveryPointerOfALaunchIsFoundOnceInOrder) {
  KernelInfo k;
  layout(k, {{0, 8}, {8, 8}, {16, 8}, {24, 8}});
  uint64_t a = base_of(3), b = base_of(1) + kBufferBytes - 1, c = base_of(3) + 8, d = base_of(0);
  void* argv[] = {&a, &b, &c, &d};
  EXPECT_EQ(scan(k, argv, nullptr), (std::vector<uint64_t>{4, 2, 1}));
}

TEST_F(ScanLaunch, TheEdgesOfABufferAreExact) {
  KernelInfo k;
  layout(k, {{0, 8}, {8, 8}, {16, 8}});
  uint64_t past = base_of(5) + kBufferBytes;  // one past the end: the gap after it
  uint64_t before = base_of(5) - 1;
  uint64_t zero = 0;
  void* argv[] = {&past, &before, &zero};
  EXPECT_TRUE(scan(k, argv, nullptr).empty());
}

TEST_F(ScanLaunch, PointersInsideAByValueStructAreFound) {
  // struct { float* a; int n; float* b; double x; float* c; } by value, 40
  // bytes, after an int: offsets 0 (int), 8 (the struct).
  struct Args {
    uint64_t a;
    int32_t n, pad;
    uint64_t b;
    double x;
    uint64_t c;
  };
  static_assert(sizeof(Args) == 40);
  KernelInfo k;
  layout(k, {{0, 4}, {8, sizeof(Args)}});
  int32_t count = 7;
  Args s{base_of(10), 3, 0, base_of(11) + 100, 1.5, base_of(12) + kBufferBytes - 8};
  void* argv[] = {&count, &s};
  EXPECT_EQ(scan(k, argv, nullptr), (std::vector<uint64_t>{11, 12, 13}));
  // Only the last word holds a pointer.
  Args last{0, 0, 0, 0, 0.0, base_of(20)};
  void* argv_last[] = {&count, &last};
  EXPECT_EQ(scan(k, argv_last, nullptr), (std::vector<uint64_t>{21}));
}

TEST_F(ScanLaunch, ParametersNarrowerThanAWordAreNotPointers) {
  KernelInfo k;
  layout(k, {{0, 4}, {4, 4}, {8, 8}});
  const uint64_t p = base_of(2);
  uint32_t low = static_cast<uint32_t>(p), high = static_cast<uint32_t>(p >> 32);
  uint64_t q = base_of(4);
  void* argv[] = {&low, &high, &q};
  EXPECT_EQ(scan(k, argv, nullptr), (std::vector<uint64_t>{5}));
}

TEST_F(ScanLaunch, ANullParameterIsSkipped) {
  KernelInfo k;
  layout(k, {{0, 8}, {8, 8}});
  uint64_t q = base_of(6);
  void* argv[] = {nullptr, &q};
  EXPECT_EQ(scan(k, argv, nullptr), (std::vector<uint64_t>{7}));
}

TEST_F(ScanLaunch, AnExtraBufferIsScannedUpToItsSize) {
  const KernelInfo unknown_layout;  // extra needs no layout
  for (size_t p = 0; p < 6; ++p) {
    uint64_t packed[6] = {1, 2, 3, 4, 5, 6};
    packed[p] = base_of(30 + p) + 16;
    size_t size = sizeof packed;
    void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                     CU_LAUNCH_PARAM_END};
    bool unknown = true;
    EXPECT_EQ(scan(unknown_layout, nullptr, extra, &unknown), std::vector<uint64_t>{31 + p})
        << "word " << p;
    EXPECT_FALSE(unknown);
    // The size bounds the scan: the same bytes, one word shorter.
    size = sizeof packed - 8;
    EXPECT_EQ(scan(unknown_layout, nullptr, extra).size(), p < 5 ? 1u : 0u) << "word " << p;
  }
}

TEST_F(ScanLaunch, AnExtraListWithoutABufferIsUnknown) {
  size_t size = 16;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  bool unknown = false;
  EXPECT_TRUE(scan(KernelInfo{}, nullptr, extra, &unknown).empty());
  EXPECT_TRUE(unknown);
}

TEST_F(ScanLaunch, AnUnknownLayoutIsUnknownAndAnEmptyOneIsNot) {
  uint64_t q = base_of(1);
  void* argv[] = {&q};
  bool unknown = false;
  EXPECT_TRUE(scan(KernelInfo{}, argv, nullptr, &unknown).empty());
  EXPECT_TRUE(unknown);
  // No arguments: fine for a kernel without parameters, unknown otherwise.
  KernelInfo none;
  layout(none, {});
  EXPECT_TRUE(scan(none, nullptr, nullptr, &unknown).empty());
  EXPECT_FALSE(unknown);
  KernelInfo one;
  layout(one, {{0, 8}});
  EXPECT_TRUE(scan(one, nullptr, nullptr, &unknown).empty());
  EXPECT_TRUE(unknown);
}

TEST_F(ScanLaunch, MoreBuffersThanItCanHoldIsUnknown) {
  constexpr size_t kWords = TouchedBuffers::kCapacity + 1;
  std::vector<uint64_t> packed(kWords);
  for (size_t i = 0; i < kWords; ++i)
    packed[i] = base_of(i);
  size_t size = packed.size() * sizeof(uint64_t);
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, packed.data(), CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &size, CU_LAUNCH_PARAM_END};
  bool unknown = false;
  EXPECT_EQ(scan(KernelInfo{}, nullptr, extra, &unknown).size(), TouchedBuffers::kCapacity);
  EXPECT_TRUE(unknown);
  size -= sizeof(uint64_t);
  EXPECT_EQ(scan(KernelInfo{}, nullptr, extra, &unknown).size(), TouchedBuffers::kCapacity);
  EXPECT_FALSE(unknown);
}

// KernelCache asks the driver once per function: its name, its parameters'
// layout, and whether it is an NCCL kernel (whose launches mark what they
// name escaped), by the name anywhere in the mangled symbol.
CUresult CUDAAPI fake_name(const char** name, CUfunction f) {
  *name = reinterpret_cast<uintptr_t>(f) == 1 ? "_Z25ncclDevKernel_AllReduce_Sum_f32P11ncclDevComm"
                                              : "_Z6matmulPfS_S_";
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_param_info(CUfunction, size_t index, size_t* offset, size_t* size) {
  if (index >= 2) return CUDA_ERROR_INVALID_VALUE;
  *offset = 8 * index;
  *size = 8;
  return CUDA_SUCCESS;
}

TEST(KernelCache, AsksOnceForNameLayoutAndWhetherItIsNccl) {
  Driver driver;
  driver.cuFuncGetName = fake_name;
  driver.cuFuncGetParamInfo = fake_param_info;
  KernelCache cache(driver);
  const auto nccl = reinterpret_cast<CUfunction>(1);
  const auto matmul = reinterpret_cast<CUfunction>(2);
  const KernelInfo& a = cache.get(nccl);
  EXPECT_TRUE(a.nccl);
  EXPECT_TRUE(a.layout_known);
  EXPECT_EQ(a.params.size(), 2u);
  EXPECT_EQ(a.args_bytes, 16u);
  const KernelInfo& b = cache.get(matmul);
  EXPECT_FALSE(b.nccl);
  EXPECT_EQ(b.name, "_Z6matmulPfS_S_");
  EXPECT_EQ(&cache.get(nccl), &a);  // cached, not asked again
}

}  // namespace
}  // namespace cuswap
