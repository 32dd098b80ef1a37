#include "coord/contract/fd_passing.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

namespace gpushare::coord {

ssize_t send_with_fds(int socket_fd, const void* data, std::size_t size, const int* fds, int count,
                      int flags) {
  if (count < 0 || count > kMaxPassedFds) {
    errno = EINVAL;
    return -1;
  }
  iovec io{const_cast<void*>(data), size};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedFds)] = {};
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  if (count > 0) {
    std::size_t bytes = sizeof(int) * static_cast<std::size_t>(count);
    message.msg_control = control;
    message.msg_controllen = CMSG_SPACE(bytes);
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(bytes);
    memcpy(CMSG_DATA(header), fds, bytes);
  }
  return sendmsg(socket_fd, &message, flags | MSG_NOSIGNAL);
}

ssize_t receive_with_fds(int socket_fd, void* buffer, std::size_t size, int* fds, int max,
                         int* count, int flags) {
  iovec io{buffer, size};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedFds)];
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  ssize_t n = recvmsg(socket_fd, &message, flags | MSG_CMSG_CLOEXEC);
  if (n < 0) return n;
  for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    std::size_t received = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < received; ++i) {
      int fd;
      memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      if (*count < max) {
        fds[(*count)++] = fd;
      } else {
        close(fd);
      }
    }
  }
  return n;
}

}  // namespace gpushare::coord
