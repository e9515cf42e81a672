// The Prometheus daemon (`hotline serve`): its command-line arguments and entry.
#pragma once

#include <string>

namespace hotline::daemon {

struct ServeArgs {
    std::string config;
    std::string listen;
    bool check_config = false;
    bool strict = false;
};

// Runs until SIGINT/SIGTERM; returns the process exit status (exit_codes.hpp).
int run_serve(const ServeArgs& a);

}  // namespace hotline::daemon
