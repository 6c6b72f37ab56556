// zoo_chatty: a strategy that writes to stdout by every route while it is applied; the report
// on stdout (--json) must stay exactly the report, and the text goes to stderr.
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "paraplan/sdk.hpp"

namespace {

class ZooChatty : public paraplan::Strategy {
 public:
  static paraplan::PluginInfo info() { return {"zoo_chatty", "1.0.0", "prints to stdout while applied", {}}; }
  explicit ZooChatty(const paraplan::Params&) {}
  void apply(const paraplan::StrategyContext&, paraplan::PlanEditor&) override {
    std::printf("zoo_chatty: printf\n");
    std::fflush(stdout);
    std::cout << "zoo_chatty: std::cout" << std::endl;
    const char text[] = "zoo_chatty: write(1)\n";
    if (write(STDOUT_FILENO, text, sizeof(text) - 1) < 0) return;
    paraplan::log_info("zoo_chatty: through the host's logger");
  }
};

}  // namespace

PARAPLAN_PLUGIN(ZooChatty)
