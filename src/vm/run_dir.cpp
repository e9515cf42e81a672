// SPDX-License-Identifier: Apache-2.0
#include "run_dir.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <filesystem>
#include <sstream>

#include "hotline/base/util.hpp"
#include "hotline/vm/guest_channel.hpp"

namespace hotline::vm {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> manifest_entries(const fs::path& dir) {
    std::vector<std::string> out;
    auto text = read_file((dir / kRunManifest).string(), 1 << 20);
    if (!text) return out;
    std::istringstream in(*text);
    for (std::string line; std::getline(in, line);)
        if (is_plain_name(line) && line != kRunManifest) out.push_back(line);
    return out;
}

bool is_empty_dir(const fs::path& dir) {
    std::error_code ec;
    return fs::directory_iterator(dir, ec) == fs::directory_iterator();
}

// Removes what an earlier run listed; links are removed, never followed.
Status clear_earlier_run(const fs::path& dir) {
    std::error_code ec;
    for (const auto& name : manifest_entries(dir)) {
        fs::remove_all(dir / name, ec);
        if (ec) return make_error(fmt::format("--keep {}: cannot remove {} of an earlier run", dir.string(), name),
                                  ec.value());
    }
    return ok_status();
}

Status prepare_kept(const fs::path& dir, const std::vector<std::string>& entries) {
    if (auto s = check_kept_dir(dir.string()); !s) return s;
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(dir, ec))) {
        if (!fs::create_directories(dir, ec) || ec)
            return make_error("--keep " + dir.string() + ": cannot create it", ec.value());
    } else if (fs::exists(dir / kRunManifest)) {
        if (auto s = clear_earlier_run(dir); !s) return s;
    }
    std::string manifest;
    for (const auto& e : entries) manifest += e + "\n";
    return write_file_atomic((dir / kRunManifest).string(), manifest);
}

bool process_alive(pid_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

}  // namespace

Status check_kept_dir(const std::string& keep) {
    if (keep.empty()) return ok_status();
    const fs::path dir = fs::absolute(keep);
    std::error_code ec;
    auto st = fs::symlink_status(dir, ec);
    if (!fs::exists(st)) return ok_status();
    if (!fs::is_directory(st))
        return make_error("--keep " + dir.string() + ": not a directory (a link or a file is not followed)");
    if (!fs::exists(dir / kRunManifest) && !is_empty_dir(dir))
        return make_error("--keep " + dir.string() + ": not empty and not an earlier run's results", 0,
                          "give an empty or new directory");
    return ok_status();
}

Result<RunDir> RunDir::open(const std::string& keep, const std::vector<std::string>& entries) {
    RunDir d;
    if (!keep.empty()) {
        if (auto s = prepare_kept(fs::absolute(keep), entries); !s) return s.error();
        d.path_ = fs::absolute(keep).string();
        return d;
    }
    std::string tmpl = (fs::temp_directory_path() / "hotline-vm.XXXXXX").string();
    if (!mkdtemp(tmpl.data())) return make_error("cannot create a temporary directory in " + tmpl, errno);
    d.path_ = tmpl;
    d.temporary_ = true;
    if (auto s = write_file_atomic(tmpl + "/" + kOwnerPidFile, fmt::format("{}\n", getpid())); !s) return s.error();
    return d;
}

RunDir::RunDir(RunDir&& other) noexcept : path_(std::move(other.path_)), temporary_(other.temporary_) {
    other.temporary_ = false;
}

RunDir::~RunDir() {
    std::error_code ec;
    if (temporary_) fs::remove_all(path_, ec);
}

int remove_abandoned_runs(const std::string& tmpdir) {
    int removed = 0;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(tmpdir, ec)) {
        const std::string name = entry.path().filename().string();
        struct stat st {};
        if (name.rfind("hotline-vm.", 0) != 0 || lstat(entry.path().c_str(), &st) != 0) continue;
        if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid()) continue;
        auto text = read_file((entry.path() / kOwnerPidFile).string(), 64);
        if (!text) continue;  // not a run's directory, or one being created
        pid_t pid = 0;
        auto t = trim(*text);
        auto [end, err] = std::from_chars(t.data(), t.data() + t.size(), pid);
        if (err != std::errc{} || end != t.data() + t.size() || process_alive(pid)) continue;
        std::error_code rm;
        fs::remove_all(entry.path(), rm);
        if (!rm) ++removed;
    }
    return removed;
}

}  // namespace hotline::vm
