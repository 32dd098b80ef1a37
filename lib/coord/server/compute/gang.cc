#include "coord/server/compute/gang.h"

#include <algorithm>
#include <set>

namespace gpushare::coord::server {

std::vector<Gang> find_gangs(const std::vector<GangProcess>& processes) {
  std::map<std::uint64_t, Gang> by_job;
  for (const GangProcess& p : processes) {
    if (!p.production || p.used.empty()) continue;  // a launcher, or not started
    Gang& gang = by_job[p.job_id];
    gang.job_id = p.job_id;
    gang.ranks.push_back(p.key);
    for (const std::string& gpu : p.used) {
      if (std::find(gang.gpus.begin(), gang.gpus.end(), gpu) == gang.gpus.end()) {
        gang.gpus.push_back(gpu);
      }
    }
  }
  std::vector<Gang> gangs;
  for (auto& [id, gang] : by_job) {
    if (gang.ranks.size() < 2 || gang.gpus.size() < 2) continue;
    std::sort(gang.gpus.begin(), gang.gpus.end());
    gangs.push_back(std::move(gang));
  }
  return gangs;
}

namespace {

// Union-find over GPU UUIDs.
struct Groups {
  std::map<std::string, std::string> parent;
  std::string root(const std::string& gpu) {
    std::string at = gpu;
    while (parent.at(at) != at) at = parent.at(at);
    parent[gpu] = at;
    return at;
  }
  void join(const std::string& a, const std::string& b) {
    std::string ra = root(a), rb = root(b);
    if (ra != rb) parent[std::max(ra, rb)] = std::min(ra, rb);
  }
};

}  // namespace

std::map<std::string, std::string> control_groups(const std::vector<GangProcess>& processes,
                                                  const std::vector<Gang>& gangs) {
  Groups groups;
  for (const GangProcess& p : processes) {
    for (const std::string& gpu : p.registered) groups.parent.emplace(gpu, gpu);
    for (const std::string& gpu : p.used) groups.parent.emplace(gpu, gpu);
  }
  std::set<std::string> ganged;
  for (const Gang& gang : gangs) {
    for (const std::string& gpu : gang.gpus) {
      groups.join(gang.gpus.front(), gpu);
      ganged.insert(gpu);
    }
  }
  // A process registered on a gang's GPU and another (an opportunistic
  // job that sees every GPU, a rank of a second gang): its GPUs are
  // controlled together too, since its one set of limits pages is written
  // by one controller per process.
  for (const GangProcess& p : processes) {
    bool touches = std::any_of(p.registered.begin(), p.registered.end(),
                               [&](const std::string& gpu) { return ganged.count(gpu) != 0; });
    if (!touches) continue;
    for (const std::string& gpu : p.registered) groups.join(p.registered.front(), gpu);
  }
  std::map<std::string, std::vector<std::string>> members;
  for (const auto& [gpu, parent] : groups.parent) members[groups.root(gpu)].push_back(gpu);
  std::map<std::string, std::string> key;
  for (const auto& [root, gpus] : members) {  // gpus come sorted (map order)
    std::string joined;
    for (const std::string& gpu : gpus) joined += (joined.empty() ? "" : "+") + gpu;
    for (const std::string& gpu : gpus) key[gpu] = joined;
  }
  return key;
}

void SpanMeter::sample(std::uint64_t now_ns, std::uint64_t collective_ns,
                       std::uint64_t collectives) {
  if (!started_ || collectives < start_count_ || collective_ns < start_sum_) {
    started_ = true;
    start_ns_ = moved_ns_ = now_ns;
    start_sum_ = collective_ns;
    start_count_ = last_count_ = collectives;
    span_ = {};
    return;
  }
  if (collectives != last_count_) {
    last_count_ = collectives;
    moved_ns_ = now_ns;
  } else if (now_ns - moved_ns_ >= kSpanForgetNs) {
    span_ = {};  // stopped meeting the others (or stopped): forget
  }
  std::uint64_t count = collectives - start_count_;
  std::uint64_t elapsed = now_ns - start_ns_;
  if (elapsed < kSpanWindowNs || count < kSpanMinCollectives) return;
  span_.span_ms = static_cast<double>(collective_ns - start_sum_) / 1e6 / static_cast<double>(count);
  span_.collectives_per_s = static_cast<double>(count) * 1e9 / static_cast<double>(elapsed);
  start_ns_ = now_ns;
  start_sum_ = collective_ns;
  start_count_ = collectives;
}

GangWait gang_wait(const std::vector<RankSpan>& ranks) {
  GangWait out;
  out.wait_ms.assign(ranks.size(), -1);
  out.wait_share.assign(ranks.size(), -1);
  out.waits.assign(ranks.size(), false);
  if (ranks.size() < 2) return out;
  int least = 0;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i].span_ms < 0 || ranks[i].collectives_per_s <= 0) return out;
    if (ranks[i].span_ms < ranks[static_cast<std::size_t>(least)].span_ms) {
      least = static_cast<int>(i);
    }
  }
  double floor = ranks[static_cast<std::size_t>(least)].span_ms;
  bool any = false;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    out.wait_ms[i] = ranks[i].span_ms - floor;
    out.wait_share[i] = std::min(1.0, out.wait_ms[i] * ranks[i].collectives_per_s / 1000);
    out.waits[i] = out.wait_ms[i] >= kMinWaitMs && out.wait_share[i] >= kMinWaitShare;
    any = any || out.waits[i];
  }
  out.least = least;
  if (any) out.waited_for = least;
  return out;
}

std::optional<double> harvest_wait(std::optional<double> harvesting, const GangWait& wait,
                                   std::size_t i) {
  if (i >= wait.waits.size() || wait.least < 0) return std::nullopt;  // not all measured
  if (!harvesting) {
    if (wait.waits[i]) return wait.wait_share[i];
    return std::nullopt;
  }
  if (static_cast<int>(i) == wait.least || wait.wait_ms[i] < kMinWaitMs ||
      wait.wait_share[i] < kMinWaitShare / 3) {
    return std::nullopt;
  }
  return harvesting;
}

bool harvest_trial(HarvestTrial* trial, bool candidate, double speed, std::uint64_t now_ns,
                   bool slowed) {
  if (now_ns < trial->blocked_until_ns) return false;
  if (slowed && trial->base >= 0) {
    trial->blocked_until_ns = now_ns + kHarvestBlockNs;
    trial->base = -1;
    trial->judged = false;
    return false;
  }
  if (!candidate) {
    trial->base = -1;
    trial->judged = false;
    trial->candidate_ns = 0;
    return false;
  }
  if (trial->base < 0) {
    if (trial->candidate_ns == 0) trial->candidate_ns = now_ns;
    if (now_ns - trial->candidate_ns < kHarvestSettleNs) return false;
    if (speed <= 0) return false;  // nothing to compare with yet
    trial->base = speed;
    trial->started_ns = now_ns;
    trial->judged = false;
    return true;
  }
  if (!trial->judged && now_ns - trial->started_ns >= kHarvestTrialNs) {
    trial->judged = true;
    if (speed >= 0 && speed < trial->base) {
      trial->blocked_until_ns = now_ns + kHarvestBlockNs;
      trial->base = -1;
      trial->judged = false;
      return false;
    }
  }
  return true;
}

std::uint64_t wait_harvest_ppm(double wait_share, double gap_share, std::uint64_t level_ppm,
                               std::uint64_t jobs) {
  if (!(wait_share >= kMinWaitShare) || jobs == 0) return 0;
  double n = static_cast<double>(jobs);
  double gaps = gap_share > 0 ? std::min(1.0, gap_share) / n : 0;
  double wait = std::min(1.0, wait_share) * kWaitHarvest / n;
  double level = static_cast<double>(std::min<std::uint64_t>(level_ppm, 1'000'000)) / 1e6;
  double share = std::min(1.0, gaps + std::min(wait, level));
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(share * 1e6));
}

}  // namespace gpushare::coord::server
