// Helpers for the tracer and CLI tests: whole-file I/O and the fixture trace — a real file written
// by the Recorder, whose contents the tests know exactly (Note [The fixture]).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tests/support/process.h"
#include "tracer/cst_reader.h"
#include "tracer/recorder.h"

namespace cuswap::trace::test {

using cuswap::testing::TempDir;

std::vector<uint8_t> read_bytes(const std::string& path);
void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes);

RecorderOptions options_for(const std::string& path);

// Reads a file that must be valid; fails the test otherwise.
CstTrace read_ok(const std::string& path, ReadOptions options = {});

// One line describing an event, for failure messages.
std::string describe(const Event& e);

// Note [The fixture]: one thread, three iterations of a tiny training step.
// Weights (buffer 1, 64 MiB) and input (2, 8 MiB) live across iterations;
// each iteration allocates an activation (16 MiB) and an output (4 MiB),
// launches matmul, relu and softmax, copies the output back and frees both,
// except that the last iteration's output stays live. Then a memset and two
// VMM calls, and the input is freed. Small buffers force several chunks.
namespace fixture {
inline constexpr uint64_t kMiB = 1 << 20;
inline constexpr uint64_t kBuffers = 8;
inline constexpr uint64_t kPeakBytes = (64 + 8 + 16 + 4) * kMiB;
inline constexpr uint64_t kLiveAtEnd = 2;  // the weights and the last output
inline constexpr uint64_t kLiveBytesAtEnd = (64 + 4) * kMiB;
inline constexpr uint64_t kLaunches = 9;
inline constexpr uint64_t kIterations = 3;
inline constexpr uint64_t kEvents = 2 + 1 + (9 + 9 + 8) + 1 + 2 + 1;
inline constexpr uint64_t kHostToDeviceBytes = 8 * kMiB;
inline constexpr uint64_t kDeviceToHostBytes = 3 * 4 * kMiB;
inline constexpr uint64_t kSetBytes = kMiB;
}  // namespace fixture

void write_fixture(const std::string& path);

}  // namespace cuswap::trace::test
