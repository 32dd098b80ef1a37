// The job's tree file: the memory a job's processes
// share so that their charges add up against one limit per device. Its
// layout, and the few operations its three users share: the interposer
// joins it (tree.cc), gpushare-run creates it and its janitor removes it
// once no process of the job is left (lib/runner/job_tree.cc), and the
// coordinator takes a descriptor of it as the proof that a process belongs
// to the job (lib/coord/server/registry/tree_identity.h).
//
// Plain libc only: this is compiled into the interposer.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace gpushare::coord {

inline constexpr std::uint32_t kTreeMagic = 0x45525447;  // "GTRE" little-endian
inline constexpr std::uint32_t kTreeVersion = 3;
inline constexpr int kTreeSlots = 256;
inline constexpr int kTreeDevices = 16;

struct TreeDevice {
  std::atomic<std::uint32_t> ready;  // 1 once uuid is written
  std::uint32_t pad;
  unsigned char uuid[16];
  std::atomic<std::uint64_t> held;  // the tree's sum
  // Version 3: the largest context any process of the job measured on this
  // device, which every later context of the job reserves before it exists.
  std::atomic<std::uint64_t> context_bytes;
};

struct TreeSlot {
  std::atomic<std::int32_t> pid;  // 0 free, -1 being reclaimed
  std::uint32_t pad;
  std::atomic<std::uint64_t> start_time;
  std::atomic<std::uint64_t> held[kTreeDevices];  // by TreeDevice index
};

struct TreeFile {
  std::uint32_t magic;
  std::uint32_t version;
  std::int32_t creator_pid;  // version 2: the process that created the file
  std::uint32_t flags;       // version 3: kTreeHasJanitor
  std::uint64_t creator_start_time;
  TreeDevice devices[kTreeDevices];
  TreeSlot slots[kTreeSlots];
};

/// A janitor (gpushare-run's) removes the file; without it, the process
/// that created the file removes it when it exits, whatever program it runs
/// by then (a script that ends with exec).
inline constexpr std::uint32_t kTreeHasJanitor = 1;

/// Creates a new tree file, private to the user (O_EXCL, mode 0600, a
/// random name under /dev/shm), sized and stamped with its creator and
/// `flags`; its path goes to `path`. Returns a read-write descriptor
/// (close-on-exec), or -1 with errno set.
int create_tree_file(char* path, std::size_t size, std::uint32_t flags);

/// Creates a new tree file at `path` (O_EXCL, mode 0600, no link
/// followed) for a job of another user: owned by `owner` and `group`,
/// stamped kTreeHasJanitor (whoever made it removes it; no process of the
/// job does). The Slurm Prolog, as root, makes one per job and node so that
/// the job's tasks, which Slurm starts as separate process trees, are one
/// job (gpushare-ctl tree-file). Returns 0, or -1 with errno set and no
/// file left behind.
int create_tree_file_at(const char* path, uid_t owner, gid_t group);

/// Whether the file at `path` is the user's own tree file, created by this
/// very process (same pid and start time: a program it exec'd) and removed
/// by no janitor: then this program removes it at exit.
bool created_by_this_process(const char* path);

/// When the process started (field 22 of /proc/PID/stat, in clock ticks);
/// 0 when it cannot be read.
std::uint64_t process_start_time(pid_t pid);

/// Whether the process that took a slot is gone: no such pid, or the pid
/// now names a process started at another time.
bool process_is_gone(pid_t pid, std::uint64_t start_time);

/// Whether /proc/PID/environ (PID a name in the directory `proc_dir`)
/// holds `entry` ("GPUSHARE_TREE=PATH") as a whole variable. Reads in
/// chunks: no allocation, any environment size.
bool environment_holds(int proc_dir, const char* pid, const char* entry);

/// Removes the user's tree files that no process can use any more: their
/// creator is gone, no slot's process lives, and no process of the user
/// names the file in its environment (a descendant that has not used a
/// device yet). A job whose processes were all killed (SIGKILL runs no
/// cleanup) and that had no gpushare-run janitor (the interposer preloaded
/// by hand or by a Slurm TaskProlog) leaves its file behind; the next
/// process of the same user to start a tree collects it. Returns how many
/// files it removed.
int sweep_stale_tree_files();

}  // namespace gpushare::coord
