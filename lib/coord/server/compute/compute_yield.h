// The coordinator's half of the fast yield signal (control_block.h, layout
// 4; its heartbeat, layout 5). The 25 ms loop cannot place an
// opportunistic job's work in the gaps a production job leaves within an
// iteration; the production job's own busy
// mark can, if opportunistic launches wait while it is set. This file
// decides, each tick, whose marks each opportunistic job follows:
//
// Slots. A production job whose page is sealed gets one of kYieldSlots
// node-wide slots while it is registered (the first free one; a ninth
// production job is not followed). Its page is sent once to every
// opportunistic job on one of its devices, for that slot.
//
// Mask. An opportunistic job's yield_mask on a device names the slots of
// the production jobs on that device that the loop protects now: only
// under the gpushare policy, only while its phase is not "free" (a
// production job is active), only producers that are active (launched
// within idle_after, or hold a live mark: a deep queue launches a whole
// iteration at once and then waits longer than idle_after in its
// synchronisation) and whose page the receiver was sent. The loop counts a
// live mark as activity too (in_flight()).
//
// The cap on a hostile (or stuck) producer. Its mark only makes
// opportunistic jobs wait; it never blocks production jobs (they do not
// read marks) or the coordinator (it samples the word and never waits on
// it). A producer that holds its mark without a break (set at every tick,
// no new 0 -> 1 transition) is not followed, until its mark is seen clear
// again, once its heartbeat (control_block.h: moved by its client thread,
// which dies and stops with the process) stood still for kYieldHoldMaxNs,
// or once it held the mark for kYieldHoldCapNs however it beats. So a
// dead, stopped or wedged producer holds opportunistic jobs about one
// second, then they run on the loop's share alone; a live one whose work
// never synchronises holds them 30 s at most. Production may keep the GPU
// busy (priority is its right): a live deep queue is followed through.
// A producer that clears its mark now and then but sets it most of the
// time can hold opportunistic jobs to the moments it is clear; that is no
// more than a production job that keeps the GPU busy may take anyway (so
// can one that publishes gaps that always end just ahead), and
// the loop's share limits the harm the other way.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "coord/contract/control_block.h"

namespace gpushare::coord::server {

/// Node-wide slot numbers for production jobs' yield pages.
class YieldSlots {
 public:
  /// The job's slot, giving it the first free one; -1 when all are taken.
  int slot_of(std::uint64_t job_id);
  /// Frees the slots of jobs not in `live`.
  void keep_only(const std::set<std::uint64_t>& live);
  /// The job holding a slot, or 0.
  std::uint64_t holder(int slot) const { return holders_[slot]; }

 private:
  std::uint64_t holders_[kYieldSlots] = {};
};

/// Whether a producer's mark is stuck: set at every sample, with no new
/// 0 -> 1 transition, and either no new beat for kYieldHoldMaxNs or held
/// for kYieldHoldCapNs.
class YieldHold {
 public:
  void sample(std::uint64_t now_ns, bool busy, std::uint64_t marks, std::uint32_t beats);
  bool stuck() const { return stuck_; }
  /// Marked busy and not stuck: launched work not yet synchronised.
  bool in_flight() const { return held_ && !stuck_; }

 private:
  bool held_ = false;
  std::uint64_t since_ns_ = 0;
  std::uint64_t marks_ = 0;
  std::uint32_t beats_ = 0;
  std::uint64_t beat_ns_ = 0;
  bool stuck_ = false;
};

/// One producer as the planner sees it this tick.
struct YieldProducer {
  std::uint64_t id = 0;
  bool sealed = false;  ///< its page may be passed on
  bool live = false;    ///< its client is alive (fresh telemetry) and it is not paused
  bool active = false;  ///< live and launched within idle_after
  bool busy = false;
  std::uint64_t marks = 0;
  std::uint32_t beats = 0;
};

/// A page to send: `producer`'s page to `receiver`, for `slot`.
struct YieldDelivery {
  std::uint64_t receiver = 0;
  std::uint64_t producer = 0;
  int slot = -1;
};

/// The planner's state across ticks: slots, holds, what each receiver was
/// sent. Pure; the loop does the I/O.
class YieldPlanner {
 public:
  /// Once per tick, before the devices: samples every production job on
  /// the node and forgets jobs that left (`registered`: all job ids).
  void sample(std::uint64_t now_ns, const std::vector<YieldProducer>& producers,
              const std::set<std::uint64_t>& registered);
  /// For one receiver on one device: the pages it still needs (to send,
  /// then report with delivered()) and its mask from what it already has.
  /// `controlled`: the loop protects the device's production jobs now.
  std::uint64_t mask(std::uint64_t receiver, bool controlled,
                     const std::vector<YieldProducer>& producers_on_device,
                     std::vector<YieldDelivery>* to_send);
  void delivered(const YieldDelivery& delivery);
  /// A live production job whose mark is held and not stuck (as of the
  /// last sample): the loop counts it active though it launches nothing.
  bool in_flight(std::uint64_t producer) const;

 private:
  YieldSlots slots_;
  std::map<std::uint64_t, YieldHold> holds_;
  std::map<std::uint64_t, std::map<int, std::uint64_t>> sent_;  // receiver -> slot -> producer
};

}  // namespace gpushare::coord::server
