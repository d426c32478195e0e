// Writes the fuzz corpus: small real traces made by the Recorder, so the
// corpus follows the format as it changes. Usage: cst_corpus DIR
#include <cstdio>
#include <filesystem>
#include <thread>

#include "tests/tracer/support.h"

namespace {

using namespace cuswap::trace;

bool write(const std::string& path, int threads, int steps, size_t buffer_bytes) {
  RecorderOptions o = test::options_for(path);
  o.buffer_bytes = buffer_bytes;
  std::string error;
  auto r = Recorder::open(o, error);
  if (!r) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return false;
  }
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int i = 0; i < steps; ++i) {
        const uint64_t id = uint64_t(t * 1000 + i + 1);
        r->record_alloc(id, id << 16, id * 512, uint64_t(t), t - 1, AllocKind(i % 5));
        const uint64_t ids[] = {id, id - 1, 0, id + 300};
        const uint64_t launch =
            r->record_launch(r->kernel_id("kernel " + std::to_string(i % 3)), 0, 0,
                             std::span(ids).first(size_t(i % 5)), uint8_t(i % 8));
        if (i % 3 == 0) r->record_eviction(id, id * 512, EvictReason(i % 2), 100, 900);
        if (i % 3 == 1) {
          r->record_wait(id, uint64_t(t));
          const uint64_t prefetch =
              r->record_prefetch(id, id * 512, PrefetchReason(i % 3), uint64_t(t) + 7);
          r->record_timing(prefetch, 1000 + uint64_t(i), 5000);
        }
        r->record_timing(launch, 2000 + uint64_t(i), 777);
        r->record_copy(id, 0, id, CopyDirection(i % 6), 0, i % 4 == 0);
        r->record_vmm(VmmOp(i % 4), id, id, id);
        if (i % 2) r->record_free(id, 0, FreeKind(i % 2));
        if (i % 4 == 0) r->record_iteration();
        if (i % 4 == 1)
          r->record_iteration_stats(
              {uint64_t(i), id, 1, 0, id * 3, 2, id << 20, id << 21, i % 8 == 1});
      }
    });
  for (auto& th : pool)
    th.join();
  const Counter counters[] = {{"counter", 7}};
  r->close(counters);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir(argv[1]);
  std::filesystem::create_directories(dir);
  const bool ok = write((dir / "empty.cst").string(), 0, 0, 256) &&
                  write((dir / "one-thread.cst").string(), 1, 6, 256) &&
                  write((dir / "two-threads.cst").string(), 2, 3, 256);
  if (ok) cuswap::trace::test::write_fixture((dir / "fixture.cst").string());
  // Files of older format versions, kept byte for byte.
  std::error_code ec;
  for (const char* old : {"v1-fixture.cst", "v1-two-threads.cst"})
    std::filesystem::copy_file(std::filesystem::path(CST_DATA_DIR) / old, dir / old,
                               std::filesystem::copy_options::overwrite_existing, ec);
  return ok && !ec ? 0 : 1;
}
