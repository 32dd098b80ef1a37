// A job is a process tree: one memory limit for
// everything gpushare-run starts, per device, summed over the processes.
//
// gpushare-run creates a small shared file, private to the user (/dev/shm,
// O_EXCL, mode 0600, a random name; tree_file.h), and puts its path in
// GPUSHARE_TREE, which every descendant inherits; a janitor it leaves
// behind removes the file once no process of the job is left
// (lib/runner/job_tree.cc). Without gpushare-run (the interposer preloaded
// by hand), the first process that loads the interposer creates the file
// and removes it at its exit. Each process that uses a
// device joins the file when its devices are enumerated: it takes a slot
// (its pid and start time) and, per device, counts what it holds in its
// slot and in the tree's sum, both in the file. Devices are matched by
// UUID, since the tree's processes may see them under different indexes
// (torchrun gives each worker its own CUDA_VISIBLE_DEVICES). A reservation
// is a compare-and-swap on the tree's sum against the limit (accounting.h),
// so the processes of a job can never pass the limit together.
//
// A process that exits gives its slot back (a destructor); one that is
// killed leaves its slot, and the first reservation of the tree that is
// refused reclaims the slots of dead processes (a pid that no longer exists,
// or that now belongs to a process started at another time) and tries once
// more. Joining is serialised with flock(2) on the file, which dies with
// its holder.
//
// Each process registers with the coordinator on its own, passing a
// descriptor of this file as the proof that it belongs to the job, so the
// coordinator shows and controls the tree as one job (one limit, one pause;
// lib/coord/server/registry/tree_identity.h). A descendant that clears its
// environment, or that starts after the file is gone, counts on its own.
#include "interpose/memory/tree.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "interpose/core/log.h"
#include "interpose/core/runtime.h"
#include "coord/contract/tree_file.h"
#include "vocab/env.h"

namespace gpushare::interpose {
namespace {

using coord::create_tree_file;
using coord::created_by_this_process;
using coord::kTreeHasJanitor;
using coord::kTreeSlots;
using coord::kTreeDevices;
using coord::kTreeMagic;
using coord::kTreeVersion;
using coord::process_is_gone;
using coord::process_start_time;
using coord::sweep_stale_tree_files;
using coord::TreeDevice;
using coord::TreeFile;
using coord::TreeSlot;

TreeFile* g_tree = nullptr;
TreeSlot* g_slot = nullptr;
// Kept open for flock(2) around a first context measurement; reopened by a
// forked child (whose inherited descriptor shares its parent's lock).
int g_tree_fd = -1;
int g_tree_device_of[kMaxDevices];  // a device index -> its TreeDevice, or -1
pthread_mutex_t g_measure_mutex = PTHREAD_MUTEX_INITIALIZER;

// A child forked while another thread measured must not inherit the mutex
// held by a thread it does not have.
void reset_measure_mutex_in_child() {
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  std::memcpy(&g_measure_mutex, &fresh, sizeof fresh);
}
pid_t g_creator = 0;  // the process that created the file, which unlinks it
char g_created_path[128] = "";
// The file join_process_tree opened; empty when none.
char g_joined_path[128] = "";

// Frees `slot` (held by `pid`), giving its charges back to the tree's sums.
bool free_slot(TreeFile* tree, TreeSlot& slot, std::int32_t pid) {
  if (!slot.pid.compare_exchange_strong(pid, -1, std::memory_order_acq_rel)) return false;
  for (int d = 0; d < kTreeDevices; ++d) {
    std::uint64_t bytes = slot.held[d].exchange(0, std::memory_order_acq_rel);
    std::uint64_t sum = tree->devices[d].held.load(std::memory_order_relaxed);
    while (!tree->devices[d].held.compare_exchange_weak(sum, sum > bytes ? sum - bytes : 0)) {
    }
  }
  slot.pid.store(0, std::memory_order_release);
  return true;
}

bool reclaim_dead() {
  TreeFile* tree = g_tree;
  if (tree == nullptr) return false;
  bool found = false;
  for (TreeSlot& slot : tree->slots) {
    std::int32_t pid = slot.pid.load(std::memory_order_acquire);
    if (pid <= 0 || pid == getpid() || !process_is_gone(pid, slot.start_time.load())) continue;
    if (!free_slot(tree, slot, pid)) continue;
    GS_INFO("gave back the charges of process %d of this job, which is gone", pid);
    found = true;
  }
  return found;
}

// A slot under this process's own pid at join time belongs to the program
// it ran before an exec (a process joins once per program image): exec
// freed that program's device memory, so its charges go too.
void reclaim_before_exec(TreeFile* tree) {
  for (TreeSlot& slot : tree->slots) {
    std::int32_t pid = slot.pid.load(std::memory_order_acquire);
    if (pid == getpid() && free_slot(tree, slot, pid)) {
      GS_DEBUG("gave back the charges of the program this process ran before exec");
    }
  }
}

TreeSlot* claim_slot(TreeFile* tree) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    for (TreeSlot& slot : tree->slots) {
      std::int32_t free = 0;
      if (slot.pid.compare_exchange_strong(free, getpid(), std::memory_order_acq_rel)) {
        slot.start_time.store(process_start_time(getpid()), std::memory_order_release);
        return &slot;
      }
    }
    if (!reclaim_dead()) break;
  }
  return nullptr;
}

int tree_device(TreeFile* tree, const CUuuid& uuid) {
  for (int d = 0; d < kTreeDevices; ++d) {
    TreeDevice& device = tree->devices[d];
    if (device.ready.load(std::memory_order_acquire) == 0) {
      std::memcpy(device.uuid, uuid.bytes, 16);
      device.ready.store(1, std::memory_order_release);
      return d;
    }
    if (std::memcmp(device.uuid, uuid.bytes, 16) == 0) return d;
  }
  return -1;
}

TreeFile* open_tree(const char* path, int* fd_out) {
  int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return nullptr;
  struct stat info {};
  // Only the user's own file, private, of the right size.
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode) || info.st_uid != geteuid() ||
      (info.st_mode & 077) != 0 || info.st_size != static_cast<off_t>(sizeof(TreeFile))) {
    GS_WARN("GPUSHARE_TREE %s is not this user's private job file; counting on our own", path);
    close(fd);
    return nullptr;
  }
  void* memory = mmap(nullptr, sizeof(TreeFile), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (memory == MAP_FAILED) {
    close(fd);
    return nullptr;
  }
  auto* tree = static_cast<TreeFile*>(memory);
  if (tree->magic != kTreeMagic || tree->version != kTreeVersion) {
    munmap(memory, sizeof(TreeFile));
    close(fd);
    return nullptr;
  }
  *fd_out = fd;
  return tree;
}

// The first process of the job creates the file before main, so that every
// process it starts inherits its path.
// Priority 101: before every default constructor, read_settings_at_load
// (startup.cc) included, which must see the variable this one sets.
__attribute__((constructor(101))) void create_tree_for_job() {
  pthread_atfork(nullptr, nullptr, &reset_measure_mutex_in_child);
  // Before main, so before interpose/core/settings.cc reads the environment:
  // this constructor writes GPUSHARE_TREE for the job's children.
  const char* existing = std::getenv(env::kTree);
  if (std::getenv(env::kDisable) != nullptr) return;
  if (existing != nullptr && *existing != '\0') {
    // A program this process exec'd after creating the file (a script
    // ending with exec): the duty to remove it at exit passes to it.
    if (std::strlen(existing) < sizeof g_created_path && created_by_this_process(existing)) {
      std::snprintf(g_created_path, sizeof g_created_path, "%s", existing);
      g_creator = getpid();
    }
    return;
  }
  // Files of this user's earlier jobs killed without a janitor.
  sweep_stale_tree_files();
  int fd = create_tree_file(g_created_path, sizeof g_created_path, 0);
  if (fd < 0) return;
  close(fd);
  if (setenv(env::kTree, g_created_path, 1) != 0) {
    unlink(g_created_path);
    return;
  }
  g_creator = getpid();
}

__attribute__((destructor)) void leave_tree() {
  if (g_tree != nullptr && g_slot != nullptr && g_slot->pid.load() == getpid()) {
    for (int d = 0; d < kTreeDevices; ++d) {
      std::uint64_t bytes = g_slot->held[d].exchange(0);
      std::uint64_t sum = g_tree->devices[d].held.load(std::memory_order_relaxed);
      while (!g_tree->devices[d].held.compare_exchange_weak(sum, sum > bytes ? sum - bytes : 0)) {
      }
    }
    g_slot->pid.store(0, std::memory_order_release);
  }
  if (g_creator != 0 && g_creator == getpid()) unlink(g_created_path);
}

}  // namespace

void join_process_tree(int device_count) {
  const char* path = g_runtime.settings.tree_path;
  if (*path == '\0' || g_runtime.settings.disabled) return;
  int fd = -1;
  TreeFile* tree = open_tree(path, &fd);
  if (tree == nullptr) return;
  std::snprintf(g_joined_path, sizeof g_joined_path, "%s", path);
  for (int& d : g_tree_device_of) d = -1;
  flock(fd, LOCK_EX);
  g_tree = tree;
  reclaim_before_exec(tree);
  TreeSlot* slot = claim_slot(tree);
  if (slot == nullptr) {
    GS_WARN("the job's process tree has no free slot; this process counts on its own");
  } else {
    g_slot = slot;
    for (int index = 0; index < device_count && index < kMaxDevices; ++index) {
      int d = tree_device(tree, g_runtime.devices[index].uuid);
      if (d < 0) continue;
      g_tree_device_of[index] = d;
      g_runtime.devices[index].budget.attach(&tree->devices[d].held, &slot->held[d], &reclaim_dead);
    }
    GS_DEBUG("joined the job's process tree (%s)", path);
  }
  flock(fd, LOCK_UN);
  if (g_tree_fd >= 0) close(g_tree_fd);  // a forked child's copy of its parent's
  g_tree_fd = fd;
}

std::uint64_t tree_context_bytes(int device) {
  if (g_tree == nullptr || g_slot == nullptr || device < 0 || device >= kMaxDevices) return 0;
  int d = g_tree_device_of[device];
  return d < 0 ? 0 : g_tree->devices[d].context_bytes.load(std::memory_order_acquire);
}

void note_tree_context_bytes(int device, std::uint64_t bytes) {
  if (g_tree == nullptr || g_slot == nullptr || device < 0 || device >= kMaxDevices) return;
  int d = g_tree_device_of[device];
  if (d < 0) return;
  std::atomic<std::uint64_t>& largest = g_tree->devices[d].context_bytes;
  std::uint64_t seen = largest.load(std::memory_order_relaxed);
  while (bytes > seen && !largest.compare_exchange_weak(seen, bytes, std::memory_order_acq_rel)) {
  }
}

bool lock_tree_measurement() {
  if (g_tree == nullptr || g_slot == nullptr || g_tree_fd < 0) return false;
  // flock serialises processes only (a second thread's flock on the same
  // descriptor succeeds at once): the mutex serialises this one's threads.
  pthread_mutex_lock(&g_measure_mutex);
  while (flock(g_tree_fd, LOCK_EX) != 0) {
    if (errno != EINTR) {
      pthread_mutex_unlock(&g_measure_mutex);
      return false;
    }
  }
  return true;
}

void unlock_tree_measurement() {
  flock(g_tree_fd, LOCK_UN);
  pthread_mutex_unlock(&g_measure_mutex);
}

const char* joined_tree_path() { return g_joined_path[0] != '\0' ? g_joined_path : nullptr; }

}  // namespace gpushare::interpose
