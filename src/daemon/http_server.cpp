// SPDX-License-Identifier: Apache-2.0
// The server itself: httplib's routing and hooks over the connection loop.
// Sockets go from the accept loop to the HeadReader (head_reader.hpp), complete
// requests to the BoundedPool's workers (bounded_pool.hpp), which serve them over
// a GuardedStream (guarded_stream.hpp); refusals and lingering closes go to the
// Rejector (rejector.hpp).
#include "http_server.hpp"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <fmt/format.h>
#include <memory>

#include "bounded_pool.hpp"
#include "hotline/base/util.hpp"
#include "guarded_stream.hpp"
#include "head_reader.hpp"
#include "rejector.hpp"
#include "serve_config.hpp"

namespace hotline::daemon {
namespace {

// What the routing hooks need to know about the connection they run on.
struct ConnState {
    GuardedStream* stream = nullptr;
    bool close_after = false;  // a malformed request: do not read another from this peer
};
thread_local ConnState* t_conn = nullptr;

// httplib's accept loop hands each socket to its task queue: this one runs the
// hand-off inline (it only queues the socket for the HeadReader, never blocks) and
// tells the server when the loop has ended, so shutdown starts at once.
class InlineQueue final : public httplib::TaskQueue {
public:
    explicit InlineQueue(std::function<void()> on_shutdown) : on_shutdown_(std::move(on_shutdown)) {}
    void enqueue(std::function<void()> fn) override { fn(); }
    void shutdown() override { on_shutdown_(); }

private:
    std::function<void()> on_shutdown_;
};

const char* reason_phrase(int status) {
    switch (status) {
        case 400: return "Bad Request";
        case 401: return "Unauthorized";
        case 404: return "Not Found";
        case 405: return "Method Not Allowed";
        case 408: return "Request Timeout";
        case 413: return "Payload Too Large";
        case 414: return "URI Too Long";
        case 431: return "Request Header Fields Too Large";
        case 503: return "Service Unavailable";
        default: return "Error";
    }
}

void answer_limit_breach(GuardedStream& strm, HttpRejections& rejections) {
    int status = strm.limit() == Limit::kTooLarge ? 431 : 408;
    if (status == 431) ++rejections.too_large;
    else ++rejections.timeout;
    std::string body = fmt::format("{} {}\n", status, reason_phrase(status));
    std::string resp = fmt::format(
        "HTTP/1.1 {} {}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n"
        "Connection: close\r\n\r\n{}",
        status, reason_phrase(status), body.size(), body);
    strm.write(resp.data(), resp.size());
}

}  // namespace

std::map<std::string, std::uint64_t> HttpRejections::snapshot() const {
    return {{"busy", busy.load()},
            {"method", method.load()},
            {"auth", auth.load()},
            {"too_large", too_large.load()},
            {"timeout", timeout.load()},
            {"bad_request", bad_request.load()},
            {"tls_handshake", tls_handshake.load()}};
}

TlsContext::~TlsContext() {
    if (ctx_) SSL_CTX_free(ctx_);
}

namespace {

constexpr std::size_t kMaxPemBytes = 1 << 20;

using BioPtr = std::unique_ptr<BIO, decltype(&BIO_free)>;

BioPtr pem_bio(const std::string& pem) { return BioPtr(BIO_new_mem_buf(pem.data(), int(pem.size())), &BIO_free); }

// The leaf certificate, then every further one as its chain (what
// SSL_CTX_use_certificate_chain_file does with a file).
bool use_certificate_chain(SSL_CTX* ctx, const std::string& pem) {
    BioPtr bio = pem_bio(pem);
    if (!bio) return false;
    X509* leaf = PEM_read_bio_X509_AUX(bio.get(), nullptr, nullptr, nullptr);
    if (!leaf) return false;
    const bool ok = SSL_CTX_use_certificate(ctx, leaf) == 1;
    X509_free(leaf);
    if (!ok || SSL_CTX_clear_chain_certs(ctx) != 1) return false;
    while (X509* ca = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr))
        if (SSL_CTX_add0_chain_cert(ctx, ca) != 1) {
            X509_free(ca);
            return false;
        }
    ERR_clear_error();  // the end of the PEM data reads as an error
    return true;
}

bool use_private_key(SSL_CTX* ctx, const std::string& pem) {
    BioPtr bio = pem_bio(pem);
    if (!bio) return false;
    EVP_PKEY* key = PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr);
    if (!key) return false;
    const bool ok = SSL_CTX_use_PrivateKey(ctx, key) == 1;
    EVP_PKEY_free(key);
    return ok;
}

}  // namespace

std::string TlsContext::load(const std::string& cert_pem, const std::string& key_pem) {
    auto fail = [&](const std::string& what) {
        unsigned long e = ERR_get_error();
        char buf[256] = {};
        if (e) ERR_error_string_n(e, buf, sizeof buf);
        ERR_clear_error();
        return what + (e ? std::string(": ") + buf : std::string());
    };
    ctx_ = SSL_CTX_new(TLS_server_method());
    if (!ctx_) return fail("TLS: cannot create a context");
    SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx_, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
    // Read by hotline, not by OpenSSL: a FIFO, a device or a huge file given as
    // the certificate is refused instead of hanging or filling memory.
    auto cert = read_file(cert_pem, kMaxPemBytes);
    if (!cert) return "TLS: certificate: " + cert.error().message();
    auto key = read_file(key_pem, kMaxPemBytes);
    if (!key) return "TLS: private key: " + key.error().message();
    if (!use_certificate_chain(ctx_, *cert)) return fail("TLS: cannot load certificate " + cert_pem);
    if (!use_private_key(ctx_, *key)) return fail("TLS: cannot load private key " + key_pem);
    if (SSL_CTX_check_private_key(ctx_) != 1) return fail("TLS: key does not match the certificate");
    return {};
}

GuardedServer::GuardedServer(const HttpLimits& limits, HttpRejections& rejections, SSL_CTX* tls)
    : limits_(limits), rejections_(rejections),
      rejector_(std::make_unique<Rejector>(rejections, limits.max_request_bytes, tls)),
      pool_(std::make_unique<BoundedPool>(limits.workers, limits.queued)),
      reader_(std::make_unique<HeadReader>(limits_, tls, rejections,
                                           [this](Connection&& c) { hand_to_worker(std::move(c)); })) {
    new_task_queue = [this] { return new InlineQueue([this] { stop_serving(); }); };
    set_payload_max_length(limits_.max_request_bytes);
    // Only the Keep-Alive response header reads these; our loop enforces them.
    set_keep_alive_max_count(std::size_t(limits_.max_requests_per_connection));
    set_keep_alive_timeout(time_t(limits_.keep_alive_timeout));

    set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        auto text = [&](int status) {
            // The request body (if any) was not read: this connection is done.
            if (t_conn) t_conn->close_after = true;
            res.set_header("Connection", "close");
            res.status = status;
            res.set_content(fmt::format("{} {}\n", status, reason_phrase(status)), "text/plain; charset=utf-8");
        };
        if (req.method != "GET" && req.method != "HEAD") {
            ++rejections_.method;
            text(405);
            res.set_header("Allow", "GET, HEAD");
            return HandlerResponse::Handled;
        }
        // Two Authorization headers are ambiguous (a proxy may check one, hotline
        // the other): refused like a wrong password.
        if (!auth_users_.empty() && (req.get_header_value_count("Authorization") != 1 ||
                                     !check_basic_auth(req.get_header_value("Authorization"), auth_users_))) {
            ++rejections_.auth;
            text(401);
            res.set_header("WWW-Authenticate", "Basic realm=\"hotline\", charset=\"UTF-8\"");
            return HandlerResponse::Handled;
        }
        return HandlerResponse::Unhandled;
    });

    // Requests httplib could not parse arrive here as 400/413/414: name the cause.
    set_error_handler(HandlerWithResponse([this](const httplib::Request&, httplib::Response& res) {
        int s = res.status;
        if (s != 400 && s != 413 && s != 414) return HandlerResponse::Unhandled;
        Limit lim = t_conn && t_conn->stream ? t_conn->stream->limit() : Limit::kNone;
        if (lim == Limit::kTooLarge || s == 413 || s == 414) {
            ++rejections_.too_large;
            if (s == 400) res.status = 431;
        } else if (lim == Limit::kTimeout) {
            ++rejections_.timeout;
            res.status = 408;
        } else {
            ++rejections_.bad_request;
        }
        if (t_conn) t_conn->close_after = true;
        res.set_header("Connection", "close");
        res.set_content(fmt::format("{} {}\n", res.status, reason_phrase(res.status)), "text/plain; charset=utf-8");
        return HandlerResponse::Handled;
    }));
}

GuardedServer::~GuardedServer() { stop_serving(); }

// Connections being read are closed, queued requests get 503, a response in
// flight is finished only if the client takes it at once.
void GuardedServer::stop_serving() {
    stopping_ = true;
    reader_->stop();
    pool_->shutdown();
}

void GuardedServer::raise_backlog(int backlog) {
    socket_t s = svr_sock_;
    if (s != INVALID_SOCKET) ::listen(s, backlog);
}

void GuardedServer::require_basic_auth(std::vector<AuthUser> users) { auth_users_ = std::move(users); }

// On httplib's accepting thread: queue the socket for the HeadReader, or refuse it.
bool GuardedServer::process_and_close_socket(socket_t sock) {
    int fl = fcntl(sock, F_GETFL);
    if (fl >= 0) fcntl(sock, F_SETFL, fl | O_NONBLOCK);
    if (!reader_->admit_new(sock)) rejector_->take(sock);
    return true;
}

// On the HeadReader's thread: never blocks.
void GuardedServer::hand_to_worker(Connection&& c) {
    auto held = std::make_shared<Connection>(std::move(c));
    bool queued = pool_->try_enqueue([this, held](bool late) {
        if (late) rejector_->answer_busy(held->fd, held->ssl);
        else serve_request(*held);
    });
    if (!queued) rejector_->answer_busy(held->fd, held->ssl);
}

// One request on a worker; then the connection goes back to the HeadReader to
// wait for the next one, or to the Rejector for a lingering close.
void GuardedServer::serve_request(Connection& c) {
    ConnState st;
    GuardedStream strm(c.fd, c.ssl, limits_, stopping_);
    st.stream = &strm;
    t_conn = &st;
    strm.begin_request(std::move(c.ahead), c.deadline);
    bool last = ++c.served >= limits_.max_requests_per_connection || stopping_;
    bool closed = false;
    bool ok = process_request(strm, last, closed, [&](httplib::Request& req) {
        strm.get_remote_ip_and_port(req.remote_addr, req.remote_port);
        strm.get_local_ip_and_port(req.local_addr, req.local_port);
    });
    // httplib gives up silently when the request line itself breaks a limit.
    if (!ok && !strm.wrote() && strm.limit() != Limit::kNone) answer_limit_breach(strm, rejections_);
    t_conn = nullptr;
    if (ok && !closed && !last && !st.close_after) {
        c.ahead = strm.take_ahead();
        if (reader_->admit_idle(c)) return;
    }
    rejector_->linger(c.fd, c.ssl);
}

}  // namespace hotline::daemon
