// The job's client against a real coordinator in this process: registration,
// live limits, telemetry, pause, and surviving a coordinator's death and
// return. The client is process-global, so each case stops it at the end.
#include <sys/eventfd.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "coord/job/job_client.h"
#include "coord/job/limits.h"
#include "coord/ctl/ctl_client.h"
#include "coord/server/server.h"

using namespace gpushare;
using namespace gpushare::coord;
using namespace gpushare::coord::job;
using namespace gpushare::coord::server;
using namespace gpushare::coord::ctl;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::uint64_t GiB = 1ull << 30;

// A coordinator on its own thread, stopped through an eventfd.
class TestServer {
 public:
  explicit TestServer(const std::string& path) : stop_(eventfd(0, EFD_CLOEXEC)) {
    ServerOptions options;
    options.socket_path = path;
    options.stop_fd = stop_;
    auto server = Server::open(std::move(options));
    REQUIRE(server.ok());
    server_ = std::move(*server);
    thread_ = std::thread([this] { result_ = server_->run().ok(); });
  }
  ~TestServer() {
    std::uint64_t one = 1;
    REQUIRE(write(stop_, &one, sizeof one) == sizeof one);
    thread_.join();
    server_.reset();  // closes every connection, like a dying coordinator
    close(stop_);
  }

 private:
  int stop_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
  bool result_ = false;
};

struct TempDir {
  std::string path;
  TempDir() {
    char pattern[] = "/tmp/gpushare-client-test.XXXXXX";
    path = mkdtemp(pattern);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

JobIdentity identity(const std::string& socket, std::uint64_t limit) {
  JobIdentity job;
  job.name = "unit-job";
  job.qos = gpushare::kQosOpportunistic;
  job.socket_path = socket.c_str();
  job.device_count = 1;
  for (int i = 0; i < 16; ++i) job.devices[0].uuid[i] = static_cast<unsigned char>(i);
  job.devices[0].mem_total_bytes = 16 * GiB;
  std::uint64_t limits[1] = {limit};
  gpushare::coord::job::set_start_limits(limits, 1);
  return job;
}

std::vector<nlohmann::ordered_json> request(const std::string& socket, const Request& r) {
  auto connection = CtlConnection::connect(socket);
  REQUIRE(connection.ok());
  auto records = connection->request(r);
  INFO((records.ok() ? std::string() : records.error().message));
  REQUIRE(records.ok());
  return std::move(*records);
}

// Waits for a condition with a bound; the condition is the event itself.
template <class Predicate>
bool eventually(Predicate predicate, std::chrono::milliseconds bound) {
  auto deadline = Clock::now() + bound;
  while (!predicate()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

LocalCounters g_counters;

}  // namespace

TEST_CASE("a job registers, follows live limits and reports telemetry", "[coord][client]") {
  TempDir dir;
  std::string socket = dir.path + "/s.sock";
  TestServer server(socket);
  std::uint64_t before = registrations();
  client_start(identity(socket, 4 * GiB), &g_counters);
  // The first registration happens inside client_start.
  CHECK(registrations() == before + 1);
  REQUIRE(job_id() != 0);
  CHECK(mem_limit(0) == 4 * GiB);
  CHECK(registered());
  CHECK(qos() == kQosOpportunistic);
  CHECK(mem_limit(1) == kNoLimit);
  CHECK(mem_limit(-1) == kNoLimit);

  SECTION("a limit change is visible as soon as set answers") {
    SetRequest set;
    set.job = std::to_string(job_id());
    set.mem_limit = "1GiB";
    // An order of events, not a time: the page is shared memory, so the
    // new limit is what the job reads once set has answered.
    request(socket, set);
    CHECK(mem_limit(0) == 1 * GiB);
  }
  SECTION("telemetry reaches ls") {
    g_counters.mem_used_bytes[0] = 3 * GiB;
    g_counters.launches = 10;
    CHECK(eventually(
        [&] {
          auto jobs = request(socket, ListRequest{});
          return jobs.size() == 1 && jobs[0]["mem_used_bytes"] == 3 * GiB &&
                 jobs[0]["launches"] == 10;
        },
        std::chrono::seconds(2)));
    g_counters.mem_used_bytes[0] = 0;
    g_counters.launches = 0;
  }
  SECTION("a paused job's launches wait until resume") {
    request(socket, PauseRequest{"unit-job", true});
    CHECK(paused());
    CHECK(pause_reasons() == kPauseOperator);
    auto waiter = std::async(std::launch::async, [] { wait_while_paused(); });
    // Still waiting after longer than the 100 ms safety-net recheck.
    CHECK(waiter.wait_for(std::chrono::milliseconds(300)) == std::future_status::timeout);
    request(socket, PauseRequest{"unit-job", false});
    // Woken by resume (a futex wake); the bound is only a fault's.
    CHECK(waiter.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
    CHECK_FALSE(paused());
    CHECK(pause_reasons() == 0);
  }
  SECTION("stopping the client makes the coordinator forget the job") {
    client_stop();
    CHECK(job_id() == 0);
    CHECK(eventually([&] { return request(socket, ListRequest{}).empty(); },
                     std::chrono::seconds(1)));
  }
  client_stop();
}

TEST_CASE("a job outlives its coordinator and re-registers with the next one", "[coord][client]") {
  TempDir dir;
  std::string socket = dir.path + "/s.sock";
  auto server = std::make_unique<TestServer>(socket);
  client_start(identity(socket, 4 * GiB), &g_counters);
  std::uint64_t id = job_id();
  REQUIRE(id != 0);
  SetRequest set;
  set.job = "unit-job";
  set.mem_limit = "1GiB";
  request(socket, set);
  request(socket, PauseRequest{"unit-job", true});
  auto waiter = std::async(std::launch::async, [] { wait_while_paused(); });
  std::uint64_t before = registrations();

  server.reset();  // the coordinator dies
  // Nothing blocks on a dead coordinator: the paused launch goes on.
  CHECK(waiter.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  CHECK(eventually([] { return job_id() == 0; }, std::chrono::seconds(5)));
  CHECK_FALSE(registered());
  CHECK_FALSE(paused());
  CHECK(pause_reasons() == 0);  // a dead coordinator pauses nobody
  CHECK(mem_limit(0) == 1 * GiB);  // the last limit holds

  auto start = Clock::now();
  server = std::make_unique<TestServer>(socket);
  REQUIRE(eventually([&] { return registrations() > before && job_id() != 0; },
                     std::chrono::seconds(10)));
  // Jobs look again every 0.1 to 0.5 s; a job that backed off as after a
  // refusal (5 s) would miss this bound.
  CHECK(Clock::now() - start < std::chrono::seconds(3));
  CHECK(job_id() == id);  // the same id, since it was free
  auto jobs = request(socket, ListRequest{});
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0]["mem_limit_bytes"] == 1 * GiB);
  CHECK(jobs[0]["devices"][0]["start_limit_bytes"] == 4 * GiB);
  CHECK(jobs[0]["state"] == "running");
  client_stop();
}

TEST_CASE("without a coordinator the job starts at once on its own limits", "[coord][client]") {
  TempDir dir;
  std::string socket = dir.path + "/nobody.sock";
  // No socket: the connection is refused at once and client_start returns
  // without waiting for a coordinator (it would otherwise retry for
  // ever). A margin far above a refused connect, below a wait that is one.
  auto start = Clock::now();
  client_start(identity(socket, 2 * GiB), &g_counters);
  CHECK(Clock::now() - start < std::chrono::seconds(2));
  CHECK(job_id() == 0);
  CHECK_FALSE(registered());
  CHECK(mem_limit(0) == 2 * GiB);
  CHECK_FALSE(paused());
  wait_while_paused();  // returns at once

  // A coordinator that appears later is found.
  TestServer server(socket);
  CHECK(eventually([] { return job_id() != 0; }, std::chrono::seconds(2)));
  CHECK(mem_limit(0) == 2 * GiB);
  client_stop();
}
