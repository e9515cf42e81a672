// SPDX-License-Identifier: Apache-2.0
// Journaled knob changes: every write is recorded durably (with the boot id)
// before it happens, read back after, and undone only where the value is still
// the one hotline wrote.  One run at a time (flock); a run killed by SIGKILL is
// restored by the next start or `hotline restore`; after a reboot the stale
// journal is archived, not replayed.  Paths are parameters for fixture tests.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hotline/base/result.hpp"
#include "hotline/base/signals.hpp"  // ShutdownSignals: create it before the Journal so it outlives it

namespace hotline {

// Where knobs live.  Tests point these at a fixture tree.
struct KnobRoots {
    std::string proc_sys = "/proc/sys";
    std::string sys = "/sys";
    std::string proc_irq = "/proc/irq";
    std::string netns_dir = "/run/netns";  // `ip netns` names
    std::string proc = "/proc";            // for pid:N namespaces
    std::string boot_id = "/proc/sys/kernel/random/boot_id";
};

enum class KnobKind { kSysctl, kSysfs, kIrqAffinity };
enum class Scope { kNetns, kGlobal };
std::string_view to_string(KnobKind k);
std::string_view to_string(Scope s);

// Validates a knob name and returns its path relative to its root: a sysctl
// ("net.ipv4.ip_early_demux" or "net/ipv4/ip_early_demux") under /proc/sys, a
// path under /sys, or an IRQ number (-> "N/smp_affinity_list" under /proc/irq).
// Refused before anything is touched: empty names, absolute paths, "." and ".."
// components, globs, whitespace and control characters.  Symlinks that leave the
// root are refused when the knob is opened (RESOLVE_BENEATH).
Result<std::string> knob_relpath(KnobKind kind, std::string_view name);

// Whether the knob can belong to a network namespace at all: only sysctls under
// net/ do (a net.* sysctl that is global is not visible outside the host's
// namespace).  A fix's scope = "netns" is checked against this, not trusted.
bool knob_can_be_per_netns(KnobKind kind, std::string_view name);

// "net/ipv4/ip_early_demux" -> "net.ipv4.ip_early_demux"; other kinds unchanged.
std::string knob_display(KnobKind kind, std::string_view name);

// Whitespace-insensitive form used to compare values ("4096\t87380" == "4096 87380").
std::string normalize_value(std::string_view v);

// A network namespace: an `ip netns` name (/run/netns/NAME) or a process's (pid:N).
struct NetnsRef {
    std::string name;
    pid_t pid = 0;
    std::string path(const KnobRoots& r) const;
    std::string describe() const;  // "netns hl-x" or "netns of pid 42"
};
Result<NetnsRef> parse_netns(std::string_view spec);  // "NAME" or "pid:N"

struct NsIdentity {
    std::uint64_t dev = 0;
    std::uint64_t ino = 0;
    bool operator==(const NsIdentity&) const = default;
};

// Reads and writes knobs.  The filesystem implementation confines every open
// beneath its root and runs netns-scoped I/O in a helper thread that has
// setns()ed into the namespace, so the process's own namespace never changes.
class KnobIo {
public:
    virtual ~KnobIo() = default;
    virtual Result<std::string> read(KnobKind kind, const std::string& relpath,
                                     const std::optional<NetnsRef>& ns) = 0;
    virtual Status write(KnobKind kind, const std::string& relpath, const std::string& value,
                         const std::optional<NetnsRef>& ns) = 0;
    virtual Result<NsIdentity> netns_identity(const NetnsRef& ns) = 0;
    // A live reference (an `ip netns` name or a process) to the namespace with
    // this identity, when one still exists: restore finds a namespace this way
    // after the process it was named by has exited.
    virtual std::optional<NetnsRef> find_netns(const NsIdentity& id) = 0;
    virtual Result<std::string> boot_id() = 0;
};

class FsKnobIo : public KnobIo {
public:
    explicit FsKnobIo(KnobRoots roots = {}) : roots_(std::move(roots)) {}
    Result<std::string> read(KnobKind kind, const std::string& relpath, const std::optional<NetnsRef>& ns) override;
    Status write(KnobKind kind, const std::string& relpath, const std::string& value,
                 const std::optional<NetnsRef>& ns) override;
    Result<NsIdentity> netns_identity(const NetnsRef& ns) override;
    std::optional<NetnsRef> find_netns(const NsIdentity& id) override;
    Result<std::string> boot_id() override;
    const KnobRoots& roots() const { return roots_; }

private:
    KnobRoots roots_;
};

// One knob change a fix asks for.
struct KnobWrite {
    KnobKind kind = KnobKind::kSysctl;
    std::string name;
    std::string value;
    Scope scope = Scope::kGlobal;
    std::optional<NetnsRef> netns;  // required for Scope::kNetns
    std::string fix;                // which fix asked, for the journal and reports
};

// What a planned write's knob holds now, normalized as the journal records it
// (the value the write replaces).
Result<std::string> current_value(KnobIo& io, const KnobWrite& w);

enum class ApplyStatus {
    kApplied,       // written and read back
    kAlreadySet,    // the knob already had the value: nothing written, nothing to restore
    kCouldNotApply  // the kernel refused (EROFS, EPERM, EACCES, EINVAL, absent knob, no read-back)
};
std::string_view to_string(ApplyStatus s);

struct ApplyResult {
    ApplyStatus status = ApplyStatus::kCouldNotApply;
    std::string knob;  // display name, with the namespace when there is one
    std::string old_value;
    std::string new_value;
    std::string reason;  // for kCouldNotApply: what the kernel said
    int err = 0;
};

enum class RestoreStatus {
    kRestored,         // hotline's value was still there and the original is back
    kAlreadyOriginal,  // the original value is in place (never applied, or restored before)
    kChangedByOther,   // someone else changed it after hotline: left alone
    kGone,             // the namespace or the knob no longer exists: nothing to restore
    kFailed            // could not read or write it back: the journal keeps it for a retry
};
std::string_view to_string(RestoreStatus s);

struct RestoreItem {
    std::string knob;  // display name with namespace
    std::string fix;
    RestoreStatus status = RestoreStatus::kFailed;
    std::string original;  // value before hotline
    std::string ours;      // value hotline wrote
    std::string current;   // value found at restore time
    std::string detail;
};

struct RestoreReport {
    std::vector<RestoreItem> items;
    bool stale_boot = false;    // the journal came from an earlier boot and was archived
    std::string archived_to;    // where a stale or damaged journal went
    std::string journal_owner;  // "pid 123: hotline fixes apply ..." of the run that wrote it
    bool clean() const;         // nothing failed: the journal is gone
    bool empty() const { return items.empty() && !stale_boot && archived_to.empty(); }
    std::vector<std::string> lines() const;  // one human line per item
};

// /var/lib/hotline survives a reboot, so a stale journal can be recognised by its
// boot id and archived for the record; /run would silently lose it.
inline constexpr const char* kDefaultJournalDir = "/var/lib/hotline";
// One lock for the whole machine, whatever --journal-dir says: two runs with
// different journals must not interleave changes to the same knob.  /run is
// root's and 0755, so nobody else can plant a file there.
inline constexpr const char* kMachineLockPath = "/run/hotline-knobs.lock";

struct JournalOptions {
    std::string dir = kDefaultJournalDir;
    std::string machine_lock = kMachineLockPath;
    KnobRoots roots;
    bool allow_global = false;  // global knobs change the whole machine: opt-in
    std::string owner;          // the command line, stored in the journal
    // Test seam: called after each step ("journaled", "written", "verified",
    // "restoring") so a test can SIGKILL the process at that point.
    std::function<void(std::string_view step)> step_hook;
};

// An exclusive flock on <dir>/lock, released when destroyed or when the process dies.
class RunLock {
public:
    // The journal directory must be this user's and writable by nobody else:
    // a new one is created 0700, an existing one is checked, never chmodded.
    static Result<RunLock> acquire(const std::string& dir);
    // A lock file at `path` (not followed if it is a link; it must be this user's).
    static Result<RunLock> acquire_file(const std::string& path);
    RunLock(RunLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
    RunLock& operator=(RunLock&&) = delete;
    ~RunLock();

private:
    explicit RunLock(int fd) : fd_(fd) {}
    int fd_ = -1;
};

// The machine-wide lock, then the journal directory's.
struct RunLocks {
    RunLock machine;
    RunLock dir;
    static Result<RunLocks> acquire(const JournalOptions& opts);
};

// One journaled change (what the journal file holds per knob).
struct JournalEntry {
    KnobKind kind = KnobKind::kSysctl;
    std::string name;
    std::string relpath;  // recomputed from name when read back, never trusted
    Scope scope = Scope::kGlobal;
    std::optional<NetnsRef> netns;
    NsIdentity nsid;  // which namespace exactly: a recreated one with the same name is not ours
    std::string fix;
    std::string old_value;
    std::string new_value;
    std::string display() const;
};

class Journal {
public:
    // Takes the run lock, then settles a journal an earlier run left behind:
    // restores it (same boot) or archives it (different boot).  recovered() says
    // what was done.  A restore that could not finish is an error: fix it first.
    static Result<std::unique_ptr<Journal>> open(const JournalOptions& opts, KnobIo& io);
    ~Journal();  // restores whatever is still applied
    Journal(const Journal&) = delete;
    Journal& operator=(const Journal&) = delete;

    const RestoreReport& recovered() const { return recovered_; }

    // An Error only when the journal itself cannot be written (then the knob was
    // not touched) or the write is refused by policy (scope); everything the
    // kernel refuses is an ApplyResult with kCouldNotApply.
    Result<ApplyResult> apply(const KnobWrite& w);
    // Before the first of `writes`: an error when the journal holding all of
    // them would pass the size hotline reads journals back at (it could then
    // not restore them after a crash).  Nothing is written.
    Status check_fits(const std::vector<KnobWrite>& writes);
    // Undoes every applied change, newest first.  Safe to call more than once.
    RestoreReport restore();
    std::size_t pending() const { return entries_.size(); }
    std::string journal_path() const;

private:
    Journal(JournalOptions opts, KnobIo& io, RunLocks lock, std::string boot_id);
    Status persist();
    ApplyResult write_and_verify(const JournalEntry& e, ApplyResult res);
    JournalOptions opts_;
    KnobIo& io_;
    RunLocks lock_;
    std::string boot_id_;
    std::vector<JournalEntry> entries_;
    RestoreReport recovered_;
};

// `hotline restore`: takes the lock, settles a journal left behind, releases.
// Returns an empty report when there was nothing to do.
Result<RestoreReport> recover(const JournalOptions& opts, KnobIo& io);

}  // namespace hotline
