// How the coordinator knows that a registering process belongs to a job's
// process tree, without believing what it says.
//
// Every process of a job started by gpushare-run shares the job's tree file
// (GPUSHARE_TREE: a file in /dev/shm, private to the user, mode 0600; see
// lib/interpose/memory/tree.cc). A process proves it belongs to the tree by
// passing an open descriptor of that file with its register message
// (SCM_RIGHTS). The kernel vouches for the descriptor, so the coordinator
// reads the file's identity (device and inode) from it with fstat and
// believes no number a message carries. To be accepted, the file must be a
// regular file owned by the registering process's own uid (SO_PEERCRED)
// and open to nobody else (no group or other permission bits): another
// user cannot open it, so cannot join the job; a process that sends
// another file makes a tree of its own.
//
// The coordinator keeps the first member's descriptor for as long as the
// job lives: the open file holds the inode, so its number cannot be reused
// by a later file while the job it names exists.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "common/result.h"

namespace gpushare::coord::server {

class TreeProof {
 public:
  TreeProof() = default;
  /// Checks the descriptor (see the file comment) and takes it over: it is
  /// closed when the proof goes, whether or not it was accepted.
  static Result<TreeProof> verify(int fd, uid_t peer_uid);
  /// A proof with the given identity and no descriptor (for tests).
  static TreeProof for_test(std::uint64_t device, std::uint64_t inode, uid_t owner);

  TreeProof(TreeProof&& other) noexcept;
  TreeProof& operator=(TreeProof&& other) noexcept;
  TreeProof(const TreeProof&) = delete;
  TreeProof& operator=(const TreeProof&) = delete;
  ~TreeProof();

  bool valid() const { return inode_ != 0; }
  bool same_tree(const TreeProof& other) const {
    return valid() && device_ == other.device_ && inode_ == other.inode_ && owner_ == other.owner_;
  }
  uid_t owner() const { return owner_; }
  std::uint64_t inode() const { return inode_; }

 private:
  int fd_ = -1;
  std::uint64_t device_ = 0;
  std::uint64_t inode_ = 0;
  uid_t owner_ = 0;
};

/// Reads from a socket as recv(MSG_DONTWAIT) does, keeping the first
/// descriptor passed with the bytes in `*kept` while it is -1 (close-on-
/// exec) and closing any other, so that a peer cannot make the coordinator
/// hold descriptors.
ssize_t receive_keeping_descriptor(int socket, char* buffer, std::size_t size, int* kept);

}  // namespace gpushare::coord::server
