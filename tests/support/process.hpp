#pragma once
// Runs a command line through the shell for the CLI tests: its exit code and everything it printed
// (stderr joined to stdout).
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fcntl.h>
#include <optional>
#include <spawn.h>
#include <stdexcept>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace helios::test {

struct CommandResult {
  int exitCode;
  std::string output;
};

inline CommandResult runCommand(const std::string& commandLine) {
  FILE* pipe = popen((commandLine + " 2>&1").c_str(), "r");
  if (!pipe) throw std::runtime_error("popen failed for: " + commandLine);
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, pipe))
    out += buf;
  const int status = pclose(pipe);
  return {WEXITSTATUS(status), out};
}

// Starts argv[0] (a path) with `args`, stdout and stderr into `log`; returns its pid.
inline pid_t spawnLogged(const std::vector<std::string>& argv, const std::string& log) {
  std::vector<std::string> copy(argv);
  std::vector<char*> ptrs;
  for (auto& a : copy)
    ptrs.push_back(a.data());
  ptrs.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, ptrs[0], &fa, nullptr, ptrs.data(), ::environ); // unistd.h (_GNU_SOURCE)
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error("posix_spawn failed for " + argv[0]);
  return pid;
}

// The exit code (or 128 + the signal) once `pid` ends, or nothing after `seconds`.
inline std::optional<int> waitExitWithin(pid_t pid, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (r < 0 && errno != EINTR) throw std::runtime_error("waitpid failed");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return std::nullopt;
}

} // namespace helios::test
