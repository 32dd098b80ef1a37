#include "coord/server/registry/tree_identity.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <utility>

#include "coord/contract/fd_passing.h"

namespace gpushare::coord::server {

Result<TreeProof> TreeProof::verify(int fd, uid_t peer_uid) {
  TreeProof proof;
  proof.fd_ = fd;  // closed with `proof` on every path that refuses it
  struct stat info {};
  if (fd < 0 || fstat(fd, &info) != 0) return make_error("the tree descriptor cannot be read");
  if (!S_ISREG(info.st_mode)) return make_error("the tree descriptor is not a regular file");
  if (info.st_uid != peer_uid) {
    return make_error("the tree file belongs to uid " + std::to_string(info.st_uid) +
                      ", not to the registering uid " + std::to_string(peer_uid));
  }
  if ((info.st_mode & 077) != 0) {
    return make_error("the tree file is open to other users (mode " +
                      std::to_string(info.st_mode & 0777) + " decimal)");
  }
  proof.device_ = static_cast<std::uint64_t>(info.st_dev);
  proof.inode_ = static_cast<std::uint64_t>(info.st_ino);
  proof.owner_ = info.st_uid;
  return proof;
}

TreeProof TreeProof::for_test(std::uint64_t device, std::uint64_t inode, uid_t owner) {
  TreeProof proof;
  proof.device_ = device;
  proof.inode_ = inode;
  proof.owner_ = owner;
  return proof;
}

TreeProof::TreeProof(TreeProof&& other) noexcept { *this = std::move(other); }

TreeProof& TreeProof::operator=(TreeProof&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    device_ = std::exchange(other.device_, 0);
    inode_ = std::exchange(other.inode_, 0);
    owner_ = other.owner_;
  }
  return *this;
}

TreeProof::~TreeProof() {
  if (fd_ >= 0) close(fd_);
}

ssize_t receive_keeping_descriptor(int socket, char* buffer, std::size_t size, int* kept) {
  // The first descriptor is kept; any other, now or later, is closed.
  int count = *kept >= 0 ? 1 : 0;
  return receive_with_fds(socket, buffer, size, kept, 1, &count, MSG_DONTWAIT);
}

}  // namespace gpushare::coord::server
