#include "coord/server/compute/compute_yield.h"

namespace gpushare::coord::server {

int YieldSlots::slot_of(std::uint64_t job_id) {
  int free_slot = -1;
  for (int i = 0; i < kYieldSlots; ++i) {
    if (holders_[i] == job_id) return i;
    if (holders_[i] == 0 && free_slot < 0) free_slot = i;
  }
  if (free_slot >= 0) holders_[free_slot] = job_id;
  return free_slot;
}

void YieldSlots::keep_only(const std::set<std::uint64_t>& live) {
  for (std::uint64_t& holder : holders_) {
    if (holder != 0 && live.count(holder) == 0) holder = 0;
  }
}

void YieldHold::sample(std::uint64_t now_ns, bool busy, std::uint64_t marks, std::uint32_t beats) {
  bool fresh_mark = marks != marks_;
  marks_ = marks;
  if (!busy || fresh_mark || !held_) {
    // Clear, or set again since the last sample: a new hold starts (or none).
    held_ = busy;
    since_ns_ = now_ns;
    beats_ = beats;
    beat_ns_ = now_ns;
    stuck_ = false;
    return;
  }
  if (beats != beats_) {
    beats_ = beats;
    beat_ns_ = now_ns;
  }
  // A producer that beats again (SIGCONT) is followed again; one past the
  // cap is not until its mark clears.
  stuck_ = now_ns - beat_ns_ >= kYieldHoldMaxNs || now_ns - since_ns_ >= kYieldHoldCapNs;
}

void YieldPlanner::sample(std::uint64_t now_ns, const std::vector<YieldProducer>& producers,
                          const std::set<std::uint64_t>& registered) {
  std::set<std::uint64_t> producing;
  for (const YieldProducer& p : producers) {
    if (p.sealed) producing.insert(p.id);
  }
  // A job that left, or is no longer production, gives its slot back
  // before anyone takes one.
  slots_.keep_only(producing);
  for (const YieldProducer& p : producers) {
    if (!p.sealed) continue;
    slots_.slot_of(p.id);
    holds_[p.id].sample(now_ns, p.busy, p.marks, p.beats);
  }
  for (auto it = holds_.begin(); it != holds_.end();) {
    it = producing.count(it->first) ? std::next(it) : holds_.erase(it);
  }
  for (auto it = sent_.begin(); it != sent_.end();) {
    it = registered.count(it->first) ? std::next(it) : sent_.erase(it);
  }
}

std::uint64_t YieldPlanner::mask(std::uint64_t receiver, bool controlled,
                                 const std::vector<YieldProducer>& producers_on_device,
                                 std::vector<YieldDelivery>* to_send) {
  std::uint64_t mask = 0;
  std::map<int, std::uint64_t>& sent = sent_[receiver];
  for (const YieldProducer& p : producers_on_device) {
    if (!p.sealed) continue;
    int slot = slots_.slot_of(p.id);
    if (slot < 0) continue;  // every slot taken: this producer is not followed
    auto have = sent.find(slot);
    if (have == sent.end() || have->second != p.id) {
      to_send->push_back({receiver, p.id, slot});  // sent even while not honoured: ready
      continue;
    }
    auto hold = holds_.find(p.id);
    bool stuck = hold != holds_.end() && hold->second.stuck();
    bool active = p.active || (p.live && in_flight(p.id));
    if (controlled && active && !stuck) mask |= std::uint64_t{1} << slot;
  }
  return mask;
}

bool YieldPlanner::in_flight(std::uint64_t producer) const {
  auto hold = holds_.find(producer);
  return hold != holds_.end() && hold->second.in_flight();
}

void YieldPlanner::delivered(const YieldDelivery& delivery) {
  sent_[delivery.receiver][delivery.slot] = delivery.producer;
}

}  // namespace gpushare::coord::server
