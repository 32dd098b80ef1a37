#include "coord/ctl/progress.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "coord/ctl/table.h"

namespace gpushare::ctl {
namespace {

std::uint64_t bytes_of(const nlohmann::ordered_json& record, const char* key) {
  auto it = record.find(key);
  return it != record.end() && it->is_number_unsigned() ? it->get<std::uint64_t>() : 0;
}

}  // namespace

MoveProgress move_progress(const nlohmann::ordered_json& start, const nlohmann::ordered_json& now,
                           bool to_host) {
  MoveProgress p;
  std::uint64_t host_then = bytes_of(start, "mem_host_resident_bytes");
  std::uint64_t host_now = bytes_of(now, "mem_host_resident_bytes");
  if (to_host) {
    // All the device memory it held when asked (plain and managed).
    p.total_bytes = bytes_of(start, "mem_used_bytes");
    p.moved_bytes = host_now > host_then ? host_now - host_then : 0;
  } else {
    p.total_bytes = host_then;
    p.moved_bytes = host_then > host_now ? host_then - host_now : 0;
  }
  if (p.total_bytes != 0 && p.moved_bytes > p.total_bytes) p.moved_bytes = p.total_bytes;
  p.batch_bytes = bytes_of(now, "mem_migrating_bytes");
  return p;
}

std::string move_progress_line(const std::string& verb, const std::string& job,
                               const MoveProgress& progress, double elapsed_s) {
  std::string line = verb + " job " + job + ": " + short_size(progress.moved_bytes);
  if (progress.total_bytes != 0) line += " of " + short_size(progress.total_bytes);
  line += " moved";
  if (elapsed_s > 0) {
    auto rate = static_cast<std::uint64_t>(static_cast<double>(progress.moved_bytes) / elapsed_s);
    line += ", " + short_size(rate) + "/s";
  }
  if (progress.batch_bytes != 0) line += ", a batch of " + short_size(progress.batch_bytes);
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, ", %.0fs", elapsed_s);
  return line + seconds;
}

}  // namespace gpushare::ctl
