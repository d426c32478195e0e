// cuGetProcAddress: base names, ABI versions, per-thread flavours; error
// names. The lookup table is checked against the toolkit's cudaTypedefs.h.
#include <dlfcn.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "tests/simcuda/test/fixture.h"

namespace {

void* symbol(const char* name) {
  void* p = dlsym(RTLD_DEFAULT, name);
  EXPECT_NE(p, nullptr) << name;
  return p;
}

void* lookup(const char* name, int version, cuuint64_t flags = 0,
             CUdriverProcAddressQueryResult* status = nullptr, CUresult* result = nullptr) {
  void* fn = reinterpret_cast<void*>(0x1);
  CUdriverProcAddressQueryResult local{};
  CUresult r = cuGetProcAddress(name, &fn, version, flags, status ? status : &local);
  if (result) *result = r;
  return fn;
}

class ProcAddress : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_CU(simcuda_reset("")); }
};

TEST_F(ProcAddress, AnswersBeforeInit) {
  CUresult r = CUDA_ERROR_UNKNOWN;
  EXPECT_EQ(lookup("cuInit", 13000, 0, nullptr, &r), symbol("cuInit"));
  EXPECT_CU(r);
}

TEST_F(ProcAddress, PicksTheAbiVersionForTheRequestedCudaVersion) {
  EXPECT_EQ(lookup("cuMemAlloc", 13000), symbol("cuMemAlloc_v2"));
  EXPECT_EQ(lookup("cuMemAlloc", 3020), symbol("cuMemAlloc_v2"));
  EXPECT_EQ(lookup("cuCtxCreate", 3020), symbol("cuCtxCreate_v2"));
  EXPECT_EQ(lookup("cuCtxCreate", 11040), symbol("cuCtxCreate_v3"));
  EXPECT_EQ(lookup("cuCtxCreate", 12040), symbol("cuCtxCreate_v3"));
  EXPECT_EQ(lookup("cuCtxCreate", 12050), symbol("cuCtxCreate_v4"));
  EXPECT_EQ(lookup("cuEventElapsedTime", 12000), symbol("cuEventElapsedTime"));
  EXPECT_EQ(lookup("cuEventElapsedTime", 12080), symbol("cuEventElapsedTime_v2"));
  EXPECT_EQ(lookup("cuGetProcAddress", 12000), symbol("cuGetProcAddress_v2"));
  EXPECT_EQ(lookup("cuGetProcAddress", 11030), symbol("cuGetProcAddress"));
}

TEST_F(ProcAddress, PerThreadFlavours) {
  const auto legacy = CU_GET_PROC_ADDRESS_LEGACY_STREAM;
  const auto per_thread = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  EXPECT_EQ(lookup("cuLaunchKernel", 13000, 0), symbol("cuLaunchKernel"));
  EXPECT_EQ(lookup("cuLaunchKernel", 13000, legacy), symbol("cuLaunchKernel"));
  EXPECT_EQ(lookup("cuLaunchKernel", 13000, per_thread), symbol("cuLaunchKernel_ptsz"));
  EXPECT_EQ(lookup("cuLaunchKernel", 6000, per_thread), symbol("cuLaunchKernel"))
      << "no per-thread flavour yet at 6.0";
  EXPECT_EQ(lookup("cuMemcpyHtoD", 13000, per_thread), symbol("cuMemcpyHtoD_v2_ptds"));
  EXPECT_EQ(lookup("cuMemcpyHtoDAsync", 13000, per_thread), symbol("cuMemcpyHtoDAsync_v2_ptsz"));
  EXPECT_EQ(lookup("cuMemAllocAsync", 13000, per_thread), symbol("cuMemAllocAsync_ptsz"));
  EXPECT_EQ(lookup("cuMemAlloc", 13000, per_thread), symbol("cuMemAlloc_v2"))
      << "functions without a stream have one flavour";
  EXPECT_EQ(lookup("cuStreamGetCtx", 12000, per_thread), symbol("cuStreamGetCtx_ptsz"));
}

TEST_F(ProcAddress, NotFound) {
  CUdriverProcAddressQueryResult status{};
  CUresult r = CUDA_SUCCESS;
  EXPECT_EQ(lookup("cuNoSuchThing", 13000, 0, &status, &r), nullptr);
  EXPECT_EQ(r, CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  EXPECT_EQ(lookup("cuMemAllocAsync", 11000, 0, &status, &r), nullptr);
  EXPECT_EQ(r, CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  // An ABI simcuda does not implement is not answered with another ABI.
  EXPECT_EQ(lookup("cuMemAlloc", 3010, 0, &status, &r), nullptr);
  EXPECT_EQ(r, CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(lookup("cuCtxSynchronize", 13000, 0, &status, &r), nullptr);
  EXPECT_EQ(r, CUDA_ERROR_NOT_FOUND);
  void* fn = nullptr;
  EXPECT_EQ(cuGetProcAddress("cuInit", &fn, 13000, 4, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGetProcAddress(nullptr, &fn, 13000, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(ProcAddress, LegacyEntryPointWithoutStatus) {
  using Legacy = CUresult (*)(const char*, void**, int, cuuint64_t);
  auto legacy = reinterpret_cast<Legacy>(symbol("cuGetProcAddress"));
  void* fn = nullptr;
  ASSERT_CU(legacy("cuMemFree", &fn, 13000, 0));
  EXPECT_EQ(fn, symbol("cuMemFree_v2"));
}

TEST_F(ProcAddress, ExportTablesAreNotSupported) {
  const void* table = reinterpret_cast<const void*>(0x1);
  CUuuid id{};
  EXPECT_EQ(cuGetExportTable(&table, &id), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(table, nullptr);
}

TEST_F(ProcAddress, ErrorNamesAndStrings) {
  const char* text = nullptr;
  ASSERT_CU(cuGetErrorName(CUDA_ERROR_ILLEGAL_ADDRESS, &text));
  EXPECT_STREQ(text, "CUDA_ERROR_ILLEGAL_ADDRESS");
  ASSERT_CU(cuGetErrorName(CUDA_SUCCESS, &text));
  EXPECT_STREQ(text, "CUDA_SUCCESS");
  ASSERT_CU(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &text));
  EXPECT_STREQ(text, "out of memory");
  ASSERT_CU(cuGetErrorString(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, &text));
  EXPECT_STREQ(text, "peer access unsupported");
  EXPECT_EQ(cuGetErrorName(static_cast<CUresult>(123456), &text), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(text, nullptr);
}

// Every ABI version cudaTypedefs.h lists for a function simcuda implements
// is in the table, and nothing else is.
TEST_F(ProcAddress, TableMatchesTheToolkitTypedefs) {
  std::ifstream typedefs(CUDA_TYPEDEFS_H);
  ASSERT_TRUE(typedefs) << CUDA_TYPEDEFS_H;
  std::map<std::string, std::set<std::tuple<int, int>>> header;
  std::regex pfn(R"(PFN_(cu[A-Za-z0-9]+)_v([0-9]+)(_ptsz|_ptds)?\))");
  for (std::string line; std::getline(typedefs, line);)
    for (std::sregex_iterator it(line.begin(), line.end(), pfn), end; it != end; ++it)
      header[(*it)[1]].insert({std::stoi((*it)[2]), (*it)[3].matched ? 1 : 0});

  std::vector<const char*> bases(512);
  std::vector<int> versions(512), per_thread(512), implemented(512);
  size_t n = simcuda_proc_table(bases.data(), versions.data(), per_thread.data(),
                                implemented.data(), bases.size());
  ASSERT_LE(n, bases.size());
  std::map<std::string, std::set<std::tuple<int, int>>> table;
  size_t implemented_count = 0;
  for (size_t i = 0; i < n; ++i) {
    table[bases[i]].insert({versions[i], per_thread[i]});
    implemented_count += implemented[i];
  }
  EXPECT_GT(implemented_count, 130u);
  for (const auto& [base, entries] : table) {
    ASSERT_TRUE(header.count(base)) << base << " is not a driver function";
    EXPECT_EQ(entries, header[base]) << base;
  }
}

}  // namespace
