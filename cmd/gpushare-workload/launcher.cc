// The launcher mode (launcher.h).
#include "launcher.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/diag.h"
#include "common/exit_status.h"

namespace gpushare::workload {

namespace {

// The R-th entry of the launcher's CUDA_VISIBLE_DEVICES (R itself when it
// is unset), for a bound rank; empty when the list has no R-th entry.
std::string visible_entry(int r) {
  const char* list = std::getenv("CUDA_VISIBLE_DEVICES");
  if (list == nullptr) return std::to_string(r);
  std::string text = list;
  std::size_t start = 0;
  for (int i = 0; start <= text.size(); ++i) {
    std::size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    if (i == r) return text.substr(start, end - start);
    start = end + 1;
  }
  return "";
}

}  // namespace

int launch_ranks(const std::vector<std::string>& arguments, int ranks,
                 const std::string& rendezvous, bool bind) {
  std::vector<pid_t> children;
  int status_out = exit_status::kSuccess;
  pid_t launcher = getpid();
  for (int r = 0; r < ranks; ++r) {
    std::vector<std::string> words = {"gpushare-workload"};
    words.insert(words.end(), arguments.begin(), arguments.end());
    for (const std::string& extra : {std::string("--rank"), std::to_string(r),
                                     std::string("--world-size"), std::to_string(ranks),
                                     std::string("--rendezvous"), rendezvous}) {
      words.push_back(extra);
    }
    std::string visible;
    if (bind) {
      visible = visible_entry(r);
      if (visible.empty()) {
        diag::error("--bind-gpu: rank " + std::to_string(r) +
                    " has no GPU of its own in CUDA_VISIBLE_DEVICES");
        status_out = exit_status::kUsage;
        break;
      }
      words.push_back("--device");
      words.push_back("0");
    }
    std::vector<char*> argv;
    for (std::string& word : words) argv.push_back(word.data());
    argv.push_back(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      // A rank outlives no launcher: gpushare-run's and a test's kill of
      // the launcher reaches the ranks.
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != launcher) _exit(exit_status::kFailure);
      if (bind) setenv("CUDA_VISIBLE_DEVICES", visible.c_str(), 1);
      execv("/proc/self/exe", argv.data());
      _exit(exit_status::kCannotExecute);
    }
    if (pid < 0) {
      diag::error(std::string("--launch: cannot start rank ") + std::to_string(r) + ": " +
                  std::strerror(errno));
      status_out = exit_status::kFailure;
      break;
    }
    children.push_back(pid);
  }
  std::size_t running = children.size();
  bool stopping = status_out != exit_status::kSuccess;
  if (stopping) {
    for (pid_t child : children) kill(child, SIGTERM);
  }
  while (running > 0) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    std::size_t index = 0;
    while (index < children.size() && children[index] != pid) ++index;
    if (index == children.size()) continue;
    --running;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : exit_status::kFailure;
    if (code != exit_status::kSuccess && !stopping) {
      diag::error("rank " + std::to_string(index) + " failed (" +
                  (WIFEXITED(status) ? "exit status " + std::to_string(code)
                                     : std::string("killed by signal ") +
                                           std::to_string(WTERMSIG(status))) +
                  "): stopping the other ranks");
      status_out = code;
      stopping = true;
      for (pid_t child : children) {
        if (child != pid) kill(child, SIGTERM);
      }
    }
  }
  return status_out;
}

}  // namespace gpushare::workload
