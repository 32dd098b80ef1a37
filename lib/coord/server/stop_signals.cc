#include "coord/server/stop_signals.h"

#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace gpushare::coord::server {

StopSignals::~StopSignals() {
  if (fd_ >= 0) close(fd_);
}

Status StopSignals::take() {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  if (sigprocmask(SIG_BLOCK, &mask, nullptr) != 0) {
    return make_error(std::string("cannot take signals: ") + std::strerror(errno));
  }
  signal(SIGPIPE, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  fd_ = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (fd_ < 0) return make_error(std::string("cannot take signals: ") + std::strerror(errno));
  return {};
}

const char* StopSignals::received_name() {
  signalfd_siginfo info{};
  ssize_t n = fd_ >= 0 ? read(fd_, &info, sizeof info) : -1;
  const char* name = n == sizeof info ? sigabbrev_np(static_cast<int>(info.ssi_signo)) : nullptr;
  return name != nullptr ? name : "TERM";
}

}  // namespace gpushare::coord::server
