// Sending descriptors with a message over a unix socket (SCM_RIGHTS), as
// both sides of the protocol do: the coordinator's memfds with
// `registered` and `yield-page`, the job's tree file with `register`.
// libc only: the job side links it.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace gpushare::coord {

/// At most this many descriptors go with one message.
inline constexpr int kMaxPassedFds = 4;

/// sendmsg of `size` bytes of `data` with `count` descriptors (0 to
/// kMaxPassedFds) attached to its first byte; `flags` as for sendmsg
/// (MSG_NOSIGNAL is always added). Returns what sendmsg returns; -1 with
/// EINVAL for a bad count.
ssize_t send_with_fds(int socket_fd, const void* data, std::size_t size, const int* fds, int count,
                      int flags);

}  // namespace gpushare::coord
