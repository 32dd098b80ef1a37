#include "common/log_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

namespace gpushare {

Result<std::FILE*> open_log_file(const std::string& path) {
  int fd =
      open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
  if (fd < 0) {
    return make_error(
        "cannot open log file '" + path +
        "': " + (errno == ELOOP ? std::string("it is a symbolic link") : std::strerror(errno)));
  }
  struct stat info;
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    close(fd);
    return make_error("log file '" + path + "' is not a regular file");
  }
  std::FILE* log = fdopen(fd, "a");
  if (log == nullptr) {
    close(fd);
    return make_error("cannot open log file '" + path + "': " + std::strerror(errno));
  }
  std::setvbuf(log, nullptr, _IOLBF, 0);
  return log;
}

std::string utc_stamped(const std::string& message) {
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  tm utc;
  gmtime_r(&now.tv_sec, &utc);
  char stamp[40];
  std::size_t n = std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(stamp + n, sizeof stamp - n, ".%03ldZ", now.tv_nsec / 1000000);
  return std::string(stamp) + " " + message;
}

}  // namespace gpushare
