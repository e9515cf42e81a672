// SPDX-License-Identifier: Apache-2.0
// The qperf scenario: the real qperf across the namespaces.  Its server runs
// for the whole scenario (server namespace, last CPU); its client runs once per
// message size (client namespace, first CPU) and its output is parsed into the
// same result as the built-in generators'.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <fmt/format.h>

#include "generators.hpp"

namespace hotline::detail {

namespace {

constexpr int kQperfPort = 19765;
constexpr double kGraceS = 20;  // a client still running this long after its test is stuck

bool latency_test(const ScenarioOptions& o) {
    return o.qperf_test.size() > 4 && o.qperf_test.substr(o.qperf_test.size() - 4) == "_lat";
}

void hint_install(Error& e) {
    if (e.err == ENOENT) e.hint = "install qperf (Debian package qperf)";
}

std::string read_all(int fd) {
    std::string text;
    lseek(fd, 0, SEEK_SET);
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) text.append(buf, std::size_t(n));
    return text;
}

// Waits for the client without reaping it, so its CPU time can still be read;
// false on a stop or past the deadline.
bool wait_exit(GenEnv& env, pid_t pid, double deadline) {
    while (true) {
        siginfo_t si{};
        si.si_pid = 0;
        if (waitid(P_PID, id_t(pid), &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid != 0) return true;
        if (env.stop.load() || monotonic_seconds() > deadline) return false;
        env.sleep_for(0.02);
    }
}

// What the client runs of a sweep: each size for `per` whole seconds.
struct ClientRun {
    std::vector<std::uint64_t> sizes;
    long per = 1;
    double cpu_s = 0;  // the clients' CPU time so far
    std::vector<QperfBlock> blocks;
};

std::vector<std::string> client_argv(const GenEnv& env, std::uint64_t size, long per) {
    return {"qperf", env.net.server_addr(), "-lp", std::to_string(kQperfPort), "-ws", "5",
            "-v", "-uu", "-ub", "--time", std::to_string(per),
            "-m", std::to_string(size), env.opts.qperf_test};
}

// Runs the client for one size and keeps its parsed blocks; false when a stop
// ended it early.
Result<bool> run_client(GenEnv& env, ClientRun& run, std::uint64_t size) {
    int out = memfd_create("hotline-qperf", MFD_CLOEXEC);
    if (out < 0) return make_error("memfd_create", errno);
    SpawnOptions so;
    so.netns_fd = env.net.client().fd();
    so.cpus = {env.opts.cpus.front()};
    so.die_with_parent = true;
    so.stdout_fd = out;
    auto child = ChildProcess::spawn(client_argv(env, size, run.per), so);
    if (!child) {
        close(out);
        Error e = child.error();
        hint_install(e);
        return e;
    }
    bool exited = wait_exit(env, child->pid(), monotonic_seconds() + double(run.per) + kGraceS);
    if (exited) run.cpu_s += process_cpu_seconds(env.opts.paths.proc, child->pid()).value_or(0);
    else child->signal(SIGKILL);
    int status = child->wait();
    std::string text = read_all(out);
    close(out);
    if (!exited) {
        if (env.stop.load()) return false;
        return make_error(fmt::format("qperf client did not finish {} s after its {} s test", kGraceS, run.per), ETIMEDOUT);
    }
    if (status != 0) {
        Error e = make_error(fmt::format("qperf client exited with status {}", status), EIO);
        e.detail = text;
        return e;
    }
    auto blocks = parse_qperf_output(text);
    if (!blocks) return blocks.error();
    for (auto& b : *blocks) run.blocks.push_back(b);
    return true;
}

Status run_sweep(GenEnv& env, ClientRun& run) {
    const auto& o = env.opts;
    for (std::size_t si = 0; si < run.sizes.size() && !env.stop.load(); ++si) {
        report(env, fmt::format("{}: qperf {} {} ({}/{})", o.name, o.qperf_test, format_size(run.sizes[si]), si + 1,
                                run.sizes.size()));
        auto more = run_client(env, run, run.sizes[si]);
        if (!more) return more.error();
        if (!*more) break;
    }
    return ok_status();
}

}  // namespace

unsigned qperf_options_read(const ScenarioOptions& o) {
    return kOptQperfTest | (latency_test(o) ? kOptMsgSizes : kOptMsgSize);
}

Status check_qperf(const ScenarioOptions& o) {
    if (o.qperf_test != "tcp_lat" && o.qperf_test != "tcp_bw")
        return make_error(fmt::format("unknown qperf test \"{}\"", o.qperf_test), EINVAL, "use tcp_lat or tcp_bw");
    std::size_t tests = latency_test(o) ? o.msg_sizes.size() : 1;
    if (o.duration_s < double(tests))
        return make_error(fmt::format("qperf needs at least 1 s per test: --duration {} s is too short for {} sizes",
                                      o.duration_s, tests),
                          EINVAL);
    return ok_status();
}

Status prepare_qperf(PrepareEnv& env) {
    auto pid = env.start_server({"qperf", "--listen_port", std::to_string(kQperfPort)}, {env.opts.cpus.back()});
    if (pid) return ok_status();
    Error e = pid.error();
    hint_install(e);
    return e;
}

Result<ScenarioResult> run_qperf(GenEnv& env) {
    const auto& o = env.opts;
    ClientRun run;
    run.sizes = latency_test(o) ? o.msg_sizes : std::vector<std::uint64_t>{std::uint64_t(o.msg_size)};
    // qperf takes whole seconds per test.
    run.per = std::max(1L, std::lround(std::floor(o.duration_s / double(run.sizes.size()))));
    CpuSample a = sample_cpu(nullptr, o.paths.proc);
    double srv0 = process_cpu_seconds(o.paths.proc, env.server_pid).value_or(0);
    if (auto st = run_sweep(env, run); !st) return st.error();
    CpuSample b = sample_cpu(nullptr, o.paths.proc);
    double srv1 = process_cpu_seconds(o.paths.proc, env.server_pid).value_or(srv0);

    ScenarioResult r;
    r.scenario = o.name;
    r.generator = "qperf";
    if (auto st = apply_qperf_blocks(run.blocks, r); !st) return st.error();
    r.seconds = b.wall - a.wall;
    r.cpu.seconds = r.seconds;
    if (r.seconds > 0) {
        r.cpu.sender_pct = 100.0 * run.cpu_s / r.seconds;
        r.cpu.receiver_pct = 100.0 * (srv1 - srv0) / r.seconds;
        r.cpu.threads_measured = true;
    }
    fill_proc_stat_use(a, b, o.cpus, r.cpu);
    r.notes.push_back(fmt::format("qperf {} run per message size for {} s; its latency is one-way (half the round trip) "
                                  "and a mean only; CPU is per process, at USER_HZ resolution",
                                  o.qperf_test, run.per));
    return r;
}

}  // namespace hotline::detail
