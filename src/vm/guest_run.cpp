// SPDX-License-Identifier: Apache-2.0
#include "hotline/vm/guest_run.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <filesystem>

#include "guest_outputs.hpp"
#include "boot.hpp"
#include "hotline/base/util.hpp"
#include "hotline/vm/guest_channel.hpp"
#include "hotline/vm/kernels.hpp"
#include "run_dir.hpp"

namespace hotline::vm {

namespace fs = std::filesystem;

namespace {

// The command line's test in the plan, and its script's name.
constexpr const char* kCommandTest = "cmd";

// The kernel argument names an image file: a file that is not a package
// (an alias such as debian:6.12 or 6.12 is no file).
bool is_kernel_image(const std::string& kernel) {
    std::error_code ec;
    return fs::is_regular_file(kernel, ec) && fs::path(kernel).extension() != ".deb";
}

long host_memory_mib() {
    auto text = read_file_if_present("/proc/meminfo");
    if (!text) return 0;
    auto at = text->find("MemTotal:");
    if (at == std::string::npos) return 0;
    return std::strtol(text->c_str() + at + 9, nullptr, 10) / 1024;
}

Status check_memory(const GuestRequest& r) {
    auto mib = parse_memory_mib(r.memory);
    if (!mib) return mib.error();
    if (*mib / r.nodes < kMinMemoryPerNodeMib)
        return make_error(fmt::format("--memory {}: at least {}M per node ({} nodes)", r.memory, kMinMemoryPerNodeMib,
                                      r.nodes));
    if (long host = host_memory_mib(); host > 0 && *mib > host)
        return make_error(fmt::format("--memory {}: more than this host's {} MiB of RAM", r.memory, host));
    return ok_status();
}

// Every top-level entry a run may leave in its directory (the kept
// directory's manifest): the boot's files and the planned tests'.
std::vector<std::string> run_entries(const std::vector<std::string>& tests) {
    std::vector<std::string> e{"kernel.env", "timing.env", "console.log", "channel.log", "failure",
                               "stalled", "stalled-cpus.txt", "monitor.log", "host-binaries.sha256",
                               "guest-release", "guest-uptime", "guest-done-uptime", std::string(kCommandTest) + ".sh"};
    e.insert(e.end(), tests.begin(), tests.end());
    return e;
}

// Quoted for the guest's POSIX shell (busybox ash): the user's own words run in
// the guest, never in a host shell.
std::string guest_shell_words(const std::vector<std::string>& words) {
    std::string out;
    for (const auto& w : words) {
        std::string q = "'";
        for (char c : w) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
        out += (out.empty() ? "" : " ") + q + "'";
    }
    return out;
}

// The tests the guest runs: each script's name, or the command line's one.
std::vector<std::string> planned_tests(const GuestRequest& r) {
    if (r.scripts.empty()) return {kCommandTest};
    std::vector<std::string> tests;
    for (const auto& s : r.scripts) tests.push_back(fs::path(s).stem().string());
    return tests;
}

struct Plan {
    std::vector<std::string> scripts;  // files the boot copies into the guest
    bool stream = false;
};

Result<Plan> plan_scripts(const GuestRequest& r, const std::vector<std::string>& args,
                          const std::vector<std::string>& tests, const std::string& dir) {
    if (r.scripts.empty()) {
        const std::string script = dir + "/" + kCommandTest + ".sh";
        std::string text = fmt::format("# hlvm-timeout: {}\nexec hotline {}\n", static_cast<long>(r.timeout_s),
                                       guest_shell_words(args));
        if (auto s = write_file_atomic(script, text); !s) return s.error();
        return Plan{{script}, true};
    }
    for (std::size_t i = 0; i < tests.size(); ++i)
        if (!is_plain_name(tests[i])) return make_error("--script " + r.scripts[i] + ": its name must be a plain file name");
    return Plan{r.scripts, false};
}

// The guest sent no status for the command, or it ran past --timeout.
std::optional<std::string> command_problem(const GuestTest* t, double timeout_s) {
    if (!t || !t->rc) return std::string("the guest sent no exit status for the command");
    if (*t->rc == 137 && t->secs && *t->secs >= timeout_s - 1)
        return fmt::format("hang: the command ran past --timeout {:.0f}s in the guest and was killed", timeout_s);
    return std::nullopt;
}

GuestOutcome finish_command(const GuestRequest& r, const GuestChannel& ch, const GuestOutputs& outputs,
                            const RunDir& dir) {
    auto it = ch.tests.find(kCommandTest);
    const GuestTest* t = it == ch.tests.end() ? nullptr : &it->second;
    if (t && t->output) fmt::print(r.stdout_to_stderr ? stderr : stdout, "{}", *t->output);
    std::fflush(stdout);
    if (auto problem = command_problem(t, r.timeout_s)) {
        fmt::print(stderr, "hotline vm: error: {}\n", *problem);
        keep_console_log(dir);
        return {GuestEnd::kGuestFailed, 0};
    }
    if (auto s = outputs.deliver(t->files); !s) {
        fmt::print(stderr, "hotline vm: error: {}\n", s.error().message());
        return {GuestEnd::kGuestFailed, 0};
    }
    for (const auto& e : t->transfer_errors) fmt::print(stderr, "hotline vm: transfer error: {}\n", e);
    fmt::print(stderr, "hotline vm: exit status {} on {} (command took {:.2f} s guest time)\n", *t->rc,
               ch.release.empty() ? "?" : ch.release, t->secs.value_or(0));
    return {GuestEnd::kRan, *t->rc};
}

Result<GuestChannel> read_channel(const RunDir& dir, const std::vector<std::string>& tests) {
    const ChannelLimits limits;
    // base64 is 4/3 of the bytes, plus line ends and markers.
    const std::size_t cap = limits.max_total_bytes / 3 * 4 + limits.max_total_bytes / 8 + (std::size_t{1} << 20);
    const std::string path = dir.path() + "/channel.log";
    auto text = read_file(path, cap);
    if (!text) return text.error();
    GuestChannel ch = decode_channel(*text, tests, limits);
    for (const auto& why : ch.ignored) fmt::print(stderr, "hotline vm: ignored from the guest: {}\n", why);
    if (auto s = write_channel_results(ch, dir.path()); !s) return s.error();
    return ch;
}

}  // namespace

Result<long> parse_memory_mib(std::string_view text) {
    long factor = 1;
    std::string_view digits = text;
    if (!digits.empty() && (digits.back() == 'G' || digits.back() == 'g')) factor = 1024;
    if (!digits.empty() && (digits.back() == 'G' || digits.back() == 'g' || digits.back() == 'M' || digits.back() == 'm'))
        digits.remove_suffix(1);
    long v = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (digits.empty() || ec != std::errc{} || end != digits.data() + digits.size() || v <= 0 || v > (1L << 30) / factor)
        return make_error(fmt::format("--memory {}: use a size such as 1G or 512M", text));
    return v * factor;
}

Status check_guest_request(const GuestRequest& r) {
    if (r.nodes < 1 || r.cpus < 1 || r.cpus % r.nodes != 0)
        return make_error(fmt::format("--cpus {}: a multiple of --nodes {} (CPUs are split evenly over the nodes)",
                                      r.cpus, r.nodes));
    if (auto s = check_memory(r); !s) return s;
    if (r.timeout_s < 1) return make_error("--timeout must be at least 1s");
    if (r.args.empty() == r.scripts.empty())
        return make_error(r.args.empty() ? "nothing to run: hotline vm [options] -- HOTLINE-ARGS..."
                                         : "--script and a command line after -- exclude each other");
    std::error_code ec;
    if (!fs::is_regular_file(r.kernel, ec) && !find_kernel_alias(r.kernel))
        return make_error(fmt::format("--kernel {}: not a kernel alias or file: use {}, or a path to a bzImage, vmlinux "
                                      "or linux-image .deb", r.kernel, kernel_alias_list()));
    if (is_kernel_image(r.kernel) && r.modules.empty())
        return make_error(fmt::format("--kernel {}: a kernel image needs --modules DIR (its lib/modules/RELEASE, for "
                                      "veth), or --modules none when veth is built in", r.kernel));
    if (!r.modules.empty() && r.modules != "none" && !fs::is_directory(r.modules))
        return make_error("--modules " + r.modules + ": not a directory");
    if (auto s = check_kept_dir(r.keep); !s) return s;
    GuestOutputs outputs;
    outputs.rewrite(r.args);
    return outputs.check();
}

Result<GuestOutcome> run_in_guest(const GuestRequest& r) {
    if (auto s = check_guest_request(r); !s) return s.error();
    remove_abandoned_runs(fs::temp_directory_path().string());
    if (vm_temp_base() != fs::temp_directory_path().string()) remove_abandoned_runs(vm_temp_base());
    GuestOutputs outputs;
    const std::vector<std::string> args = outputs.rewrite(r.args);
    const std::vector<std::string> tests = planned_tests(r);
    auto dir = RunDir::open(r.keep, run_entries(tests));
    if (!dir) return dir.error();
    auto plan = plan_scripts(r, args, tests, dir->path());
    if (!plan) return plan.error();
    BootRun run{r, dir->path(), plan->scripts, plan->stream};
    const GuestEnd end = run_boot(run);
    if (end != GuestEnd::kRan) {
        if (end == GuestEnd::kGuestFailed) keep_console_log(*dir);
        return GuestOutcome{end, 0};
    }
    auto ch = read_channel(*dir, tests);
    if (!ch) return ch.error();
    if (!r.scripts.empty()) return GuestOutcome{GuestEnd::kRan, 0};
    return finish_command(r, *ch, outputs, *dir);
}

}  // namespace hotline::vm
