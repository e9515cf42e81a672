// SPDX-License-Identifier: Apache-2.0
// `hotline serve` configuration: the TOML file, its validation (every error names
// the line), the listen address, and HTTP basic-auth checking.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hotline/report/prometheus.hpp"
#include "hotline/base/result.hpp"
#include "hotline/daemon/serve.hpp"
#include "hotline/session/tracing.hpp"
#include "hotline/targets/targets.hpp"

namespace hotline {

struct ListenAddress {
    std::string host;  // IP literal or name, without brackets; empty: every address
    int port = 0;      // 0: any free port
    std::string to_string() const;
    bool all_addresses() const;  // "", 0.0.0.0 or ::
    bool loopback() const;       // 127.0.0.0/8, ::1, localhost
    std::string bind_host() const;  // what to bind: the host, or "::"/"0.0.0.0" for every address
};
// "127.0.0.1:10464", "[::1]:10464", "localhost:0", ":10464" (every address).
Result<ListenAddress> parse_listen_address(std::string_view s);

// A basic-auth user and how the password is stored.
struct AuthUser {
    enum class Hash { kSha256, kBcrypt };
    std::string name;
    std::string hash;  // lower-case hex SHA-256, or a bcrypt "$2y$..." string
    Hash kind = Hash::kSha256;
};

struct ServeTarget {
    std::string name;
    std::optional<Mechanism> mechanism;  // nullopt: the planner's choice
    int line = 0;                        // where the config named it (0: default)
};

// The HTTP server's limits ([http] in the file).
struct HttpLimits {
    int workers = 4;                // requests served at once (max_concurrent)
    int queued = 16;                // complete requests waiting for a worker; beyond: 503 (max_queued)
    // Connections whose request is still arriving (or idle between keep-alive
    // requests), read by one thread without a worker; beyond: 503 (max_connections).
    int max_connections = 256;
    double read_timeout = 5;        // whole request (line, headers, body) must arrive in this
    double write_timeout = 10;      // whole response must leave in this
    double keep_alive_timeout = 5;  // idle wait for the next request on a connection
    std::size_t max_request_bytes = 8192;  // request line + headers + body
    int max_requests_per_connection = 100;
};

struct ServeConfig {
    std::string source = "(defaults)";  // file the values came from
    ListenAddress listen{daemon::kDefaultListenHost, daemon::kDefaultListenPort};
    bool strict = false;
    std::vector<ServeTarget> targets;  // empty: every built-in target

    TracingOptions probe = daemon::default_probe_options();  // [probe]: latency, sample_freq, handoffs, handoff_sample, duty_cycle
    PromOptions metrics;   // [metrics]: per_cpu, max_series
    HttpLimits http;       // [http]

    // [tls]
    std::string tls_cert;
    std::string tls_key;

    // [basic_auth] (one user, SHA-256) or --web.config.file's basic_auth_users (bcrypt)
    std::vector<AuthUser> users;
    std::string web_config;  // the --web.config.file that set TLS and users, if any

    bool tls() const { return !tls_cert.empty(); }
    bool auth() const { return !users.empty(); }
};

// Parses and validates; `source` names the file in errors ("serve.toml:7: ...").
Result<ServeConfig> parse_serve_config(std::string_view text, const std::string& source);
Result<ServeConfig> load_serve_config(const std::string& path);

// Lower-case hex SHA-256 of `data`.
std::string sha256_hex(std::string_view data);

// Checks an Authorization header value ("Basic base64(user:password)") against the
// users; names and SHA-256 digests compare in constant time per input length.
bool check_basic_auth(std::string_view authorization, const std::vector<AuthUser>& users);

// Reads an exporter-toolkit web configuration (YAML: tls_server_config.cert_file
// and key_file, basic_auth_users with bcrypt hashes) into cfg; errors name the key.
Status apply_web_config(const std::string& path, ServeConfig& cfg);
// The same for the file's text; `path` names it in errors and anchors relative file names.
Status apply_web_config_text(std::string_view text, const std::string& path, ServeConfig& cfg);

}  // namespace hotline
