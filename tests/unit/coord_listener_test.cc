// Taking the coordinator's socket: the default path rules, probing, and
// refusing or replacing what is already there.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>

#include "coord/contract/socket_path.h"
#include "coord/server/listener.h"

using namespace gpushare;
using namespace gpushare::coord;
using namespace gpushare::coord::server;

namespace {

std::map<std::string, std::string> g_env;
const char* fake_getenv(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

struct TempDir {
  std::string path;
  TempDir() {
    char pattern[] = "/tmp/gpushare-coord-test.XXXXXX";
    path = mkdtemp(pattern);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

// A socket file nobody listens on, as a SIGKILLed coordinator leaves it.
void make_stale_socket(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strcpy(address.sun_path, path.c_str());
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  close(fd);
}

}  // namespace

TEST_CASE("the socket path follows design.md's order", "[coord][socket]") {
  char path[256];
  SocketSource source;
  g_env = {{"GPUSHARE_SOCKET", "/x/y.sock"}, {"XDG_RUNTIME_DIR", "/run/user/7"}};
  REQUIRE(default_socket_path(path, sizeof path, &source, fake_getenv));
  CHECK(std::string(path) == "/x/y.sock");
  CHECK(source == SocketSource::kEnvironment);

  struct stat info;
  bool node_socket = lstat(kNodeSocketPath, &info) == 0;
  g_env = {{"GPUSHARE_SOCKET", ""}, {"XDG_RUNTIME_DIR", "/run/user/7"}};
  REQUIRE(default_socket_path(path, sizeof path, &source, fake_getenv));
  if (node_socket) {
    CHECK(source == SocketSource::kNode);
  } else {
    CHECK(std::string(path) == "/run/user/7/gpushare/gpushare.sock");
    CHECK(source == SocketSource::kRuntimeDir);
    g_env = {};
    REQUIRE(default_socket_path(path, sizeof path, &source, fake_getenv));
    CHECK(std::string(path) == "/tmp/gpushare-" + std::to_string(getuid()) + "/gpushare.sock");
    CHECK(source == SocketSource::kTmp);
  }
  g_env = {{"GPUSHARE_SOCKET", "/" + std::string(200, 'a')}};
  CHECK_FALSE(default_socket_path(path, sizeof path, &source, fake_getenv));
}

TEST_CASE("per-user directories are recognised however the path is given", "[coord][socket]") {
  g_env = {{"XDG_RUNTIME_DIR", "/run/user/7"}};
  CHECK(in_per_user_directory("/run/user/7/gpushare/gpushare.sock", fake_getenv));
  CHECK(in_per_user_directory("/run/user/7/gpushare/other.sock", fake_getenv));
  CHECK_FALSE(in_per_user_directory("/run/user/7/gpushare.sock", fake_getenv));
  CHECK_FALSE(in_per_user_directory("/run/gpushare/gpushare.sock", fake_getenv));
  std::string tmp = "/tmp/gpushare-" + std::to_string(getuid()) + "/gpushare.sock";
  CHECK(in_per_user_directory(tmp.c_str(), fake_getenv));
  CHECK_FALSE(in_per_user_directory("/tmp/gpushare-99999999/gpushare.sock", fake_getenv));
}

TEST_CASE("socket_directory splits off the last component", "[coord][socket]") {
  char dir[64];
  REQUIRE(socket_directory("/a/b/c.sock", dir, sizeof dir));
  CHECK(std::string(dir) == "/a/b");
  REQUIRE(socket_directory("/c.sock", dir, sizeof dir));
  CHECK(std::string(dir) == "/");
  REQUIRE(socket_directory("c.sock", dir, sizeof dir));
  CHECK(std::string(dir) == ".");
}

TEST_CASE("probing tells live, stale, absent and foreign files apart", "[coord][socket]") {
  TempDir dir;
  std::string path = dir.path + "/s.sock";
  CHECK(probe_socket(path.c_str()) == SocketProbe::kAbsent);
  make_stale_socket(path);
  CHECK(probe_socket(path.c_str()) == SocketProbe::kStale);
  unlink(path.c_str());
  {
    auto listener = Listener::open(path, false);
    REQUIRE(listener.ok());
    int pid = 0;
    CHECK(probe_socket(path.c_str(), &pid) == SocketProbe::kLive);
    CHECK(pid == getpid());
  }
  CHECK(probe_socket(path.c_str()) == SocketProbe::kAbsent);  // removed on close
  std::ofstream(path) << "not a socket";
  CHECK(probe_socket(path.c_str()) == SocketProbe::kNotSocket);
  CHECK(std::string(probe_name(SocketProbe::kStale)) == "stale");
}

TEST_CASE("a second coordinator is refused, a stale socket replaced", "[coord][listener]") {
  TempDir dir;
  std::string path = dir.path + "/s.sock";
  {
    auto first = Listener::open(path, false);
    REQUIRE(first.ok());
    auto second = Listener::open(path, false);
    REQUIRE_FALSE(second.ok());
    CHECK(second.error().message == "a coordinator is already running on " + path + " (pid " +
                                        std::to_string(getpid()) + ")");
  }
  make_stale_socket(path);
  auto replaced = Listener::open(path, false);
  REQUIRE(replaced.ok());
  CHECK(probe_socket(path.c_str()) == SocketProbe::kLive);
  struct stat info;
  REQUIRE(stat(path.c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0666);
}

TEST_CASE("something else at the socket path is left alone", "[coord][listener]") {
  TempDir dir;
  std::string path = dir.path + "/s.sock";
  std::ofstream(path) << "precious";
  auto listener = Listener::open(path, false);
  REQUIRE_FALSE(listener.ok());
  CHECK(listener.error().message ==
        "'" + path + "' exists and is not a socket: refusing to replace it");
  std::ifstream in(path);
  std::string content;
  in >> content;
  CHECK(content == "precious");
}

TEST_CASE("a socket file replaced under the coordinator is not removed by it",
          "[coord][listener]") {
  TempDir dir;
  std::string path = dir.path + "/s.sock";
  {
    auto listener = Listener::open(path, false);
    REQUIRE(listener.ok());
    unlink(path.c_str());
    std::ofstream(path) << "someone else's";
  }
  struct stat info;
  CHECK(stat(path.c_str(), &info) == 0);
}

TEST_CASE("per-user directories are created private and must stay private", "[coord][listener]") {
  TempDir dir;
  std::string path = dir.path + "/gpushare/s.sock";
  {
    auto listener = Listener::open(path, true);
    REQUIRE(listener.ok());
  }
  struct stat info;
  REQUIRE(stat((dir.path + "/gpushare").c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0700);
  chmod((dir.path + "/gpushare").c_str(), 0755);
  auto refused = Listener::open(path, true);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message, Catch::Matchers::Contains("accessible to other users"));
}
