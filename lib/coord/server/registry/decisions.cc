#include "coord/server/registry/decisions.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>

#include "coord/contract/protocol.h"

namespace gpushare::coord::server {
namespace {

constexpr std::size_t kMaxStateBytes = 16u << 20;

Error os_error(const std::string& what) { return make_error(what + ": " + std::strerror(errno)); }

nlohmann::ordered_json to_json(const Decision& d) {
  nlohmann::ordered_json limits = nlohmann::ordered_json::array();
  for (std::uint64_t limit : d.mem_limit_bytes) limits.push_back(limit);
  nlohmann::ordered_json out = {
      {"kind", "job-decision"}, {"version", 1},       {"id", d.id},
      {"uid", d.uid},           {"pid", d.pid},       {"name", d.name},
      {"qos", qos_name(d.qos)}, {"paused", d.paused}, {"mem_limit_bytes", limits}};
  if (d.compute_cap_ppm != kNoLimit) out["compute_cap_ppm"] = d.compute_cap_ppm;
  return out;
}

Result<Decision> from_json(const nlohmann::json& j) {
  if (!j.is_object() || j.value("kind", "") != "job-decision") {
    return make_error("not a job-decision record");
  }
  Decision d;
  d.id = j.at("id").get<std::uint64_t>();
  d.uid = j.at("uid").get<uid_t>();
  d.pid = j.at("pid").get<pid_t>();
  d.name = j.at("name").get<std::string>();
  std::string qos = j.at("qos").get<std::string>();
  if (qos != "production" && qos != "opportunistic") return make_error("unknown qos '" + qos + "'");
  d.qos = qos == "production" ? kQosProduction : kQosOpportunistic;
  d.paused = j.at("paused").get<bool>();
  for (const nlohmann::json& limit : j.at("mem_limit_bytes")) {
    d.mem_limit_bytes.push_back(limit.get<std::uint64_t>());
  }
  if (d.mem_limit_bytes.size() > kMaxDevices) return make_error("too many devices");
  d.compute_cap_ppm = j.value("compute_cap_ppm", kNoLimit);
  if (d.compute_cap_ppm == 0 || (d.compute_cap_ppm > 1'000'000 && d.compute_cap_ppm != kNoLimit)) {
    return make_error("compute_cap_ppm out of range");
  }
  return d;
}

}  // namespace

Result<std::vector<Decision>> load_decisions(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return std::vector<Decision>{};
    return os_error("cannot open state file '" + path + "'");
  }
  struct stat info;
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode) || info.st_uid != geteuid() ||
      (info.st_mode & 022) != 0 || static_cast<std::size_t>(info.st_size) > kMaxStateBytes) {
    close(fd);
    return make_error("state file '" + path +
                      "' is not a regular file of this user's, writable only by it: ignored");
  }
  std::string text(static_cast<std::size_t>(info.st_size), '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    ssize_t n = read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  close(fd);
  text.resize(got);
  std::vector<Decision> decisions;
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    Result<Decision> decision = make_error("not JSON");
    if (!j.is_discarded()) {
      try {
        decision = from_json(j);
      } catch (const nlohmann::json::exception& e) {
        decision = make_error(e.what());
      }
    }
    if (!decision) {
      return make_error(path + ":" + std::to_string(number) + ": " + decision.error().message);
    }
    decisions.push_back(std::move(*decision));
  }
  return decisions;
}

Status save_decisions(const std::string& path, const std::vector<Decision>& decisions) {
  std::string text;
  for (const Decision& d : decisions) {
    text += to_json(d).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    text += '\n';
  }
  std::string temporary = path + ".new";
  // O_EXCL after unlink: never write through a link planted at the name.
  unlink(temporary.c_str());
  int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return os_error("cannot write state file '" + temporary + "'");
  std::size_t written = 0;
  while (written < text.size()) {
    ssize_t n = write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    written += static_cast<std::size_t>(n);
  }
  bool ok = written == text.size() && fsync(fd) == 0;
  close(fd);
  if (!ok || rename(temporary.c_str(), path.c_str()) != 0) {
    Error error = os_error("cannot write state file '" + path + "'");
    unlink(temporary.c_str());
    return error;
  }
  return {};
}

}  // namespace gpushare::coord::server
