// The apply/restore journal: durable intent before every write, read-back after,
// restore only where hotline's value is still in place, and recovery of a
// journal left by a killed run (archived instead when the machine rebooted).
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "hotline/journal.hpp"
#include "hotline/util.hpp"

namespace hotline {

namespace fs = std::filesystem;

std::string_view to_string(ApplyStatus s) {
    switch (s) {
    case ApplyStatus::kApplied: return "applied";
    case ApplyStatus::kAlreadySet: return "already set";
    case ApplyStatus::kCouldNotApply: return "could not apply";
    }
    return "?";
}

std::string_view to_string(RestoreStatus s) {
    switch (s) {
    case RestoreStatus::kRestored: return "restored";
    case RestoreStatus::kAlreadyOriginal: return "already original";
    case RestoreStatus::kChangedByOther: return "changed by someone else";
    case RestoreStatus::kGone: return "gone";
    case RestoreStatus::kFailed: return "restore failed";
    }
    return "?";
}

bool RestoreReport::clean() const {
    for (auto& i : items)
        if (i.status == RestoreStatus::kFailed) return false;
    return true;
}

std::vector<std::string> RestoreReport::lines() const {
    std::vector<std::string> out;
    if (stale_boot)
        out.push_back(fmt::format("a journal from an earlier boot{} was archived to {}, not replayed: the reboot "
                                  "reset the knobs it lists",
                                  journal_owner.empty() ? "" : " (" + journal_owner + ")", archived_to));
    else if (!archived_to.empty())
        out.push_back("a journal was archived to " + archived_to);
    for (auto& i : items) {
        std::string l = fmt::format("{}: {}", i.knob, to_string(i.status));
        switch (i.status) {
        case RestoreStatus::kRestored: l += fmt::format(" ({} -> {})", i.ours, i.original); break;
        case RestoreStatus::kAlreadyOriginal: l += fmt::format(" ({})", i.original); break;
        default:
            if (!i.detail.empty()) l += ": " + i.detail;
        }
        out.push_back(l);
    }
    return out;
}

std::string JournalEntry::display() const {
    std::string d = knob_display(kind, name);
    if (kind == KnobKind::kIrqAffinity) d = "irq " + name + " affinity";
    if (netns) d += " in " + netns->describe();
    return d;
}

namespace {

constexpr const char* kJournalFile = "journal.json";
constexpr const char* kJournalSchema = "hotline.journal";

std::optional<KnobKind> parse_kind(const std::string& s) {
    if (s == "sysctl") return KnobKind::kSysctl;
    if (s == "sysfs") return KnobKind::kSysfs;
    if (s == "irq_affinity") return KnobKind::kIrqAffinity;
    return std::nullopt;
}

nlohmann::json entry_to_json(const JournalEntry& e) {
    nlohmann::json j{{"kind", std::string(to_string(e.kind))}, {"name", e.name},
                     {"scope", std::string(to_string(e.scope))}, {"fix", e.fix},
                     {"old", e.old_value}, {"new", e.new_value}, {"netns", nullptr}};
    if (e.netns)
        j["netns"] = {{"name", e.netns->name}, {"pid", e.netns->pid}, {"dev", e.nsid.dev}, {"ino", e.nsid.ino}};
    return j;
}

// The journal is root's file, but a damaged or edited one must not become a
// way to write arbitrary paths: names are validated again on the way in.
Result<JournalEntry> entry_from_json(const nlohmann::json& j) {
    JournalEntry e;
    try {
        auto kind = parse_kind(j.at("kind").get<std::string>());
        if (!kind) return make_error("unknown knob kind in journal entry", EINVAL);
        e.kind = *kind;
        e.name = j.at("name").get<std::string>();
        auto rp = knob_relpath(e.kind, e.name);
        if (!rp) return rp.error();
        e.relpath = *rp;
        e.scope = j.at("scope").get<std::string>() == "netns" ? Scope::kNetns : Scope::kGlobal;
        e.fix = j.value("fix", "");
        e.old_value = j.at("old").get<std::string>();
        e.new_value = j.at("new").get<std::string>();
        const auto& ns = j.at("netns");
        if (!ns.is_null()) {
            NetnsRef r;
            r.name = ns.value("name", "");
            r.pid = ns.value("pid", 0);
            if (r.pid <= 0) {
                auto chk = parse_netns(r.name);
                if (!chk) return chk.error();
            }
            e.netns = r;
            e.nsid.dev = ns.at("dev").get<std::uint64_t>();
            e.nsid.ino = ns.at("ino").get<std::uint64_t>();
        }
    } catch (const nlohmann::json::exception& ex) {
        return make_error(std::string("malformed journal entry: ") + ex.what(), EINVAL);
    }
    return e;
}

// After this returns the new content survives a crash or power loss, and a
// reader never sees half a file.
Status write_durable(const std::string& dir, const std::string& name, const std::string& data) {
    return write_file_atomic(dir + "/" + name, data, 0600);
}

Status remove_durable(const std::string& dir, const std::string& name) {
    std::string path = dir + "/" + name;
    if (unlink(path.c_str()) && errno != ENOENT) return make_error("cannot remove " + path, errno);
    return fsync_dir(dir);
}

Status ensure_dir(const std::string& dir) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir))
        return make_error("cannot create the journal directory " + dir, ec ? ec.value() : ENOTDIR,
                          "run as root, or choose another directory with --journal-dir");
    chmod(dir.c_str(), 0700);
    return ok_status();
}

Result<std::string> archive(const std::string& dir, const std::string& why) {
    std::string adir = dir + "/archive";
    if (auto st = ensure_dir(adir); !st) return st.error();
    std::string dest = fmt::format("{}/journal-{}-{}-{}.json", adir, long(time(nullptr)), getpid(), why);
    if (rename((dir + "/" + kJournalFile).c_str(), dest.c_str()))
        return make_error("cannot move the journal to " + dest, errno);
    if (auto st = fsync_dir(dir); !st) return st.error();
    if (auto st = fsync_dir(adir); !st) return st.error();
    return dest;
}

using Hook = std::function<void(std::string_view)>;

RestoreItem restore_one(const JournalEntry& e, KnobIo& io, const Hook& hook) {
    RestoreItem it;
    it.knob = e.display();
    it.fix = e.fix;
    it.original = e.old_value;
    it.ours = e.new_value;
    if (e.netns) {
        auto id = io.netns_identity(*e.netns);
        if (!id) {
            it.status = RestoreStatus::kGone;
            it.detail = "the namespace no longer exists; the value went with it";
            return it;
        }
        if (!(*id == e.nsid)) {
            it.status = RestoreStatus::kGone;
            it.detail = "a different namespace now has this name; left alone";
            return it;
        }
    }
    auto cur = io.read(e.kind, e.relpath, e.netns);
    if (!cur) {
        if (cur.error().err == ENOENT) {
            it.status = RestoreStatus::kGone;
            it.detail = "the knob no longer exists";
        } else {
            it.status = RestoreStatus::kFailed;
            it.detail = cur.error().message();
        }
        return it;
    }
    it.current = normalize_value(*cur);
    if (it.current == normalize_value(e.old_value)) {
        it.status = RestoreStatus::kAlreadyOriginal;
        return it;
    }
    if (it.current != normalize_value(e.new_value)) {
        // Not ours any more: whoever changed it after us keeps their value.
        it.status = RestoreStatus::kChangedByOther;
        it.detail = fmt::format(
            "changed by another process or person after hotline set it (now \"{}\", hotline wrote \"{}\", the "
            "original was \"{}\"); left as it is: set it back by hand if that change was not intended",
            it.current, e.new_value, e.old_value);
        return it;
    }
    if (hook) hook("restoring");
    if (auto st = io.write(e.kind, e.relpath, e.old_value, e.netns); !st) {
        it.status = RestoreStatus::kFailed;
        it.detail = st.error().message();
        return it;
    }
    auto back = io.read(e.kind, e.relpath, e.netns);
    if (!back || normalize_value(*back) != normalize_value(e.old_value)) {
        it.status = RestoreStatus::kFailed;
        it.detail = back ? fmt::format("wrote \"{}\" back but it reads \"{}\"", e.old_value, normalize_value(*back))
                         : back.error().message();
        return it;
    }
    it.current = normalize_value(*back);
    it.status = RestoreStatus::kRestored;
    return it;
}

// Restores newest first; entries that failed stay in `entries` for a retry.
RestoreReport restore_entries(std::vector<JournalEntry>& entries, KnobIo& io, const Hook& hook) {
    RestoreReport rep;
    std::vector<JournalEntry> failed;
    for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
        RestoreItem item = restore_one(*it, io, hook);
        if (item.status == RestoreStatus::kFailed) failed.insert(failed.begin(), *it);
        rep.items.push_back(std::move(item));
    }
    entries = std::move(failed);
    return rep;
}

std::string journal_doc(const std::string& boot_id, const std::string& owner,
                        const std::vector<JournalEntry>& entries) {
    nlohmann::json j{{"schema", kJournalSchema}, {"version", 1}, {"boot_id", boot_id},
                     {"pid", getpid()}, {"owner", owner}, {"written", long(time(nullptr))}};
    auto& arr = j["entries"] = nlohmann::json::array();
    for (auto& e : entries) arr.push_back(entry_to_json(e));
    return j.dump(1) + "\n";
}

// Settles a journal left by an earlier run.  The caller holds the lock.
Result<RestoreReport> settle(const std::string& dir, const std::string& boot_id, KnobIo& io, const Hook& hook) {
    RestoreReport rep;
    std::string path = dir + "/" + kJournalFile;
    auto text = read_file(path);
    if (!text) {
        if (text.error().err == ENOENT || !fs::exists(path)) return rep;
        return text.error();
    }
    nlohmann::json doc = nlohmann::json::parse(*text, nullptr, false);
    std::vector<JournalEntry> entries;
    std::string bad;
    if (doc.is_discarded() || !doc.is_object() || doc.value("schema", "") != kJournalSchema) {
        bad = "it is not a hotline journal or is damaged";
    } else {
        rep.journal_owner = fmt::format("pid {}: {}", doc.value("pid", 0), doc.value("owner", "?"));
        if (doc.value("boot_id", "") != boot_id) {
            auto dest = archive(dir, "stale-boot");
            if (!dest) return dest.error();
            rep.stale_boot = true;
            rep.archived_to = *dest;
            return rep;
        }
        if (!doc.contains("entries") || !doc["entries"].is_array()) {
            bad = "it has no entry list";
        } else {
            for (auto& ej : doc["entries"]) {
                auto e = entry_from_json(ej);
                if (!e) {
                    bad = e.error().message();
                    break;
                }
                entries.push_back(std::move(*e));
            }
        }
    }
    if (!bad.empty()) {
        auto dest = archive(dir, "damaged");
        return make_error(fmt::format("the journal {} could not be used ({}); it was moved to {}", path, bad,
                                      dest ? *dest : "(could not be moved: " + dest.error().message() + ")"),
                          EINVAL, "check the knobs it lists by hand; the next run starts clean");
    }
    RestoreReport r = restore_entries(entries, io, hook);
    r.journal_owner = rep.journal_owner;
    if (entries.empty()) {
        if (auto st = remove_durable(dir, kJournalFile); !st) return st.error();
    } else if (auto st = write_durable(dir, kJournalFile, journal_doc(boot_id, "restore retry", entries)); !st) {
        return st.error();
    }
    return r;
}

}  // namespace

RunLock::~RunLock() {
    if (fd_ >= 0) close(fd_);  // closing the last descriptor drops the flock
}

Result<RunLock> RunLock::acquire(const std::string& dir) {
    if (auto st = ensure_dir(dir); !st) return st.error();
    std::string path = dir + "/lock";
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return make_error("cannot open the lock file " + path, errno);
    if (flock(fd, LOCK_EX | LOCK_NB)) {
        int e = errno;
        char buf[32] = {};
        ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
        close(fd);
        std::string holder = n > 0 ? normalize_value(std::string(buf, std::size_t(n))) : "?";
        if (e == EWOULDBLOCK)
            return make_error(fmt::format("another hotline run (pid {}) is changing knobs: {} is locked", holder, path),
                              e, "wait for it to finish; only one run may apply fixes at a time");
        return make_error("cannot lock " + path, e);
    }
    std::string pid = std::to_string(getpid()) + "\n";
    if (ftruncate(fd, 0) == 0) {
        ssize_t w = pwrite(fd, pid.data(), pid.size(), 0);
        (void)w;  // the pid is only for the message above
    }
    return RunLock(fd);
}

Journal::Journal(JournalOptions opts, KnobIo& io, RunLock lock, std::string boot_id)
    : opts_(std::move(opts)), io_(io), lock_(std::move(lock)), boot_id_(std::move(boot_id)) {}

Journal::~Journal() {
    if (!entries_.empty()) restore();
}

std::string Journal::journal_path() const { return opts_.dir + "/" + kJournalFile; }

Result<std::unique_ptr<Journal>> Journal::open(const JournalOptions& opts, KnobIo& io) {
    auto lock = RunLock::acquire(opts.dir);
    if (!lock) return lock.error();
    auto boot = io.boot_id();
    if (!boot) return boot.error();
    auto rep = settle(opts.dir, *boot, io, opts.step_hook);
    if (!rep) return rep.error();
    if (!rep->clean()) {
        std::string what;
        for (auto& l : rep->lines()) what += "\n  " + l;
        return make_error("a previous run's changes could not all be restored:" + what, EIO,
                          "fix the cause, then run `hotline restore`; nothing new is applied until then");
    }
    std::unique_ptr<Journal> j(new Journal(opts, io, std::move(*lock), std::move(*boot)));
    j->recovered_ = std::move(*rep);
    return j;
}

Status Journal::persist() {
    if (entries_.empty()) return remove_durable(opts_.dir, kJournalFile);
    return write_durable(opts_.dir, kJournalFile, journal_doc(boot_id_, opts_.owner, entries_));
}

namespace {

// Refused by policy before anything is read or written.
Status check_scope(const KnobWrite& w, bool allow_global) {
    std::string shown = knob_display(w.kind, w.name);
    if (w.scope == Scope::kGlobal && !allow_global)
        return make_error(fmt::format("{} ({}) changes the whole machine", shown, w.fix), EPERM,
                          "add --allow-global to permit machine-wide changes");
    if (w.scope == Scope::kGlobal && w.netns)
        return make_error(fmt::format("{} is machine-wide: it cannot be limited to {}", shown, w.netns->describe()), EINVAL);
    if (w.scope == Scope::kNetns && !w.netns && !allow_global)
        return make_error(fmt::format("{} is per network namespace and no namespace was given", shown), EPERM,
                          "give the scenario's namespace (--netns NAME), or --allow-global to change the host's own");
    if (normalize_value(w.value).empty()) return make_error("empty value for " + shown, EINVAL);
    return ok_status();
}

ApplyResult could_not_apply(ApplyResult res, const Error& err, const std::string& why) {
    res.status = ApplyStatus::kCouldNotApply;
    res.err = err.err;
    res.reason = why.empty() ? err.message() : why + ": " + err.message();
    return res;
}

}  // namespace

Result<ApplyResult> Journal::apply(const KnobWrite& w) {
    auto rel = knob_relpath(w.kind, w.name);
    if (!rel) return rel.error();
    if (auto st = check_scope(w, opts_.allow_global); !st) return st.error();
    JournalEntry e;
    e.kind = w.kind;
    e.name = w.name;
    e.relpath = *rel;
    e.scope = w.scope;
    e.netns = w.netns;
    e.fix = w.fix;
    e.new_value = normalize_value(w.value);

    ApplyResult res;
    res.knob = e.display();
    res.new_value = e.new_value;
    if (w.netns) {
        // A missing namespace is the caller's mistake, not the kernel refusing the knob.
        auto id = io_.netns_identity(*w.netns);
        if (!id) {
            Error err = id.error();
            err.hint = "create it first (ip netns add NAME) or name one that exists";
            return err;
        }
        e.nsid = *id;
    }
    auto old = io_.read(w.kind, *rel, w.netns);
    if (!old) return could_not_apply(res, old.error(), old.error().err == ENOENT ? "the knob does not exist here" : "");
    e.old_value = normalize_value(*old);
    res.old_value = e.old_value;
    if (e.old_value == e.new_value) {
        res.status = ApplyStatus::kAlreadySet;
        return res;
    }
    // Intent first: once this is on disk, any later crash is recoverable.
    entries_.push_back(e);
    if (auto st = persist(); !st) {
        entries_.pop_back();
        return st.error();
    }
    if (opts_.step_hook) opts_.step_hook("journaled");
    return write_and_verify(e, std::move(res));
}

// The newest entry is `e`, journaled; writes it and reads it back.  Whatever
// does not stick is undone, and its entry dropped once the original is back.
ApplyResult Journal::write_and_verify(const JournalEntry& e, ApplyResult res) {
    auto drop_if_unchanged = [&] {
        auto now = io_.read(e.kind, e.relpath, e.netns);
        if (now && normalize_value(*now) == e.old_value) {
            entries_.pop_back();
            (void)persist();  // a stale entry is harmless: restore finds the original in place
        }
    };
    if (auto st = io_.write(e.kind, e.relpath, e.new_value, e.netns); !st) {
        drop_if_unchanged();
        return could_not_apply(std::move(res), st.error(), "the kernel refused the write");
    }
    if (opts_.step_hook) opts_.step_hook("written");
    auto back = io_.read(e.kind, e.relpath, e.netns);
    if (!back) return could_not_apply(std::move(res), back.error(), "cannot read the value back");
    std::string got = normalize_value(*back);
    if (got != e.new_value) {
        // Put the original back now rather than leave a half-applied knob.
        if (got == e.old_value || io_.write(e.kind, e.relpath, e.old_value, e.netns)) drop_if_unchanged();
        res.status = ApplyStatus::kCouldNotApply;
        res.reason = fmt::format("the kernel accepted \"{}\" but the knob reads \"{}\"", e.new_value, got);
        return res;
    }
    if (opts_.step_hook) opts_.step_hook("verified");
    res.status = ApplyStatus::kApplied;
    return res;
}

RestoreReport Journal::restore() {
    RestoreReport rep = restore_entries(entries_, io_, opts_.step_hook);
    // Failed entries stay journaled (for `hotline restore`); otherwise the file goes.
    (void)persist();
    return rep;
}

Result<RestoreReport> recover(const JournalOptions& opts, KnobIo& io) {
    auto lock = RunLock::acquire(opts.dir);
    if (!lock) return lock.error();
    auto boot = io.boot_id();
    if (!boot) return boot.error();
    return settle(opts.dir, *boot, io, opts.step_hook);
}

}  // namespace hotline
