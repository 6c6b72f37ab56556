// paraplan: plan, evaluate and search parallel training of large language models.
// The commands live in host/cli/; main only hands them the command line, after moving what
// plugins may print to stdout out of the report's way (report/report_output.h).
#include <iostream>

#include "host/cli/command.h"
#include "host/report/report_output.h"

int main(int argc, char** argv) {
  paraplan::host::redirect_stdout_for_plugins();
  const int code = paraplan::host::run_command_line(std::vector<std::string>(argv + 1, argv + argc), std::cerr);
  paraplan::host::report_stream().flush();
  return code;
}
