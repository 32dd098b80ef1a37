// The launcher mode (launcher.h).
#include "launcher.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/diag.h"
#include "common/exit_status.h"

namespace gpushare::workload {

int launch_ranks(const std::vector<std::string>& arguments, int ranks,
                 const std::string& rendezvous) {
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
    std::vector<char*> argv;
    for (std::string& word : words) argv.push_back(word.data());
    argv.push_back(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      // A rank outlives no launcher: gpushare-run's and a test's kill of
      // the launcher reaches the ranks.
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != launcher) _exit(exit_status::kFailure);
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
