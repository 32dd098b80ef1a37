// A coordinator's search for jobs launched for it (lib/coord/server/launched_jobs.h),
// on a directory laid out like /proc.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "coord/server/launched_jobs.h"

namespace {

struct FakeProc {
  std::string root;
  FakeProc() {
    char pattern[] = "/tmp/gpushare-fake-proc-XXXXXX";
    root = mkdtemp(pattern);
  }
  ~FakeProc() { std::system(("rm -rf " + root).c_str()); }
  // A process `pid` whose environment is `variables` (NUL-separated).
  void process(const std::string& pid, const std::string& variables) {
    std::string dir = root + "/" + pid;
    mkdir(dir.c_str(), 0700);
    std::FILE* file = std::fopen((dir + "/environ").c_str(), "wb");
    std::fwrite(variables.data(), 1, variables.size(), file);
    std::fclose(file);
  }
};

std::string env(std::initializer_list<std::string> variables) {
  std::string text;
  for (const std::string& v : variables) text += v + '\0';
  return text;
}

}  // namespace

TEST_CASE("launched jobs: a process carrying the mark for the socket keeps the coordinator",
          "[coord][launched]") {
  FakeProc proc;
  proc.process("100", env({"HOME=/root", "GPUSHARE_SOCKET=/run/a.sock"}));
  CHECK_FALSE(gpushare::coord::server::launched_job_alive("/run/a.sock", geteuid(), proc.root));
  proc.process("101", env({"A=1", "GPUSHARE_LAUNCHED_FOR=/run/a.sock", "B=2"}));
  CHECK(gpushare::coord::server::launched_job_alive("/run/a.sock", geteuid(), proc.root));
}

TEST_CASE("launched jobs: only the whole variable for this socket counts", "[coord][launched]") {
  FakeProc proc;
  proc.process("100", env({"GPUSHARE_LAUNCHED_FOR=/run/a.sock2"}));
  proc.process("101", env({"XGPUSHARE_LAUNCHED_FOR=/run/a.sock"}));
  proc.process("102", std::string("GPUSHARE_LAUNCHED_FOR=/run/a.so"));  // cut short
  CHECK_FALSE(gpushare::coord::server::launched_job_alive("/run/a.sock", geteuid(), proc.root));
  // The last variable need not end with a NUL to be cut short: it must end with one to count.
  proc.process("103", std::string(5000, 'x') + '\0' + "GPUSHARE_LAUNCHED_FOR=/run/a.sock" + '\0');
  CHECK(gpushare::coord::server::launched_job_alive("/run/a.sock", geteuid(), proc.root));
}

TEST_CASE("launched jobs: another user's process and the coordinator itself do not count",
          "[coord][launched]") {
  FakeProc proc;
  proc.process(std::to_string(getpid()), env({"GPUSHARE_LAUNCHED_FOR=/run/a.sock"}));
  CHECK_FALSE(gpushare::coord::server::launched_job_alive("/run/a.sock", geteuid(), proc.root));
  proc.process("100", env({"GPUSHARE_LAUNCHED_FOR=/run/a.sock"}));
  CHECK_FALSE(gpushare::coord::server::launched_job_alive("/run/a.sock", geteuid() + 1, proc.root));
  CHECK(gpushare::coord::server::launched_job_alive("/run/a.sock", geteuid(), proc.root));
}
