#include "interpose/tree_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gpushare::interpose {

int create_tree_file(char* path, std::size_t size) {
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
  const std::uint32_t header[2] = {kTreeMagic, kTreeVersion};  // the rest is zero
  if (ftruncate(fd, sizeof(TreeFile)) != 0 ||
      pwrite(fd, header, sizeof header, 0) != static_cast<ssize_t>(sizeof header)) {
    int error = errno;
    unlink(path);
    close(fd);
    errno = error;
    return -1;
  }
  return fd;
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

}  // namespace gpushare::interpose
