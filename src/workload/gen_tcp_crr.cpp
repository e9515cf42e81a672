// SPDX-License-Identifier: Apache-2.0
// The tcp-crr scenario: netperf TCP_CRR's shape, the pattern behind the 2023 dst
// false-sharing fix: connect, one request, one response, close, to one server
// address (or, with per-CPU routes, one address pair per CPU).  N client/server
// pairs per CPU, both ends on that CPU; the server closes first, so
// TIME_WAIT stays on the server side and the client never runs out of
// ephemeral ports.  With a shared listener every server accepts from one
// listening socket, as a server without SO_REUSEPORT does: a connection is
// served on whichever CPU accepts it, and the listener is touched on all.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <memory>

#include "generators.hpp"

namespace hotline::detail {

namespace {

constexpr int kCrrPortBase = 21000;

struct PairShape {
    ServerPort server;
    std::size_t msg = 0;
};

// The one listening socket of --shared-listener: opened by the first server
// (in the server namespace) and closed by the last one to leave, on its own
// CPU: closing it resets the connections still queued on it, and their
// routes and sockets must not be touched outside the scenario's CPUs.
struct SharedListener {
    std::atomic<int> fd{-1};
    std::atomic<int> servers{0};
    ~SharedListener() {
        if (fd >= 0) close(fd);  // a setup that failed before any server left
    }
    // The socket for one more server; the first opens it.
    int join(int port, std::string* err) {
        int f = fd >= 0 ? fd.load() : open_socket(port, err);
        if (f >= 0) ++servers;
        return f;
    }
    void leave() {
        if (--servers == 0) close(fd.exchange(-1));
    }

private:
    // Non-blocking: the servers poll it together and all but one find no connection.
    int open_socket(int port, std::string* err) {
        int f = listen_on("0.0.0.0", port, 1024, err);
        if (f >= 0 && fcntl(f, F_SETFL, fcntl(f, F_GETFL) | O_NONBLOCK) != 0) {
            *err = fmt::format("listener O_NONBLOCK: {}", std::strerror(errno));
            close(f);
            return -1;
        }
        return fd = f;
    }
};

void server(Crew& crew, const PairShape& s, SharedListener* shared) {
    std::string err;
    int lfd = shared ? shared->join(s.server.port, &err) : listen_on(s.server.addr, s.server.port, 128, &err);
    if (lfd < 0) return crew.fail("tcp-crr server: " + err);
    crew.listening++;
    std::vector<char> buf(s.msg, 's');
    while (!crew.stopping()) {
        int fd = accept_or_fail(lfd, crew, "tcp-crr server");
        if (fd < 0) break;
        set_timeouts(fd);
        bool eof = false;
        if (recv_full(fd, buf.data(), s.msg, crew, &err, &eof)) send_full(fd, buf.data(), s.msg, crew, &err);
        close(fd);
        if (!err.empty()) {
            crew.fail("tcp-crr server: " + err);
            break;
        }
    }
    if (shared) shared->leave();
    else close(lfd);
}

// Waits for the server's FIN, so the server side holds TIME_WAIT.
void await_close(int fd, const Crew& crew) {
    char c;
    while (!crew.stopping()) {
        ssize_t r = recv(fd, &c, 1, 0);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) break;
    }
}

// One connect, request, response, close.  false ends the client on an error
// (then *err is set); resets, refusals and timeouts are counted by the crew.
bool one_connection(Crew& crew, const sockaddr_in& addr, std::vector<char>& buf, Counter* done, std::string* err) {
    int fd = tcp_socket(err);
    if (fd < 0) return false;
    set_nodelay(fd);
    set_timeouts(fd);
    if (!connect_wait(fd, addr, crew, err)) {
        close(fd);
        return err->empty();  // a halt ends the loop by itself; a counted fault is one lost connection
    }
    bool eof = false;
    if (send_full(fd, buf.data(), buf.size(), crew, err) && recv_full(fd, buf.data(), buf.size(), crew, err, &eof)) {
        await_close(fd, crew);
        done->add(1);
    }
    close(fd);
    return err->empty();
}

void client(Crew& crew, Counter* done, const PairShape& s) {
    auto addr = make_addr(s.server.addr, s.server.port);
    std::vector<char> buf(s.msg, 'c');
    crew.ready++;
    crew.wait_go();
    std::string err;
    while (!crew.stopping())
        if (!one_connection(crew, addr, buf, done, &err)) break;
    if (!err.empty()) crew.fail("tcp-crr client: " + err);
}

// Servers first (they listen; with a shared listener the first opens it), then
// clients; true once every client is ready.
bool start_pairs(GenEnv& env, Crew& crew, std::vector<std::unique_ptr<Counter>>& conns, SharedListener* shared) {
    const auto& o = env.opts;
    const int nflows = o.flows_per_cpu;
    const int pairs = int(o.cpus.size()) * nflows;
    for (int i = 0; i < pairs; ++i) conns.push_back(std::make_unique<Counter>());
    // Per-CPU routes: the pair's CPU's own server address (the client's source
    // address follows from its subnet), so no two CPUs share a route.
    auto shape = [&](int i) {
        int cpu = o.cpus[std::size_t(i / nflows)];
        auto own = o.per_cpu_routes ? env.net.cpu_server_addr(cpu) : std::nullopt;
        return PairShape{{own.value_or(env.net.server_addr()), kCrrPortBase + (shared ? 0 : i)},
                         std::size_t(o.msg_size)};
    };
    for (int i = 0; i < pairs; ++i) {
        crew.spawn(kReceiver, o.cpus[std::size_t(i / nflows)], env.net.server(),
                   [&crew, s = shape(i), shared] { server(crew, s, shared); });
        if (shared && i == 0 && !crew.wait_for(crew.listening, 1, "the shared listening socket")) return false;
    }
    if (!crew.wait_for(crew.listening, pairs, "their listening sockets")) return false;
    for (int i = 0; i < pairs; ++i)
        crew.spawn(kSender, o.cpus[std::size_t(i / nflows)], env.net.client(),
                   [&crew, c = conns[std::size_t(i)].get(), s = shape(i)] { client(crew, c, s); });
    return crew.wait_for(crew.ready, pairs, "started");
}

}  // namespace

Result<ScenarioResult> run_tcp_crr(GenEnv& env) {
    SharedListener listener;  // outlives the crew: its servers use the socket until they are joined
    Crew crew(env.stop);
    crew.count_net_faults = true;
    std::vector<std::unique_ptr<Counter>> conns;
    if (!start_pairs(env, crew, conns, env.opts.shared_listener ? &listener : nullptr))
        return setup_aborted(env, crew, "tcp-crr");
    crew.go = true;
    auto total = [&] {
        std::uint64_t s = 0;
        for (auto& c : conns) s += c->get();
        return s;
    };
    std::uint64_t c0 = total();
    LiveOps live(env, total);
    CpuSample a, b;
    double secs = measure_window(env, crew, "conn", total, &a, &b);
    std::uint64_t c1 = total();
    crew.join();
    if (crew.failed()) return make_error("tcp-crr: " + crew.error());
    ScenarioResult r = base_result(env);
    r.seconds = secs;
    r.connections = c1 - c0;
    r.connections_per_s = secs > 0 ? double(r.connections) / secs : 0;
    add_net_faults(crew, r);
    r.cpu = cpu_between(a, b, crew.sides(), env.opts.cpus);
    return r;
}

}  // namespace hotline::detail
