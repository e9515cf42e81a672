// SPDX-License-Identifier: Apache-2.0
// The Prometheus daemon (`hotline serve`): its command-line arguments and entry.
#pragma once

#include <chrono>
#include <string>

#include "hotline/session/tracing.hpp"

namespace hotline::daemon {

// Loopback unless configured otherwise: without [basic_auth] anyone who can
// connect can read the metrics.
inline constexpr const char* kDefaultListenHost = "127.0.0.1";
inline constexpr int kDefaultListenPort = 10464;  // docs/metrics.md says why this one

// The share of the time an always-on exporter keeps its programs attached
// (probe.duty_cycle): docs/overhead.md, "The daemon's default", has what it
// costs and what it keeps.
inline constexpr int kDefaultDutyPercent = 10;
// The period of its windows (probe.duty_period): each attach and detach waits
// for every CPU, so an always-on daemon takes a longer period than a recording
// (kSessionDutyPeriod) and its windows are 1 s.
inline constexpr std::chrono::milliseconds kDefaultDutyPeriod{10000};

// [probe]'s defaults: a recording session's, attached kDefaultDutyPercent of
// each kDefaultDutyPeriod.
TracingOptions default_probe_options();

struct ServeArgs {
    std::string config;
    std::string listen;
    std::string web_config;          // exporter-toolkit YAML: TLS, basic-auth users (bcrypt)
    std::string log_level = "info";  // debug, info, warn, error
    std::string log_format = "logfmt";  // logfmt, json
    bool check_config = false;
    bool strict = false;
};

// Runs until SIGINT/SIGTERM; returns the process exit status (exit_codes.hpp).
int run_serve(const ServeArgs& a);

}  // namespace hotline::daemon
