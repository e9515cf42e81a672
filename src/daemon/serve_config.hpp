// `hotline serve` configuration: the TOML file, its validation (every error names
// the line), the listen address, and HTTP basic-auth checking.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hotline/prometheus.hpp"
#include "hotline/result.hpp"
#include "hotline/serve.hpp"
#include "hotline/session.hpp"
#include "hotline/targets.hpp"

namespace hotline {

struct ListenAddress {
    std::string host;  // IP literal or name, without brackets
    int port = 0;      // 0: any free port
    std::string to_string() const;
};
// "127.0.0.1:9464", "[::1]:9464", "localhost:0".
Result<ListenAddress> parse_listen_address(std::string_view s);

struct ServeTarget {
    std::string name;
    std::optional<Mechanism> mechanism;  // nullopt: the planner's choice
    int line = 0;                        // where the config named it (0: default)
};

// The HTTP server's limits ([http] in the file).
struct HttpLimits {
    int workers = 4;                // requests served at once (max_concurrent)
    int queued = 16;                // accepted connections waiting for a worker; beyond: 503 (max_queued)
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

    SessionOptions probe;  // [probe]: latency, sample_freq, handoffs, handoff_sample
    PromOptions metrics;   // [metrics]: per_cpu, max_series
    HttpLimits http;       // [http]

    // [tls]
    std::string tls_cert;
    std::string tls_key;

    // [basic_auth]
    std::string auth_username;
    std::string auth_password_sha256;  // lower-case hex

    bool tls() const { return !tls_cert.empty(); }
    bool auth() const { return !auth_username.empty(); }
};

// Parses and validates; `source` names the file in errors ("serve.toml:7: ...").
Result<ServeConfig> parse_serve_config(std::string_view text, const std::string& source);
Result<ServeConfig> load_serve_config(const std::string& path);

// Lower-case hex SHA-256 of `data`.
std::string sha256_hex(std::string_view data);

// Checks an Authorization header value ("Basic base64(user:password)") against the
// configured user and SHA-256 of the password, in constant time per input length.
bool check_basic_auth(std::string_view authorization, std::string_view username,
                      std::string_view password_sha256_hex);

}  // namespace hotline
