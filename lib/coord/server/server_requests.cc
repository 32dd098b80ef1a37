// The coordinator's answers to what a connection asks (server_impl.h):
// registering a job's process and sending its control block, passing
// production yield pages on, and gpushare-ctl's requests.
#include "coord/contract/fd_passing.h"
#include "coord/server/server_impl.h"

#include <nlohmann/json.hpp>

#include "coord/contract/metrics_text.h"

namespace gpushare::coord::server {

using namespace server_detail;

// The yield signal: a production job's yield page, sent to an
// opportunistic job's connection (control_block.h, layout 4). The job
// reads nothing else from us after its reply, so the socket has room.
bool Server::Impl::send_yield_page(std::uint64_t process_key, int slot, int fd) {
  for (auto& [key, c] : connections) {
    if (c.role != Role::kJob || c.process_key != process_key || !c.out.empty()) continue;
    std::string line =
        "{\"kind\":\"yield-page\",\"version\":1,\"slot\":" + std::to_string(slot) + "}\n";
    return send_with_fds(c.fd, line.data(), line.size(), &fd, 1, MSG_DONTWAIT) ==
           static_cast<ssize_t>(line.size());
  }
  return false;
}

// The memory loop, now; an opportunistic job whose target it changed is
// told at once (control_block.h, "Wake-ups").
void Server::Impl::memory_pass() {
  memory_due = false;
  memory_tick(registry, [this](std::uint64_t process_key) { send_wake(process_key); });
}

// A hint: never blocks, and a full socket (a job that does not read) loses
// it; the job's own tick still finds the target.
void Server::Impl::send_wake(std::uint64_t process_key) {
  static const std::string line = "{\"kind\":\"wake\",\"version\":1}\n";
  for (auto& [key, c] : connections) {
    if (c.role != Role::kJob || c.process_key != process_key || !c.out.empty()) continue;
    ssize_t sent = send(c.fd, line.data(), line.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    (void)sent;
    return;
  }
}

// The tree a registering process proved it belongs to, or an invalid
// proof (it then makes a job of its own).
TreeProof Server::Impl::tree_proof(Connection& c, const RegisterRequest& request) {
  int fd = std::exchange(c.tree_fd, -1);
  if (!request.tree) {
    if (fd >= 0) close(fd);
    return TreeProof();
  }
  if (fd < 0) {
    warning("pid " + std::to_string(c.peer.pid) +
            " says it is part of a job's process tree but passed no tree file; it is a job "
            "of its own");
    return TreeProof();
  }
  Result<TreeProof> proof = TreeProof::verify(fd, c.peer.uid);
  if (!proof) {
    warning("pid " + std::to_string(c.peer.pid) + " uid " + std::to_string(c.peer.uid) + ": " +
            proof.error().message + "; it is a job of its own");
    return TreeProof();
  }
  return std::move(*proof);
}

// Checks jobs' usage from our own view at every sweep (enforcement.h).
void Server::Impl::start_enforcer() {
  if (!options.enforce) return;
  Result<std::unique_ptr<UsageSource>> source = open_nvml_usage();
  if (!source) {
    note("not checking jobs' device memory from outside: " + source.error().message);
    return;
  }
  enforcer = std::make_unique<Enforcer>(options.violation_action, std::move(*source),
                                        [this](const std::string& line) { warning(line); });
  note(std::string("checking jobs' device memory through NVML; over the limit: ") +
       violation_action_name(options.violation_action));
}

// The /metrics endpoint, answered on this loop (metrics_http.h).
Status Server::Impl::start_metrics() {
  if (options.metrics_listen.empty()) return {};
  Result<std::unique_ptr<MetricsEndpoint>> endpoint =
      MetricsEndpoint::open(options.metrics_listen, MetricsLimits{}, [this] { return metrics_text(); });
  if (!endpoint) return endpoint.error();
  metrics = std::move(*endpoint);
  note("serving metrics on http://" + metrics->address() + "/metrics");
  return watch(metrics->fd(), kTagMetrics, EPOLLIN);
}

// The same records as ls and node give gpushare-ctl metrics, so both
// print the same text.
std::string Server::Impl::metrics_text() {
  std::uint64_t now = monotonic_ns();
  std::vector<JobView> jobs = registry.list(now);
  if (enforcer) enforcer->annotate(jobs);
  free_share.annotate(jobs, now);
  std::vector<nlohmann::ordered_json> records;
  records.reserve(jobs.size() + 2);
  for (const JobView& job : jobs) records.push_back(job_record(job));
  for (nlohmann::ordered_json& record : node_records(registry.node(now))) {
    records.push_back(std::move(record));
  }
  return prometheus_text(records);
}

bool Server::Impl::handle_line(std::uint64_t key, Connection& c, const std::string& line) {
  Result<Request> request = parse_request(line);
  if (!request) {
    reject(key, c, request.error().message);
    return false;
  }
  if (auto* registration = std::get_if<RegisterRequest>(&*request)) {
    if (c.role != Role::kNew) {
      reject(key, c, "out of order: 'register' must be the first message of a connection");
      return false;
    }
    return register_job(key, c, *registration);
  }
  if (std::holds_alternative<RoomRequest>(*request)) {
    if (c.role != Role::kJob) {
      reject(key, c, "out of order: 'room' comes only from a registered job");
      return false;
    }
    memory_due = true;  // run() runs the memory loop after this batch of events
    return true;
  }
  if (c.role == Role::kJob) {
    reject(key, c, "out of order: a registered job sends only 'room'");
    return false;
  }
  // The last slots are kept for job registrations: a user's control
  // requests are refused while only those are left.
  if (c.role == Role::kNew && c.peer.uid != 0 &&
      non_job_connections + root_reserve() + job_reserve() > options.max_connections) {
    limited_warning(refused_warning, "refused a control request from uid " +
                                         std::to_string(c.peer.uid) + ": too many connections");
    refuse(c.fd, "too many connections");
    drop(key, "was refused: too many connections");
    return false;
  }
  c.role = Role::kControl;
  if (c.tree_fd >= 0) close(std::exchange(c.tree_fd, -1));  // only registrations pass one
  std::string answer_line;
  try {
    answer_line = answer(c, *request);
  } catch (const std::exception& e) {
    // A bug must cost one request, not the coordinator every job relies on.
    warning(std::string("internal error answering a request: ") + e.what());
    answer_line = encode_error(std::string("internal error: ") + e.what(), kReasonInternal);
  }
  return reply(key, c, answer_line);
}

bool Server::Impl::register_job(std::uint64_t key, Connection& c, const RegisterRequest& request) {
  // A job that gave up waiting (it closed its socket after its request:
  // this coordinator was stopped or slow) is not registered, so it is
  // given no id: the next job's id follows the last one a job was told.
  char next = 0;
  if (recv(c.fd, &next, 1, MSG_PEEK | MSG_DONTWAIT) == 0) {
    note("pid " + std::to_string(c.peer.pid) +
         " gave up before its registration was answered; no id given");
    drop(key, "gave up before its registration was answered");
    return false;
  }
  Result<Process*> added = registry.add(request, c.peer, tree_proof(c, request));
  if (!added) {
    warning("cannot register a job for pid " + std::to_string(c.peer.pid) + ": " +
            added.error().message);
    return reply(key, c, encode_error(added.error().message, kReasonInternal));
  }
  Process& process = **added;
  const Job& job = *registry.find(process.job_id);
  c.role = Role::kJob;
  count_non_job(c.peer.uid, -1);
  c.process_key = process.key;
  arm_idle_timer();

  if (!send_control_block(c, job.id, *process.block)) {
    std::uint64_t id = job.id;
    bool new_job = job.processes.size() == 1;
    drop(key, "could not be sent its control block");
    if (new_job) registry.give_back_id(id);  // never told: the id is not spent
    return false;
  }
  save_decisions_now();
  compute.tick(registry, monotonic_ns());  // its limits and phase from the start
  if (job.processes.size() == 1) {
    note("job " + std::to_string(job.id) + " '" + job.name + "' registered: pid " +
         std::to_string(process.pid) + ", uid " + std::to_string(job.uid) + ", " +
         qos_name(job.qos) + ", " + describe_limits(job));
  } else {
    note("pid " + std::to_string(process.pid) + " joined job " + std::to_string(job.id) + " '" +
         job.name + "' (" + std::to_string(job.processes.size()) + " processes)");
  }

  // Watch the process itself too: its socket may live on in a child.
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, process.pid, 0));
  if (pidfd >= 0) {
    c.pidfd = pidfd;
    if (!watch(pidfd, key * 2 + 1, EPOLLIN)) {
      close(pidfd);
      c.pidfd = -1;
    }
  } else if (errno == ESRCH) {
    drop(key, "exited");
    return false;
  }
  return true;
}

bool Server::Impl::send_control_block(Connection& c, std::uint64_t job_id, ControlBlock& block) {
  // The reply carries the three memfds; the job keeps them mapped, so our
  // copies of the first two can go at once (the yield page's stays: it
  // is passed on to opportunistic jobs, compute_yield.h).
  std::string line = encode_registered(job_id);
  int fds[3] = {block.limits_fd(), block.telemetry_fd(), block.yield_fd()};
  ssize_t sent = send_with_fds(c.fd, line.data(), line.size(), fds, 3, MSG_DONTWAIT);
  block.close_descriptors();
  return sent == static_cast<ssize_t>(line.size());
}

std::string Server::Impl::answer(const Connection& c, const Request& request) {
  std::uint64_t now = monotonic_ns();
  std::string reason;
  Result<JobView> result = make_error("unreachable");
  if (std::holds_alternative<ListRequest>(request)) {
    std::vector<JobView> jobs = registry.list(now);
    if (enforcer) enforcer->annotate(jobs);
    free_share.annotate(jobs, now);
    return encode_jobs(jobs);
  }
  if (std::holds_alternative<NodeRequest>(request)) return encode_node(registry.node(now));
  std::string action;
  if (const auto* show = std::get_if<ShowRequest>(&request)) {
    result = registry.show(show->job, now, &reason);
  } else if (const auto* set = std::get_if<SetRequest>(&request)) {
    result = registry.set(*set, c.peer, now, &reason);
    action = "set" + std::string(set->mem_limit ? " mem-limit=" + *set->mem_limit : "") +
             (set->qos ? std::string(" qos=") + qos_name(*set->qos) : "") +
             (set->name ? " name=" + *set->name : "") +
             (set->compute ? " compute=" + *set->compute : "");
  } else if (const auto* pause = std::get_if<PauseRequest>(&request)) {
    // A job suspended through the driver's checkpoint resumes through it.
    if (!start_checkpoint_resume(registry, checkpointer, *pause, c.peer, now, &reason, &result)) {
      result = registry.pause(*pause, c.peer, now, &reason);
    }
    action = pause->pause ? "pause" : "resume";
  } else if (const auto* suspend = std::get_if<SuspendRequest>(&request)) {
    // Through the driver's checkpoint where it can (migrate.h), else the
    // interposer moves the memory (suspend.h).
    bool checkpointed =
        start_checkpoint_suspend(registry, checkpointer, *suspend, c.peer, now, &reason, &result);
    if (!checkpointed) result = registry.suspend(*suspend, c.peer, now, &reason);
    action = checkpointed ? "suspend (checkpoint)" : "suspend";
  } else if (const auto* migrate = std::get_if<MigrateRequest>(&request)) {
    result = start_migration(registry, checkpointer, *migrate, c.peer, now, &reason);
    action = "migrate to " + migrate->to;
  }
  if (!result) {
    if (!action.empty()) {
      note("uid " + std::to_string(c.peer.uid) + " " + action + ": " + result.error().message);
    }
    return encode_error(result.error().message, reason);
  }
  if (!action.empty()) {
    save_decisions_now();
    note("uid " + std::to_string(c.peer.uid) + " " + action + " on job " +
         std::to_string(result->id) + " '" + result->name + "'");
  }
  if (enforcer) enforcer->annotate(*result);
  free_share.annotate(*result, registry.list(now), now);
  return encode_jobs({*result});
}

}  // namespace gpushare::coord::server
