// The job's registration with the coordinator (gpushare-protocol(7)): connect
// to the socket, send `register` (with the tree file's descriptor), read the
// one-line reply and its memfds, map and check the pages. Bounded in time:
// it runs on the CUDA initialisation path (job_client.h).
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "coord/contract/fd_passing.h"
#include "coord/contract/socket_path.h"
#include "coord/job/client_state.h"
#include "coord/job/limits.h"
#include "coord/job/wire.h"
#include "coord/job/yield.h"

namespace gpushare::coord::job::client_detail {

// Sends the whole message; `passed` (when >= 0) goes with its first byte.
bool send_all(int fd, const char* data, std::size_t size, std::uint64_t deadline_ns,
              int passed = -1) {
  while (size > 0) {
    ssize_t n;
    if (passed >= 0) {
      n = send_with_fds(fd, data, size, &passed, 1, MSG_DONTWAIT);
      if (n > 0) passed = -1;  // sent with the first bytes
    } else {
      n = send(fd, data, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    if (n > 0) {
      data += n;
      size -= static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) return false;
    pollfd p{fd, POLLOUT, 0};
    if (poll(&p, 1, remaining_ms(deadline_ns)) <= 0) return false;
  }
  return true;
}

// Reads one reply line, and the descriptors sent with it, before the
// deadline. `*silent`: the deadline passed before any byte came.
bool receive_reply(int fd, char* line, std::size_t size, int fds[3], int* fd_count,
                   std::uint64_t deadline_ns, bool* silent) {
  std::size_t length = 0;
  *fd_count = 0;
  *silent = false;
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    int ready = poll(&p, 1, remaining_ms(deadline_ns));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      *silent = ready == 0 && length == 0;
      return false;
    }
    // More descriptors than the protocol sends are closed.
    ssize_t n =
        receive_with_fds(fd, line + length, size - 1 - length, fds, 3, fd_count, MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return false;
    length += static_cast<std::size_t>(n);
    line[length] = '\0';
    if (memchr(line, '\n', length) != nullptr) return true;
    if (length + 1 >= size) return false;  // no newline within bounds
  }
}

void close_fds(int* fds, int count) {
  for (int i = 0; i < count; ++i) close(fds[i]);
}

// Maps and checks the three pages. On success the descriptors are closed
// (the mappings keep the memfds alive).
bool map_pages(int limits_fd, int telemetry_fd, int yield_fd, Registration* out) {
  struct stat a, b;
  if (fstat(limits_fd, &a) != 0 || fstat(telemetry_fd, &b) != 0 ||
      a.st_size < static_cast<off_t>(kControlPageBytes) ||
      b.st_size < static_cast<off_t>(kControlPageBytes)) {
    log_line("control block has the wrong size");
    return false;
  }
  void* limits = mmap(nullptr, kControlPageBytes, PROT_READ, MAP_SHARED, limits_fd, 0);
  if (limits == MAP_FAILED) return false;
  void* telemetry =
      mmap(nullptr, kControlPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, telemetry_fd, 0);
  if (telemetry == MAP_FAILED) {
    munmap(limits, kControlPageBytes);
    return false;
  }
  const auto* page = static_cast<const LimitsPage*>(limits);
  auto* tele = static_cast<TelemetryPage*>(telemetry);
  if (page->magic != kLimitsMagic || page->layout_version != kLayoutVersion ||
      tele->magic != kTelemetryMagic || tele->layout_version != kLayoutVersion ||
      static_cast<int>(page->device_count) != g_config.device_count) {
    log_line("control block has an unknown layout (magic %#x version %u)", page->magic,
             page->layout_version);
    munmap(limits, kControlPageBytes);
    munmap(telemetry, kControlPageBytes);
    return false;
  }
  if (!yield_map_own(yield_fd, page->job_id, &out->yield)) {
    log_line("cannot map and seal the yield page");
    munmap(limits, kControlPageBytes);
    munmap(telemetry, kControlPageBytes);
    return false;
  }
  close(limits_fd);
  close(telemetry_fd);
  close(yield_fd);
  out->limits = page;
  out->telemetry = tele;
  return true;
}

Outcome begin_register(int timeout_ms, int* fd_out) {
  *fd_out = -1;
  std::uint64_t deadline = now_ns() + static_cast<std::uint64_t>(timeout_ms) * 1000000ull;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Outcome::kUnreachable;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  memcpy(address.sun_path, g_config.socket_path, strlen(g_config.socket_path) + 1);
  if (g_config.private_directory[0] != '\0') {
    uid_t owner = 0;
    DirectoryTrust trust = check_private_directory(g_config.private_directory, &owner);
    if (trust != DirectoryTrust::kPrivate && trust != DirectoryTrust::kAbsent) {
      log_line("refusing the coordinator socket directory %s: %s (uid %u)",
               g_config.private_directory, directory_trust_name(trust),
               static_cast<unsigned>(owner));
      close(fd);
      return Outcome::kRefused;
    }
  }
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    close(fd);
    return Outcome::kUnreachable;
  }
  // Trust nothing a coordinator says before knowing who it is.
  uid_t peer_uid = 0;
  if (!peer_is_trusted(fd, &peer_uid)) {
    log_line("refusing the coordinator on %s: it runs as uid %d, not as this user or root",
             g_config.socket_path, static_cast<int>(peer_uid));
    close(fd);
    return Outcome::kRefused;
  }

  // Ask with the limits in force now, so a restarted coordinator keeps them.
  std::uint64_t start_limits[kMaxDevices], limits[kMaxDevices];
  registration_limits(start_limits, limits, g_config.device_count);
  const char* qos = qos_name(fallback_qos());
  wire::RegisterFields fields{g_config.name,
                              qos,
                              g_state.last_job_id.load(std::memory_order_relaxed),
                              g_config.device_count,
                              g_config.uuids,
                              g_config.mem_total_bytes,
                              start_limits,
                              limits,
                              g_config.compute_cap_ppm};
  // The tree file's descriptor proves this process is part of the job. A
  // file that is gone (its job's first process and runner left) leaves this
  // process a job of its own.
  int tree_fd = -1;
  if (g_config.tree_path[0] != '\0') {
    tree_fd = open(g_config.tree_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (tree_fd < 0) log_line("no job tree file %s; registering on our own", g_config.tree_path);
  }
  fields.tree = tree_fd >= 0;
  char message[8192];
  std::size_t length = wire::write_register(message, sizeof message, fields);
  bool sent = length != 0 && send_all(fd, message, length, deadline, tree_fd);
  if (tree_fd >= 0) close(tree_fd);
  if (!sent) {
    close(fd);
    return Outcome::kUnreachable;
  }
  *fd_out = fd;
  return Outcome::kPending;
}

Outcome finish_register(int fd, int timeout_ms, Registration* out) {
  std::uint64_t deadline = now_ns() + static_cast<std::uint64_t>(timeout_ms) * 1000000ull;
  char reply[kMaxReplyBytes];
  int fds[3];
  int fd_count = 0;
  bool silent = false;
  if (!receive_reply(fd, reply, sizeof reply, fds, &fd_count, deadline, &silent)) {
    close_fds(fds, fd_count);
    // Still connected and silent: the coordinator has not answered yet
    // (stopped, or a loaded machine). The connection stays open, so the
    // answer still comes to this attempt, and no second attempt makes the
    // coordinator give out a second id.
    if (silent) return Outcome::kPending;
    close(fd);
    return Outcome::kUnreachable;
  }
  char kind[32];
  if (!wire::find_string(reply, "kind", kind, sizeof kind) || strcmp(kind, "registered") != 0 ||
      fd_count != 3) {
    char why[256] = "no reason given";
    wire::find_string(reply, "message", why, sizeof why);
    log_line("coordinator refused the registration: %s", why);
    close_fds(fds, fd_count);
    close(fd);
    return Outcome::kRefused;
  }
  if (!map_pages(fds[0], fds[1], fds[2], out)) {
    close_fds(fds, fd_count);
    close(fd);
    return Outcome::kRefused;
  }
  out->fd = fd;
  return Outcome::kRegistered;
}

Outcome try_register(int timeout_ms, Registration* out) {
  std::uint64_t deadline = now_ns() + static_cast<std::uint64_t>(timeout_ms) * 1000000ull;
  int fd = -1;
  Outcome outcome = begin_register(timeout_ms, &fd);
  if (outcome != Outcome::kPending) return outcome;
  outcome = finish_register(fd, remaining_ms(deadline), out);
  if (outcome == Outcome::kPending) {
    close(fd);
    return Outcome::kUnreachable;
  }
  return outcome;
}

}  // namespace gpushare::coord::job::client_detail
