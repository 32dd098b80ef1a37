// The client thread's wake-up (wakeup.h).
#include "coord/job/wakeup.h"

#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

namespace gpushare::coord::job {
namespace client_detail {
namespace {

std::atomic<int> g_wake_fd{0};  // +1, so that 0 means none
// The client thread's own: the last request number told per device.
std::uint64_t g_told_seq[kMaxDevices];
// The device memory each device held when last looked at, and when a
// "room" line for freed memory last went.
std::uint64_t g_told_used[kMaxDevices];
std::uint64_t g_freed_told_ns;
// Frees tell the coordinator at most this often (a program that frees in
// a loop must not make it run its memory loop for every free); a free
// held back is told at a later tick.
constexpr std::uint64_t kFreedNoticeNs = 5'000'000;

constexpr char kRoomLine[] = "{\"kind\":\"room\",\"version\":1}\n";

}  // namespace

bool wakeup_open() {
  if (g_wake_fd.load(std::memory_order_relaxed) != 0) return true;
  int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) return false;
  g_wake_fd.store(fd + 1, std::memory_order_release);
  return true;
}

void wakeup_close() {
  int fd = g_wake_fd.exchange(0, std::memory_order_acq_rel) - 1;
  if (fd >= 0) close(fd);
}

int wakeup_fd() { return g_wake_fd.load(std::memory_order_acquire) - 1; }

void wakeup_drain() {
  int fd = wakeup_fd();
  std::uint64_t count = 0;
  if (fd >= 0) {
    ssize_t ignored = read(fd, &count, sizeof count);
    (void)ignored;
  }
}

void tell_room_requests(int socket_fd, const LocalCounters* counters, int device_count,
                        std::uint64_t now_ns) {
  if (counters == nullptr || socket_fd < 0) return;
  bool fresh = false, freed = false;
  bool may_tell_freed = now_ns - g_freed_told_ns >= kFreedNoticeNs;
  for (int i = 0; i < device_count && i < kMaxDevices; ++i) {
    std::uint64_t seq = counters->mem_request_seq[i].load(std::memory_order_acquire);
    if (seq != g_told_seq[i]) fresh = true;
    g_told_seq[i] = seq;
    // Less held than when last told: room for spilled memory to come back.
    std::uint64_t used = counters->mem_used_bytes[i].load(std::memory_order_relaxed);
    if (used < g_told_used[i]) {
      if (!may_tell_freed) continue;  // keep the higher mark: told later
      freed = true;
    }
    g_told_used[i] = used;
  }
  if (freed) g_freed_told_ns = now_ns;
  if (!fresh && !freed) return;
  // A hint: a full socket loses it, and the coordinator's tick still sees
  // the request in the telemetry page.
  ssize_t ignored = send(socket_fd, kRoomLine, sizeof kRoomLine - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
  (void)ignored;
}

void forget_told() {
  for (std::uint64_t& seq : g_told_seq) seq = 0;
  for (std::uint64_t& used : g_told_used) used = 0;
}

}  // namespace client_detail

void wake_client() {
  int fd = client_detail::wakeup_fd();
  if (fd < 0) return;
  std::uint64_t one = 1;
  ssize_t ignored = write(fd, &one, sizeof one);  // a full counter is still readable
  (void)ignored;
}

}  // namespace gpushare::coord::job
