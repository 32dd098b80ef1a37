#include "coord/server/registry/control_block_owner.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <new>
#include <string>

namespace gpushare::coord::server {
namespace {

Error os_error(const std::string& what) { return make_error(what + ": " + std::strerror(errno)); }

// A memfd of one page, mapped writable here.
Result<void*> create_page(const char* name, int* fd_out) {
  int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return os_error("memfd_create");
  if (ftruncate(fd, static_cast<off_t>(kControlPageBytes)) != 0) {
    Error error = os_error("ftruncate of the control block");
    close(fd);
    return error;
  }
  void* page = mmap(nullptr, kControlPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (page == MAP_FAILED) {
    Error error = os_error("mmap of the control block");
    close(fd);
    return error;
  }
  *fd_out = fd;
  return page;
}

}  // namespace

Result<std::unique_ptr<ControlBlock>> ControlBlock::create(std::uint64_t job_id, int device_count,
                                                           const std::uint64_t* mem_limit_bytes,
                                                           std::uint32_t qos) {
  if (device_count < 0 || device_count > kMaxDevices) {
    return make_error("a control block holds at most " + std::to_string(kMaxDevices) + " devices");
  }
  std::unique_ptr<ControlBlock> block(new ControlBlock);
  Result<void*> limits = create_page("gpushare-limits", &block->limits_fd_);
  if (!limits) return limits.error();
  block->limits_ = new (*limits) LimitsPage{};
  Result<void*> telemetry = create_page("gpushare-telemetry", &block->telemetry_fd_);
  if (!telemetry) return telemetry.error();
  block->telemetry_ = new (*telemetry) TelemetryPage{};
  Result<void*> yield = create_page("gpushare-yield", &block->yield_fd_);
  if (!yield) return yield.error();
  block->yield_ = new (*yield) YieldPage{};
  block->yield_->magic = kYieldMagic;
  block->yield_->layout_version = kLayoutVersion;
  block->yield_->job_id = job_id;

  LimitsPage& page = *block->limits_;
  page.magic = kLimitsMagic;
  page.layout_version = kLayoutVersion;
  page.job_id = job_id;
  page.device_count = static_cast<std::uint32_t>(device_count);
  page.qos.store(qos);
  for (int i = 0; i < kMaxDevices; ++i) {
    DeviceLimits& d = page.devices[i];
    d.mem_limit_bytes.store(i < device_count ? mem_limit_bytes[i] : kNoLimit);
    d.launch_budget.store(kNoLimit);
    d.launch_window_ns.store(0);
    d.max_queued.store(kNoLimit);
    d.compute_cap_ppm.store(kNoLimit);
    d.yield_mask.store(0);
    d.yield_share_ppm.store(kNoLimit);
    d.yield_turn.store(0);
    page.device_resident_target[i].store(kNoLimit);
  }
  page.throttle.store(0);
  block->telemetry_->magic = kTelemetryMagic;
  block->telemetry_->layout_version = kLayoutVersion;

  // Seal: the job may map the limits page read-only and nothing else; our
  // own writable mapping, made before the seal, stays writable. Neither
  // page may change size under a mapping (a shrink would SIGBUS the reader).
  if (fcntl(block->limits_fd_, F_ADD_SEALS,
            F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) != 0) {
    return os_error("sealing the limits page");
  }
  if (fcntl(block->telemetry_fd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    return os_error("sealing the telemetry page");
  }
  // The yield page only against resizing: the job maps it writable first,
  // then seals it against every later writable mapping itself.
  if (fcntl(block->yield_fd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0) {
    return os_error("sealing the yield page");
  }
  return block;
}

ControlBlock::~ControlBlock() {
  close_descriptors();
  if (yield_ != nullptr) {
    // The job is gone: its mark must not hold anyone. Receivers keep the
    // page mapped, so clearing it here frees their waiting launches.
    yield_->busy.store(0, std::memory_order_release);
    syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&yield_->busy), FUTEX_WAKE, INT_MAX,
            nullptr, nullptr, 0);
    munmap(yield_, kControlPageBytes);
  }
  if (yield_fd_ >= 0) close(yield_fd_);
  if (limits_ != nullptr) munmap(limits_, kControlPageBytes);
  if (telemetry_ != nullptr) munmap(telemetry_, kControlPageBytes);
}

bool ControlBlock::yield_sealed() {
  if (!yield_sealed_ && yield_fd_ >= 0) {
    int seals = fcntl(yield_fd_, F_GET_SEALS);
    yield_sealed_ = seals >= 0 && (seals & F_SEAL_FUTURE_WRITE) != 0;
  }
  return yield_sealed_;
}

bool ControlBlock::yield_busy() const {
  return yield_ != nullptr && yield_->busy.load(std::memory_order_relaxed) != 0;
}

std::uint64_t ControlBlock::yield_marks() const {
  return yield_ != nullptr ? yield_->marks.load(std::memory_order_relaxed) : 0;
}

double ControlBlock::yield_gap_share() const {
  if (yield_ == nullptr) return 0;
  double gap = static_cast<double>(yield_->gap_ns.load(std::memory_order_relaxed));
  double span = static_cast<double>(yield_->span_ns.load(std::memory_order_relaxed));
  return gap > 0 && span > 0 ? gap / (gap + span) : 0;
}

std::uint32_t ControlBlock::yield_beats() const {
  return yield_ != nullptr ? yield_->beats.load(std::memory_order_relaxed) : 0;
}

std::uint64_t ControlBlock::yield_mask(int device) const {
  return limits_->devices[device].yield_mask.load(std::memory_order_relaxed);
}

void ControlBlock::set_yield_mask(int device, std::uint64_t mask) {
  if (yield_mask(device) == mask) return;
  store_yield_mask(limits_->devices[device], mask);
  update_throttle();
  bump();
}

void ControlBlock::set_yield_share(int device, std::uint64_t share_ppm) {
  std::atomic<std::uint64_t>& word = limits_->devices[device].yield_share_ppm;
  if (word.load(std::memory_order_relaxed) == share_ppm) return;
  word.store(share_ppm, std::memory_order_release);
  bump();
}

void ControlBlock::set_yield_turn(int device, std::uint32_t index, std::uint32_t count) {
  std::atomic<std::uint64_t>& word = limits_->devices[device].yield_turn;
  std::uint64_t value = yield_turn_word(index, count);
  if (word.load(std::memory_order_relaxed) == value) return;
  word.store(value, std::memory_order_release);
  bump();
}

void ControlBlock::close_descriptors() {
  if (limits_fd_ >= 0) close(limits_fd_);
  if (telemetry_fd_ >= 0) close(telemetry_fd_);
  limits_fd_ = telemetry_fd_ = -1;
}

std::uint64_t ControlBlock::mem_limit(int device) const {
  return limits_->devices[device].mem_limit_bytes.load(std::memory_order_relaxed);
}

void ControlBlock::set_mem_limit(int device, std::uint64_t bytes) {
  limits_->devices[device].mem_limit_bytes.store(bytes, std::memory_order_release);
  bump();
}

std::uint64_t ControlBlock::device_resident_target(int device) const {
  return limits_->device_resident_target[device].load(std::memory_order_relaxed);
}

bool ControlBlock::set_device_resident_target(int device, std::uint64_t bytes) {
  if (limits_->device_resident_target[device].load(std::memory_order_relaxed) == bytes) {
    return false;
  }
  limits_->device_resident_target[device].store(bytes, std::memory_order_release);
  bump();
  return true;
}

void ControlBlock::refuse_room(int device, std::uint64_t request_seq) {
  if (limits_->mem_refused_seq[device].load(std::memory_order_relaxed) == request_seq) return;
  limits_->mem_refused_seq[device].store(request_seq, std::memory_order_release);
  bump();
}

bool ControlBlock::suspend_requested() const {
  return limits_->suspend_request.load(std::memory_order_relaxed) != 0;
}

void ControlBlock::set_suspend_requested(bool suspend) {
  limits_->suspend_request.store(suspend ? 1 : 0, std::memory_order_release);
  bump();
}

bool ControlBlock::paused() const { return limits_->paused.load(std::memory_order_relaxed) != 0; }

std::uint32_t ControlBlock::pause_reasons() const {
  return limits_->paused.load(std::memory_order_relaxed);
}

void ControlBlock::set_pause_reasons(std::uint32_t reasons) {
  limits_->paused.store(reasons, std::memory_order_release);
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&limits_->paused), FUTEX_WAKE, INT_MAX,
          nullptr, nullptr, 0);
  bump();
}

std::uint32_t ControlBlock::qos() const { return limits_->qos.load(std::memory_order_relaxed); }

void ControlBlock::set_qos(std::uint32_t qos) {
  limits_->qos.store(qos, std::memory_order_release);
  bump();
}

ComputeLimits ControlBlock::compute(int device) const {
  return load_compute_limits(limits_->devices[device]);
}

void ControlBlock::set_compute(int device, const ComputeLimits& limits) {
  ComputeLimits old = compute(device);
  ComputeLimits next = limits;
  next.yield_mask = old.yield_mask;  // set_yield_mask's
  if (next == old) return;  // the controller re-sends the same limits every tick
  store_compute_limits(limits_->devices[device], next);
  update_throttle();
  bump();
}

// `throttle` is set exactly while some device has a limit or a yield mask.
void ControlBlock::update_throttle() {
  std::uint32_t any = 0;
  for (int i = 0; i < device_count(); ++i) {
    if (compute(i).any()) any = 1;
  }
  limits_->throttle.store(any, std::memory_order_release);
}

void ControlBlock::bump() { limits_->generation.fetch_add(1, std::memory_order_release); }

}  // namespace gpushare::coord::server
