// paraplan: plan, evaluate and search parallel training of large language models.
// The commands live in host/cli/; main only hands them the command line.
#include <iostream>

#include "host/cli/command.h"

int main(int argc, char** argv) {
  return paraplan::host::run_command_line(std::vector<std::string>(argv + 1, argv + argc), std::cerr);
}
