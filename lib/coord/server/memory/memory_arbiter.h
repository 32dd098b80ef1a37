// The memory arbiter: per GPU, production first. Pure: from what every job
// holds on one device and what production jobs ask for, to the
// device-resident target of each opportunistic job (its limits page's
// device_resident_target, layout 3). No I/O, no clock: tested on its own
// (tests/unit/coord_memory_arbiter_test.cc).
//
// The algorithm. Production jobs' memory is ordinary device memory and
// cannot move; an opportunistic job's memory is managed memory (it can live
// on the host) except what the driver cannot manage (arrays, textures, IPC
// exports: `pinned`). So the device's capacity is first given to
// production (what production jobs hold plus what they ask for now), then
// to every opportunistic job's pinned bytes, and what is left — the
// opportunistic room — is shared among the opportunistic jobs' managed
// bytes by max-min fairness (water filling): a job that wants less than an
// equal share keeps all it wants, the rest is split evenly among the others.
// A job's want is its managed bytes, capped by its own memory limit less
// its pinned bytes (`gpushare-ctl set JOB mem=` lowers its residency
// instead of failing its next allocation). A job whose want fits keeps no
// target (kNoLimit): its memory comes back to the device.
//
// `fits` says whether the production requests fit once the opportunistic
// jobs meet their targets: false when production plus pinned memory already
// exceeds the capacity (production then sees out-of-memory, as it would
// for another production job's memory). Then the fewest waiting requests
// are refused that let the others fit, the largest first (ties: the later
// job in input order first): refusing the largest frees the most per
// refusal, so no smaller set of refusals could make the rest fit. Every
// waiting request is refused only when even that is not enough (what
// production holds outside its waits, plus pinned memory, exceeds the
// capacity). The opportunistic room is what is left once the refused
// requests are gone.
#pragma once

#include <cstdint>
#include <vector>

#include "coord/contract/control_block.h"

namespace gpushare::coord::server {

struct ArbiterJob {
  std::uint64_t id = 0;
  std::uint32_t qos = kQosProduction;
  /// Production: the device memory it holds. Opportunistic: its managed
  /// bytes (wherever they are resident).
  std::uint64_t managed_bytes = 0;
  /// Device memory that cannot move (production: 0, all of it is in
  /// held_bytes; opportunistic: arrays, IPC exports, its contexts).
  std::uint64_t pinned_bytes = 0;
  std::uint64_t held_bytes = 0;     ///< production only: device memory held
  std::uint64_t request_bytes = 0;  ///< production only: an allocation waiting for room
  /// Production only: the bytes of a waiting allocation already charged to
  /// its budget (so inside held_bytes), which a refusal frees with
  /// request_bytes. A job waits when the two sum above zero.
  std::uint64_t waiting_bytes = 0;
  std::uint64_t mem_limit = kNoLimit;
};

struct ArbiterTarget {
  std::uint64_t id = 0;
  std::uint64_t device_resident_target = kNoLimit;  ///< kNoLimit: no spill
};

struct ArbiterResult {
  std::vector<ArbiterTarget> targets;    ///< one per opportunistic job, in input order
  std::uint64_t opportunistic_room = 0;  ///< device bytes left for managed memory
  std::uint64_t spill_bytes = 0;         ///< managed bytes that must live on the host
  bool fits = true;                      ///< the production requests fit after the spill
  /// When they do not: the inputs (indices into `jobs`) whose waits to
  /// refuse, in the order they were chosen.
  std::vector<std::size_t> refused;
};

/// `capacity`: the device's physical memory less what nobody can use (the
/// caller's headroom).
ArbiterResult arbitrate(std::uint64_t capacity, const std::vector<ArbiterJob>& jobs);

}  // namespace gpushare::coord::server
