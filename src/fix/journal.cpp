// SPDX-License-Identifier: Apache-2.0
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
#include <limits>
#include <nlohmann/json.hpp>

#include "hotline/fix/journal.hpp"
#include "hotline/base/json_limits.hpp"
#include "hotline/base/util.hpp"
#include "journal_dir.hpp"

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
// A journal lists a handful of knobs; anything near this size is not one.
constexpr std::size_t kMaxJournalBytes = 1u << 20;

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
        // Apply never journals this: an entry saying so was edited.
        if (e.scope == Scope::kNetns && !knob_can_be_per_netns(e.kind, e.name))
            return make_error(e.name + " is labelled per network namespace, but it is machine-wide", EINVAL);
        e.fix = j.value("fix", "");
        e.old_value = j.at("old").get<std::string>();
        e.new_value = j.at("new").get<std::string>();
        const auto& ns = j.at("netns");
        if (!ns.is_null()) {
            NetnsRef r;
            r.name = ns.value("name", "");
            auto pid = ns.contains("pid") ? int_field(ns, "pid") : std::optional<std::int64_t>(0);
            auto dev = uint_field(ns, "dev"), ino = uint_field(ns, "ino");
            if (!pid || *pid < 0 || *pid > std::numeric_limits<pid_t>::max() || !dev || !ino)
                return make_error("malformed journal entry: its netns pid, dev or ino is not an integer in range", EINVAL);
            r.pid = pid_t(*pid);
            if (r.pid == 0) {
                auto chk = parse_netns(r.name);
                if (!chk) return chk.error();
            }
            e.netns = r;
            e.nsid.dev = *dev;
            e.nsid.ino = *ino;
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


Result<std::string> archive(const std::string& dir, const std::string& why) {
    std::string adir = dir + "/archive";
    if (auto st = ensure_private_dir(adir); !st) return st.error();
    std::string dest = fmt::format("{}/journal-{}-{}-{}.json", adir, long(time(nullptr)), getpid(), why);
    if (rename((dir + "/" + kJournalFile).c_str(), dest.c_str()))
        return make_error("cannot move the journal to " + dest, errno);
    if (auto st = fsync_dir(dir); !st) return st.error();
    if (auto st = fsync_dir(adir); !st) return st.error();
    return dest;
}

using Hook = std::function<void(std::string_view)>;

// The namespace the entry was written in, by its journaled identity: under its
// own name when that still leads to it, else under any name or process that
// still holds it (a pid may have exited while its namespace lives on).
std::optional<NetnsRef> locate_netns(const JournalEntry& e, KnobIo& io, RestoreItem& it) {
    auto id = io.netns_identity(*e.netns);
    if (id && *id == e.nsid) return e.netns;
    if (auto found = io.find_netns(e.nsid)) return found;
    it.status = RestoreStatus::kGone;
    it.detail = id ? "a different namespace now has this name and the original no longer exists; left alone"
                   : "the namespace no longer exists; the value went with it";
    return std::nullopt;
}

RestoreItem restore_one(JournalEntry e, KnobIo& io, const Hook& hook) {
    RestoreItem it;
    it.knob = e.display();
    it.fix = e.fix;
    it.original = e.old_value;
    it.ours = e.new_value;
    if (e.netns) {
        auto where = locate_netns(e, io, it);
        if (!where) return it;
        e.netns = where;
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

struct ParsedJournal {
    std::vector<JournalEntry> entries;
    std::vector<std::string> damaged;  // why each unusable entry was refused
};

ParsedJournal parse_entries(const nlohmann::json& list) {
    ParsedJournal p;
    for (auto& ej : list) {
        auto e = entry_from_json(ej);
        if (e) p.entries.push_back(std::move(*e));
        else p.damaged.push_back(e.error().message());
    }
    return p;
}

// Why the journal document as a whole cannot be used; empty when it can.
std::string unusable_reason(const std::string& path, const std::string& text, nlohmann::json& doc) {
    struct stat st {};
    if (lstat(path.c_str(), &st) || !S_ISREG(st.st_mode)) return "it is not a regular file";
    auto parsed = parse_json_limited(text);
    if (!parsed || string_or(*parsed, "schema", "") != kJournalSchema)
        return "it is not a hotline journal or is damaged";
    doc = std::move(*parsed);
    if (!doc.contains("entries") || !doc["entries"].is_array()) return "it has no entry list";
    return "";
}

Error damaged_journal(const std::string& path, const std::string& why, const Result<std::string>& dest,
                      const RestoreReport* restored) {
    std::string what = fmt::format("the journal {} could not be used ({}); it was moved to {}", path, why,
                                   dest ? dest.value() : "(could not be moved: " + dest.error().message() + ")");
    if (restored && !restored->items.empty()) {
        what += "; its valid entries were settled:";
        for (auto& l : restored->lines()) what += "\n  " + l;
    }
    return make_error(what, 0, "check the knobs the damaged entries list by hand; the next run starts clean");
}

// Settles a journal left by an earlier run.  The caller holds the lock.  A
// damaged entry does not stop the valid ones: they are restored, then the
// journal is archived for the record and the damage reported.
Result<RestoreReport> settle(const std::string& dir, const std::string& boot_id, KnobIo& io, const Hook& hook) {
    RestoreReport rep;
    std::string path = dir + "/" + kJournalFile;
    struct stat st {};
    if (lstat(path.c_str(), &st) && errno == ENOENT) return rep;
    if (S_ISREG(st.st_mode) && std::uint64_t(st.st_size) > kMaxJournalBytes)
        return damaged_journal(path, fmt::format("{} bytes, more than the {} hotline reads back; the knobs it names "
                                                 "could not be read",
                                                 st.st_size, kMaxJournalBytes),
                               archive(dir, "too-large"), nullptr);
    auto text = S_ISREG(st.st_mode) ? read_file(path, kMaxJournalBytes) : Result<std::string>(std::string());
    if (!text) return text.error();
    nlohmann::json doc;
    if (auto why = unusable_reason(path, *text, doc); !why.empty())
        return damaged_journal(path, why, archive(dir, "damaged"), nullptr);
    rep.journal_owner = fmt::format("pid {}: {}", int_field(doc, "pid").value_or(0), string_or(doc, "owner", "?"));
    if (string_or(doc, "boot_id", "") != boot_id) {
        auto dest = archive(dir, "stale-boot");
        if (!dest) return dest.error();
        rep.stale_boot = true;
        rep.archived_to = *dest;
        return rep;
    }
    ParsedJournal parsed = parse_entries(doc["entries"]);
    RestoreReport r = restore_entries(parsed.entries, io, hook);
    r.journal_owner = rep.journal_owner;
    if (!parsed.damaged.empty()) {
        auto dest = archive(dir, "damaged");
        if (dest && !parsed.entries.empty())
            (void)write_durable(dir, kJournalFile, journal_doc(boot_id, "restore retry", parsed.entries));
        return damaged_journal(path, parsed.damaged.front(), dest, &r);
    }
    if (parsed.entries.empty()) {
        if (auto st2 = remove_durable(dir, kJournalFile); !st2) return st2.error();
    } else if (auto st2 = write_durable(dir, kJournalFile, journal_doc(boot_id, "restore retry", parsed.entries)); !st2) {
        return st2.error();
    }
    return r;
}

}  // namespace

Journal::Journal(JournalOptions opts, KnobIo& io, RunLocks lock, std::string boot_id)
    : opts_(std::move(opts)), io_(io), lock_(std::move(lock)), boot_id_(std::move(boot_id)) {}

Journal::~Journal() {
    if (!entries_.empty()) restore();
}

std::string Journal::journal_path() const { return opts_.dir + "/" + kJournalFile; }

Result<std::unique_ptr<Journal>> Journal::open(const JournalOptions& opts, KnobIo& io) {
    auto lock = RunLocks::acquire(opts);
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

Result<std::string> current_value(KnobIo& io, const KnobWrite& w) {
    auto rel = knob_relpath(w.kind, w.name);
    if (!rel) return rel.error();
    auto now = io.read(w.kind, *rel, w.netns);
    if (!now) return now.error();
    return normalize_value(*now);
}

Status Journal::check_fits(const std::vector<KnobWrite>& writes) {
    std::vector<JournalEntry> all = entries_;
    for (auto& w : writes) {
        JournalEntry e;
        e.kind = w.kind;
        e.name = w.name;
        e.scope = w.scope;
        e.netns = w.netns;
        e.fix = w.fix;
        e.new_value = normalize_value(w.value);
        auto old = current_value(io_, w);
        e.old_value = old ? *old : e.new_value;
        all.push_back(std::move(e));
    }
    const std::size_t bytes = journal_doc(boot_id_, opts_.owner, all).size();
    if (bytes <= kMaxJournalBytes) return ok_status();
    return make_error(fmt::format("the journal of these {} changes would be {} bytes, more than the {} hotline reads "
                                  "back after a crash; nothing was changed",
                                  writes.size(), bytes, kMaxJournalBytes),
                      EFBIG, "split the fix into smaller ones (docs/limits.md)");
}

Status Journal::persist() {
    if (entries_.empty()) return remove_durable(opts_.dir, kJournalFile);
    return write_durable(opts_.dir, kJournalFile, journal_doc(boot_id_, opts_.owner, entries_));
}

namespace {

// Refused by policy before anything is read or written.
Status check_scope(const KnobWrite& w, bool allow_global) {
    std::string shown = knob_display(w.kind, w.name);
    if (w.scope == Scope::kNetns && !knob_can_be_per_netns(w.kind, w.name))
        return make_error(fmt::format("{} ({}) is labelled per network namespace, but it is machine-wide: only net.* "
                                      "sysctls belong to a namespace", shown, w.fix),
                          EPERM, "correct the fix's scope to \"global\"; machine-wide changes need --allow-global");
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

// The namespace of init or of hotline itself: what the user sees as the host.
bool is_host_netns(KnobIo& io, const NsIdentity& id) {
    for (pid_t p : {pid_t(1), getpid()}) {
        auto host = io.netns_identity(NetnsRef{"", p});
        if (host && *host == id) return true;
    }
    return false;
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
        if (!opts_.allow_global && is_host_netns(io_, e.nsid))
            return make_error(fmt::format("{} is the host's own network namespace: changing {} there changes the "
                                          "machine", w.netns->describe(), e.display()),
                              EPERM, "name the scenario's namespace, or add --allow-global to change the host's");
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
    // With no journal there is nothing to settle: the directory and its lock
    // are not created (`restore --journal-dir /etc` left /etc/lock).  Every
    // writer holds the machine lock, so the journal cannot appear meanwhile.
    // The directory, if it exists, and its lock are still checked: a journal
    // directory others can write is refused whatever it holds.
    const std::string path = opts.dir + "/" + kJournalFile;
    struct stat st {};
    if (lstat(path.c_str(), &st) && errno == ENOENT) {
        auto machine = RunLock::acquire_file(opts.machine_lock);
        if (!machine) return machine.error();
        if (lstat(opts.dir.c_str(), &st) == 0) {
            if (auto ok = check_private_dir(opts.dir); !ok) return ok.error();
            if (auto ok = check_lock_file(opts.dir + "/lock"); !ok) return ok.error();
        }
        if (lstat(path.c_str(), &st) && errno == ENOENT) return RestoreReport{};
    }
    auto lock = RunLocks::acquire(opts);
    if (!lock) return lock.error();
    auto boot = io.boot_id();
    if (!boot) return boot.error();
    return settle(opts.dir, *boot, io, opts.step_hook);
}

}  // namespace hotline
