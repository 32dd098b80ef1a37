// gpushare-coord-yield-attack: a hostile job for the yield signal's
// end-to-end test (control_block.h, layout 4). It registers over the raw
// protocol (no client library), so it can do what the interposer never
// would:
//
//   --role opportunistic   keeps its telemetry fresh, and for every yield
//       page the coordinator sends, tries to write it every way it can
//       (a writable mmap, mprotect of a read-only one, pwrite, a writable
//       reopen through /proc/self/fd, ftruncate) and prints one
//       "yield-attack" record with what each attempt got; prints a
//       "yield-mask" record whenever its own yield_mask changes.
//   --role production [--no-seal] [--hold]   maps its yield page writable,
//       seals it (unless --no-seal), and with --hold sets its busy mark
//       once and never clears it; keeps its telemetry moving (heartbeat
//       and launches every 10 ms) so the loop sees it active.
//
// Options: --socket PATH, --uuid GPU-..., --name NAME, --seconds S (how
// long to run; default 10). Records are JSON Lines on stdout, flushed.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "coord/contract/control_block.h"
#include "coord/contract/fd_passing.h"

namespace {

using namespace gpushare;
using namespace gpushare::coord;

std::uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

int die(const char* what) {
  std::fprintf(stderr, "gpushare-coord-yield-attack: error: %s: %s\n", what, std::strerror(errno));
  return 1;
}

// Receives some bytes and up to `max_fds` descriptors; -1 on error or end.
ssize_t receive(int fd, char* buffer, std::size_t size, int* fds, int max_fds, int* count) {
  *count = 0;
  ssize_t n = gpushare::coord::receive_with_fds(fd, buffer, size, fds, max_fds, count, 0);
  return n <= 0 ? -1 : n;
}

int result(bool worked) { return worked ? 0 : errno; }

// Every way to write a page we were given read-only; 0 means it worked.
void attack(int fd, int slot) {
  void* w = mmap(nullptr, kControlPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int mmap_write = result(w != MAP_FAILED);
  if (w != MAP_FAILED) munmap(w, kControlPageBytes);
  void* r = mmap(nullptr, kControlPageBytes, PROT_READ, MAP_SHARED, fd, 0);
  bool readable = r != MAP_FAILED && static_cast<const YieldPage*>(r)->magic == kYieldMagic;
  int mprotect_write =
      r == MAP_FAILED ? -1 : result(mprotect(r, kControlPageBytes, PROT_READ | PROT_WRITE) == 0);
  std::uint32_t one = 1;
  int pwrite_busy = result(pwrite(fd, &one, sizeof one, offsetof(YieldPage, busy)) == sizeof one);
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  int reopened = open(path.c_str(), O_RDWR | O_CLOEXEC);
  int reopen_write =
      reopened < 0
          ? result(false)
          : result(pwrite(reopened, &one, sizeof one, offsetof(YieldPage, busy)) == sizeof one);
  if (reopened >= 0) close(reopened);
  int truncate = result(ftruncate(fd, 0) == 0);
  std::printf(
      "{\"kind\":\"yield-attack\",\"slot\":%d,\"readable\":%s,\"mmap_write\":%d,"
      "\"mprotect_write\":%d,\"pwrite\":%d,\"reopen_write\":%d,\"ftruncate\":%d}\n",
      slot, readable ? "true" : "false", mmap_write, mprotect_write, pwrite_busy, reopen_write,
      truncate);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::string role, socket_path, uuid = "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f",
                                 name = "attacker";
  bool seal = true, hold = false;
  double seconds = 10;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    bool more = i + 1 < argc;
    if (arg == "--role" && more)
      role = argv[++i];
    else if (arg == "--socket" && more)
      socket_path = argv[++i];
    else if (arg == "--uuid" && more)
      uuid = argv[++i];
    else if (arg == "--name" && more)
      name = argv[++i];
    else if (arg == "--seconds" && more)
      seconds = std::atof(argv[++i]);
    else if (arg == "--no-seal")
      seal = false;
    else if (arg == "--hold")
      hold = true;
    else {
      std::fprintf(stderr, "gpushare-coord-yield-attack: error: bad argument '%s'\n", arg.c_str());
      return 2;
    }
  }
  if ((role != "opportunistic" && role != "production") || socket_path.empty()) {
    std::fprintf(stderr, "gpushare-coord-yield-attack: error: --role and --socket are required\n");
    return 2;
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", socket_path.c_str());
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0)
    return die("connect");
  std::string request = "{\"kind\":\"register\",\"version\":1,\"protocol\":1,\"layout_version\":" +
                        std::to_string(kLayoutVersion) + ",\"name\":\"" + name + "\",\"qos\":\"" +
                        role + "\",\"devices\":[{\"uuid\":\"" + uuid +
                        "\",\"mem_total_bytes\":17179869184,\"requested_limit_bytes\":null,"
                        "\"mem_limit_bytes\":null}]}\n";
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size()))
    return die("send");
  char reply[4096];
  int fds[3];
  int count = 0;
  ssize_t n = receive(fd, reply, sizeof reply - 1, fds, 3, &count);
  if (n < 0 || count != 3) return die("no registration reply with three descriptors");
  reply[n] = '\0';
  auto* limits = static_cast<const LimitsPage*>(
      mmap(nullptr, kControlPageBytes, PROT_READ, MAP_SHARED, fds[0], 0));
  auto* telemetry = static_cast<TelemetryPage*>(
      mmap(nullptr, kControlPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fds[1], 0));
  auto* own = static_cast<YieldPage*>(
      mmap(nullptr, kControlPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fds[2], 0));
  if (limits == MAP_FAILED || telemetry == MAP_FAILED || own == MAP_FAILED) return die("mmap");
  if (seal && fcntl(fds[2], F_ADD_SEALS, F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) != 0)
    return die("seal");
  if (hold) {
    own->busy.store(1);
    own->marks.fetch_add(1);
  }
  std::printf("{\"kind\":\"attacker-registered\",\"role\":\"%s\",\"sealed\":%s}\n", role.c_str(),
              seal ? "true" : "false");
  std::fflush(stdout);

  std::uint64_t end = now_ns() + static_cast<std::uint64_t>(seconds * 1e9);
  std::uint64_t mask = ~0ull;
  std::uint64_t launches = 0;
  while (now_ns() < end) {
    telemetry->launches.store(++launches);
    telemetry->heartbeat_ns.store(now_ns());
    std::uint64_t m = limits->devices[0].yield_mask.load();
    if (m != mask) {
      mask = m;
      std::printf("{\"kind\":\"yield-mask\",\"mask\":%llu,\"t_ms\":%llu}\n",
                  static_cast<unsigned long long>(m),
                  static_cast<unsigned long long>(now_ns() / 1000000));
      std::fflush(stdout);
    }
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 10) <= 0) continue;
    char line[512];
    int page_fd[1];
    n = receive(fd, line, sizeof line - 1, page_fd, 1, &count);
    if (n < 0) break;  // the coordinator went away
    line[n] = '\0';
    const char* slot = std::strstr(line, "\"slot\":");
    if (count == 1 && std::strstr(line, "yield-page") != nullptr && slot != nullptr) {
      attack(page_fd[0], std::atoi(slot + 7));
    }
    if (count == 1) close(page_fd[0]);
  }
  return 0;
}
