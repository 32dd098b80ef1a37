// The coordinator's listening socket, with the rules for taking it over:
//
//   - A lock file beside the socket (PATH.lock, flock held for the
//     coordinator's life) makes "is a coordinator running?" race-free: two
//     coordinators starting at once cannot both win, and a SIGKILLed one
//     releases the lock with its last file descriptor. The lock file is
//     never removed (removing it would reopen the race).
//   - Holding the lock, a socket file that accepts connections belongs to a
//     live coordinator (one that predates the lock convention): refuse. One
//     that refuses connections is stale (its coordinator died): replace it.
//     Anything else at the path is left alone: refuse.
//   - The socket is mode 0666: who may connect is decided by the directory
//     (0700 for a per-user coordinator) and, per request, by peer
//     credentials.
#pragma once

#include <sys/types.h>

#include <string>

#include "common/result.h"

namespace gpushare::coord::server {

/// Creates the socket's directory if missing (0700 when `private_directory`,
/// else 0755) and, for a private one, insists that it is a directory of this
/// user's, closed to others. Listener::open does this first; serve calls it
/// before opening a log file beside the socket.
Status prepare_socket_directory(const std::string& socket_path, bool private_directory);

class Listener {
 public:
  /// Binds `path`. `private_directory`: create the parent directory mode
  /// 0700 if missing and insist that it is ours and private (the per-user
  /// defaults); otherwise create a missing parent mode 0755.
  static Result<Listener> open(const std::string& path, bool private_directory);

  Listener(Listener&& other) noexcept;
  Listener& operator=(Listener&& other) = delete;
  Listener(const Listener&) = delete;
  ~Listener();

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  Listener() = default;
  int fd_ = -1;
  int lock_fd_ = -1;
  std::string path_;
  dev_t device_ = 0;
  ino_t inode_ = 0;
};

}  // namespace gpushare::coord::server
