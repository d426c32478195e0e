// Per-thread slots: how a thread finds its buffer, gets a new one when it is
// full, hands it over when the thread exits, and how the writer sweeps them.
// See Notes [Per-thread buffers], [Bounded memory], [Sweeps] and
// [Thread exit] in recorder_state.h.
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <new>

#include "tracer/recorder_state.h"

namespace cuswap::trace::detail {
namespace {

// A thread keeps slots in at most this many recorders at once; past that,
// one entry is handed over as if the thread had exited (and the thread gets
// a new slot if it records there again).
constexpr size_t kCacheEntries = 8;

struct CacheEntry {
  uint64_t uid;
  ThreadSlot* slot;
};

// Trivially constructible and destructible, so it needs no TLS guard and
// stays valid through every exit path of the thread; the pthread key's
// destructor (not a thread_local destructor) does the handover.
struct ThreadCache {
  CacheEntry entries[kCacheEntries];
  bool key_set;
  bool exited;  // handed over; events from here on are dropped
};

thread_local ThreadCache t_cache{};

std::atomic<uint64_t> g_next_uid{1};
pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
pthread_key_t g_exit_key;
bool g_key_ok = false;

void hand_over(ThreadSlot* slot) noexcept {
  slot->lock();
  slot->exited = true;
  slot->unlock();
  release(slot);
}

void on_thread_exit(void* arg) {
  auto* cache = static_cast<ThreadCache*>(arg);
  const pid_t pid = ::getpid();
  for (CacheEntry& e : cache->entries) {
    // In a forked child the slot's lock may be held by a thread that is gone.
    if (e.slot && e.slot->pid == pid) hand_over(e.slot);
    e = {};
  }
  cache->exited = true;
}

void make_key() {
  g_key_ok = pthread_key_create(&g_exit_key, on_thread_exit) == 0;
}

uint32_t this_thread_id() noexcept {
  return static_cast<uint32_t>(::gettid());
}

// Finds a slot of an exited thread that nobody else references; mu held.
ThreadSlot* reusable_slot(RecorderState& r, uint32_t tid) noexcept {
  for (ThreadSlot* s = r.slots.load(std::memory_order_relaxed); s; s = s->next) {
    if (s->refs.load(std::memory_order_acquire) != 1 || !s->try_lock()) continue;
    const bool free = s->exited && !s->buffer && !s->closed;
    if (free) {
      s->exited = false;
      s->thread_id = tid;
      s->refs.store(2, std::memory_order_relaxed);
    }
    s->unlock();
    if (free) return s;
  }
  return nullptr;
}

ThreadSlot* attach(RecorderState& r, ThreadCache& cache) noexcept {
  if (cache.exited) return nullptr;
  pthread_once(&g_key_once, make_key);

  // A free cache entry: unused, or left over from a recorder that is gone.
  CacheEntry* entry = nullptr;
  for (CacheEntry& e : cache.entries) {
    if (e.slot && e.slot->orphaned.load(std::memory_order_acquire)) {
      release(e.slot);
      e = {};
    }
    if (!entry && !e.slot) entry = &e;
  }
  if (!entry) {
    entry = &cache.entries[kCacheEntries - 1];
    hand_over(entry->slot);
    *entry = {};
  }

  const uint32_t tid = this_thread_id();
  ThreadSlot* slot = nullptr;
  {
    std::lock_guard lock(r.mu);
    if (r.stopped.load(std::memory_order_relaxed)) return nullptr;
    slot = reusable_slot(r, tid);
    if (!slot) {
      slot = new (std::nothrow) ThreadSlot;
      if (!slot) return nullptr;
      slot->pid = r.pid;
      slot->thread_id = tid;
      slot->next = r.slots.load(std::memory_order_relaxed);
      r.slots.store(slot, std::memory_order_release);
    }
  }
  *entry = {r.uid, slot};
  if (!cache.key_set && g_key_ok) cache.key_set = pthread_setspecific(g_exit_key, &cache) == 0;
  return slot;
}

}  // namespace

uint64_t monotonic_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

void ThreadSlot::lock_contended() noexcept {
  for (int spins = 0; locked.exchange(true, std::memory_order_acquire);) {
    // The holder is a collector moving one pointer, or the owner finishing
    // an event or waiting for a buffer: spin briefly, then yield.
    while (locked.load(std::memory_order_relaxed)) {
      if (++spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      } else {
        sched_yield();
      }
    }
  }
}

void release(ThreadSlot* slot) noexcept {
  if (slot->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete slot;
}

uint64_t next_recorder_uid() noexcept {
  return g_next_uid.fetch_add(1, std::memory_order_relaxed);
}

ThreadSlot* slot_for_this_thread(RecorderState& r) noexcept {
  ThreadCache& cache = t_cache;
  for (const CacheEntry& e : cache.entries)
    if (e.uid == r.uid) return e.slot;
  return attach(r, cache);
}

Buffer* refill(RecorderState& r, ThreadSlot& slot) noexcept {
  std::unique_lock lock(r.mu);
  if (Buffer* full = slot.buffer) {
    slot.buffer = nullptr;
    if (full->events) {
      r.queue.push(full);
      r.writer_wake.notify_one();
    } else {
      r.free_buffers.push_back(full);
    }
  }
  bool counted = false;
  while (r.free_buffers.empty() && !r.stopped.load(std::memory_order_relaxed)) {
    if (!counted) {
      counted = true;
      r.waits.fetch_add(1, std::memory_order_relaxed);
    }
    ++r.waiting;
    r.writer_wake.notify_one();
    r.buffer_freed.wait(lock);
    --r.waiting;
  }
  if (r.stopped.load(std::memory_order_relaxed)) return nullptr;
  Buffer* b = r.free_buffers.back();
  r.free_buffers.pop_back();
  b->reset(slot.thread_id);
  slot.buffer = b;
  return b;
}

size_t sweep(RecorderState& r, bool take_empty) noexcept {
  size_t taken = 0;
  bool freed = false;
  for (ThreadSlot* s = r.slots.load(std::memory_order_acquire); s; s = s->next) {
    if (!s->try_lock()) continue;
    Buffer* b = s->buffer;
    if (b && b->events) {
      r.queue.push(b);
      s->buffer = nullptr;
      ++taken;
    } else if (b && (take_empty || s->exited)) {
      r.free_buffers.push_back(b);
      s->buffer = nullptr;
      freed = true;
      ++taken;
    }
    s->unlock();
  }
  if (freed) r.buffer_freed.notify_all();
  return taken;
}

}  // namespace cuswap::trace::detail
