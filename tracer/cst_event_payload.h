// One event's payload, decoded by its type. The reader (cst_reader.cpp)
// reads each event's envelope (type, sequence delta, time delta) and keeps
// the count of events by type; this decodes what follows the envelope, one
// function per event type, as docs/trace-format.md lays them out. A new
// event type is a new function here and a case in read_event_payload().
#pragma once

#include <cstddef>
#include <cstdint>

#include "tracer/cst_cursor.h"
#include "tracer/cst_reader.h"

namespace cuswap::trace::cst {

// What a payload's decoding needs to know about the file so far.
struct PayloadContext {
  bool lenient = false;      // a newer minor version: skip what this reader does not know
  size_t event_types = 0;    // core event types of the file's major version
  size_t kernel_names = 0;   // kernel ids defined so far, the unnamed id 0 included
};

// What the payload turned out to be, for the reader's counts.
enum class PayloadKind : uint8_t {
  failed,     // the cursor's Failure says why
  core,       // a core event: kept, and counted by type in the end record's check
  extension,  // a known extension event: kept, counted only in the total
  skipped,    // an extension event this reader does not know: skipped
};

// Decodes the payload of an event of type `type` into `e.data`; `e`'s offset
// and sequence number are already set (a timing's target is relative to it).
[[nodiscard]] PayloadKind read_event_payload(Cursor& c, uint8_t type,
                                             const PayloadContext& context, Event& e);

}  // namespace cuswap::trace::cst
