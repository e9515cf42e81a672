// SPDX-License-Identifier: Apache-2.0
// The process_* metrics' numbers, read from /proc/<pid>/{stat,fd,limits} and
// /proc/stat's boot time.
#include "hotline/kernel/process_stats.hpp"

#include <dirent.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

namespace hotline {

Result<ProcessStats> read_process_stats(const std::string& proc_root, const std::string& pid) {
    std::string dir = proc_root + "/" + pid;
    std::string stat;
    {
        std::ifstream f(dir + "/stat");
        if (!f) return make_error("cannot read " + dir + "/stat", errno);
        std::getline(f, stat);
    }
    auto rparen = stat.rfind(')');
    if (rparen == std::string::npos) return make_error("malformed " + dir + "/stat", EINVAL);
    std::istringstream fields(stat.substr(rparen + 1));
    std::vector<std::string> tok;
    for (std::string t; fields >> t;) tok.push_back(t);
    // tok[0] is field 3 (state): utime 14, stime 15, starttime 22, vsize 23, rss 24.
    if (tok.size() < 22) return make_error("short " + dir + "/stat", EINVAL);
    auto num = [](const std::string& s) { return std::strtoull(s.c_str(), nullptr, 10); };
    double tick = double(sysconf(_SC_CLK_TCK));
    ProcessStats ps;
    ps.cpu_seconds = double(num(tok[11]) + num(tok[12])) / tick;
    ps.virtual_bytes = num(tok[20]);
    ps.resident_bytes = num(tok[21]) * std::uint64_t(sysconf(_SC_PAGESIZE));

    std::uint64_t btime = 0;
    {
        std::ifstream f(proc_root + "/stat");
        for (std::string line; std::getline(f, line);)
            if (line.rfind("btime ", 0) == 0) btime = num(line.substr(6));
    }
    ps.start_time_seconds = double(btime) + double(num(tok[19])) / tick;

    if (DIR* d = opendir((dir + "/fd").c_str())) {
        while (dirent* e = readdir(d))
            if (e->d_name[0] != '.') ++ps.open_fds;
        closedir(d);
        // Our own listing counts the descriptor opendir holds.
        bool own = proc_root == "/proc" && (pid == "self" || pid == std::to_string(getpid()));
        if (own && ps.open_fds > 0) --ps.open_fds;
    }
    {
        std::ifstream f(dir + "/limits");
        for (std::string line; std::getline(f, line);) {
            if (line.rfind("Max open files", 0) != 0) continue;
            std::istringstream ls(line.substr(14));
            std::string soft;
            ls >> soft;
            ps.max_fds = soft == "unlimited" ? 0 : num(soft);
        }
    }
    return ps;
}

}  // namespace hotline
