// SPDX-License-Identifier: Apache-2.0
// The output files of a command line run in the guest.  The host names them:
// each -o/--output/--junit/--html FILE becomes a plain name in the guest's
// working directory, and after the run only those names are taken from what
// the guest sent, written to the host paths through write_file_atomic.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "hotline/base/result.hpp"

namespace hotline::vm {

class GuestOutputs {
public:
    // The command line with its output files renamed for the guest.
    std::vector<std::string> rewrite(const std::vector<std::string>& args);
    // Each host path passes check_output_path, before the guest starts.
    Status check() const;
    // Writes what came back; names the ones that did not come back.
    Status deliver(const std::map<std::string, std::string>& guest_files) const;
    bool empty() const { return host_path_.empty(); }

private:
    std::string map(const std::string& host_path);
    std::vector<std::pair<std::string, std::string>> host_path_;  // guest name, host path
};

}  // namespace hotline::vm
