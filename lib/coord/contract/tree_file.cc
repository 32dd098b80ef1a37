#include "coord/contract/tree_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gpushare::coord {
namespace {

// Sizes a new, empty file and writes the header: magic, version, this
// process as creator, `flags`; the rest of the file is zero.
bool stamp_tree_file(int fd, std::uint32_t flags) {
  struct {
    std::uint32_t magic, version;
    std::int32_t creator_pid;
    std::uint32_t flags;
    std::uint64_t creator_start_time;
  } header{kTreeMagic, kTreeVersion, static_cast<std::int32_t>(getpid()), flags,
           process_start_time(getpid())};
  static_assert(sizeof header == offsetof(TreeFile, devices));
  return ftruncate(fd, sizeof(TreeFile)) == 0 &&
         pwrite(fd, &header, sizeof header, 0) == static_cast<ssize_t>(sizeof header);
}

}  // namespace

int create_tree_file(char* path, std::size_t size, std::uint32_t flags) {
  unsigned long long token[2] = {0, 0};
  if (getrandom(token, sizeof token, 0) != static_cast<ssize_t>(sizeof token)) return -1;
  int n = std::snprintf(path, size, "/dev/shm/gpushare-tree-%u-%016llx%016llx",
                        static_cast<unsigned>(geteuid()), token[0], token[1]);
  if (n < 0 || static_cast<std::size_t>(n) >= size) {
    errno = ENAMETOOLONG;
    return -1;
  }
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  if (!stamp_tree_file(fd, flags)) {
    int error = errno;
    unlink(path);
    close(fd);
    errno = error;
    return -1;
  }
  return fd;
}

int create_tree_file_at(const char* path, uid_t owner, gid_t group) {
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  // Owned by the job's user before it holds anything: the user's processes
  // accept only their own private file, and so does the coordinator.
  if (fchown(fd, owner, group) != 0 || fchmod(fd, 0600) != 0 ||
      !stamp_tree_file(fd, kTreeHasJanitor)) {
    int error = errno;
    unlink(path);
    close(fd);
    errno = error;
    return -1;
  }
  close(fd);
  return 0;
}

bool created_by_this_process(const char* path) {
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat info {};
  struct {
    std::uint32_t magic, version;
    std::int32_t creator_pid;
    std::uint32_t flags;
    std::uint64_t creator_start_time;
  } header{};
  bool ours = fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && info.st_uid == geteuid() &&
              (info.st_mode & 077) == 0 && info.st_size == static_cast<off_t>(sizeof(TreeFile)) &&
              pread(fd, &header, sizeof header, 0) == static_cast<ssize_t>(sizeof header);
  close(fd);
  return ours && header.magic == kTreeMagic && header.version == kTreeVersion &&
         header.creator_pid == getpid() && (header.flags & kTreeHasJanitor) == 0 &&
         header.creator_start_time != 0 &&
         header.creator_start_time == process_start_time(getpid());
}

std::uint64_t process_start_time(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[1024];
  ssize_t length = read(fd, text, sizeof text - 1);
  close(fd);
  if (length <= 0) return 0;
  text[length] = '\0';
  const char* field = std::strrchr(text, ')');  // the name may hold spaces
  for (int index = 2; field != nullptr && index < 22; ++index) field = std::strchr(field + 1, ' ');
  return field != nullptr ? std::strtoull(field + 1, nullptr, 10) : 0;
}

bool process_is_gone(pid_t pid, std::uint64_t start_time) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  std::uint64_t now = process_start_time(pid);
  return now != 0 && start_time != 0 && now != start_time;  // the pid was reused
}

bool environment_holds(int proc_dir, const char* pid, const char* entry) {
  char path[64];
  std::snprintf(path, sizeof path, "%s/environ", pid);
  int fd = openat(proc_dir, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  // A streaming match of entry against each NUL-terminated variable:
  // `matched` is how much of the current variable equals entry so far, or
  // -1 once it differs.
  std::size_t length = std::strlen(entry);
  long matched = 0;
  bool found = false;
  char buffer[4096];
  for (ssize_t n; !found && (n = read(fd, buffer, sizeof buffer)) > 0;) {
    for (ssize_t i = 0; i < n; ++i) {
      char c = buffer[i];
      if (c == '\0') {
        if (matched == static_cast<long>(length)) {
          found = true;
          break;
        }
        matched = 0;
      } else if (matched >= 0) {
        matched =
            static_cast<std::size_t>(matched) < length && entry[matched] == c ? matched + 1 : -1;
      }
    }
  }
  close(fd);
  return found;
}

namespace {

bool slot_or_creator_lives(const TreeFile& tree) {
  if (tree.creator_pid > 0 && !process_is_gone(tree.creator_pid, tree.creator_start_time)) {
    return true;
  }
  for (const TreeSlot& slot : tree.slots) {
    std::int32_t pid = slot.pid.load(std::memory_order_acquire);
    if (pid > 0 && !process_is_gone(pid, slot.start_time.load(std::memory_order_acquire))) {
      return true;
    }
  }
  return false;
}

bool some_environment_names(const char* path) {
  char entry[160];
  int n = std::snprintf(entry, sizeof entry, "GPUSHARE_TREE=%s", path);
  if (n < 0 || static_cast<std::size_t>(n) >= sizeof entry)
    return true;  // keep what we cannot check
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return true;
  bool named = false;
  for (dirent* e; !named && (e = readdir(proc)) != nullptr;) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    struct stat owner {};
    if (fstatat(dirfd(proc), e->d_name, &owner, 0) != 0 || owner.st_uid != geteuid()) continue;
    named = environment_holds(dirfd(proc), e->d_name, entry);
  }
  closedir(proc);
  return named;
}

// One candidate: ours, the right size and version, and unused; removed only
// if the path still names the file we judged.
bool remove_if_stale(int directory, const char* name) {
  int fd = openat(directory, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat held {};
  bool ours = fstat(fd, &held) == 0 && S_ISREG(held.st_mode) && held.st_uid == geteuid() &&
              held.st_size == static_cast<off_t>(sizeof(TreeFile));
  void* memory = ours ? mmap(nullptr, sizeof(TreeFile), PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
  close(fd);
  if (memory == MAP_FAILED) return false;
  const auto* tree = static_cast<const TreeFile*>(memory);
  bool known = tree->magic == kTreeMagic && tree->version == kTreeVersion;
  bool in_use = !known || slot_or_creator_lives(*tree);
  munmap(memory, sizeof(TreeFile));
  char path[sizeof "/dev/shm/" + NAME_MAX];  // any directory entry's name fits whole
  std::snprintf(path, sizeof path, "/dev/shm/%s", name);
  if (in_use || some_environment_names(path)) return false;
  struct stat named {};
  if (fstatat(directory, name, &named, AT_SYMLINK_NOFOLLOW) != 0 || named.st_dev != held.st_dev ||
      named.st_ino != held.st_ino) {
    return false;
  }
  return unlinkat(directory, name, 0) == 0;
}

}  // namespace

int sweep_stale_tree_files() {
  char prefix[48];
  std::snprintf(prefix, sizeof prefix, "gpushare-tree-%u-", static_cast<unsigned>(geteuid()));
  std::size_t prefix_length = std::strlen(prefix);
  DIR* shm = opendir("/dev/shm");
  if (shm == nullptr) return 0;
  int removed = 0;
  for (dirent* e; (e = readdir(shm)) != nullptr;) {
    if (std::strncmp(e->d_name, prefix, prefix_length) != 0) continue;
    if (remove_if_stale(dirfd(shm), e->d_name)) ++removed;
  }
  closedir(shm);
  return removed;
}

}  // namespace gpushare::coord
