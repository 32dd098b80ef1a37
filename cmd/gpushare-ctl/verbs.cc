// The client verbs: each connects, sends one request (watch: one per
// sample), and prints the records of the reply as JSON Lines or a table.
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/diag.h"
#include "common/exit_status.h"
#include "common/jsonl.h"
#include "common/units.h"
#include "coord/contract/socket_path.h"
#include "coord/ctl/ctl_client.h"
#include "coord/ctl/progress.h"
#include "coord/ctl/set_properties.h"
#include "coord/contract/metrics_text.h"
#include "ctl.h"
#include "coord/ctl/table.h"

namespace gpushare::ctl {
namespace {

using nlohmann::ordered_json;
using Records = std::vector<ordered_json>;

enum class Shape { kJobs, kNode };

void print(const Records& records, const std::string& format, Shape shape) {
  std::string form = resolved_format(format);
  if (form == "short" || form == "wide") {
    std::string table = shape == Shape::kNode ? node_table(records)
                        : form == "wide"      ? job_table(records)
                                              : job_table_short(records, terminal_width());
    std::cout << table << std::flush;
    return;
  }
  JsonLinesWriter writer(std::cout);
  for (const ordered_json& record : records) {
    std::string kind = record.value("kind", "record");
    int version = record.value("version", 1);
    writer.write(kind, version, record);
  }
}

// --timeout, already checked by check_timeout().
std::chrono::milliseconds timeout_of(const CtlOptions& options) {
  Result<std::chrono::nanoseconds> timeout = parse_duration(options.timeout);
  return std::chrono::duration_cast<std::chrono::milliseconds>(*timeout);
}

// A bad --timeout is a usage error, found before any connection.
bool check_timeout(const CtlOptions& options) {
  Result<std::chrono::nanoseconds> timeout = parse_duration(options.timeout);
  if (timeout && *timeout >= std::chrono::milliseconds(1)) return true;
  diag::error("--timeout: " +
              (timeout ? std::string("must be at least 1ms") : timeout.error().message));
  diag::usage_hint();
  return false;
}

Result<coord::ctl::CtlConnection> connect(const CtlOptions& options) {
  std::string path = socket_path(options);
  if (path.empty()) return make_error("the default socket path is too long; give --socket PATH");
  return coord::ctl::CtlConnection::connect(path, timeout_of(options));
}

// One request, printed. The usual shape of a verb.
int request_and_print(const CtlOptions& options, const coord::Request& request, Shape shape) {
  if (!check_timeout(options)) return exit_status::kUsage;
  Result<coord::ctl::CtlConnection> connection = connect(options);
  if (!connection) {
    diag::error(connection.error().message);
    return exit_status::kFailure;
  }
  Result<Records> records = connection->request(request, timeout_of(options));
  if (!records) {
    diag::error(records.error().message);
    return exit_status::kFailure;
  }
  print(*records, options.format, shape);
  return exit_status::kSuccess;
}

}  // namespace

std::string resolved_format(const std::string& format) {
  if (format == "table") return "wide";  // its name before wide and the short table
  if (format == "auto") return isatty(STDOUT_FILENO) ? "short" : "json";
  return format;
}

std::size_t terminal_width() {
  winsize size{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col >= 20) return size.ws_col;
  return 100;
}

std::string socket_path(const CtlOptions& options, bool* private_directory) {
  std::string path = options.socket_path;
  if (path.empty()) {
    char buffer[256];
    if (!coord::default_socket_path(buffer, sizeof buffer)) return {};
    path = buffer;
  }
  // A per-user directory must be private however its path was given (as
  // gpushare-run gives it with --socket when it starts a coordinator).
  if (private_directory != nullptr) {
    *private_directory = coord::in_per_user_directory(path.c_str());
  }
  return path;
}

int list(const CtlOptions& options) {
  return request_and_print(options, coord::ListRequest{}, Shape::kJobs);
}

int show(const CtlOptions& options) {
  return request_and_print(options, coord::ShowRequest{options.job}, Shape::kJobs);
}

int node(const CtlOptions& options) {
  return request_and_print(options, coord::NodeRequest{}, Shape::kNode);
}

int set(const CtlOptions& options) {
  // A malformed property is a usage error, found before any connection.
  Result<coord::SetRequest> request =
      coord::ctl::parse_set_properties(options.job, options.mem_limit, options.properties);
  if (!request) {
    diag::error(request.error().message);
    diag::usage_hint();
    return exit_status::kUsage;
  }
  return request_and_print(options, *request, Shape::kJobs);
}

int pause(const CtlOptions& options, bool pause) {
  return request_and_print(options, coord::PauseRequest{options.job, pause}, Shape::kJobs);
}

namespace {

// Whether job `id` is still registered (a failed show may mean it exited).
bool still_registered(coord::ctl::CtlConnection& connection, const CtlOptions& options,
                      const std::string& id) {
  Result<Records> jobs = connection.request(coord::ListRequest{}, timeout_of(options));
  if (!jobs) return true;  // cannot tell: report the show's error
  for (const ordered_json& job : *jobs) {
    if (job.value("id", ordered_json(0)).dump() == id) return true;
  }
  return false;
}

enum class Moved { kDone, kTimedOut, kExited, kError };

// Polls job `id` every 10 ms (the job's client thread ticks as often) while
// it is `moving`, until `deadline`. *records holds the last answer.
// `on_poll` sees each answer (the progress line).
Moved poll_until_moved(coord::ctl::CtlConnection& connection, const CtlOptions& options,
                       const std::string& id, const std::string& moving,
                       std::chrono::steady_clock::time_point deadline, Result<Records>* records,
                       const std::function<void(const ordered_json&)>& on_poll) {
  while (*records && (*records)->size() == 1 && (*records)->front().value("state", "") == moving) {
    if (std::chrono::steady_clock::now() >= deadline) return Moved::kTimedOut;
    pollfd none{-1, 0, 0};
    poll(&none, 0, 10);
    Result<Records> next = connection.request(coord::ShowRequest{id}, timeout_of(options));
    if (!next && !still_registered(connection, options, id)) return Moved::kExited;
    *records = std::move(next);
    if (*records && (*records)->size() == 1) on_poll((*records)->front());
  }
  return *records ? Moved::kDone : Moved::kError;
}

// Progress of a move on a terminal's stderr (nothing when stderr is not a
// terminal): one line rewritten in place from the first second on, at
// most four times a second, then a last line with what moved.
class MoveReporter {
 public:
  MoveReporter(std::string verb, std::string id, const ordered_json& start)
      : verb_(std::move(verb)), id_(std::move(id)), start_(start),
        began_(std::chrono::steady_clock::now()), on_(isatty(STDERR_FILENO) != 0) {}
  void update(const ordered_json& now) {
    if (!on_) return;
    auto t = std::chrono::steady_clock::now();
    if (t - began_ < std::chrono::seconds(1) || t - shown_ < std::chrono::milliseconds(250)) return;
    shown_ = t;
    std::string line = diag::program_name() + ": " + move_progress_line(verb_, id_, progress(now),
                                                                         elapsed());
    std::cerr << '\r' << line << "\x1b[K" << std::flush;
    drawn_ = true;
  }
  // `done`: the move finished; otherwise the line just ends, before the error.
  void finish(const ordered_json& now, bool done) {
    if (!drawn_) return;
    if (!done) {
      std::cerr << '\n' << std::flush;
      return;
    }
    std::cerr << '\r' << diag::program_name() << ": "
              << move_progress_line(verb_ == "suspending" ? "suspended" : "resumed", id_,
                                    progress(now), elapsed())
              << "\x1b[K\n"
              << std::flush;
  }

 private:
  MoveProgress progress(const ordered_json& now) const {
    return move_progress(start_, now, verb_ == "suspending");
  }
  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - began_).count();
  }
  std::string verb_, id_;
  ordered_json start_;
  std::chrono::steady_clock::time_point began_, shown_{};
  bool on_;
  bool drawn_ = false;
};

// Sends a suspend or resume, then waits while the job is `moving`
// (suspending, resuming) unless --no-wait: the job's interposer moves the
// memory at the link's speed, so how long this takes depends on how much it
// holds. A job that exits meanwhile: a suspend failed, a resume finished.
int move_and_wait(const CtlOptions& options, const coord::Request& request,
                  const std::string& moving) {
  if (!check_timeout(options)) return exit_status::kUsage;
  Result<std::chrono::nanoseconds> wait = parse_duration(options.wait_timeout);
  if (!wait) {
    diag::error("--wait-timeout: " + wait.error().message);
    diag::usage_hint();
    return exit_status::kUsage;
  }
  Result<coord::ctl::CtlConnection> connection = connect(options);
  if (!connection) {
    diag::error(connection.error().message);
    return exit_status::kFailure;
  }
  Result<Records> records = connection->request(request, timeout_of(options));
  auto deadline = std::chrono::steady_clock::now() + *wait;
  // The job's id, so that polling follows this job even if names change.
  std::string id =
      records && records->size() == 1 ? records->front().value("id", ordered_json(0)).dump() : "";
  ordered_json start = records && records->size() == 1 ? records->front() : ordered_json();
  MoveReporter reporter(moving, id, start);
  Moved moved = options.no_wait || !records
                    ? (records ? Moved::kDone : Moved::kError)
                    : poll_until_moved(*connection, options, id, moving, deadline, &records,
                                       [&](const ordered_json& now) { reporter.update(now); });
  if (records && records->size() == 1) reporter.finish(records->front(), moved == Moved::kDone);
  switch (moved) {
    case Moved::kError:
      diag::error(records.error().message);
      return exit_status::kFailure;
    case Moved::kExited:
      if (moving == "resuming") return exit_status::kSuccess;  // it ran on and finished
      diag::error("job " + id + " exited while " + moving);
      return exit_status::kFailure;
    case Moved::kTimedOut:
      print(*records, options.format, Shape::kJobs);
      diag::error("job " + id + " is still " + moving + " after --wait-timeout " +
                  options.wait_timeout);
      return exit_status::kFailure;
    case Moved::kDone:
      break;
  }
  print(*records, options.format, Shape::kJobs);
  if (records->size() == 1 && records->front().contains("suspend_refused") &&
      moving == "suspending" && records->front().value("state", "") != "suspended") {
    diag::error("job " + id + " refused to suspend: it holds " +
                records->front().value("suspend_refused", ""));
    return exit_status::kFailure;
  }
  // The driver's process checkpoint said no (migrate.h): a migration
  // undone, a resume that left the job suspended.
  if (!options.no_wait && records->size() == 1 && records->front().contains("checkpoint_error") &&
      (moving == "migrating" || moving == "resuming")) {
    diag::error("job " + id +
                (moving == "migrating" ? " was not migrated: " : " is still suspended: ") +
                records->front().value("checkpoint_error", ""));
    return exit_status::kFailure;
  }
  return exit_status::kSuccess;
}

}  // namespace

int suspend(const CtlOptions& options) {
  return move_and_wait(options, coord::SuspendRequest{options.job}, "suspending");
}

int resume(const CtlOptions& options) {
  return move_and_wait(options, coord::PauseRequest{options.job, false}, "resuming");
}

int migrate(const CtlOptions& options) {
  return move_and_wait(options, coord::MigrateRequest{options.job, options.to}, "migrating");
}

int metrics(const CtlOptions& options) {
  if (!check_timeout(options)) return exit_status::kUsage;
  Result<coord::ctl::CtlConnection> connection = connect(options);
  if (!connection) {
    diag::error(connection.error().message);
    return exit_status::kFailure;
  }
  Records records;
  for (const coord::Request& request : {coord::Request(coord::ListRequest{}),
                                        coord::Request(coord::NodeRequest{})}) {
    Result<Records> part = connection->request(request, timeout_of(options));
    if (!part) {
      diag::error(part.error().message);
      return exit_status::kFailure;
    }
    records.insert(records.end(), part->begin(), part->end());
  }
  std::cout << coord::prometheus_text(records) << std::flush;
  return std::cout ? exit_status::kSuccess : exit_status::kFailure;
}

int watch(const CtlOptions& options) {
  Result<std::chrono::nanoseconds> interval = parse_duration(options.interval);
  if (!interval || interval->count() == 0) {
    diag::error("--interval: " + (interval ? "must be above 0" : interval.error().message));
    diag::usage_hint();
    return exit_status::kUsage;
  }
  if (!check_timeout(options)) return exit_status::kUsage;
  // Interrupting a watch is its normal end: SIGINT and SIGTERM arrive on a
  // descriptor that the wait between samples watches.
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  int signals = signalfd(-1, &mask, SFD_CLOEXEC);

  Result<coord::ctl::CtlConnection> connection = connect(options);
  if (!connection) {
    diag::error(connection.error().message);
    return exit_status::kFailure;
  }
  auto period = std::chrono::duration_cast<std::chrono::milliseconds>(*interval);
  auto next = std::chrono::steady_clock::now();
  for (std::uint64_t sample = 1; options.count == 0 || sample <= options.count; ++sample) {
    Result<Records> records = connection->request(coord::ListRequest{}, timeout_of(options));
    if (!records) {
      diag::error(records.error().message);
      return exit_status::kFailure;
    }
    if (resolved_format(options.format) != "json") {
      if (sample > 1) std::cout << '\n';
      print(*records, options.format, Shape::kJobs);
    } else {
      auto unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
      ordered_json marker = {
          {"sample", sample}, {"time_unix_ms", unix_ms}, {"jobs", records->size()}};
      JsonLinesWriter(std::cout).write("sample", 1, marker);
      print(*records, options.format, Shape::kJobs);
    }
    if (!std::cout) return exit_status::kFailure;  // the reader went away
    if (options.count != 0 && sample == options.count) break;
    // Samples keep a steady rhythm however long a request took.
    next += period;
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
        next - std::chrono::steady_clock::now());
    pollfd p{signals, POLLIN, 0};
    if (poll(&p, 1, wait.count() > 0 ? static_cast<int>(wait.count()) : 0) > 0) break;
  }
  return exit_status::kSuccess;
}

}  // namespace gpushare::ctl
