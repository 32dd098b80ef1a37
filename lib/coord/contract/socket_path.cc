#include "coord/contract/socket_path.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

namespace gpushare::coord {
namespace {

// sun_path holds 108 bytes including the NUL.
constexpr std::size_t kMaxSocketPath = sizeof(sockaddr_un{}.sun_path) - 1;

bool put(char* buffer, std::size_t size, const char* a, const char* b) {
  int n = snprintf(buffer, size, "%s%s", a, b);
  return n >= 0 && static_cast<std::size_t>(n) < size &&
         static_cast<std::size_t>(n) <= kMaxSocketPath;
}

bool exists(const char* path) {
  struct stat info;
  return lstat(path, &info) == 0;
}

}  // namespace

bool default_socket_path(char* buffer, std::size_t size, SocketSource* source,
                         const char* (*getenv_fn)(const char*)) {
  if (getenv_fn == nullptr)
    getenv_fn = [](const char* name) -> const char* { return getenv(name); };
  auto chose = [&](SocketSource s) {
    if (source != nullptr) *source = s;
  };
  const char* explicit_path = getenv_fn("GPUSHARE_SOCKET");
  if (explicit_path != nullptr && *explicit_path != '\0') {
    chose(SocketSource::kEnvironment);
    return put(buffer, size, explicit_path, "");
  }
  if (exists(kNodeSocketPath)) {
    chose(SocketSource::kNode);
    return put(buffer, size, kNodeSocketPath, "");
  }
  const char* runtime_dir = getenv_fn("XDG_RUNTIME_DIR");
  if (runtime_dir != nullptr && *runtime_dir == '/') {
    chose(SocketSource::kRuntimeDir);
    return put(buffer, size, runtime_dir, "/gpushare/gpushare.sock");
  }
  chose(SocketSource::kTmp);
  char tmp[64];
  snprintf(tmp, sizeof tmp, "/tmp/gpushare-%u", static_cast<unsigned>(getuid()));
  return put(buffer, size, tmp, "/gpushare.sock");
}

bool in_per_user_directory(const char* socket_path, const char* (*getenv_fn)(const char*)) {
  if (getenv_fn == nullptr)
    getenv_fn = [](const char* name) -> const char* { return getenv(name); };
  char directory[256];
  if (!socket_directory(socket_path, directory, sizeof directory)) return false;
  char candidate[256];
  const char* runtime_dir = getenv_fn("XDG_RUNTIME_DIR");
  if (runtime_dir != nullptr && *runtime_dir == '/' &&
      snprintf(candidate, sizeof candidate, "%s/gpushare", runtime_dir) <
          static_cast<int>(sizeof candidate) &&
      strcmp(directory, candidate) == 0) {
    return true;
  }
  snprintf(candidate, sizeof candidate, "/tmp/gpushare-%u", static_cast<unsigned>(getuid()));
  return strcmp(directory, candidate) == 0;
}

bool socket_directory(const char* socket_path, char* buffer, std::size_t size) {
  const char* slash = strrchr(socket_path, '/');
  if (slash == nullptr) return put(buffer, size, ".", "");
  std::size_t length = slash == socket_path ? 1 : static_cast<std::size_t>(slash - socket_path);
  if (length + 1 > size) return false;
  memcpy(buffer, socket_path, length);
  buffer[length] = '\0';
  return true;
}

SocketProbe probe_socket(const char* path, int* peer_pid, uid_t* peer_uid) {
  struct stat info;
  if (lstat(path, &info) != 0) return errno == ENOENT ? SocketProbe::kAbsent : SocketProbe::kError;
  if (!S_ISSOCK(info.st_mode)) return SocketProbe::kNotSocket;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (strlen(path) > kMaxSocketPath) return SocketProbe::kError;
  memcpy(address.sun_path, path, strlen(path) + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return SocketProbe::kError;
  SocketProbe result;
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
    result = SocketProbe::kLive;
    ucred credentials{};
    socklen_t length = sizeof credentials;
    bool known = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0;
    if (peer_pid != nullptr) *peer_pid = known ? static_cast<int>(credentials.pid) : 0;
    if (peer_uid != nullptr) *peer_uid = known ? credentials.uid : static_cast<uid_t>(-1);
  } else if (errno == EAGAIN) {
    // The listen backlog is full: someone is listening, just busy.
    result = SocketProbe::kLive;
    if (peer_pid != nullptr) *peer_pid = 0;
    if (peer_uid != nullptr) *peer_uid = static_cast<uid_t>(-1);
  } else if (errno == ECONNREFUSED) {
    result = SocketProbe::kStale;
  } else if (errno == ENOENT) {
    result = SocketProbe::kAbsent;
  } else {
    result = SocketProbe::kError;
  }
  close(fd);
  return result;
}

bool trusted_uid(uid_t uid) { return uid == 0 || uid == getuid() || uid == geteuid(); }

bool peer_is_trusted(int fd, uid_t* peer_uid) {
  ucred credentials{};
  socklen_t length = sizeof credentials;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0 ||
      length != sizeof credentials) {
    if (peer_uid != nullptr) *peer_uid = static_cast<uid_t>(-1);
    return false;
  }
  if (peer_uid != nullptr) *peer_uid = credentials.uid;
  return trusted_uid(credentials.uid);
}

DirectoryTrust check_private_directory(const char* directory, uid_t* owner) {
  struct stat info;
  if (lstat(directory, &info) != 0) {
    return errno == ENOENT ? DirectoryTrust::kAbsent : DirectoryTrust::kError;
  }
  if (owner != nullptr) *owner = info.st_uid;
  if (!S_ISDIR(info.st_mode)) return DirectoryTrust::kNotDirectory;
  if (!trusted_uid(info.st_uid)) return DirectoryTrust::kForeign;
  if ((info.st_mode & 077) != 0) return DirectoryTrust::kNotPrivate;
  return DirectoryTrust::kPrivate;
}

const char* directory_trust_name(DirectoryTrust trust) {
  switch (trust) {
    case DirectoryTrust::kPrivate:
      return "private";
    case DirectoryTrust::kAbsent:
      return "absent";
    case DirectoryTrust::kForeign:
      return "owned by another user";
    case DirectoryTrust::kNotPrivate:
      return "open to other users (it must be mode 0700)";
    case DirectoryTrust::kNotDirectory:
      return "not a directory (a link or a file)";
    case DirectoryTrust::kError:
      return "not readable";
  }
  return "not readable";
}

bool socket_directory_trusted(const char* socket_path, char* why, std::size_t why_size,
                              const char* (*getenv_fn)(const char*)) {
  if (!in_per_user_directory(socket_path, getenv_fn)) return true;
  char directory[256];
  if (!socket_directory(socket_path, directory, sizeof directory)) return false;
  uid_t owner = 0;
  DirectoryTrust trust = check_private_directory(directory, &owner);
  if (trust == DirectoryTrust::kPrivate || trust == DirectoryTrust::kAbsent) return true;
  if (why != nullptr && why_size > 0) {
    if (trust == DirectoryTrust::kForeign) {
      snprintf(why, why_size, "%s is owned by uid %u, not by this user", directory,
               static_cast<unsigned>(owner));
    } else {
      snprintf(why, why_size, "%s is %s", directory, directory_trust_name(trust));
    }
  }
  return false;
}

const char* probe_name(SocketProbe probe) {
  switch (probe) {
    case SocketProbe::kLive:
      return "live";
    case SocketProbe::kAbsent:
      return "absent";
    case SocketProbe::kStale:
      return "stale";
    case SocketProbe::kNotSocket:
      return "not a socket";
    case SocketProbe::kError:
      return "error";
  }
  return "error";
}

}  // namespace gpushare::coord
