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

void tell_room_requests(int socket_fd, const LocalCounters* counters, int device_count) {
  if (counters == nullptr || socket_fd < 0) return;
  bool fresh = false;
  for (int i = 0; i < device_count && i < kMaxDevices; ++i) {
    std::uint64_t seq = counters->mem_request_seq[i].load(std::memory_order_acquire);
    if (seq != g_told_seq[i]) fresh = true;
    g_told_seq[i] = seq;
  }
  if (!fresh) return;
  // A hint: a full socket loses it, and the coordinator's tick still sees
  // the request in the telemetry page.
  ssize_t ignored = send(socket_fd, kRoomLine, sizeof kRoomLine - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
  (void)ignored;
}

void forget_told() {
  for (std::uint64_t& seq : g_told_seq) seq = 0;
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
