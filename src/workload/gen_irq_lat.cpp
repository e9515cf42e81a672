// SPDX-License-Identifier: Apache-2.0
// The irq-lat scenario: the second report's qperf tcp_lat sweep.  One client
// thread and one server thread, one connection per message size; each exchange
// sends size bytes and waits for size bytes back.  The round trip of every
// exchange goes into an HDR-style histogram; the first few exchanges of a size
// warm buffers and are not counted.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fmt/format.h>

#include "generators.hpp"

namespace hotline::detail {

namespace {

constexpr int kLatPort = 22000;
constexpr int kWarmup = 16;

struct LatShape {
    std::string server_addr;
    std::uint64_t max_size = 0;
    bool nodelay = false;
};

// Answers every exchange of one connection: its first 8 bytes give the size.
void echo_connection(Crew& crew, int fd, std::vector<char>& buf, std::string* err) {
    std::uint64_t size = 0;
    bool eof = false;
    if (!recv_full(fd, reinterpret_cast<char*>(&size), sizeof size, crew, err, &eof) || !size || size > buf.size())
        return;
    while (recv_full(fd, buf.data(), size, crew, err, &eof) && send_full(fd, buf.data(), size, crew, err)) {
    }
}

void server(Crew& crew, const LatShape& s) {
    std::string err;
    int lfd = listen_on(s.server_addr, kLatPort, 4, &err);
    if (lfd < 0) return crew.fail("irq-lat server: " + err);
    crew.listening++;
    std::vector<char> buf(s.max_size, 's');
    while (!crew.stopping()) {
        int fd = accept_or_fail(lfd, crew, "irq-lat server");
        if (fd < 0) break;
        if (s.nodelay) set_nodelay(fd);
        set_timeouts(fd);
        echo_connection(crew, fd, buf, &err);
        close(fd);
        if (!err.empty()) {
            crew.fail("irq-lat server: " + err);
            break;
        }
    }
    close(lfd);
}

LatencyPoint point_of(const LatencyHistogram& h, std::uint64_t size, double secs) {
    LatencyPoint p;
    p.msg_size = size;
    p.exchanges = h.count();
    p.seconds = secs;
    p.rate_per_s = secs > 0 ? double(h.count()) / secs : 0;
    p.has_percentiles = true;
    p.rtt_mean_ns = h.mean();
    p.one_way_ns = h.mean() / 2;
    p.rtt_min_ns = double(h.min());
    p.rtt_max_ns = double(h.max());
    p.p50_ns = double(h.percentile(50));
    p.p90_ns = double(h.percentile(90));
    p.p99_ns = double(h.percentile(99));
    p.p999_ns = double(h.percentile(99.9));
    return p;
}

// Exchanges `size` bytes each way on fd for `per_size` seconds after the warm-up.
// *secs: the measured time; *eof: the server closed the connection.
LatencyHistogram exchange(Crew& crew, int fd, std::vector<char>& buf, std::uint64_t size, double per_size,
                          double* secs, bool* eof, std::string* err) {
    LatencyHistogram h;
    bool ok = send_full(fd, reinterpret_cast<const char*>(&size), sizeof size, crew, err);
    double t_start = 0;
    std::uint64_t deadline = 0;
    for (int n = 0; ok && !crew.stopping(); ++n) {
        if (n == kWarmup) {
            t_start = monotonic_seconds();
            deadline = monotonic_ns() + std::uint64_t(per_size * 1e9);
        }
        std::uint64_t t0 = monotonic_ns();
        ok = send_full(fd, buf.data(), size, crew, err) && recv_full(fd, buf.data(), size, crew, err, eof);
        std::uint64_t t1 = monotonic_ns();
        if (!ok) break;
        if (n >= kWarmup) {
            h.record(t1 - t0);
            if (t1 >= deadline) break;
        }
    }
    *secs = t_start > 0 ? monotonic_seconds() - t_start : 0;
    return h;
}

// One size on a fresh connection: a point, or nullopt when the client must end
// (a stop before anything was measured, or a failure reported to the crew).
std::optional<LatencyPoint> measure_size(Crew& crew, const LatShape& s, std::uint64_t size, double per_size,
                                         std::vector<char>& buf) {
    std::string err;
    int fd = tcp_socket(&err);
    if (fd < 0) {
        crew.fail("irq-lat client: " + err);
        return std::nullopt;
    }
    if (s.nodelay) set_nodelay(fd);
    set_timeouts(fd);
    if (!connect_wait(fd, make_addr(s.server_addr, kLatPort), crew, &err)) {
        close(fd);
        if (!err.empty()) crew.fail("irq-lat client: " + err);
        return std::nullopt;
    }
    double secs = 0;
    bool eof = false;
    LatencyHistogram h = exchange(crew, fd, buf, size, per_size, &secs, &eof, &err);
    close(fd);
    if (!err.empty()) crew.fail("irq-lat client: " + err);
    else if (eof) crew.fail("irq-lat client: the server closed the connection");
    if (!err.empty() || eof || !h.count()) return std::nullopt;
    return point_of(h, size, secs);
}

struct Sweep {
    LatShape shape;
    std::vector<std::uint64_t> sizes;
    double per_size = 0;
    std::vector<LatencyPoint> points;
    std::atomic<bool> done{false};
};

void client(Crew& crew, const GenEnv& env, Sweep& sw) {
    std::vector<char> buf(sw.shape.max_size, 'c');
    for (std::size_t si = 0; si < sw.sizes.size() && !crew.stopping(); ++si) {
        std::uint64_t size = sw.sizes[si];
        report(env, fmt::format("{}: {} ({}/{}){}", env.opts.name, format_size(size), si + 1, sw.sizes.size(),
                                sw.points.empty() ? ""
                                                  : fmt::format(", previous p50 {:.1f} us", sw.points.back().p50_ns / 1e3)));
        auto p = measure_size(crew, sw.shape, size, sw.per_size, buf);
        if (!p) break;
        sw.points.push_back(*p);
    }
    sw.done = true;
    // Stay alive until sampled: an exited thread's CPU clock cannot be read.
    while (!crew.stopping()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

}  // namespace

Result<ScenarioResult> run_irq_lat(GenEnv& env) {
    const auto& o = env.opts;
    Sweep sw;
    sw.shape = {env.net.server_addr(), *std::max_element(o.msg_sizes.begin(), o.msg_sizes.end()), o.nodelay};
    sw.sizes = o.msg_sizes;
    sw.per_size = o.duration_s / double(o.msg_sizes.size());
    Crew crew(env.stop);
    crew.spawn(kReceiver, o.cpus.back(), env.net.server(), [&crew, s = sw.shape] { server(crew, s); });
    if (!crew.wait_for(crew.listening, 1, "a listening socket")) return setup_aborted(env, crew, "irq-lat");
    crew.spawn(kSender, o.cpus.front(), env.net.client(), [&] { client(crew, env, sw); });

    CpuSample a = sample_cpu(&crew, o.paths.proc);
    while (!sw.done.load() && !crew.failed() && !env.stop.load()) env.sleep_for(0.05);
    CpuSample b = sample_cpu(&crew, o.paths.proc);
    crew.join();
    if (crew.failed()) return make_error("irq-lat: " + crew.error());
    ScenarioResult r = base_result(env);
    r.seconds = b.wall - a.wall;
    r.latency = sw.points;
    r.cpu = cpu_between(a, b, crew.sides(), o.cpus);
    r.notes.push_back("percentiles are of the round trip (nearest rank over an HDR-style histogram, within 0.4%); "
                      "one-way is half the mean round trip, as qperf reports latency");
    return r;
}

}  // namespace hotline::detail
