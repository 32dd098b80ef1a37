// The janitor of a job's tree file.
//
// The tree file must outlive the job's first process (its children may go
// on, and still share the limit) and must not outlive the job, however the
// job ends: a process killed with SIGKILL runs no cleanup. So gpushare-run,
// before it execs the job, creates the file and leaves a small process
// behind, the janitor, whose only work is to remove it:
//
//   1. gpushare-run forks a child, which opens a pidfd of gpushare-run (the
//      pid the job will have after exec) and forks the janitor, then exits.
//      gpushare-run reaps the child before exec, so the job never sees a
//      child it did not start, and the janitor is nobody's child (init, or
//      the nearest subreaper, adopts it).
//      The janitor execs gpushare-run again in janitor mode, with an empty environment and a
//      command line of its own
//      ("gpushare-tree --tree-janitor PATH"), so that it neither shows as
//      a second copy of the job's command line (pgrep -f, pkill -f) nor
//      loads anything the job preloads; where that exec fails, the forked
//      process does the same work.
//   2. The janitor starts a session of its own (terminal signals to the
//      job's process group do not reach it), holds no descriptor but the
//      tree file and the pidfd (a pipe the job's caller reads from closes
//      when the job ends, not when the janitor does), and waits for the
//      job's first process to exit.
//   3. Then, until no process holds a slot of the file (tree.cc: each
//      process that uses a device takes one, with its pid and start time),
//      it waits on pidfds of the slots' processes. When none is left, it
//      looks once through /proc for the user's processes whose environment
//      names the file (descendants that have not used a device yet, such
//      as a script's next program), and waits for those too. When neither
//      finds a process, it removes the file (if the path still names it)
//      and exits.
//
// A process of the job that changed its environment before it was started,
// and first uses a device after all the others have exited, finds no file
// and counts on its own.
#include "runner/job_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "coord/contract/tree_file.h"

namespace gpushare {
namespace {

using coord::TreeFile;

constexpr const char* kJanitorFlag = "--tree-janitor";
constexpr int kJanitorTreeFd = 3;
constexpr int kJanitorPidFd = 4;

int open_pidfd(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

void wait_readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  while (poll(&p, 1, -1) < 0 && errno == EINTR) {
  }
}

// Keeps only `keep_a` and `keep_b` (and stdio, pointed at /dev/null).
void close_other_descriptors(int keep_a, int keep_b) {
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int fd = 0; fd <= 2 && null >= 0; ++fd) dup2(null, fd);
  int low = keep_a < keep_b ? keep_a : keep_b;
  int high = keep_a < keep_b ? keep_b : keep_a;
  syscall(SYS_close_range, 3u, static_cast<unsigned>(low - 1), 0u);
  syscall(SYS_close_range, static_cast<unsigned>(low + 1), static_cast<unsigned>(high - 1), 0u);
  syscall(SYS_close_range, static_cast<unsigned>(high + 1), ~0u, 0u);
}

// Pidfds of the processes that hold a slot now.
std::vector<int> live_members(const TreeFile& tree) {
  std::vector<int> pidfds;
  for (const coord::TreeSlot& slot : tree.slots) {
    std::int32_t pid = slot.pid.load(std::memory_order_acquire);
    if (pid <= 0) continue;
    std::uint64_t started = slot.start_time.load(std::memory_order_acquire);
    int pidfd = open_pidfd(pid);
    // Checked after the pidfd is open, so it cannot name a reused pid.
    if (pidfd < 0 || coord::process_is_gone(pid, started)) {
      if (pidfd >= 0) close(pidfd);
      continue;
    }
    pidfds.push_back(pidfd);
  }
  return pidfds;
}

// Pidfds of this user's processes whose environment names the tree file.
std::vector<int> environment_members(const char* tree_path) {
  std::vector<int> pidfds;
  std::string entry = std::string("GPUSHARE_TREE=") + tree_path;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return pidfds;
  for (dirent* e; (e = readdir(proc)) != nullptr;) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    struct stat owner {};
    if (fstatat(dirfd(proc), e->d_name, &owner, 0) != 0 || owner.st_uid != geteuid()) continue;
    pid_t pid = static_cast<pid_t>(std::strtol(e->d_name, nullptr, 10));
    if (pid == getpid()) continue;
    int pidfd = open_pidfd(pid);  // first, so that the pid cannot be reused under us
    if (pidfd < 0) continue;
    if (coord::environment_holds(dirfd(proc), e->d_name, entry.c_str())) {
      pidfds.push_back(pidfd);
    } else {
      close(pidfd);
    }
  }
  closedir(proc);
  return pidfds;
}

void wait_any(const std::vector<int>& pidfds) {
  std::vector<pollfd> watched;
  for (int fd : pidfds) watched.push_back({fd, POLLIN, 0});
  while (poll(watched.data(), watched.size(), -1) < 0 && errno == EINTR) {
  }
  for (int fd : pidfds) close(fd);
}

[[noreturn]] void run_janitor(const char* path, int tree_fd, int job_pidfd) {
  setsid();
  prctl(PR_SET_NAME, "gpushare-tree");
  signal(SIGHUP, SIG_IGN);
  signal(SIGINT, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
  if (chdir("/") != 0) {
    // Nothing depends on the directory; the file's path is absolute.
  }
  close_other_descriptors(tree_fd, job_pidfd);
  void* memory = mmap(nullptr, sizeof(TreeFile), PROT_READ, MAP_SHARED, tree_fd, 0);
  wait_readable(job_pidfd);  // the job's first process has exited
  close(job_pidfd);
  for (;;) {
    std::vector<int> members;
    if (memory != MAP_FAILED) members = live_members(*static_cast<const TreeFile*>(memory));
    if (members.empty()) members = environment_members(path);
    if (members.empty()) break;
    wait_any(members);
  }
  // Remove the file only if the path still names it.
  struct stat held {
  }, named{};
  if (fstat(tree_fd, &held) == 0 && lstat(path, &named) == 0 && held.st_dev == named.st_dev &&
      held.st_ino == named.st_ino) {
    unlink(path);
  }
  _exit(0);
}

// Puts the tree file at descriptor 3 and the pidfd at 4, where janitor mode
// expects them (neither close-on-exec).
void move_descriptors(int tree_fd, int job_pidfd) {
  int tree_high = fcntl(tree_fd, F_DUPFD, 10);
  int pidfd_high = fcntl(job_pidfd, F_DUPFD, 10);
  dup2(tree_high, kJanitorTreeFd);
  dup2(pidfd_high, kJanitorPidFd);
  close(tree_high);
  close(pidfd_high);
}

[[noreturn]] void become_janitor(const std::string& program, const char* path, int tree_fd,
                                 int job_pidfd) {
  move_descriptors(tree_fd, job_pidfd);
  if (tree_fd != kJanitorTreeFd && tree_fd != kJanitorPidFd) close(tree_fd);
  if (job_pidfd != kJanitorTreeFd && job_pidfd != kJanitorPidFd) close(job_pidfd);
  char* const argv[] = {const_cast<char*>("gpushare-tree"), const_cast<char*>(kJanitorFlag),
                        const_cast<char*>(path), nullptr};
  char* const environment[] = {nullptr};
  if (!program.empty()) execve(program.c_str(), argv, environment);
  run_janitor(path, kJanitorTreeFd, kJanitorPidFd);  // the exec failed: do it here
}

}  // namespace

int tree_janitor_main(int argc, char** argv) {
  if (argc != 3 || std::strcmp(argv[1], kJanitorFlag) != 0) return -1;
  // Only as started by start_job_tree: descriptor 3 is the file at the
  // path, and 4 a pidfd.
  struct stat held {
  }, named{};
  char link[64] = {};
  if (fstat(kJanitorTreeFd, &held) != 0 || lstat(argv[2], &named) != 0 ||
      held.st_dev != named.st_dev || held.st_ino != named.st_ino ||
      readlink("/proc/self/fd/4", link, sizeof link - 1) < 0 ||
      std::strcmp(link, "anon_inode:[pidfd]") != 0) {
    return 125;
  }
  run_janitor(argv[2], kJanitorTreeFd, kJanitorPidFd);
}

Result<std::string> start_job_tree(const std::string& program) {
  char path[128];
  coord::sweep_stale_tree_files();  // files of jobs killed without a janitor
  int tree_fd = coord::create_tree_file(path, sizeof path, coord::kTreeHasJanitor);
  if (tree_fd < 0) {
    return make_error(std::string("cannot create the job's tree file in /dev/shm: ") +
                      std::strerror(errno));
  }
  pid_t job = getpid();
  pid_t child = fork();
  if (child < 0) {
    int error = errno;
    unlink(path);
    close(tree_fd);
    return make_error(std::string("cannot start the tree file's janitor: ") + std::strerror(error));
  }
  if (child == 0) {
    int job_pidfd = open_pidfd(job);
    if (job_pidfd < 0) _exit(1);
    pid_t janitor = fork();
    if (janitor == 0) become_janitor(program, path, tree_fd, job_pidfd);
    _exit(janitor > 0 ? 0 : 1);
  }
  close(tree_fd);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    unlink(path);
    return make_error("cannot start the tree file's janitor (no pidfd_open?)");
  }
  return std::string(path);
}

}  // namespace gpushare
