// gpushare-run's tree file and its janitor (lib/runner/job_tree.cc).
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <string>

#include "coord/contract/tree_file.h"
#include "runner/job_tree.h"

namespace {

bool exists(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0;
}

std::uint64_t now_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000 +
         static_cast<std::uint64_t>(ts.tv_nsec) / 1000000;
}

}  // namespace

TEST_CASE("a job's tree file is private and goes once its process exits", "[runner][tree]") {
  // A child plays gpushare-run and the job: it makes the file, reports its
  // path and mode, waits to be told to go, and exits.
  int report[2], release[2];
  REQUIRE(pipe(report) == 0);
  REQUIRE(pipe(release) == 0);
  pid_t job = fork();
  REQUIRE(job >= 0);
  if (job == 0) {
    close(report[0]);
    close(release[1]);
    gpushare::Result<std::string> path = gpushare::start_job_tree("");  // a forked janitor
    std::string line = path ? *path : "error: " + path.error().message;
    if (write(report[1], line.data(), line.size()) < 0) _exit(2);
    close(report[1]);
    char byte;
    ssize_t ignored = read(release[0], &byte, 1);
    (void)ignored;
    _exit(0);
  }
  close(report[1]);
  close(release[0]);
  char buffer[256] = {};
  ssize_t n = read(report[0], buffer, sizeof buffer - 1);
  close(report[0]);
  REQUIRE(n > 0);
  std::string path(buffer, static_cast<std::size_t>(n));
  REQUIRE(path.rfind("/dev/shm/gpushare-tree-", 0) == 0);
  struct stat info {};
  REQUIRE(stat(path.c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0600);
  CHECK(info.st_uid == geteuid());
  CHECK(info.st_size == static_cast<off_t>(sizeof(gpushare::coord::TreeFile)));
  FILE* file = std::fopen(path.c_str(), "rb");
  REQUIRE(file != nullptr);
  std::uint32_t header[2] = {0, 0};
  CHECK(std::fread(header, sizeof header, 1, file) == 1);
  std::fclose(file);
  CHECK(header[0] == gpushare::coord::kTreeMagic);

  // While the job lives, the file stays; its exit (no process took a slot)
  // is the janitor's cue.
  CHECK(exists(path));
  close(release[1]);
  int status = 0;
  REQUIRE(waitpid(job, &status, 0) == job);
  CHECK(WIFEXITED(status));
  std::uint64_t deadline = now_ms() + 10000;  // a lost janitor, not a slow one, passes this
  while (exists(path) && now_ms() < deadline) poll(nullptr, 0, 5);
  CHECK_FALSE(exists(path));
}
