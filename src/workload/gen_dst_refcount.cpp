// SPDX-License-Identifier: Apache-2.0
// The dst-refcount scenario: the first report's netperf loop (`-t TCP_STREAM
// -T i,i -- -m 64 -s 64K -D`, three per CPU).  On every chosen CPU a sender
// thread drives N non-blocking flows of 64-byte writes with TCP_NODELAY and 64K
// socket buffers, and a receiver thread on the same CPU drains them, all to one
// server address.
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <memory>

#include "generators.hpp"

namespace hotline::detail {

namespace {

constexpr int kDstPortBase = 20000;

// The flows of one CPU: its port on the server address and their shape.
struct FlowShape {
    ServerPort server;
    int nflows = 0;
    std::size_t msg = 0;
    int sockbuf = 0;
};

void close_all(const std::vector<int>& fds, int ep) {
    for (int fd : fds) close(fd);
    close(ep);
}

// Accepts the CPU's flows into the epoll set; fewer on a stop or an error.
std::vector<int> accept_flows(Crew& crew, int lfd, int ep, int nflows) {
    std::vector<int> fds;
    for (int k = 0; k < nflows; ++k) {
        int fd = accept_or_fail(lfd, crew, "dst-refcount receiver");
        if (fd < 0) break;
        watch_nonblocking(ep, fd, EPOLLIN);
        fds.push_back(fd);
    }
    return fds;
}

void drain_flows(Crew& crew, int ep, Counter* received) {
    std::vector<char> buf(64 * 1024);
    epoll_event evs[64];
    while (!crew.stopping()) {
        int n = epoll_wait(ep, evs, 64, kIoTimeoutMs);
        for (int e = 0; e < n; ++e) {
            int fd = evs[e].data.fd;
            while (true) {
                ssize_t r = recv(fd, buf.data(), buf.size(), 0);
                if (r > 0) {
                    received->add(std::uint64_t(r));
                    continue;
                }
                if (r == 0 || (errno != EAGAIN && errno != EINTR)) epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
                break;
            }
        }
    }
}

void receiver(Crew& crew, Counter* received, const FlowShape& s) {
    std::string err;
    int lfd = listen_on(s.server.addr, s.server.port, s.nflows + 16, &err);
    if (lfd < 0) return crew.fail("dst-refcount receiver: " + err);
    crew.listening++;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    std::vector<int> fds = accept_flows(crew, lfd, ep, s.nflows);
    close(lfd);
    if (int(fds.size()) == s.nflows) crew.ready++;
    drain_flows(crew, ep, received);
    close_all(fds, ep);
}

// Connects the CPU's flows into the epoll set; fewer on a stop or an error.
std::vector<int> connect_flows(Crew& crew, int ep, const FlowShape& s) {
    auto addr = make_addr(s.server.addr, s.server.port);
    std::vector<int> fds;
    std::string err;
    for (int k = 0; k < s.nflows; ++k) {
        int fd = tcp_socket(&err);
        if (fd < 0) {
            crew.fail("dst-refcount sender: " + err);
            break;
        }
        set_nodelay(fd);
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &s.sockbuf, sizeof s.sockbuf);
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &s.sockbuf, sizeof s.sockbuf);
        set_timeouts(fd);
        if (!connect_wait(fd, addr, crew, &err)) {
            if (!err.empty()) crew.fail("dst-refcount sender: " + err);
            close(fd);
            break;
        }
        watch_nonblocking(ep, fd, EPOLLOUT);
        fds.push_back(fd);
    }
    return fds;
}

// Level-triggered EPOLLOUT: a writable flow gets a burst of messages per
// round, so flows share the thread the way netperf processes share the CPU.
void send_bursts(Crew& crew, int ep, Counter* sent, std::size_t msg) {
    constexpr int kBurst = 32;
    std::vector<char> buf(msg, 'h');
    epoll_event evs[64];
    while (!crew.stopping()) {
        int n = epoll_wait(ep, evs, 64, kIoTimeoutMs);
        for (int e = 0; e < n; ++e) {
            int fd = evs[e].data.fd;
            for (int b = 0; b < kBurst; ++b) {
                ssize_t w = send(fd, buf.data(), buf.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
                if (w > 0) {
                    sent->add(std::uint64_t(w));
                    continue;
                }
                if (w < 0 && errno != EAGAIN && errno != EINTR) {
                    crew.fail(fmt::format("dst-refcount sender: send: {}", std::strerror(errno)));
                    epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
                }
                break;
            }
        }
    }
}

void sender(Crew& crew, Counter* sent, const FlowShape& s) {
    int ep = epoll_create1(EPOLL_CLOEXEC);
    std::vector<int> fds = connect_flows(crew, ep, s);
    if (int(fds.size()) == s.nflows) crew.ready++;
    crew.wait_go();
    send_bursts(crew, ep, sent, s.msg);
    close_all(fds, ep);
}

std::uint64_t sum(const std::vector<std::unique_ptr<Counter>>& counters) {
    std::uint64_t s = 0;
    for (auto& c : counters) s += c->get();
    return s;
}

// Receivers first (they listen), then senders; true once every flow is connected.
bool start_workers(GenEnv& env, Crew& crew, std::vector<std::unique_ptr<Counter>>& sent,
                   std::vector<std::unique_ptr<Counter>>& received) {
    const auto& o = env.opts;
    const int ncpus = int(o.cpus.size());
    for (int i = 0; i < ncpus; ++i) {
        sent.push_back(std::make_unique<Counter>());
        received.push_back(std::make_unique<Counter>());
    }
    auto shape = [&](int i) {
        return FlowShape{{env.net.server_addr(), kDstPortBase + i}, o.flows_per_cpu, std::size_t(o.msg_size), o.sockbuf};
    };
    for (int i = 0; i < ncpus; ++i)
        crew.spawn(kReceiver, o.cpus[std::size_t(i)], env.net.server(),
                   [&crew, c = received[std::size_t(i)].get(), s = shape(i)] { receiver(crew, c, s); });
    if (!crew.wait_for(crew.listening, ncpus, "their listening sockets")) return false;
    for (int i = 0; i < ncpus; ++i)
        crew.spawn(kSender, o.cpus[std::size_t(i)], env.net.client(),
                   [&crew, c = sent[std::size_t(i)].get(), s = shape(i)] { sender(crew, c, s); });
    return crew.wait_for(crew.ready, 2 * ncpus, "connected");
}

}  // namespace

Status prepare_dst_refcount(PrepareEnv& env) {
    return env.net.set_sysctl(true, "net.ipv4.tcp_autocorking", "0", true);
}

Result<ScenarioResult> run_dst_refcount(GenEnv& env) {
    const std::size_t msg = std::size_t(env.opts.msg_size);
    Crew crew(env.stop);
    std::vector<std::unique_ptr<Counter>> sent, received;
    if (!start_workers(env, crew, sent, received)) return setup_aborted(env, crew, "dst-refcount");
    crew.go = true;

    std::uint64_t s0 = sum(sent), r0 = sum(received);
    auto sent_msgs = [&] { return sum(sent) / msg; };
    // Withdrawn at return, after the join: the tail after the window counts too.
    LiveOps live(env, sent_msgs);
    CpuSample a, b;
    double secs = measure_window(env, crew, "msg", sent_msgs, &a, &b);
    std::uint64_t s1 = sum(sent), r1 = sum(received);
    crew.join();
    if (crew.failed()) return make_error("dst-refcount: " + crew.error());

    ScenarioResult r = base_result(env);
    r.seconds = secs;
    r.messages = (s1 - s0) / msg;
    r.bytes = r1 - r0;
    r.messages_per_s = secs > 0 ? double(r.messages) / secs : 0;
    r.mbit_per_s = secs > 0 ? double(r.bytes) * 8 / secs / 1e6 : 0;
    r.cpu = cpu_between(a, b, crew.sides(), env.opts.cpus);
    r.notes.push_back("messages are 64-byte writes completed by the senders; Mbit/s is what the receivers read");
    return r;
}

}  // namespace hotline::detail
