#include "coord/server/launched_jobs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "vocab/env.h"

namespace gpushare::coord::server {
namespace {

// Whether the NUL-separated environment read from `fd` holds `entry` as a
// whole variable. Streams in chunks: any environment size, bounded memory.
bool environment_holds(int fd, const std::string& entry) {
  char chunk[4096];
  std::size_t matched = 0;
  bool differs = false;
  for (;;) {
    ssize_t length = read(fd, chunk, sizeof chunk);
    if (length <= 0) return false;
    for (ssize_t i = 0; i < length; ++i) {
      char c = chunk[i];
      if (c == '\0') {
        if (!differs && matched == entry.size()) return true;
        matched = 0;
        differs = false;
      } else if (!differs && matched < entry.size() && entry[matched] == c) {
        ++matched;
      } else {
        differs = true;
      }
    }
  }
}

}  // namespace

bool launched_job_alive(const std::string& socket_path, uid_t uid, const std::string& proc) {
  std::string entry = std::string(env::kLaunchedFor) + "=" + socket_path;
  DIR* directory = opendir(proc.c_str());
  if (directory == nullptr) return false;
  bool found = false;
  std::string self = std::to_string(getpid());
  for (dirent* e; !found && (e = readdir(directory)) != nullptr;) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9' || self == e->d_name) continue;
    struct stat owner {};
    if (fstatat(dirfd(directory), e->d_name, &owner, 0) != 0 || owner.st_uid != uid) continue;
    std::string path = std::string(e->d_name) + "/environ";
    int fd = openat(dirfd(directory), path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    found = environment_holds(fd, entry);
    close(fd);
  }
  closedir(directory);
  return found;
}

}  // namespace gpushare::coord::server
