// The jobs on the cluster by id, for the placer's duplicate check, its
// bookkeeping and remove() (private to lib/place).
//
// A million running jobs made std::unordered_map the placer's largest cost:
// every lookup walks a bucket array and a chain of separately allocated
// nodes, two or three cache misses, and each growth rehashes a million
// nodes. Here the jobs lie in one vector and the table is open addressing
// with linear probing over small slots (a tag from the hash and the job's
// position), kept at most half full: a lookup is usually one slot and one
// job, a miss one slot, and growing rebuilds the slots from the hashes the
// jobs keep, without touching a string. Removal moves the last job into
// the hole and closes the probe gap by shifting back the slots after it,
// so there are no tombstones. Nothing iterates the table, so its order
// (which is not the ids' order) cannot reach a placement.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace gpushare::place {

class RunningJobs {
 public:
  /// A job on the cluster: its GPUs, and the utilisation it added to each.
  struct Running {
    std::vector<std::uint32_t> gpus;
    double util = 0.0;
  };

  /// The job, or nullptr.
  Running* find(std::string_view id) {
    std::size_t slot = 0;
    return locate(id, hash(id), &slot) ? &jobs_[slots_[slot].index].running : nullptr;
  }
  const Running* find(std::string_view id) const {
    std::size_t slot = 0;
    return locate(id, hash(id), &slot) ? &jobs_[slots_[slot].index].running : nullptr;
  }
  bool contains(std::string_view id) const {
    std::size_t slot = 0;
    return locate(id, hash(id), &slot);
  }

  /// The job, added with no GPUs if it was not there (as map::operator[]).
  Running& operator[](std::string_view id) {
    std::uint64_t h = hash(id);
    std::size_t slot = 0;
    if (locate(id, h, &slot)) return jobs_[slots_[slot].index].running;
    if ((jobs_.size() + 1) * 2 > slots_.size()) {
      grow();
      locate(id, h, &slot);
    }
    slots_[slot] = Slot{tag(h), static_cast<std::uint32_t>(jobs_.size())};
    jobs_.push_back(Entry{std::string(id), h, {}});
    return jobs_.back().running;
  }

  /// Removes the job; false if it was not there.
  bool erase(std::string_view id) {
    std::size_t slot = 0;
    if (!locate(id, hash(id), &slot)) return false;
    std::uint32_t index = slots_[slot].index;
    close_gap(slot);
    // The last job takes the freed position; its slot follows it.
    std::uint32_t last = static_cast<std::uint32_t>(jobs_.size() - 1);
    if (index != last) {
      std::size_t moved = 0;
      locate(jobs_[last].id, jobs_[last].hash, &moved);
      slots_[moved].index = index;
      jobs_[index] = std::move(jobs_[last]);
    }
    jobs_.pop_back();
    return true;
  }

  std::size_t size() const { return jobs_.size(); }

 private:
  static constexpr std::uint32_t kEmpty = UINT32_MAX;
  struct Slot {
    std::uint32_t tag = 0;
    std::uint32_t index = kEmpty;  ///< position in jobs_
  };
  struct Entry {
    std::string id;
    std::uint64_t hash;
    Running running;
  };

  static std::uint64_t hash(std::string_view id) { return std::hash<std::string_view>{}(id); }
  static std::uint32_t tag(std::uint64_t h) { return static_cast<std::uint32_t>(h >> 32); }
  std::size_t home(std::uint64_t h) const {
    return static_cast<std::size_t>(h) & (slots_.size() - 1);
  }

  /// True with *slot at the job; else false with *slot at the empty slot
  /// where it would go (when there are slots).
  bool locate(std::string_view id, std::uint64_t h, std::size_t* slot) const {
    if (slots_.empty()) return false;
    std::size_t mask = slots_.size() - 1;
    for (std::size_t i = home(h);; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.index == kEmpty || (s.tag == tag(h) && jobs_[s.index].id == id)) {
        *slot = i;
        return s.index != kEmpty;
      }
    }
  }

  void grow() {
    std::vector<Slot> slots(slots_.empty() ? 64 : slots_.size() * 2);
    std::size_t mask = slots.size() - 1;
    for (std::uint32_t j = 0; j < jobs_.size(); ++j) {
      std::size_t i = static_cast<std::size_t>(jobs_[j].hash) & mask;
      while (slots[i].index != kEmpty) i = (i + 1) & mask;
      slots[i] = Slot{tag(jobs_[j].hash), j};
    }
    slots_ = std::move(slots);
  }

  /// Empties `hole`, then moves back each later slot of the probe run
  /// whose home is not between the hole and it, so every job stays
  /// reachable from its home without passing an empty slot.
  void close_gap(std::size_t hole) {
    std::size_t mask = slots_.size() - 1;
    for (std::size_t i = (hole + 1) & mask; slots_[i].index != kEmpty; i = (i + 1) & mask) {
      std::size_t want = home(jobs_[slots_[i].index].hash);
      // Cyclic distances from the hole: the slot may move if its home is
      // not after the hole on the way to it.
      if (((i - want) & mask) >= ((i - hole) & mask)) {
        slots_[hole] = slots_[i];
        hole = i;
      }
    }
    slots_[hole] = Slot{};
  }

  std::vector<Slot> slots_;
  std::vector<Entry> jobs_;
};

}  // namespace gpushare::place
