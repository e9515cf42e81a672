// SPDX-License-Identifier: Apache-2.0
// Namespaces, veth and leftovers: creating a scenario's private network and
// removing it, or what a dead owner left of one.
//
// Creation goes through iproute2 rather than raw rtnetlink: `ip netns add` also
// sets up /run/netns as a shared mount so the namespaces are visible from other
// mount namespaces, exactly as a user's own `ip netns exec hl-<pid>-c ...` expects,
// and a failing step can be quoted as a command the user can rerun by hand.  It
// runs a handful of times per scenario, far off any measured path.  Removal needs
// no helper (umount + unlink), so cleaning works even where `ip` is missing, and
// threads enter namespaces with setns(2) directly: a netns is per thread.
#include "hotline/workload/netns.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <thread>

#include "hotline/workload/workload.hpp"

namespace hotline {

namespace fs = std::filesystem;

namespace {

// One Network per process: the names carry only the pid.
std::atomic<bool> g_network_active{false};

constexpr const char* kClientAddr = "10.201.0.1";
constexpr const char* kServerAddr = "10.201.0.2";
constexpr const char* kCpuRoutePrefix = "10.202";  // 10.202.<cpu>.1 client, .2 server

std::vector<std::string> list_dir(const std::string& dir) {
    std::vector<std::string> out;
    std::error_code ec;
    for (auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path().filename().string());
    return out;
}

std::string sysctl_path(const std::string& key) {
    std::string p = key;
    for (auto& ch : p)
        if (ch == '.') ch = '/';
    return "/proc/sys/" + p;
}

// Removes a namespace bind mount the way `ip netns del` does.
Status remove_netns_mount(const std::string& path) {
    // EINVAL: not a mount (a file left by an interrupted `ip netns add`); EPERM
    // without privileges, where the unlink below reports what really blocks.
    if (umount2(path.c_str(), MNT_DETACH) && errno != EINVAL && errno != ENOENT && errno != EPERM)
        return make_error("cannot unmount " + path, errno);
    if (unlink(path.c_str()) && errno != ENOENT) return make_error("cannot remove " + path, errno);
    return ok_status();
}

// SIGTERM, a grace period, then SIGKILL for what is still inside.
std::vector<pid_t> evict(const std::string& proc_root, const std::string& ns_path, bool gentle) {
    std::vector<pid_t> killed;
    pid_t self = getpid();
    auto inside = [&] {
        auto pids = pids_in_netns(proc_root, ns_path);
        std::erase(pids, self);
        return pids;
    };
    auto pids = inside();
    if (pids.empty()) return killed;
    killed = pids;
    if (gentle) {
        for (pid_t p : pids) kill(p, SIGTERM);
        for (int i = 0; i < 50 && !pids.empty(); ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            pids = inside();
        }
    }
    for (pid_t p : pids) kill(p, SIGKILL);
    return killed;
}

}  // namespace

std::string owned_name(int pid, std::string_view role) {
    return fmt::format("{}{}-{}", kNetPrefix, pid, role);
}

std::optional<int> owner_of(std::string_view name) {
    if (name.substr(0, kNetPrefix.size()) != kNetPrefix) return std::nullopt;
    name.remove_prefix(kNetPrefix.size());
    std::size_t i = 0;
    long long pid = 0;
    while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) {
        pid = pid * 10 + (name[i] - '0');
        if (pid > 1 << 22) return std::nullopt;  // pid_max is at most 2^22
        ++i;
    }
    if (i == 0 || pid == 0 || name[0] == '0') return std::nullopt;
    std::string_view role = name.substr(i);
    if (role != "-c" && role != "-s" && role != "-c0" && role != "-s0") return std::nullopt;
    return static_cast<int>(pid);
}

std::vector<std::string> select_leftovers(const std::vector<std::string>& names, int self_pid,
                                          const std::function<bool(int)>& owner_alive) {
    std::vector<std::string> out;
    std::map<int, bool> alive;  // ask once per owner
    for (auto& n : names) {
        auto pid = owner_of(n);
        if (!pid || *pid == self_pid) continue;
        auto it = alive.find(*pid);
        if (it == alive.end()) it = alive.emplace(*pid, owner_alive(*pid)).first;
        if (!it->second) out.push_back(n);
    }
    return out;
}

// --- owner lock -------------------------------------------------------------------

static std::string lock_path(const std::string& dir, int pid) {
    return fmt::format("{}/{}{}.lock", dir, kNetPrefix, pid);
}

Result<OwnerLock> OwnerLock::acquire(const std::string& lock_dir, int pid) {
    std::error_code ec;
    fs::create_directories(lock_dir, ec);
    if (ec) return make_error("cannot create " + lock_dir, ec.value(), "scenarios need root");
    std::string path = lock_path(lock_dir, pid);
    // A cleaner may unlink an unlocked file between our open and flock: retry
    // until the locked file is the one at the path.
    for (int attempt = 0; attempt < 10; ++attempt) {
        int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) return make_error("cannot create " + path, errno, "scenarios need root");
        if (flock(fd, LOCK_EX | LOCK_NB)) {
            int e = errno;
            close(fd);
            return make_error("owner lock " + path + " is held", e,
                              "another scenario of this process is still running");
        }
        struct stat a {}, b {};
        if (fstat(fd, &a) == 0 && stat(path.c_str(), &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev)
            return OwnerLock(fd, path);
        close(fd);
    }
    return make_error("cannot hold owner lock " + path, EAGAIN, "something keeps removing it");
}

bool OwnerLock::held(const std::string& lock_dir, int pid) {
    int fd = open(lock_path(lock_dir, pid).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool busy = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd);  // also drops our shared lock if we got it
    return busy;
}

OwnerLock::~OwnerLock() {
    if (fd_ < 0) return;
    unlink(path_.c_str());  // while still locked: nobody can mistake it for a dead owner's
    close(fd_);
}

// --- processes in a namespace -------------------------------------------------------

std::vector<pid_t> pids_in_netns(const std::string& proc_root, const std::string& ns_path) {
    std::vector<pid_t> out;
    struct stat ns {};
    if (stat(ns_path.c_str(), &ns)) return out;
    for (auto& name : list_dir(proc_root)) {
        if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
            continue;
        struct stat st {};
        if (stat((proc_root + "/" + name + "/ns/net").c_str(), &st)) continue;  // gone, or a zombie
        if (st.st_dev == ns.st_dev && st.st_ino == ns.st_ino) out.push_back(static_cast<pid_t>(std::stoi(name)));
    }
    return out;
}

CleanupReport clean_leftovers(const NetPaths& paths) {
    CleanupReport rep;
    int self = getpid();
    auto alive = [&](int pid) { return OwnerLock::held(paths.lock_dir, pid); };
    for (auto& n : select_leftovers(list_dir(paths.run_netns), self, alive)) {
        std::string path = paths.run_netns + "/" + n;
        for (pid_t p : evict(paths.proc, path, false)) rep.killed.push_back(p);
        if (auto st = remove_netns_mount(path); !st) rep.problems.push_back(st.error().message());
        else rep.namespaces.push_back(n);
    }
    // veth ends live only inside the namespaces and die with them; a host-side
    // one would come from an interrupted older layout, and is removed the same way.
    for (auto& n : select_leftovers(list_dir(paths.sys_class_net), self, alive)) {
        auto r = run_capture({"ip", "link", "del", n});
        if (!r) rep.problems.push_back(r.error().message());
        else rep.links.push_back(n);
    }
    for (auto& f : list_dir(paths.lock_dir)) {
        if (f.size() < 6 || f.substr(f.size() - 5) != ".lock") continue;
        auto pid = owner_of(f.substr(0, f.size() - 5) + "-c");
        if (!pid || *pid == self || OwnerLock::held(paths.lock_dir, *pid)) continue;
        unlink((paths.lock_dir + "/" + f).c_str());
    }
    return rep;
}

// --- NetNs ----------------------------------------------------------------------------

NetNs::~NetNs() {
    if (fd_ >= 0) close(fd_);
}

Status NetNs::enter() const {
    if (setns(fd_, CLONE_NEWNET)) return make_error("cannot enter network namespace " + name_, errno);
    return ok_status();
}

Status NetNs::run_inside(const std::function<Status()>& fn) const {
    Status st = ok_status();
    std::thread t([&] {
        st = enter();
        if (st) st = fn();
    });
    t.join();
    return st;
}

Result<std::optional<std::string>> NetNs::read_sysctl(const std::string& key) const {
    std::optional<std::string> value;
    auto st = run_inside([&]() -> Status {
        std::ifstream f(sysctl_path(key));
        if (!f) return ok_status();  // no such knob on this kernel
        std::string v;
        std::getline(f, v);
        value = v;
        return ok_status();
    });
    if (!st) return st.error();
    return value;
}

Status NetNs::write_sysctl(const std::string& key, const std::string& value) const {
    return run_inside([&]() -> Status {
        // /proc/sys/net resolves against the opening thread's namespace: this one.
        std::string path = sysctl_path(key);
        int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
        if (fd < 0) return make_error(fmt::format("cannot open {} in {}", path, name_), errno);
        ssize_t n = write(fd, value.data(), value.size());
        int e = errno;
        close(fd);
        if (n != static_cast<ssize_t>(value.size()))
            return make_error(fmt::format("cannot set {}={} in {}", key, value, name_), e);
        return ok_status();
    });
}

// --- Network ----------------------------------------------------------------------------

Result<std::string> run_capture(const std::vector<std::string>& argv) {
    int out = memfd_create("hotline-capture", MFD_CLOEXEC);
    if (out < 0) return make_error("memfd_create", errno);
    SpawnOptions so;
    so.stdout_fd = out;
    so.die_with_parent = true;
    auto child = ChildProcess::spawn(argv, so);
    if (!child) {
        close(out);
        return child.error();
    }
    int status = child->wait();
    std::string text;
    lseek(out, 0, SEEK_SET);
    char buf[4096];
    ssize_t n;
    while ((n = read(out, buf, sizeof buf)) > 0) text.append(buf, std::size_t(n));
    close(out);
    if (status != 0) {
        std::string cmd;
        for (auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
        Error e = make_error(fmt::format("\"{}\" failed with status {}", cmd, status));
        while (!text.empty() && text.back() == '\n') text.pop_back();
        e.detail = text;
        return e;
    }
    return text;
}

Status Network::run_ip(const std::vector<std::string>& args) {
    std::vector<std::string> argv{opts_.ip_cmd};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = run_capture(argv);
    if (!r) {
        Error e = r.error();
        if (e.err == ENOENT) e.hint = "install iproute2";
        return e;
    }
    return ok_status();
}

Result<std::unique_ptr<NetNs>> Network::add_netns(const std::string& name) {
    if (auto st = run_ip({"netns", "add", name}); !st) return st.error();
    created_.push_back(name);
    std::string path = opts_.paths.run_netns + "/" + name;
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return make_error("cannot open " + path, errno);
    return std::make_unique<NetNs>(name, fd);
}

// An end that came up before its peer is only given a working qdisc by the
// deferred link watcher (up to a second later); until then packets are
// dropped and a first SYN waits for its retransmit.
static Status wait_link_up(const std::string& ip_cmd, const std::string& ns, const std::string& link) {
    for (int i = 0; i < 250; ++i) {
        auto r = run_capture({ip_cmd, "-o", "-n", ns, "link", "show", "dev", link});
        if (!r) return r.error();
        if (r->find("state UP") != std::string::npos && r->find("qdisc noop") == std::string::npos) return ok_status();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return make_error(fmt::format("{} in {} did not come up within 5 s", link, ns), ETIMEDOUT);
}

Status Network::add_veth_pair(int pid, const std::string& c, const std::string& s) {
    client_link_ = owned_name(pid, "c0");
    server_link_ = owned_name(pid, "s0");
    // Both ends are born inside their namespaces: no host-side interface ever exists.
    std::vector<std::vector<std::string>> steps = {
        {"link", "add", client_link_, "netns", c, "type", "veth", "peer", "name", server_link_, "netns", s},
        {"-n", s, "link", "set", "lo", "up"},
        {"-n", c, "addr", "add", std::string(kClientAddr) + "/24", "dev", client_link_},
        {"-n", s, "addr", "add", std::string(kServerAddr) + "/24", "dev", server_link_},
        {"-n", c, "link", "set", client_link_, "up"},
        {"-n", s, "link", "set", server_link_, "up"},
    };
    for (auto& step : steps)
        if (auto st = run_ip(step); !st) return st;
    if (auto st = wait_link_up(opts_.ip_cmd, c, client_link_); !st) return st;
    return wait_link_up(opts_.ip_cmd, s, server_link_);
}

Result<std::unique_ptr<Network>> Network::create(const NetworkOptions& opts) {
    if (geteuid() != 0)
        return make_error("scenarios create network namespaces", EPERM, "run as root (CAP_SYS_ADMIN and CAP_NET_ADMIN)");
    if (g_network_active.exchange(true))
        return make_error("a scenario network already exists in this process", EBUSY, "stop it first");
    auto net = std::unique_ptr<Network>(new Network());
    net->opts_ = opts;
    net->loopback_ = opts.loopback;
    int pid = getpid();
    auto lock = OwnerLock::acquire(opts.paths.lock_dir, pid);
    if (!lock) {
        g_network_active = false;
        return lock.error();
    }
    net->lock_.emplace(std::move(*lock));
    net->cleaned_ = clean_leftovers(opts.paths);

    std::string c = owned_name(pid, "c"), s = owned_name(pid, "s");
    // Our own names can only be a dead earlier process's with the same pid.
    for (auto& n : {c, s}) (void)remove_netns_mount(opts.paths.run_netns + "/" + n);
    auto cns = net->add_netns(c);
    if (!cns) return cns.error();
    net->client_ = std::move(*cns);
    if (auto st = net->run_ip({"-n", c, "link", "set", "lo", "up"}); !st) return st.error();
    if (opts.loopback) {
        net->client_addr_ = net->server_addr_ = "127.0.0.1";
        net->client_link_ = net->server_link_ = "lo";
        return net;
    }
    auto sns = net->add_netns(s);
    if (!sns) return sns.error();
    net->server_ = std::move(*sns);
    if (auto st = net->add_veth_pair(pid, c, s); !st) return st.error();
    net->client_addr_ = kClientAddr;
    net->server_addr_ = kServerAddr;
    return net;
}

Status Network::add_cpu_routes(const std::vector<int>& cpus) {
    if (loopback_) return make_error("per-CPU routes need the veth network: loopback has one local route", EINVAL,
                                     "drop --loopback");
    for (int cpu : cpus) {
        if (cpu_server_addrs_.count(cpu)) continue;
        if (cpu < 0 || cpu > 255)
            return make_error(fmt::format("per-CPU routes number subnets by CPU: CPU {} is above 255", cpu), EINVAL,
                              "give --cpus within 0-255");
        std::string net = fmt::format("{}.{}", kCpuRoutePrefix, cpu);
        std::vector<std::vector<std::string>> steps = {
            {"-n", client_->name(), "addr", "add", net + ".1/24", "dev", client_link_},
            {"-n", server_->name(), "addr", "add", net + ".2/24", "dev", server_link_},
        };
        for (auto& step : steps)
            if (auto st = run_ip(step); !st) return st;
        cpu_server_addrs_[cpu] = net + ".2";
    }
    return ok_status();
}

std::optional<std::string> Network::cpu_server_addr(int cpu) const {
    auto it = cpu_server_addrs_.find(cpu);
    if (it == cpu_server_addrs_.end()) return std::nullopt;
    return it->second;
}

Status Network::set_sysctl(bool client_side, const std::string& key, const std::string& value, bool optional) {
    const NetNs& ns = client_side ? client() : server();
    auto cur = ns.read_sysctl(key);
    if (!cur) return cur.error();
    if (!cur->has_value()) {
        if (!optional)
            return make_error(fmt::format("this kernel has no {} knob", key), ENOENT);
        sysctls_[ns.name()][key] = "absent";
        return ok_status();
    }
    if (auto st = ns.write_sysctl(key, value); !st) return st;
    sysctls_[ns.name()][key] = value;
    return ok_status();
}

Status Network::teardown() {
    if (torn_down_) return ok_status();
    torn_down_ = true;
    // Our fds hold the namespaces (and their veth) alive: close them, keep the names.
    if (client_) client_ = std::make_unique<NetNs>(client_->name(), -1);
    if (server_) server_ = std::make_unique<NetNs>(server_->name(), -1);
    Status result = ok_status();
    for (auto& name : created_) {
        std::string path = opts_.paths.run_netns + "/" + name;
        evict(opts_.paths.proc, path, true);
        if (auto st = remove_netns_mount(path); !st && result) result = st;
    }
    created_.clear();
    lock_.reset();
    g_network_active = false;
    return result;
}

Network::~Network() {
    (void)teardown();
}

}  // namespace hotline
