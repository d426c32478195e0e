// Fuzz target for the .cst reader. Built as a libFuzzer binary with clang
// (cst_reader_fuzz), and linked with fuzz_replay_main.cpp into a plain
// program that ctest runs over a generated corpus and its mutations with
// any compiler (cst_reader_fuzz_replay).
//
// Each input is parsed four ways: with and without checksums (without, the
// fuzzer gets past them into the payload decoders) and strict or accepting
// an unfinished recording. The reader must never crash, an error must be one
// line that starts with the file name and names an offset, and whatever
// parses must also summarise.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>

#include "tracer/cst_reader.h"
#include "tracer/trace_summary.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cuswap::trace;
  const std::span<const uint8_t> bytes(data, size);
  for (const bool verify : {true, false}) {
    for (const bool partial : {false, true}) {
      ReadOptions options;
      options.verify_checksums = verify;
      options.allow_incomplete = partial;
      CstTrace trace;
      std::string error;
      if (parse_cst(bytes, "fuzz.cst", options, trace, error)) {
        const TraceSummary summary = summarize(trace, 5);
        if (summary.events != trace.events.size()) std::abort();
        for (size_t i = 1; i < trace.events.size(); ++i)
          if (trace.events[i].seq <= trace.events[i - 1].seq) std::abort();
      } else if (error.rfind("fuzz.cst: offset ", 0) != 0 ||
                 error.find('\n') != std::string::npos) {
        std::abort();
      }
    }
  }
  return 0;
}
