// SPDX-License-Identifier: Apache-2.0
// Private networks for the reproducers: two network namespaces joined by a veth
// pair (or one namespace's loopback), owned by one process and removed on every exit.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hotline/base/result.hpp"

namespace hotline {

// Every object hotline creates is named "hl-<owner pid>-<role>": namespaces
// "hl-<pid>-c" / "hl-<pid>-s", veth ends "hl-<pid>-c0" / "hl-<pid>-s0" (at most
// 13 characters, under IFNAMSIZ).  The pid lets the next run find the owner.
inline constexpr std::string_view kNetPrefix = "hl-";

std::string owned_name(int pid, std::string_view role);

// The owner pid of a name hotline made, nullopt for any other name (foreign
// objects are never touched: only the exact pattern hl-<digits>-<c|s>[0] matches).
std::optional<int> owner_of(std::string_view name);

// Names among `names` whose owner is dead: neither us nor alive per `owner_alive`.
std::vector<std::string> select_leftovers(const std::vector<std::string>& names, int self_pid,
                                          const std::function<bool(int)>& owner_alive);

// Filesystem locations, parameters so tests can point them at fixture trees.
struct NetPaths {
    std::string run_netns = "/run/netns";  // where `ip netns` bind-mounts named namespaces
    std::string lock_dir = "/run/hotline";  // one flock'ed file per live owner
    std::string proc = "/proc";
    std::string sys_class_net = "/sys/class/net";
};

// Liveness of an owner is its flock on <lock_dir>/hl-<pid>.lock, not the pid:
// the kernel drops the lock when the owner dies however it dies, and a reused
// pid does not hold it.  A name without a held lock belongs to a dead owner.
class OwnerLock {
public:
    static Result<OwnerLock> acquire(const std::string& lock_dir, int pid);
    static bool held(const std::string& lock_dir, int pid);
    OwnerLock(OwnerLock&& o) noexcept : fd_(o.fd_), path_(std::move(o.path_)) { o.fd_ = -1; }
    OwnerLock& operator=(OwnerLock&&) = delete;
    ~OwnerLock();

private:
    OwnerLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
    int fd_ = -1;
    std::string path_;
};

// Processes whose network namespace is the one bind-mounted at `ns_path`.
std::vector<pid_t> pids_in_netns(const std::string& proc_root, const std::string& ns_path);

struct CleanupReport {
    std::vector<std::string> namespaces;  // removed
    std::vector<std::string> links;       // removed from the host namespace
    std::vector<pid_t> killed;            // processes that were still inside them
    std::vector<std::string> problems;    // what could not be removed, and why
};

// Removes what dead owners left: processes inside their namespaces, the
// namespaces (which takes their veth ends with them), stray host links, locks.
CleanupReport clean_leftovers(const NetPaths& paths = {});

// A named network namespace, opened for setns.
class NetNs {
public:
    NetNs(std::string name, int fd) : name_(std::move(name)), fd_(fd) {}
    NetNs(NetNs&& o) noexcept : name_(std::move(o.name_)), fd_(o.fd_) { o.fd_ = -1; }
    NetNs& operator=(NetNs&&) = delete;
    ~NetNs();
    const std::string& name() const { return name_; }
    int fd() const { return fd_; }
    // Moves the calling thread (only that thread: a netns is per thread) into it.
    Status enter() const;
    // Runs fn on a short-lived thread inside the namespace.
    Status run_inside(const std::function<Status()>& fn) const;
    // /proc/sys of the namespace (dots or slashes); nullopt when the knob does not exist.
    Result<std::optional<std::string>> read_sysctl(const std::string& key) const;
    Status write_sysctl(const std::string& key, const std::string& value) const;

private:
    std::string name_;
    int fd_ = -1;
};

struct NetworkOptions {
    bool loopback = false;  // one namespace, both ends on its 127.0.0.1
    NetPaths paths;
    std::string ip_cmd = "ip";  // iproute2
};

// The private network of one scenario.  Destroying it kills what still runs
// inside, deletes the namespaces and releases the owner lock.
class Network {
public:
    static Result<std::unique_ptr<Network>> create(const NetworkOptions& opts);
    ~Network();
    Network(const Network&) = delete;
    Network& operator=(const Network&) = delete;

    bool loopback() const { return loopback_; }
    const NetNs& client() const { return *client_; }
    const NetNs& server() const { return loopback_ ? *client_ : *server_; }
    const std::string& client_addr() const { return client_addr_; }
    const std::string& server_addr() const { return server_addr_; }
    const std::string& client_link() const { return client_link_; }
    const std::string& server_link() const { return server_link_; }
    const CleanupReport& cleaned_at_start() const { return cleaned_; }

    // Gives each CPU its own client/server address pair, each in its own subnet:
    // a subnet's local address is its own local route with its own cached input
    // route, where secondary addresses of one subnet share the primary's.  Veth only.
    Status add_cpu_routes(const std::vector<int>& cpus);
    // CPU `cpu`'s server address once add_cpu_routes gave it one.
    std::optional<std::string> cpu_server_addr(int cpu) const;

    // Sets a sysctl inside one side and remembers it for the report.  A knob this
    // kernel lacks is recorded as absent, not an error, when `optional` is true.
    Status set_sysctl(bool client_side, const std::string& key, const std::string& value, bool optional);
    // side -> key -> value ("absent" when the kernel has no such knob).
    const std::map<std::string, std::map<std::string, std::string>>& sysctls() const { return sysctls_; }

    // Removes everything now; the destructor does the same if this was not called.
    // Names and addresses stay readable afterwards; the namespace fds read -1.
    Status teardown();

private:
    Network() = default;
    Status run_ip(const std::vector<std::string>& args);
    Result<std::unique_ptr<NetNs>> add_netns(const std::string& name);
    // The veth pair between the two namespaces, addressed and up.
    Status add_veth_pair(int pid, const std::string& c, const std::string& s);

    NetworkOptions opts_;
    bool loopback_ = false;
    std::optional<OwnerLock> lock_;
    std::vector<std::string> created_;  // namespace names, for teardown
    std::unique_ptr<NetNs> client_, server_;
    std::string client_addr_, server_addr_, client_link_, server_link_;
    std::map<std::string, std::map<std::string, std::string>> sysctls_;
    std::map<int, std::string> cpu_server_addrs_;
    CleanupReport cleaned_;
    bool torn_down_ = false;
};

// Runs a command and captures its combined output; an error carries the output.
Result<std::string> run_capture(const std::vector<std::string>& argv);

}  // namespace hotline
