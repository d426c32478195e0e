// Benchmarks for allocator/buffer_table.h: find() as the launch path calls
// it (hits, misses next to buffers, and words that are not pointers at all),
// on one thread and several, and insert+erase pairs on the allocation path,
// all against a table of 100,000 live buffers laid out the way a caching
// allocator lays them out: mostly small buffers packed into 2 MiB pages.
//
// BM_FindHit draws uniformly from all 100,000 buffers, so nearly every call
// misses the L1 and L2 caches on its leaf and run; BM_FindHitHotSet draws
// from 1,024 of them, closer to what one training step's launches touch.
//
// BM_LaunchFind and BM_LaunchReader look up one launch's parameter words,
// 16 of them (4 pointers into buffers, 12 sizes, indices and floats), with
// 16 find() calls or with one BufferTable::Reader (Note [Batched lookups]);
// time is per launch. Their argument picks the hits: 0 from the hot set,
// 1 from all buffers.
//
// Each benchmark runs kRepetitions times and reports mean, median and
// spread; the median is the number to compare against the budgets (find()
// <= 50 ns, insert+erase of a small buffer in the low hundreds of ns).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "allocator/buffer_table.h"

namespace {

using cuswap::BufferRef;
using cuswap::BufferTable;

constexpr uint64_t KiB = uint64_t{1} << 10;
constexpr uint64_t MiB = uint64_t{1} << 20;
constexpr uint64_t GiB = uint64_t{1} << 30;
constexpr size_t kLiveBuffers = 100000;
constexpr size_t kAddresses = size_t{1} << 16;  // per address list, a power of two
constexpr int kRepetitions = 9;
// The launch path mostly sees the same buffers again (one step's weights and
// activations): hits within kHotBuffers of them, spread over the table.
constexpr size_t kHotBuffers = 1024;
constexpr size_t kHotStride = kLiveBuffers / kHotBuffers;
// One launch's parameter words, and how many of them point into buffers.
constexpr size_t kLaunchWords = 16;
constexpr size_t kLaunchHits = 4;
constexpr size_t kLaunches = kAddresses / kLaunchWords;

// Where each class of buffer goes, as a driver's VA allocator might place
// them; the huge benchmark uses a region of its own.
constexpr uintptr_t kSmallRegion = 0x7f00'0000'0000;
constexpr uintptr_t kMediumRegion = 0x7e00'0000'0000;
constexpr uintptr_t kLargeRegion = 0x7c00'0000'0000;
constexpr uintptr_t kHugeRegion = 0x6000'0000'0000;

// A table of kLiveBuffers buffers: 88% small (512 B - 64 KiB, packed into
// 2 MiB pages, with occasional holes), 10% medium (64 KiB - 2 MiB), 2% large
// (2 - 256 MiB); and addresses to look up in it.
class Population {
 public:
  Population() {
    std::mt19937_64 rng(42);
    uintptr_t small_cursor = kSmallRegion;
    uintptr_t medium_cursor = kMediumRegion;
    uintptr_t large_cursor = kLargeRegion;
    std::vector<BufferRef> buffers;
    while (buffers.size() < kLiveBuffers) {
      const uint64_t kind = rng() % 100;
      uint64_t size_bytes = 0;
      uintptr_t* cursor = nullptr;
      if (kind < 88) {
        size_bytes = uint64_t{512} << (rng() % 8);  // 512 B .. 64 KiB
        cursor = &small_cursor;
        // A small buffer does not cross its 2 MiB page.
        const uintptr_t page_end = (*cursor | (2 * MiB - 1)) + 1;
        if (*cursor + size_bytes > page_end) *cursor = page_end;
      } else if (kind < 98) {
        size_bytes = (64 * KiB + rng() % (2 * MiB - 64 * KiB)) / 512 * 512;
        cursor = &medium_cursor;
      } else {
        size_bytes = (2 * MiB + rng() % (254 * MiB)) / (2 * MiB) * (2 * MiB);
        cursor = &large_cursor;
      }
      buffers.push_back(BufferRef{buffers.size() + 1, *cursor, size_bytes});
      *cursor += size_bytes;
      if (rng() % 8 == 0) {  // a hole, where a freed buffer was
        holes_.push_back(*cursor);
        *cursor += 512 * (1 + rng() % 8);
      }
    }
    for (const BufferRef& buffer : buffers) {
      if (!table_.insert(buffer)) std::abort();
    }
    for (size_t i = 0; i < kAddresses; ++i) {
      const BufferRef& buffer = buffers[rng() % buffers.size()];
      hits_.push_back(buffer.base + rng() % buffer.size_bytes);
      const BufferRef& hot = buffers[kHotStride * (rng() % kHotBuffers)];
      hot_hits_.push_back(hot.base + rng() % hot.size_bytes);
      gaps_.push_back(holes_[rng() % holes_.size()] + rng() % 512);
      // Kernel arguments that are not pointers: sizes, indices, floats.
      const uint64_t bits = std::bit_cast<uint32_t>(static_cast<float>(rng() % 10000) / 7.0F);
      words_.push_back(rng() % 2 ? rng() % 65536 : (bits << 32) | bits);
    }
    std::shuffle(holes_.begin(), holes_.end(), rng);
    // Launches: kLaunchHits hits among plain words, in a random order.
    for (size_t launch = 0; launch < kLaunches; ++launch) {
      for (size_t i = 0; i < kLaunchWords; ++i) {
        const size_t from = launch * kLaunchWords + i;
        hot_launches_.push_back(i < kLaunchHits ? hot_hits_[from] : words_[from]);
        launches_.push_back(i < kLaunchHits ? hits_[from] : words_[from]);
      }
      std::shuffle(hot_launches_.end() - kLaunchWords, hot_launches_.end(), rng);
      std::shuffle(launches_.end() - kLaunchWords, launches_.end(), rng);
    }
  }

  BufferTable& table() { return table_; }
  const std::vector<uintptr_t>& hits() const { return hits_; }
  const std::vector<uintptr_t>& hot_hits() const { return hot_hits_; }
  const std::vector<uintptr_t>& gaps() const { return gaps_; }
  const std::vector<uintptr_t>& words() const { return words_; }
  // kLaunches launches of kLaunchWords words, hits from the hot set or all.
  const std::vector<uintptr_t>& launches(bool hot) const { return hot ? hot_launches_ : launches_; }
  // Bases of free places of 512 bytes or more between live buffers.
  const std::vector<uintptr_t>& holes() const { return holes_; }

 private:
  BufferTable table_;
  std::vector<uintptr_t> hits_, hot_hits_, gaps_, words_, holes_, launches_, hot_launches_;
};

// Built once, before the first benchmark's threads start.
Population& population() {
  static Population* const instance = new Population();
  return *instance;
}

void find_loop(benchmark::State& state, const std::vector<uintptr_t>& addresses) {
  const BufferTable& table = population().table();
  // Threads start at different points of the list, so they do not walk the
  // same lines in step.
  size_t i = static_cast<size_t>(state.thread_index()) * 7919;
  for (auto _ : state) {
    benchmark::DoNotOptimize(table.find(addresses[i++ % kAddresses]));
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_FindHit(benchmark::State& state) {
  find_loop(state, population().hits());
}
void BM_FindHitHotSet(benchmark::State& state) {
  find_loop(state, population().hot_hits());
}
void BM_FindMissInHole(benchmark::State& state) {
  find_loop(state, population().gaps());
}
void BM_FindMissNotAPointer(benchmark::State& state) {
  find_loop(state, population().words());
}

// One launch's words per iteration, as the launch path would scan them.
void BM_LaunchFind(benchmark::State& state) {
  const BufferTable& table = population().table();
  const std::vector<uintptr_t>& words = population().launches(state.range(0) == 0);
  size_t launch = static_cast<size_t>(state.thread_index()) * 499;
  for (auto _ : state) {
    const uintptr_t* word = &words[(launch++ % kLaunches) * kLaunchWords];
    for (size_t i = 0; i < kLaunchWords; ++i)
      benchmark::DoNotOptimize(table.find(word[i]));
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(kLaunchWords));
}

void BM_LaunchReader(benchmark::State& state) {
  const BufferTable& table = population().table();
  const std::vector<uintptr_t>& words = population().launches(state.range(0) == 0);
  size_t launch = static_cast<size_t>(state.thread_index()) * 499;
  for (auto _ : state) {
    const uintptr_t* word = &words[(launch++ % kLaunches) * kLaunchWords];
    const BufferTable::Reader reader(table);
    for (size_t i = 0; i < kLaunchWords; ++i)
      benchmark::DoNotOptimize(reader.find(word[i]));
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(kLaunchWords));
}

// A small buffer into a hole and out again: the allocation path's pair.
void BM_InsertEraseSmall(benchmark::State& state) {
  BufferTable& table = population().table();
  const std::vector<uintptr_t>& holes = population().holes();
  size_t i = 0;
  for (auto _ : state) {
    const uintptr_t base = holes[i++ % holes.size()];
    if (!table.insert(BufferRef{~uint64_t{0}, base, 512})) state.SkipWithError("refused");
    benchmark::DoNotOptimize(table.erase(base));
  }
  state.SetItemsProcessed(state.iterations());
}

// The same, at one of 16 places: a caching allocator hands recently freed
// blocks out again, so their granules are in cache.
void BM_InsertEraseSmallReused(benchmark::State& state) {
  BufferTable& table = population().table();
  const std::vector<uintptr_t>& holes = population().holes();
  size_t i = 0;
  for (auto _ : state) {
    const uintptr_t base = holes[i++ % 16];
    if (!table.insert(BufferRef{~uint64_t{0}, base, 512})) state.SkipWithError("refused");
    benchmark::DoNotOptimize(table.erase(base));
  }
  state.SetItemsProcessed(state.iterations());
}

// A 1 GiB buffer at one of four bases, two of them not 2 MiB-aligned.
void BM_InsertEraseHuge(benchmark::State& state) {
  BufferTable& table = population().table();
  size_t i = 0;
  for (auto _ : state) {
    const uintptr_t base = kHugeRegion + (i % 4) * 2 * GiB + (i % 2) * 512;
    ++i;
    if (!table.insert(BufferRef{~uint64_t{0}, base, GiB})) state.SkipWithError("refused");
    benchmark::DoNotOptimize(table.erase(base));
  }
  state.SetItemsProcessed(state.iterations());
}

void single(benchmark::internal::Benchmark* benchmark) {
  benchmark->Repetitions(kRepetitions)->ReportAggregatesOnly(true)->MinTime(0.1);
}
// Real time: with N threads it is the wall time per find of all of them
// together, so perfect scaling divides it by N (CPU time stays per thread).
void threads(benchmark::internal::Benchmark* benchmark) {
  benchmark->Threads(1)->Threads(2)->Threads(4)->Threads(8)->UseRealTime();
  single(benchmark);
}

BENCHMARK(BM_FindHit)->Apply(threads);
BENCHMARK(BM_FindHitHotSet)->Apply(threads);
BENCHMARK(BM_FindMissInHole)->Apply(threads);
BENCHMARK(BM_FindMissNotAPointer)->Apply(threads);
BENCHMARK(BM_LaunchFind)->Arg(0)->Arg(1)->Threads(1)->Threads(2)->UseRealTime()->Apply(single);
BENCHMARK(BM_LaunchReader)->Arg(0)->Arg(1)->Threads(1)->Threads(2)->UseRealTime()->Apply(single);
BENCHMARK(BM_InsertEraseSmall)->Apply(single);
BENCHMARK(BM_InsertEraseSmallReused)->Apply(single);
BENCHMARK(BM_InsertEraseHuge)->Apply(single);

}  // namespace

int main(int argc, char** argv) {
  population();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
