// SPDX-License-Identifier: Apache-2.0
// Where one guest run's files live on the host: --keep DIR, or a private
// temporary directory removed afterwards.  A kept directory records what the
// run put there (MANIFEST), and a later run removes exactly those entries and
// nothing else; a directory with other content and no manifest is refused.
#pragma once

#include <string>
#include <vector>

#include "hotline/base/result.hpp"

namespace hotline::vm {

class RunDir {
public:
    // `entries`: the top-level names the run may create there.
    static Result<RunDir> open(const std::string& keep, const std::vector<std::string>& entries);
    RunDir(RunDir&& other) noexcept;
    RunDir& operator=(RunDir&&) = delete;
    ~RunDir();

    const std::string& path() const { return path_; }
    bool kept() const { return !temporary_; }

private:
    RunDir() = default;
    std::string path_;
    bool temporary_ = false;
};

// Whether --keep DIR can be used: new, empty, or an earlier run's (its
// manifest); a link or a file is refused.  Checked before anything starts.
Status check_kept_dir(const std::string& keep);

// The manifest's name in a kept directory.
inline constexpr const char* kRunManifest = ".hotline-vm-run";

// Temporary directories of earlier runs whose process is gone (SIGKILL):
// hotline-vm.* under the temporary directory, owned by this user, whose
// owner.pid names no live process.  Removed; returns how many.
int remove_abandoned_runs(const std::string& tmpdir);

// The marker a run's temporary directory holds: its creator's PID.
inline constexpr const char* kOwnerPidFile = "owner.pid";

}  // namespace hotline::vm
