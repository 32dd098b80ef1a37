#include "coord/server/listener.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "coord/contract/socket_path.h"

namespace gpushare::coord::server {
namespace {

Error os_error(const std::string& what) { return make_error(what + ": " + std::strerror(errno)); }

}  // namespace

Status prepare_socket_directory(const std::string& socket_path, bool private_directory) {
  char directory[256];
  if (!socket_directory(socket_path.c_str(), directory, sizeof directory)) {
    return make_error("socket path '" + socket_path + "' is too long");
  }
  mode_t mode = private_directory ? 0700 : 0755;
  if (mkdir(directory, mode) != 0 && errno != EEXIST) {
    return os_error("cannot create directory '" + std::string(directory) + "'");
  }
  struct stat info;
  // lstat: a link planted in place of the directory is refused, not followed.
  if ((private_directory ? lstat(directory, &info) : stat(directory, &info)) != 0) {
    return os_error("'" + std::string(directory) + "'");
  }
  if (!S_ISDIR(info.st_mode))
    return make_error("'" + std::string(directory) + "' is not a directory");
  if (private_directory) {
    if (info.st_uid != geteuid()) {
      return make_error("'" + std::string(directory) + "' belongs to uid " +
                        std::to_string(info.st_uid) + ", not to this user: refusing to use it");
    }
    if ((info.st_mode & 077) != 0) {
      return make_error("'" + std::string(directory) +
                        "' is accessible to other users (mode must be 0700): refusing to use it");
    }
  }
  return {};
}

Result<Listener> Listener::open(const std::string& path, bool private_directory) {
  sockaddr_un address{};
  if (path.empty() || path.size() >= sizeof address.sun_path) {
    return make_error("socket path '" + path + "' is empty or longer than " +
                      std::to_string(sizeof address.sun_path - 1) + " bytes");
  }
  if (Status ok = prepare_socket_directory(path, private_directory); !ok) return ok.error();

  Listener listener;
  listener.path_ = path;
  std::string lock_path = path + ".lock";
  listener.lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (listener.lock_fd_ < 0) return os_error("cannot open lock file '" + lock_path + "'");
  if (flock(listener.lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) return os_error("cannot lock '" + lock_path + "'");
    int pid = 0;
    std::string who;
    if (probe_socket(path.c_str(), &pid) == SocketProbe::kLive && pid > 0) {
      who = " (pid " + std::to_string(pid) + ")";
    }
    return make_error("a coordinator is already running on " + path + who);
  }

  int pid = 0;
  switch (probe_socket(path.c_str(), &pid)) {
    case SocketProbe::kLive:
      return make_error("a coordinator is already running on " + path +
                        (pid > 0 ? " (pid " + std::to_string(pid) + ")" : std::string()));
    case SocketProbe::kNotSocket:
      return make_error("'" + path + "' exists and is not a socket: refusing to replace it");
    case SocketProbe::kStale:
      // Its coordinator died without cleaning up; we hold the lock, so it
      // is ours to replace.
      if (unlink(path.c_str()) != 0 && errno != ENOENT) {
        return os_error("cannot remove stale socket '" + path + "'");
      }
      break;
    case SocketProbe::kAbsent:
      break;
    case SocketProbe::kError:
      return os_error("cannot check '" + path + "'");
  }

  listener.fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listener.fd_ < 0) return os_error("socket");
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  if (bind(listener.fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    return os_error("cannot bind '" + path + "'");
  }
  struct stat info;
  if (stat(path.c_str(), &info) != 0) return os_error("'" + path + "'");
  listener.device_ = info.st_dev;
  listener.inode_ = info.st_ino;
  if (chmod(path.c_str(), 0666) != 0) return os_error("chmod '" + path + "'");
  if (listen(listener.fd_, 128) != 0) return os_error("listen on '" + path + "'");
  return listener;
}

Listener::Listener(Listener&& other) noexcept
    : fd_(other.fd_),
      lock_fd_(other.lock_fd_),
      path_(std::move(other.path_)),
      device_(other.device_),
      inode_(other.inode_) {
  other.fd_ = other.lock_fd_ = -1;
  other.inode_ = 0;
}

Listener::~Listener() {
  // Remove the socket file only if it is still the one we bound.
  struct stat info;
  if (fd_ >= 0 && inode_ != 0 && stat(path_.c_str(), &info) == 0 && info.st_dev == device_ &&
      info.st_ino == inode_) {
    unlink(path_.c_str());
  }
  if (fd_ >= 0) close(fd_);
  if (lock_fd_ >= 0) close(lock_fd_);
}

}  // namespace gpushare::coord::server
