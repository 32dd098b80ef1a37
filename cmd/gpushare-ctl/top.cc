// gpushare-ctl top: the node's jobs, redrawn every --interval on a terminal.
//
// Plain ANSI (the alternate screen, cursor home, erase to end of line), so
// it works in any terminal, over ssh and in tmux, without curses. Each
// refresh is one `list` request, the same as `ls`; the layout is
// lib/coord/ctl/top_view.h.
//
// The terminal is put back however top ends: `q` (stdin in raw mode, one
// key at a time, no echo), SIGINT, SIGTERM, SIGHUP, a lost coordinator.
// Those signals, SIGWINCH (redraw at the new size) and SIGTSTP (the
// terminal restored before the stop, raw mode again after SIGCONT) all
// arrive on one signalfd that the wait between refreshes watches, so no
// handler runs in the middle of a write.
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "common/diag.h"
#include "common/exit_status.h"
#include "common/units.h"
#include "coord/ctl/ctl_client.h"
#include "coord/ctl/top_view.h"
#include "ctl.h"

namespace gpushare::ctl {
namespace {

// Escape sequences (ECMA-48 and xterm's alternate screen).
constexpr const char* kEnterScreen = "\x1b[?1049h\x1b[?25l";  // alternate screen, no cursor
constexpr const char* kLeaveScreen = "\x1b[?25h\x1b[?1049l";
constexpr const char* kHome = "\x1b[H";
constexpr const char* kEraseLine = "\x1b[K";
constexpr const char* kEraseBelow = "\x1b[J";

// Writes all of `text` to stdout, retrying short writes; false when the
// terminal is gone.
bool write_all(const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(STDOUT_FILENO, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// The terminal's state while top runs, and how to put it back.
class Screen {
 public:
  // saved_ is read in the body: as a member initialiser it would be
  // read before saved_'s own initialiser zeroes it.
  Screen() { raw_input_ = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved_) == 0; }
  ~Screen() { leave(); }
  void enter() {
    if (raw_input_) {
      termios raw = saved_;
      // Keys one at a time without echo; ISIG stays, so ^C is SIGINT.
      raw.c_lflag &= static_cast<tcflag_t>(~(ICANON | ECHO));
      raw.c_cc[VMIN] = 0;
      raw.c_cc[VTIME] = 0;
      tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw);
    }
    write_all(kEnterScreen);
    entered_ = true;
  }
  void leave() {
    if (!entered_) return;
    write_all(kLeaveScreen);
    if (raw_input_) tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_);
    entered_ = false;
  }
  bool raw_input() const { return raw_input_; }

 private:
  bool raw_input_ = false;
  bool entered_ = false;
  termios saved_{};
};

TopFrame frame_now(const std::string& interval) {
  TopFrame frame;
  winsize size{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0 && size.ws_row > 0) {
    frame.width = size.ws_col;
    frame.height = size.ws_row;
  }
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char clock[16];
  std::strftime(clock, sizeof clock, "%H:%M:%S", &local);
  frame.clock = clock;
  frame.interval = interval;
  return frame;
}

// One frame: home, each line over the old one, the rest erased; written
// in one go so the terminal never shows half a frame.
std::string frame_text(const std::vector<std::string>& lines) {
  std::string out = kHome;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    out += lines[i];
    out += kEraseLine;
    if (i + 1 < lines.size()) out += "\r\n";
  }
  return out + kEraseBelow;
}

enum class Event { kTick, kRedraw, kQuit, kSignalled };

// Waits until `deadline` for a key or a signal.
Event wait_event(int signals, bool keys, std::chrono::steady_clock::time_point deadline,
                 Screen& screen, int* signal_number) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Event::kTick;
    pollfd fds[2] = {{signals, POLLIN, 0}, {keys ? STDIN_FILENO : -1, POLLIN, 0}};
    int ready = poll(fds, 2, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return Event::kQuit;
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo info{};
      if (read(signals, &info, sizeof info) != sizeof info) continue;
      int number = static_cast<int>(info.ssi_signo);
      if (number == SIGWINCH) return Event::kRedraw;
      if (number == SIGTSTP) {
        // Stopped like any program on ^Z, with the terminal as it was.
        screen.leave();
        kill(getpid(), SIGSTOP);
        screen.enter();
        return Event::kRedraw;
      }
      *signal_number = number;
      return Event::kSignalled;
    }
    if (fds[1].revents & (POLLHUP | POLLERR)) return Event::kQuit;  // the terminal went away
    if (fds[1].revents & POLLIN) {
      char key[16];
      ssize_t n = read(STDIN_FILENO, key, sizeof key);
      if (n == 0) return Event::kQuit;
      for (ssize_t i = 0; i < n; ++i) {
        if (key[i] == 'q' || key[i] == 'Q') return Event::kQuit;
      }
    }
  }
}

}  // namespace

int top(const CtlOptions& options) {
  // A live view draws on a terminal; records for programs come from
  // watch (a sample at each interval) and ls.
  if (!isatty(STDOUT_FILENO)) {
    diag::error(
        "top draws on a terminal, and stdout is not one; for records use 'gpushare-ctl watch' "
        "(JSON Lines every --interval) or 'gpushare-ctl ls'");
    return exit_status::kUsage;
  }
  Result<std::chrono::nanoseconds> interval = parse_duration(options.interval);
  if (!interval || *interval < std::chrono::milliseconds(100)) {
    diag::error("--interval: " +
                (interval ? std::string("must be at least 100ms") : interval.error().message));
    diag::usage_hint();
    return exit_status::kUsage;
  }
  Result<std::chrono::nanoseconds> timeout = parse_duration(options.timeout);
  if (!timeout || *timeout < std::chrono::milliseconds(1)) {
    diag::error("--timeout: " +
                (timeout ? std::string("must be at least 1ms") : timeout.error().message));
    diag::usage_hint();
    return exit_status::kUsage;
  }
  auto request_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(*timeout);
  std::string path = socket_path(options);
  if (path.empty()) {
    diag::error("the default socket path is too long; give --socket PATH");
    return exit_status::kFailure;
  }
  Result<coord::ctl::CtlConnection> connection =
      coord::ctl::CtlConnection::connect(path, request_timeout);
  if (!connection) {
    diag::error(connection.error().message);
    return exit_status::kFailure;
  }

  sigset_t mask;
  sigemptyset(&mask);
  for (int number : {SIGINT, SIGTERM, SIGHUP, SIGWINCH, SIGTSTP}) sigaddset(&mask, number);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  int signals = signalfd(-1, &mask, SFD_CLOEXEC);
  if (signals < 0) {
    diag::error(std::string("signalfd: ") + std::strerror(errno));
    return exit_status::kFailure;
  }

  Screen screen;
  screen.enter();
  auto period = std::chrono::duration_cast<std::chrono::milliseconds>(*interval);
  auto next = std::chrono::steady_clock::now();
  std::vector<nlohmann::ordered_json> records;
  std::string failure;
  int signal_number = 0;
  bool fetch = true;
  for (;;) {
    if (fetch) {  // one request per refresh; a redraw reuses the last answer
      Result<std::vector<nlohmann::ordered_json>> answer =
          connection->request(coord::ListRequest{}, request_timeout);
      if (!answer) {
        failure = answer.error().message;
        break;
      }
      records = std::move(*answer);
      next += period;
    }
    if (!write_all(frame_text(top_lines(records, frame_now(options.interval))))) break;
    Event event = wait_event(signals, screen.raw_input(), next, screen, &signal_number);
    if (event == Event::kQuit || event == Event::kSignalled) break;
    fetch = event == Event::kTick;
    if (fetch && next < std::chrono::steady_clock::now()) next = std::chrono::steady_clock::now();
  }
  screen.leave();
  close(signals);
  if (!failure.empty()) {
    diag::error(failure);
    return exit_status::kFailure;
  }
  // Interrupted is a normal end, as for watch; a TERM or HUP too.
  (void)signal_number;
  return exit_status::kSuccess;
}

}  // namespace gpushare::ctl
