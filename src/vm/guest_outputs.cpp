// SPDX-License-Identifier: Apache-2.0
#include "guest_outputs.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <set>

#include "hotline/base/util.hpp"

namespace hotline::vm {

namespace fs = std::filesystem;

namespace {

// The options of hotline's subcommands that name an output file (--json is a
// flag everywhere: the document goes to stdout, which comes back as output).
const std::set<std::string>& output_options() {
    static const std::set<std::string> kOptions{"-o", "--output", "--junit", "--html"};
    return kOptions;
}

std::string plain(const std::string& s) {
    std::string out;
    for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' ? c : '_';
    return out.substr(0, 64);
}

}  // namespace

std::string GuestOutputs::map(const std::string& host_path) {
    std::string guest = fmt::format("hlvm-out-{}-{}", host_path_.size(), plain(fs::path(host_path).filename()));
    host_path_.emplace_back(guest, host_path);
    return guest;
}

std::vector<std::string> GuestOutputs::rewrite(const std::vector<std::string>& args) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        auto eq = a.find('=');
        if (output_options().count(a) && i + 1 < args.size() && args[i + 1] != "-") {
            out.push_back(a);
            out.push_back(map(args[++i]));
        } else if (a.rfind("--", 0) == 0 && eq != std::string::npos && output_options().count(a.substr(0, eq)) &&
                   a.substr(eq + 1) != "-" && eq + 1 < a.size()) {
            out.push_back(a.substr(0, eq + 1) + map(a.substr(eq + 1)));
        } else {
            out.push_back(a);
        }
    }
    return out;
}

Status GuestOutputs::check() const {
    for (const auto& [guest, host] : host_path_)
        if (auto s = check_output_path(host); !s) return s;
    return ok_status();
}

Status GuestOutputs::deliver(const std::map<std::string, std::string>& guest_files) const {
    for (const auto& [guest, host] : host_path_) {
        auto it = guest_files.find(guest);
        if (it == guest_files.end()) continue;  // the command did not write it (an error it reported)
        if (auto s = write_file_atomic(host, it->second); !s) return s;
        fmt::print(stderr, "hotline vm: wrote {}\n", shell_words({host}));
    }
    return ok_status();
}

}  // namespace hotline::vm
