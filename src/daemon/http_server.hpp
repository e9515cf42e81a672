// SPDX-License-Identifier: Apache-2.0
// The daemon's HTTP(S) server: cpp-httplib routing over our own connection loop,
// which reads requests on one event-driven thread (so slow clients never hold a
// worker), enforces request-size caps, whole-request deadlines, bounded
// concurrency (503 beyond it) and TLS, and never raises SIGPIPE.
#pragma once

#include <httplib.h>
#include <openssl/ssl.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "serve_config.hpp"  // HttpLimits

namespace hotline::daemon {

// Refusals by fixed reason; label values never come from the request.
struct HttpRejections {
    std::atomic<std::uint64_t> busy{0}, method{0}, auth{0}, too_large{0}, timeout{0}, bad_request{0},
        tls_handshake{0};
    std::map<std::string, std::uint64_t> snapshot() const;
};

// Owns an SSL_CTX built from PEM files; empty when TLS is off.
class TlsContext {
public:
    TlsContext() = default;
    ~TlsContext();
    TlsContext(const TlsContext&) = delete;
    TlsContext& operator=(const TlsContext&) = delete;
    // Returns an error text, empty on success.
    std::string load(const std::string& cert_pem, const std::string& key_pem);
    SSL_CTX* get() const { return ctx_; }

private:
    SSL_CTX* ctx_ = nullptr;
};

class Rejector;
class BoundedPool;
class HeadReader;
struct Connection;

class GuardedServer final : public httplib::Server {
public:
    GuardedServer(const HttpLimits& limits, HttpRejections& rejections, SSL_CTX* tls);
    ~GuardedServer() override;
    void require_basic_auth(std::vector<AuthUser> users);
    // After bind: a deeper accept queue than httplib's, so bursts wait in the kernel
    // for our accept loop (which never blocks) instead of retrying SYNs.
    void raise_backlog(int backlog);
    // Serves a connected socket as if accepted (the HTTP fuzz target's way in).
    void serve_socket(int fd) { process_and_close_socket(fd); }

private:
    bool process_and_close_socket(socket_t sock) override;
    void hand_to_worker(Connection&& c);
    void serve_request(Connection& c);
    void stop_serving();

    HttpLimits limits_;
    HttpRejections& rejections_;
    std::vector<AuthUser> auth_users_;
    std::atomic<bool> stopping_{false};
    // Destroyed in reverse: the reader and the workers hand connections to the rejector.
    std::unique_ptr<Rejector> rejector_;  // 503s beyond the limits, and lingering closes
    std::unique_ptr<BoundedPool> pool_;   // workers for complete requests
    std::unique_ptr<HeadReader> reader_;  // reads requests without holding a worker
};

}  // namespace hotline::daemon
