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

/// recvmsg of up to `size` bytes into `buffer` (flags as for recvmsg;
/// MSG_CMSG_CLOEXEC is always added). Each descriptor that comes with the
/// bytes is appended to `fds` while `*count` is below `max`, and closed
/// otherwise: a peer cannot make us hold more than we expect. Descriptors
/// beyond kMaxPassedFds in one message are closed by the kernel. Returns
/// what recvmsg returns.
ssize_t receive_with_fds(int socket_fd, void* buffer, std::size_t size, int* fds, int max,
                         int* count, int flags);

}  // namespace gpushare::coord
