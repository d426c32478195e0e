// The trace file: its header, the writer thread that turns full buffers
// into chunk records, and the end record. Everything here runs on the
// writer thread, or in open()/close() when no writer runs; none of it is on
// the record_* path, so it may allocate. Layout: docs/trace-format.md.
#include <fcntl.h>
#include <signal.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/log.h"
#include "tracer/recorder_state.h"

namespace cuswap::trace::detail {
namespace {

// Appends varints and strings to a byte vector.
class Encoder {
 public:
  explicit Encoder(std::vector<uint8_t>& out) : out_(out) { out_.clear(); }
  void u(uint64_t v) {
    uint8_t tmp[cst::kMaxVarintBytes];
    out_.insert(out_.end(), tmp, cst::put_uvarint(tmp, v));
  }
  void s(int64_t v) { u(cst::zigzag(v)); }
  void str(std::string_view text) {
    u(text.size());
    out_.insert(out_.end(), text.begin(), text.end());
  }

 private:
  std::vector<uint8_t>& out_;
};

bool write_all(int fd, iovec* iov, int count) noexcept {
  while (count > 0) {
    ssize_t n = ::writev(fd, iov, count);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    auto left = static_cast<size_t>(n);
    while (count > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      ++iov;
      --count;
    }
    if (count > 0) {
      iov->iov_base = static_cast<uint8_t*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
  return true;
}

void fail(RecorderState& r, int err) noexcept {
  if (r.ws.failed) return;
  r.ws.failed = true;
  r.stopped.store(true);
  log::error("trace {}: write failed ({}); recording stopped", r.path, std::strerror(err));
}

// One record: tag, payload length, payload (`head` then `body`), crc32.
bool write_record(RecorderState& r, cst::RecordTag tag, std::span<const uint8_t> head,
                  std::span<const uint8_t> body) noexcept {
  if (r.ws.failed || r.fd < 0) return false;
  uint8_t header[cst::kRecordHeaderBytes];
  header[0] = static_cast<uint8_t>(tag);
  cst::put_u32(header + 1, static_cast<uint32_t>(head.size() + body.size()));
  // crc32_z with a null pointer returns the initial value: skip empty parts.
  uLong crc = crc32_z(0, header, sizeof header);
  if (!head.empty()) crc = crc32_z(crc, head.data(), head.size());
  if (!body.empty()) crc = crc32_z(crc, body.data(), body.size());
  uint8_t trailer[cst::kCrcBytes];
  cst::put_u32(trailer, static_cast<uint32_t>(crc));
  iovec iov[4] = {{header, sizeof header},
                  {const_cast<uint8_t*>(head.data()), head.size()},
                  {const_cast<uint8_t*>(body.data()), body.size()},
                  {trailer, sizeof trailer}};
  if (!write_all(r.fd, iov, 4)) {
    fail(r, errno);
    return false;
  }
  return true;
}

// Names interned since the last call, as one record, so that every chunk
// is preceded by the names its launches use.
void write_pending_names(RecorderState& r) noexcept {
  try {
    Encoder e(r.ws.scratch);
    uint32_t first = 0, count = 0;
    {
      std::lock_guard lock(r.names_mu);
      first = r.ws.names_written + 1;
      count = static_cast<uint32_t>(r.names.size()) - r.ws.names_written;
      if (count == 0) return;
      e.u(first);
      e.u(count);
      for (uint32_t i = 0; i < count; ++i)
        e.str(r.names[r.ws.names_written + i]);
    }
    if (write_record(r, cst::RecordTag::names, r.ws.scratch, {})) r.ws.names_written += count;
  } catch (...) {
    fail(r, ENOMEM);
  }
}

void write_chunk(RecorderState& r, const Buffer& b) noexcept {
  write_pending_names(r);
  uint8_t head[2 * cst::kMaxVarintBytes];
  uint8_t* p = cst::put_uvarint(head, b.thread_id);
  p = cst::put_uvarint(p, b.events);
  if (!write_record(r, cst::RecordTag::chunk, {head, p}, {b.data, b.used})) {
    r.dropped.fetch_add(b.events, std::memory_order_relaxed);
    return;
  }
  ++r.ws.chunks;
  r.ws.events += b.events;
  for (size_t i = 0; i < kEventTypeCount; ++i)
    r.ws.events_by_type[i] += b.events_by_type[i];
}

void* writer_main(void* arg) {
  auto& r = *static_cast<RecorderState*>(arg);
  pthread_setname_np(pthread_self(), "cuswap-trace");
  using Clock = std::chrono::steady_clock;
  std::unique_lock lock(r.mu);
  Clock::time_point next_sweep = Clock::now() + kSweepInterval;
  for (;;) {
    while (!r.queue.empty()) {
      Buffer* b = r.queue.pop();
      lock.unlock();
      write_chunk(r, *b);
      lock.lock();
      r.free_buffers.push_back(b);
      r.buffer_freed.notify_all();
    }
    if (r.writer_exit) break;
    const bool starving = r.waiting > 0 && r.free_buffers.empty();
    const Clock::time_point now = Clock::now();
    if (starving || now >= next_sweep) {
      next_sweep = now + kSweepInterval;
      if (sweep(r, starving) > 0) continue;
    }
    // While threads wait and every slot was busy, look again soon.
    r.writer_wake.wait_until(lock, starving ? now + std::chrono::milliseconds(1) : next_sweep);
  }
  return nullptr;
}

uint64_t realtime_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

bool create_file(RecorderState& r, const RecorderOptions& options, std::string& error) {
  if (options.path.empty()) {
    error = "trace file: no path given";
    return false;
  }
  r.fd = ::open(options.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (r.fd < 0) {
    error = fmt::format("{}: cannot create trace file: {}", options.path, std::strerror(errno));
    return false;
  }
  r.start_ns = monotonic_ns();

  std::vector<uint8_t> body;
  Encoder e(body);
  e.str(options.cuswap_version);
  e.str(options.configuration);
  e.u(static_cast<uint64_t>(r.pid));
  e.u(realtime_ns());
  e.u(options.devices.size());
  for (const DeviceInfo& d : options.devices) {
    e.s(d.ordinal);
    e.str(d.name);
    e.u(d.total_bytes);
  }
  // magic, version, body length, body, crc32 of all that.
  std::vector<uint8_t> header(cst::kHeaderFixedBytes + body.size() + cst::kCrcBytes);
  uint8_t* p = std::copy(cst::kMagic.begin(), cst::kMagic.end(), header.data());
  p = cst::put_u16(p, cst::kFormatMajor);
  p = cst::put_u16(p, cst::kFormatMinor);
  p = cst::put_u32(p, static_cast<uint32_t>(body.size()));
  p = std::copy(body.begin(), body.end(), p);
  cst::put_u32(p, static_cast<uint32_t>(crc32_z(0, header.data(), header.size() - cst::kCrcBytes)));

  iovec iov{header.data(), header.size()};
  if (!write_all(r.fd, &iov, 1)) {
    error = fmt::format("{}: cannot write trace file: {}", options.path, std::strerror(errno));
    ::close(r.fd);
    r.fd = -1;
    return false;
  }
  r.ws.scratch.reserve(4096);
  return true;
}

bool start_writer(RecorderState& r, std::string& error) {
  // The writer must never run the process's signal handlers.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  const int rc = pthread_create(&r.writer, nullptr, writer_main, &r);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) {
    error = fmt::format("{}: cannot start the trace writer thread: {}", r.path, std::strerror(rc));
    return false;
  }
  r.writer_running = true;
  return true;
}

void stop_writer(RecorderState& r) noexcept {
  if (!r.writer_running) return;
  {
    std::lock_guard lock(r.mu);
    r.writer_exit = true;
    r.writer_wake.notify_one();
  }
  pthread_join(r.writer, nullptr);
  r.writer_running = false;
}

void finish_file(RecorderState& r, std::span<const Counter> counters) noexcept {
  write_pending_names(r);
  try {
    Encoder e(r.ws.scratch);
    e.u(monotonic_ns() - r.start_ns);
    e.u(r.ws.chunks);
    e.u(r.ws.events);
    e.u(kEventTypeCount);
    for (uint64_t n : r.ws.events_by_type)
      e.u(n);
    e.u(r.dropped.load());
    e.u(r.waits.load());
    e.u(r.ws.names_written);
    e.u(counters.size());
    for (const Counter& c : counters) {
      e.str(c.name);
      e.u(c.value);
    }
    write_record(r, cst::RecordTag::end, r.ws.scratch, {});
  } catch (...) {
    fail(r, ENOMEM);
  }
  if (r.fd >= 0 && ::close(r.fd) != 0 && !r.ws.failed) fail(r, errno);
  r.fd = -1;
}

}  // namespace cuswap::trace::detail
