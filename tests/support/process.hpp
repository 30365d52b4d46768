#pragma once
// Runs a command line through the shell for the CLI tests: its exit code and everything it printed
// (stderr joined to stdout).
#include <cstdio>
#include <stdexcept>
#include <string>
#include <sys/wait.h>

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

} // namespace helios::test
