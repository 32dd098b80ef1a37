#include "simgpu/state.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "vocab/uuid.h"

namespace gpushare::simgpu {
namespace {

void set_error(char* error, std::size_t error_bytes, const char* format, const char* path,
               const char* detail) {
  std::snprintf(error, error_bytes, format, path, detail);
}

// Reads /proc/PID/stat into `buffer`; returns the text after the command
// name's closing parenthesis (which may itself contain spaces and ')').
const char* read_stat_fields(std::int32_t pid, char* buffer, std::size_t size) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  ssize_t got = ::read(fd, buffer, size - 1);
  ::close(fd);
  if (got <= 0) return nullptr;
  buffer[got] = '\0';
  const char* close_paren = std::strrchr(buffer, ')');
  if (close_paren == nullptr || close_paren[1] != ' ') return nullptr;
  return close_paren + 2;  // field 3, the state letter
}

void init_mutex(pthread_mutex_t* mutex) {
  pthread_mutexattr_t attributes;
  pthread_mutexattr_init(&attributes);
  pthread_mutexattr_setpshared(&attributes, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&attributes, PTHREAD_MUTEX_ROBUST);
  pthread_mutex_init(mutex, &attributes);
  pthread_mutexattr_destroy(&attributes);
}

void describe_devices(StateLayout* layout, const SimConfig& config) {
  for (DeviceState& device : layout->devices) {
    device.sched.policy = sched_policy_of(config);
    device.sched.slice_ns = config.timeslice_ns > 0 ? config.timeslice_ns : 1;
    device.sched.switch_ns = config.switch_ns > 0 ? config.switch_ns : 0;
    device.sched.cold_ns = config.cold_ns > 0 ? config.cold_ns : 0;
  }
  layout->header.device_count = static_cast<std::uint32_t>(config.device_count);
  layout->header.migrate_bytes_per_s = config.migrate_bytes_per_s;
  layout->header.managed_slowdown_milli = config.managed_slowdown_milli;
  layout->header.link_bytes_per_s = config.link_bytes_per_s;
  layout->header.link_latency_ns = config.link_latency_ns;
  layout->header.local_bytes_per_s = config.local_bytes_per_s;
  layout->header.evict = config.evict ? 1 : 0;
  layout->collectives.link_bytes_per_s = config.gpu_link_bytes_per_s;
  layout->collectives.link_latency_ns = config.gpu_link_latency_ns;
  for (int i = 0; i < kMaxDevices; ++i) {
    DeviceState& device = layout->devices[i];
    device.memory_bytes = config.devices[i].memory_bytes;
    device.ctx_overhead_bytes = config.devices[i].ctx_overhead_bytes;
    device.sms = config.devices[i].sms;
    device_uuid(i, device.uuid);
  }
}

}  // namespace

std::int64_t monotonic_ns() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

std::uint64_t process_start_ticks(std::int32_t pid) {
  char buffer[1024];
  const char* fields = read_stat_fields(pid, buffer, sizeof buffer);
  if (fields == nullptr) return 0;
  // The start time is field 22; `fields` begins at field 3.
  int field = 3;
  const char* cursor = fields;
  while (field < 22 && *cursor != '\0') {
    if (*cursor++ == ' ') ++field;
  }
  std::uint64_t ticks = 0;
  while (*cursor >= '0' && *cursor <= '9')
    ticks = ticks * 10 + static_cast<unsigned>(*cursor++ - '0');
  return ticks;
}

bool process_alive(std::int32_t pid, std::uint64_t start_ticks) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  char buffer[1024];
  const char* fields = read_stat_fields(pid, buffer, sizeof buffer);
  // Unreadable /proc (another pid namespace, hidepid): kill() said it exists.
  if (fields == nullptr) return true;
  // A zombie holds no GPU memory: its parent just has not reaped it yet.
  if (fields[0] == 'Z' || fields[0] == 'X') return false;
  if (start_ticks != 0) {
    std::uint64_t now_ticks = process_start_ticks(pid);
    if (now_ticks != 0 && now_ticks != start_ticks) return false;  // the pid was reused
  }
  return true;
}

void device_uuid(int index, std::uint8_t uuid[16]) {
  // splitmix64 over a fixed seed: stable across runs, distinct per device,
  // and shaped like a random (version 4) UUID.
  std::uint64_t state =
      0x67707573686172ull + static_cast<std::uint64_t>(index) * 0xd1342543de82ef95ull;
  for (int half = 0; half < 2; ++half) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    for (int i = 0; i < 8; ++i) uuid[half * 8 + i] = static_cast<std::uint8_t>(z >> (8 * i));
  }
  uuid[6] = static_cast<std::uint8_t>((uuid[6] & 0x0f) | 0x40);
  uuid[8] = static_cast<std::uint8_t>((uuid[8] & 0x3f) | 0x80);
}

void format_device_uuid(int index, char* text, std::size_t bytes) {
  std::uint8_t u[16];
  device_uuid(index, u);
  char full[kUuidTextBytes];
  format_uuid(u, full);
  std::snprintf(text, bytes, "%s", full);
}

int parse_visible_devices(const char* text, int physical_count, int visible[kMaxDevices]) {
  if (text == nullptr) {
    for (int i = 0; i < physical_count; ++i) visible[i] = i;
    return physical_count;
  }
  int count = 0;
  const char* cursor = text;
  while (*cursor != '\0' && count < kMaxDevices) {
    const char* end = std::strchr(cursor, ',');
    if (end == nullptr) end = cursor + std::strlen(cursor);
    const char* first = cursor;
    const char* last = end;
    while (first < last && (*first == ' ' || *first == '\t')) ++first;
    while (last > first && (last[-1] == ' ' || last[-1] == '\t')) --last;
    std::size_t length = static_cast<std::size_t>(last - first);
    int device = -1;
    if (length > 0 && length < 48 && strncasecmp(first, "GPU-", 4) == 0) {
      for (int i = 0; i < physical_count; ++i) {
        char uuid[48];
        format_device_uuid(i, uuid, sizeof uuid);
        if (strncasecmp(uuid, first, length) != 0) continue;
        if (device >= 0) {  // a prefix of two UUIDs names neither
          device = -1;
          break;
        }
        device = i;
      }
    } else if (length > 0 && length < 4) {
      int value = 0;
      bool digits = true;
      for (const char* c = first; c < last; ++c) {
        digits = digits && *c >= '0' && *c <= '9';
        value = value * 10 + (*c - '0');
      }
      if (digits && value < physical_count) device = value;
    }
    for (int i = 0; i < count && device >= 0; ++i) {
      if (visible[i] == device) device = -1;
    }
    if (device < 0) break;  // the list ends here
    visible[count++] = device;
    if (*end == '\0') break;
    cursor = end + 1;
  }
  return count;
}

void initialise_layout(StateLayout* layout, const SimConfig& config) {
  std::memset(layout, 0, sizeof *layout);
  std::memcpy(layout->header.magic, kStateMagic, sizeof kStateMagic);
  layout->header.layout_version = kStateLayoutVersion;
  layout->header.layout_bytes = sizeof(StateLayout);
  init_mutex(&layout->mutex);
  std::int64_t now = monotonic_ns();
  for (DeviceState& device : layout->devices) {
    sched_init(&device.sched, sched_policy_of(config), config.timeslice_ns, config.switch_ns, now,
               config.cold_ns);
  }
  describe_devices(layout, config);
  layout->header.ready = 1;
}

bool validate_layout(const StateLayout* layout, char* error, std::size_t error_bytes) {
  const StateHeader& header = layout->header;
  const char* problem = nullptr;
  if (std::memcmp(header.magic, kStateMagic, sizeof kStateMagic) != 0) {
    problem = "bad magic";
  } else if (header.layout_version != kStateLayoutVersion) {
    problem = "wrong layout version";
  } else if (header.layout_bytes != sizeof(StateLayout)) {
    problem = "wrong layout size";
  } else if (header.ready != 1) {
    problem = "never finished initialising";
  } else if (header.device_count < 1 || header.device_count > kMaxDevices) {
    problem = "device count out of range";
  } else if (header.managed_high_water > kMaxManaged) {
    problem = "managed table bound out of range";
  }
  for (int i = 0; problem == nullptr && i < kMaxDevices; ++i) {
    const DeviceState& device = layout->devices[i];
    bool link_ok = true;
    for (const LinkQueue& lane : device.link.lanes) link_ok = link_ok && link_valid(lane);
    if (!sched_valid(device.sched)) {
      problem = "inconsistent scheduler model";
    } else if (!link_ok) {
      problem = "inconsistent copy path";
    } else if (i < static_cast<int>(header.device_count) && device.memory_bytes == 0) {
      problem = "a device has no memory";
    }
  }
  for (int i = 0; problem == nullptr && i < kMaxProcesses; ++i) {
    if (layout->processes[i].pid < 0) problem = "negative pid in the process table";
  }
  if (problem == nullptr && !collective_valid(layout->collectives)) {
    problem = "inconsistent collectives table";
  }
  for (int i = 0; problem == nullptr && i < kMaxManaged; ++i) {
    const ManagedRecord& record = layout->managed[i];
    if (record.pid == 0) continue;
    if (record.pid < 0 || record.device < 0 ||
        record.device >= static_cast<int>(header.device_count) ||
        record.resident_bytes > record.size_bytes ||
        i >= static_cast<int>(header.managed_high_water)) {
      problem = "inconsistent managed-memory record";
    }
  }
  if (problem == nullptr) return true;
  std::snprintf(error, error_bytes, "corrupt state (%s)", problem);
  return false;
}

// Creates the directory of `path` mode 0700 if missing, and insists that it
// is a directory (not a link) of this user's that no one else may enter.
static bool prepare_private_directory(const char* path, char* error, std::size_t error_bytes) {
  char directory[kPathBytes];
  std::snprintf(directory, sizeof directory, "%s", path);
  char* slash = std::strrchr(directory, '/');
  if (slash == nullptr || slash == directory) return true;
  *slash = '\0';
  if (mkdir(directory, 0700) != 0 && errno != EEXIST) {
    set_error(error, error_bytes, "cannot create %s: %s", directory, std::strerror(errno));
    return false;
  }
  struct stat info;
  if (lstat(directory, &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != geteuid() ||
      (info.st_mode & 077) != 0) {
    set_error(error, error_bytes,
              "refusing %s for the simulated GPU state: it must be a directory of this user's, "
              "mode 0700%s (or set GPUSHARE_SIM_STATE)",
              directory, "");
    return false;
  }
  return true;
}

namespace {

// Never through a link, and only a file of this user's (or root's) that
// nobody else may write: another user's file could be truncated under us.
// The descriptor, or -1 with `error` set.
int open_own_file(const char* path, char* error, std::size_t error_bytes) {
  int fd = ::open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW, 0600);
  if (fd < 0) {
    set_error(error, error_bytes, "cannot open the simulated GPU state file %s: %s", path,
              errno == ELOOP ? "it is a symbolic link" : std::strerror(errno));
    return -1;
  }
  struct stat owner;
  if (fstat(fd, &owner) == 0 &&
      ((owner.st_uid != geteuid() && owner.st_uid != 0) || (owner.st_mode & 022) != 0)) {
    char detail[64];
    std::snprintf(detail, sizeof detail, "uid %u, mode %03o", static_cast<unsigned>(owner.st_uid),
                  static_cast<unsigned>(owner.st_mode & 0777));
    set_error(error, error_bytes,
              "refusing the simulated GPU state file %s (%s): it must be this user's and "
              "writable by no one else",
              path, detail);
    ::close(fd);
    return -1;
  }
  return fd;
}

// An empty file: sized, mapped and initialised from `config`.
void* map_new_state(int fd, const char* path, const SimConfig& config, char* error,
                    std::size_t error_bytes) {
  if (ftruncate(fd, sizeof(StateLayout)) != 0) {
    set_error(error, error_bytes, "cannot size the state file %s: %s", path, std::strerror(errno));
    return MAP_FAILED;
  }
  void* mapping = mmap(nullptr, sizeof(StateLayout), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mapping == MAP_FAILED) {
    set_error(error, error_bytes, "cannot map %s: %s", path, std::strerror(errno));
    return MAP_FAILED;
  }
  initialise_layout(static_cast<StateLayout*>(mapping), config);
  return mapping;
}

// validate_layout() under the state's lock, waited for at most 2 s; false
// (and `error` left as it was) when the lock cannot be taken.
bool validate_locked(StateLayout* layout, char* error, std::size_t error_bytes) {
  timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += 2;
  int status;
  do {
    status = pthread_mutex_clocklock(&layout->mutex, CLOCK_MONOTONIC, &deadline);
  } while (status == EINTR);
  if (status == EOWNERDEAD) {
    pthread_mutex_consistent(&layout->mutex);  // as StateFile::lock() does
  } else if (status != 0) {
    return false;
  }
  bool valid = validate_layout(layout, error, error_bytes);
  pthread_mutex_unlock(&layout->mutex);
  return valid;
}

// A file that should already be ours: its header, size and layout checked
// before and after mapping; anything else is refused with what to do.
void* map_existing_state(int fd, const char* path, off_t size, char* error,
                         std::size_t error_bytes) {
  StateHeader header;
  std::memset(&header, 0, sizeof header);
  ssize_t got = pread(fd, &header, sizeof header, 0);
  char detail[160];
  if (got != static_cast<ssize_t>(sizeof header) ||
      std::memcmp(header.magic, kStateMagic, sizeof kStateMagic) != 0) {
    set_error(error, error_bytes,
              "%s is not a gpushare simulated GPU state file%s (remove it, or point "
              "GPUSHARE_SIM_STATE elsewhere)",
              path, "");
    return MAP_FAILED;
  }
  if (header.layout_version != kStateLayoutVersion) {
    std::snprintf(detail, sizeof detail, "%u, but this simulator reads version %u",
                  header.layout_version, kStateLayoutVersion);
    set_error(error, error_bytes,
              "%s has state layout version %s; remove it once no process uses it", path, detail);
    return MAP_FAILED;
  }
  if (header.layout_bytes != sizeof(StateLayout) ||
      size != static_cast<off_t>(sizeof(StateLayout))) {
    std::snprintf(detail, sizeof detail, "%lld bytes, expected %zu", static_cast<long long>(size),
                  sizeof(StateLayout));
    set_error(error, error_bytes, "%s is truncated or corrupt (%s); remove it", path, detail);
    return MAP_FAILED;
  }
  void* mapping = mmap(nullptr, sizeof(StateLayout), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mapping == MAP_FAILED) {
    set_error(error, error_bytes, "cannot map %s: %s", path, std::strerror(errno));
    return MAP_FAILED;
  }
  // Checked first without the lock (a file of garbage may hold no usable
  // lock), then, if that fails, again under it: other processes update the
  // state under the lock, and a check between two of their writes would
  // call a sound file corrupt.
  if (!validate_layout(static_cast<StateLayout*>(mapping), detail, sizeof detail) &&
      !validate_locked(static_cast<StateLayout*>(mapping), detail, sizeof detail)) {
    set_error(error, error_bytes, "%s: %s; remove it", path, detail);
    munmap(mapping, sizeof(StateLayout));
    return MAP_FAILED;
  }
  return mapping;
}

}  // namespace

bool StateFile::open(const SimConfig& config, char* error, std::size_t error_bytes) {
  close();
  std::snprintf(path_, sizeof path_, "%s", config.state_path);
  if (config.state_in_private_directory && !prepare_private_directory(path_, error, error_bytes)) {
    return false;
  }
  int fd = open_own_file(path_, error, error_bytes);
  if (fd < 0) return false;
  // The creator initialises under an exclusive flock; others wait for it.
  while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {
  }
  struct stat info;
  void* mapping = MAP_FAILED;
  if (fstat(fd, &info) != 0) {
    set_error(error, error_bytes, "cannot stat %s: %s", path_, std::strerror(errno));
  } else if (!S_ISREG(info.st_mode)) {
    set_error(error, error_bytes, "%s is not a regular file, so not a simulated GPU state file%s",
              path_, "");
  } else if (info.st_size == 0) {
    mapping = map_new_state(fd, path_, config, error, error_bytes);
  } else {
    mapping = map_existing_state(fd, path_, info.st_size, error, error_bytes);
  }
  flock(fd, LOCK_UN);
  if (mapping == MAP_FAILED) {
    ::close(fd);
    return false;
  }
  fd_ = fd;
  layout_ = static_cast<StateLayout*>(mapping);
  return true;
}

void StateFile::close() {
  if (layout_ != nullptr) munmap(layout_, sizeof(StateLayout));
  if (fd_ >= 0) ::close(fd_);
  layout_ = nullptr;
  fd_ = -1;
}

bool StateFile::lock(char* error, std::size_t error_bytes) {
  timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += kLockTimeoutNs / 1000000000;
  int status;
  do {
    status = pthread_mutex_clocklock(&layout_->mutex, CLOCK_MONOTONIC, &deadline);
  } while (status == EINTR);
  if (status == 0) return true;
  if (status == EOWNERDEAD) {
    // The holder died mid-update. Every update keeps the indexing
    // invariants, and used bytes are always re-summed from their parts, so
    // marking the lock consistent and reclaiming the dead is enough.
    pthread_mutex_consistent(&layout_->mutex);
    char detail[160];
    if (!validate_layout(layout_, detail, sizeof detail)) {
      pthread_mutex_unlock(&layout_->mutex);
      set_error(error, error_bytes, "%s: %s after a process died holding its lock; remove it",
                path_, detail);
      return false;
    }
    reclaim_dead(layout_, process_alive);
    return true;
  }
  if (status == ETIMEDOUT) {
    set_error(error, error_bytes,
              "timed out waiting for the lock of %s; is a process using the simulated GPU "
              "stopped%s?",
              path_, "");
  } else if (status == ENOTRECOVERABLE) {
    set_error(error, error_bytes, "the lock of %s is unrecoverable%s; remove the file", path_, "");
  } else {
    set_error(error, error_bytes, "cannot lock %s: %s", path_, std::strerror(status));
  }
  return false;
}

void StateFile::unlock() { pthread_mutex_unlock(&layout_->mutex); }

int reclaim_dead(StateLayout* layout, Liveness alive) {
  int reclaimed = 0;
  for (int i = 0; i < kMaxProcesses; ++i) {
    ProcessSlot& slot = layout->processes[i];
    if (slot.pid != 0 && !alive(slot.pid, slot.start_ticks)) {
      detach_process(layout, i);
      ++reclaimed;
    }
  }
  // Records whose owner lost its slot half-way through a detach.
  for (std::uint32_t i = 0; i < managed_bound(layout); ++i) {
    ManagedRecord& record = layout->managed[i];
    if (record.pid == 0) continue;
    bool owned = false;
    for (int j = 0; j < kMaxProcesses && !owned; ++j)
      owned = layout->processes[j].pid == record.pid;
    if (!owned) {
      ++layout->devices[managed_device_index(record)].managed_generation;
      std::memset(&record, 0, sizeof record);
    }
  }
  shrink_managed_high_water(layout);
  return reclaimed;
}

int attach_process(StateLayout* layout, std::int32_t pid, std::uint64_t start_ticks,
                   const char* name) {
  int free_slot = -1;
  for (int i = 0; i < kMaxProcesses; ++i) {
    ProcessSlot& slot = layout->processes[i];
    // Our own pid and start time: left by this process before it exec()ed
    // (a process initialises the driver once per program image). A new
    // image holds nothing yet, as after exec on a real GPU.
    if (slot.pid == pid && slot.start_ticks == start_ticks) detach_process(layout, i);
    if (slot.pid == 0 && free_slot < 0) free_slot = i;
  }
  if (free_slot < 0) return -1;
  ProcessSlot& slot = layout->processes[free_slot];
  std::memset(&slot, 0, sizeof slot);
  slot.start_ticks = start_ticks;
  std::snprintf(slot.name, sizeof slot.name, "%s", name != nullptr ? name : "");
  slot.pid = pid;
  return free_slot;
}

void detach_process(StateLayout* layout, int slot_index) {
  ProcessSlot& slot = layout->processes[slot_index];
  std::int32_t pid = slot.pid;
  if (pid == 0) return;
  for (std::uint32_t i = 0; i < managed_bound(layout); ++i) {
    ManagedRecord& record = layout->managed[i];
    if (record.pid != pid) continue;
    ++layout->devices[managed_device_index(record)].managed_generation;
    std::memset(&record, 0, sizeof record);
  }
  shrink_managed_high_water(layout);
  // Its unfinished kernels die with it, as a context's work does; what ran
  // until now stays in the device's busy time.
  std::int64_t now = monotonic_ns();
  if (layout->collectives.open_ops > 0) collective_settle(layout, now);
  for (DeviceState& device : layout->devices) {
    sched_advance(&device.sched, now);
    sched_drop(&device.sched, slot_index);
  }
  collective_forget_slot(layout, slot_index, monotonic_ns());
  std::memset(&slot, 0, sizeof slot);
}

int live_process_count(const StateLayout* layout) {
  int count = 0;
  for (int i = 0; i < kMaxProcesses; ++i) count += layout->processes[i].pid != 0;
  return count;
}

bool config_matches(const StateLayout* layout, const SimConfig& config) {
  const SchedModel& sched = layout->devices[0].sched;
  if (sched.policy != sched_policy_of(config) || sched.slice_ns != config.timeslice_ns ||
      sched.switch_ns != config.switch_ns || sched.cold_ns != config.cold_ns) {
    return false;
  }
  if (layout->header.device_count != static_cast<std::uint32_t>(config.device_count) ||
      layout->header.migrate_bytes_per_s != config.migrate_bytes_per_s ||
      layout->header.managed_slowdown_milli != config.managed_slowdown_milli ||
      layout->header.link_bytes_per_s != config.link_bytes_per_s ||
      layout->header.link_latency_ns != config.link_latency_ns ||
      layout->header.local_bytes_per_s != config.local_bytes_per_s ||
      layout->header.evict != (config.evict ? 1u : 0u) ||
      layout->collectives.link_bytes_per_s != config.gpu_link_bytes_per_s ||
      layout->collectives.link_latency_ns != config.gpu_link_latency_ns) {
    return false;
  }
  for (int i = 0; i < config.device_count; ++i) {
    const DeviceState& device = layout->devices[i];
    if (device.memory_bytes != config.devices[i].memory_bytes ||
        device.ctx_overhead_bytes != config.devices[i].ctx_overhead_bytes ||
        device.sms != config.devices[i].sms) {
      return false;
    }
  }
  return true;
}

void reconfigure(StateLayout* layout, const SimConfig& config) { describe_devices(layout, config); }

void shrink_managed_high_water(StateLayout* layout) {
  std::uint32_t& high = layout->header.managed_high_water;
  if (high > kMaxManaged) high = kMaxManaged;
  while (high > 0 && layout->managed[high - 1].pid == 0) --high;
}

SchedModel* settled_model(StateLayout* layout, int device) {
  SchedModel* model = &layout->devices[device].sched;
  if (layout->collectives.open_ops > 0) {
    collective_settle(layout, monotonic_ns());
  } else {
    sched_advance(model, monotonic_ns());
  }
  return model;
}

SchedPolicy sched_policy_of(const SimConfig& config) {
  return config.sched_policy == 1 ? SchedPolicy::kFifo : SchedPolicy::kTimeslice;
}

}  // namespace gpushare::simgpu
