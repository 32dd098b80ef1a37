#include "coord/job/yield.h"


#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "coord/contract/fd_passing.h"
#include "coord/contract/repeat_lag.h"
#include "coord/job/clock.h"
#include "coord/job/wire.h"

namespace gpushare::coord::job {

constinit std::atomic<YieldPage*> g_own_yield{nullptr};
constinit std::atomic<std::uint64_t> g_sync_entry_ns{0};

namespace {

// The pages followed, by slot (read-only mappings).
constinit std::atomic<const YieldPage*> g_slots[kYieldSlots] = {};

// Per slot: the mark last seen set, since when, and its last beat seen and
// when (the stuck-mark rule).
struct Seen {
  std::atomic<const YieldPage*> page;
  std::atomic<std::uint64_t> marks;
  std::atomic<std::uint64_t> since_ns;
  std::atomic<std::uint32_t> beats;
  std::atomic<std::uint64_t> beat_ns;
  // Since when the gap rule has held launches back with the job not seen
  // busy (0: it is not): a page that always says "back soon" but never is
  // holds nobody longer than kYieldHoldMaxNs.
  std::atomic<std::uint64_t> gap_since_ns;
  // The spans of its last marks seen finished, by mark number modulo
  // kSpansKept (the number kept beside each: a slot holds another mark's
  // span once overwritten): what this mark's span is predicted from
  // (yield_predict_span). Seen by this process, so the page's layout is
  // unchanged; a mark it did not see finish is simply missing.
  std::atomic<std::uint64_t> span_mark[kSpansKept];
  std::atomic<std::uint64_t> span_ns[kSpansKept];
};
constinit Seen g_seen[kYieldSlots] = {};

// Notes the span of the followed job's last mark when it has finished
// (cleared after it was set) and is not noted yet. Loads only, and two
// stores once per mark.
void note_span(int slot) {
  const YieldPage* page = g_slots[slot].load(std::memory_order_acquire);
  if (page == nullptr) return;
  std::uint64_t marks = page->marks.load(std::memory_order_acquire);
  std::uint64_t marked = page->marked_ns.load(std::memory_order_relaxed);
  std::uint64_t cleared = page->cleared_ns.load(std::memory_order_relaxed);
  if (marks == 0 || marked == 0 || cleared <= marked) return;  // in progress, or none yet
  if (page->marks.load(std::memory_order_acquire) != marks) return;  // a new mark meanwhile
  Seen& seen = g_seen[slot];
  int index = static_cast<int>(marks % kSpansKept);
  if (seen.span_mark[index].load(std::memory_order_relaxed) == marks) return;
  seen.span_ns[index].store(cleared - marked, std::memory_order_relaxed);
  seen.span_mark[index].store(marks, std::memory_order_relaxed);
}

// The span predicted for the followed job's mark in progress (0: none):
// from the spans of the marks before it that this process saw finish.
std::uint64_t this_span(int slot, const YieldPage* page) {
  std::uint64_t marks = page->marks.load(std::memory_order_relaxed);
  std::uint64_t recent[kSpansKept] = {};
  const Seen& seen = g_seen[slot];
  for (std::uint64_t back = 1; back <= kSpansKept && back < marks + 1; ++back) {
    std::uint64_t mark = marks - back;
    int index = static_cast<int>(mark % kSpansKept);
    if (mark != 0 && seen.span_mark[index].load(std::memory_order_relaxed) == mark) {
      recent[back - 1] = seen.span_ns[index].load(std::memory_order_relaxed);
    }
  }
  return yield_predict_span(recent, static_cast<int>(kSpansKept));
}

// The line being received (the client thread's only).
struct Stream {
  char line[512];
  std::size_t length;
  bool overflow;  // the current line is too long: skip to its end
  int fd;         // +1: the descriptor that came with the current line
};
constinit Stream g_stream{};

long futex(const std::atomic<std::uint32_t>* word, int op, std::uint32_t value,
           const timespec* timeout) {
  return syscall(SYS_futex, reinterpret_cast<const std::uint32_t*>(word), op, value, timeout,
                 nullptr, 0);
}

// A page the coordinator sent: read-only, checked, then in its slot.
void adopt(int slot, int fd) {
  struct stat st;
  if (slot < 0 || slot >= kYieldSlots || fstat(fd, &st) != 0 ||
      st.st_size < static_cast<off_t>(kControlPageBytes)) {
    return;
  }
  void* mapped = mmap(nullptr, kControlPageBytes, PROT_READ, MAP_SHARED, fd, 0);
  if (mapped == MAP_FAILED) return;
  const auto* page = static_cast<const YieldPage*>(mapped);
  if (page->magic != kYieldMagic || page->layout_version != kLayoutVersion) {
    munmap(mapped, kControlPageBytes);
    return;
  }
  g_slots[slot].store(page, std::memory_order_release);  // the old one stays mapped
}

// `"slot":N` in a line; -1 when absent or malformed.
int find_slot(const char* line) {
  const char* at = strstr(line, "\"slot\":");
  if (at == nullptr) return -1;
  at += 7;
  int value = 0;
  int digits = 0;
  while (*at >= '0' && *at <= '9' && digits < 3) value = value * 10 + (*at++ - '0'), ++digits;
  return digits > 0 && (*at < '0' || *at > '9') ? value : -1;
}

// One complete line with the descriptor that came with it (or -1).
void handle_line(const char* line, int fd) {
  char kind[32];
  if (fd >= 0 && wire::find_string(line, "kind", kind, sizeof kind) &&
      strcmp(kind, "yield-page") == 0) {
    adopt(find_slot(line), fd);
  }
}

}  // namespace

void yield_mark_start(YieldPage* page) {
  std::uint64_t now = now_ns();
  page->marked_ns.store(now, std::memory_order_relaxed);
  page->busy.store(1, std::memory_order_release);
  page->marks.fetch_add(1, std::memory_order_relaxed);
  // The gap just ended. The estimate shrinks at once and grows by an
  // eighth of the difference: a follower errs toward leaving a gap early.
  std::uint64_t cleared = page->cleared_ns.load(std::memory_order_relaxed);
  if (cleared == 0 || now <= cleared) return;
  std::uint64_t gap = now - cleared;
  std::uint64_t estimate = page->gap_ns.load(std::memory_order_relaxed);
  estimate = estimate == 0 || gap < estimate ? gap : estimate + (gap - estimate) / 8;
  page->gap_ns.store(estimate, std::memory_order_relaxed);
}

void yield_note_sync_entry() { g_sync_entry_ns.store(now_ns(), std::memory_order_relaxed); }

void yield_clear_busy() {
  YieldPage* page = g_own_yield.load(std::memory_order_acquire);
  if (page == nullptr || page->busy.load(std::memory_order_relaxed) == 0) return;
  std::uint64_t now = now_ns();
  // The queue's tail and the mark's span (control_block.h), before the
  // clear is seen. A call that began before the mark was set (another
  // thread's) measures no tail.
  std::uint64_t marked = page->marked_ns.load(std::memory_order_relaxed);
  std::uint64_t entry = g_sync_entry_ns.exchange(0, std::memory_order_relaxed);
  if (marked != 0 && now > marked) {
    std::uint64_t span = now - marked;
    std::uint64_t old_span = page->span_ns.load(std::memory_order_relaxed);
    page->span_ns.store(old_span == 0 ? span
                        : span > old_span ? old_span + (span - old_span) / 8
                                          : old_span - (old_span - span) / 8,
                        std::memory_order_relaxed);
    if (entry >= marked && entry <= now) {
      std::uint64_t tail = now - entry;
      std::uint64_t old_tail = page->tail_ns.load(std::memory_order_relaxed);
      page->tail_ns.store(tail >= old_tail ? tail : old_tail - (old_tail - tail) / 8,
                          std::memory_order_relaxed);
    }
  }
  page->cleared_ns.store(now, std::memory_order_relaxed);
  if (page->busy.exchange(0, std::memory_order_release) != 0) {
    futex(&page->busy, FUTEX_WAKE, INT_MAX, nullptr);
  }
}

void yield_beat() {
  YieldPage* page = g_own_yield.load(std::memory_order_acquire);
  if (page != nullptr && page->busy.load(std::memory_order_relaxed) != 0) {
    page->beats.fetch_add(1, std::memory_order_relaxed);
  }
}

bool yield_map_own(int fd, std::uint64_t job_id, YieldPage** out) {
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(kControlPageBytes)) return false;
  void* mapped = mmap(nullptr, kControlPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mapped == MAP_FAILED) return false;
  auto* page = static_cast<YieldPage*>(mapped);
  // Our mapping is the last writable one: the coordinator passes the page
  // to other jobs only once it sees this seal.
  if (page->magic != kYieldMagic || page->layout_version != kLayoutVersion ||
      page->job_id != job_id || fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) != 0) {
    munmap(mapped, kControlPageBytes);
    return false;
  }
  *out = page;
  return true;
}

void yield_publish_own(YieldPage* page) {
  YieldPage* old = g_own_yield.exchange(page, std::memory_order_acq_rel);
  if (old != nullptr && old != page && old->busy.exchange(0) != 0) {
    futex(&old->busy, FUTEX_WAKE, INT_MAX, nullptr);
  }
}

void yield_reset_stream() {
  if (g_stream.fd > 0) close(g_stream.fd - 1);
  g_stream = Stream{};
}

bool yield_receive(int socket_fd) {
  char buffer[512];
  // The coordinator sends one descriptor with the first byte of its
  // message, so a descriptor belongs to the line that byte starts (the
  // kernel never merges data past a descriptor into one read). More than
  // one per message is not ours to keep: closed.
  int fd = -1, received = 0;
  ssize_t n = receive_with_fds(socket_fd, buffer, sizeof buffer, &fd, 1, &received, MSG_DONTWAIT);
  if (n < 0) return errno == EAGAIN || errno == EINTR;
  if (n == 0) return false;
  if (fd >= 0) {
    if (g_stream.fd > 0) close(g_stream.fd - 1);
    g_stream.fd = fd + 1;
  }
  for (ssize_t i = 0; i < n; ++i) {
    char ch = buffer[i];
    if (ch != '\n') {
      if (g_stream.length + 1 < sizeof g_stream.line) {
        g_stream.line[g_stream.length++] = ch;
      } else {
        g_stream.overflow = true;
      }
      continue;
    }
    g_stream.line[g_stream.length] = '\0';
    int line_fd = g_stream.fd - 1;
    if (!g_stream.overflow) handle_line(g_stream.line, line_fd);
    if (line_fd >= 0) close(line_fd);  // the mapping, if any, keeps the memfd
    g_stream.fd = 0;
    g_stream.length = 0;
    g_stream.overflow = false;
  }
  return true;
}

const std::atomic<std::uint32_t>* yield_busy_word(std::uint64_t mask, std::uint64_t now_ns) {
  for (int slot = 0; slot < kYieldSlots && mask != 0; ++slot, mask >>= 1) {
    if ((mask & 1) == 0) continue;
    const YieldPage* page = g_slots[slot].load(std::memory_order_acquire);
    if (page == nullptr || page->busy.load(std::memory_order_acquire) == 0) continue;
    // The coordinator's rule, kept here too (it may be gone, and a
    // producer that died marked stays marked): a mark held with no new
    // transition is ignored once its heartbeat stood still for
    // kYieldHoldMaxNs, or after kYieldHoldCapNs. Races between threads
    // only move the times a little.
    std::uint64_t marks = page->marks.load(std::memory_order_relaxed);
    std::uint32_t beats = page->beats.load(std::memory_order_relaxed);
    Seen& seen = g_seen[slot];
    if (seen.page.load(std::memory_order_relaxed) != page ||
        seen.marks.load(std::memory_order_relaxed) != marks) {
      seen.page.store(page, std::memory_order_relaxed);
      seen.marks.store(marks, std::memory_order_relaxed);
      seen.since_ns.store(now_ns, std::memory_order_relaxed);
      seen.beats.store(beats, std::memory_order_relaxed);
      seen.beat_ns.store(now_ns, std::memory_order_relaxed);
    } else {
      if (seen.beats.load(std::memory_order_relaxed) != beats) {
        seen.beats.store(beats, std::memory_order_relaxed);
        seen.beat_ns.store(now_ns, std::memory_order_relaxed);
      }
      if (now_ns - seen.beat_ns.load(std::memory_order_relaxed) >= kYieldHoldMaxNs ||
          now_ns - seen.since_ns.load(std::memory_order_relaxed) >= kYieldHoldCapNs) {
        continue;
      }
    }
    seen.gap_since_ns.store(0, std::memory_order_relaxed);
    return &page->busy;
  }
  return nullptr;
}

std::uint64_t yield_busy_room(std::uint64_t tail_ns, std::uint64_t span_ns, std::uint64_t gap_ns,
                              std::uint64_t elapsed_ns, std::uint64_t this_span_ns) {
  if (span_ns == 0) return kBusyRoomUnknown;
  double deep = static_cast<double>(tail_ns) / static_cast<double>(span_ns);
  if (deep >= kBusyRoomDeepTail) return 0;
  double room = static_cast<double>(kBusyRoomMaxNs) * (1 - deep / kBusyRoomDeepTail);
  double step = static_cast<double>(span_ns + gap_ns) * kBusyRoomStepShare;
  if (step < room) room = step;
  if (elapsed_ns != kMarkElapsedUnknown) {
    // Late in the mark: what production's remaining launches leave idle
    // can no longer absorb a batch, and its synchronisation would wait.
    double expected = static_cast<double>(this_span_ns != 0 ? this_span_ns : span_ns);
    double left = expected - static_cast<double>(tail_ns) - static_cast<double>(elapsed_ns);
    if (left < kBusyRoomLateFactor * (room + static_cast<double>(kBusyBatchCostNs))) return 0;
  }
  return static_cast<std::uint64_t>(room);
}

std::uint64_t yield_predict_span(const std::uint64_t* recent, int count) {
  // Marks within 10% of each other are even enough for the smoothed span.
  constexpr double kUnevenMarks = 0.05;  // |a - b| / (a + b)
  constexpr int kMaxLag = 4, kMinPairs = 3, kMaxCount = 16;
  if (count > kMaxCount) count = kMaxCount;
  double times[kMaxCount] = {};
  for (int i = 0; i < count; ++i) times[i] = static_cast<double>(recent[i]);
  int lag = repeat_lag(times, count, kMaxLag, kMinPairs, kUnevenMarks);
  return lag > 1 ? recent[lag - 1] : 0;
}

YieldGrant yield_grant(std::uint64_t mask, std::uint64_t now_ns) {
  constexpr std::uint64_t kMaxRetryNs = 1'000'000;
  for (int slot = 0; slot < kYieldSlots && (mask >> slot) != 0; ++slot) {
    if ((mask >> slot) & 1) note_span(slot);
  }
  YieldGrant grant;
  grant.busy = yield_busy_word(mask, now_ns);
  if (grant.busy != nullptr) {
    // What may stay queued beside the busy ones: the least any of them
    // allows (a page with no span yet allows the caller's default).
    for (int slot = 0; slot < kYieldSlots && mask != 0; ++slot, mask >>= 1) {
      if ((mask & 1) == 0) continue;
      const YieldPage* page = g_slots[slot].load(std::memory_order_acquire);
      if (page == nullptr || page->busy.load(std::memory_order_relaxed) == 0) continue;
      std::uint64_t marked = page->marked_ns.load(std::memory_order_relaxed);
      std::uint64_t elapsed =
          marked != 0 && now_ns >= marked ? now_ns - marked : kMarkElapsedUnknown;
      std::uint64_t room = yield_busy_room(
          page->tail_ns.load(std::memory_order_relaxed),
          page->span_ns.load(std::memory_order_relaxed),
          page->gap_ns.load(std::memory_order_relaxed), elapsed, this_span(slot, page));
      if (room < grant.busy_room_ns) grant.busy_room_ns = room;
    }
    return grant;
  }
  bool held = false;
  std::uint64_t least_left = ~0ull;  // the smallest rest of a known gap
  for (int slot = 0; slot < kYieldSlots && mask != 0; ++slot, mask >>= 1) {
    if ((mask & 1) == 0) continue;
    const YieldPage* page = g_slots[slot].load(std::memory_order_acquire);
    if (page == nullptr) continue;
    std::uint64_t cleared = page->cleared_ns.load(std::memory_order_relaxed);
    std::uint64_t gap = page->gap_ns.load(std::memory_order_relaxed);
    if (cleared == 0 || gap == 0 || now_ns < cleared) continue;  // no gap known
    if (now_ns >= cleared + 2 * gap) continue;  // long overdue: not coming back soon
    std::uint64_t end = cleared + gap;
    if (now_ns < end) {  // within its gap
      if (end - now_ns < least_left) least_left = end - now_ns;
      continue;
    }
    // Expected back any moment: nothing more may be queued, for a while.
    std::uint64_t since = g_seen[slot].gap_since_ns.load(std::memory_order_relaxed);
    if (since == 0) {
      g_seen[slot].gap_since_ns.store(now_ns, std::memory_order_relaxed);
    } else if (now_ns - since >= kYieldHoldMaxNs) {
      continue;  // never back: its gap says nothing
    }
    held = true;
    std::uint64_t retry = cleared + 2 * gap - now_ns;
    if (retry > kMaxRetryNs) retry = kMaxRetryNs;
    if (retry > grant.retry_ns) grant.retry_ns = retry;
  }
  if (held) return grant;
  grant.free = least_left == ~0ull;
  grant.grant_ns = grant.free ? kYieldFreeGrantNs : least_left;
  return grant;
}

YieldMarks yield_marks(std::uint64_t mask) {
  YieldMarks seen;
  for (int slot = 0; slot < kYieldSlots && mask != 0; ++slot, mask >>= 1) {
    if ((mask & 1) == 0) continue;
    const YieldPage* page = g_slots[slot].load(std::memory_order_acquire);
    if (page == nullptr) continue;
    ++seen.slots;
    seen.busy = seen.busy || page->busy.load(std::memory_order_acquire) != 0;
    seen.marks += page->marks.load(std::memory_order_relaxed);
    seen.beats += page->beats.load(std::memory_order_relaxed);
    std::uint64_t gap = page->gap_ns.load(std::memory_order_relaxed);
    if (gap != 0 && (seen.gap_ns == 0 || gap < seen.gap_ns)) seen.gap_ns = gap;
    std::uint64_t cleared = page->cleared_ns.load(std::memory_order_relaxed);
    if (cleared > seen.cleared_ns) seen.cleared_ns = cleared;
  }
  return seen;
}

void yield_wait(const std::atomic<std::uint32_t>* word, std::uint64_t timeout_ns) {
  timespec timeout{static_cast<time_t>(timeout_ns / 1000000000ull),
                   static_cast<long>(timeout_ns % 1000000000ull)};
  futex(word, FUTEX_WAIT, 1, &timeout);  // returns at once when no longer 1
}

}  // namespace gpushare::coord::job
