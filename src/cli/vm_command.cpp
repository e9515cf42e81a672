// `hotline vm`: option checks and the hand-off to the VM helper
// (libexec/vm/hotline-vm), which boots the guest.  docs/vm.md says why the
// booting is a shipped helper and not a library.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "commands.hpp"
#include "hotline/base/signals.hpp"

namespace hotline::cli {
namespace fs = std::filesystem;

namespace {

// The helper: $HOTLINE_VM_HELPER, else installed beside the binary
// (PREFIX/libexec/hotline/vm), else the source tree the binary was built from.
Result<std::string> vm_helper_path() {
    if (const char* env = std::getenv("HOTLINE_VM_HELPER"); env && *env) return std::string(env);
    std::error_code ec;
    fs::path self = fs::read_symlink("/proc/self/exe", ec);
    std::vector<fs::path> candidates;
    if (!ec) candidates.push_back(self.parent_path().parent_path() / "libexec/hotline/vm/hotline-vm");
    candidates.push_back(fs::path(HOTLINE_SOURCE_DIR) / "libexec/vm/hotline-vm");
    for (auto& c : candidates)
        if (access(c.c_str(), X_OK) == 0) return c.string();
    return make_error(fmt::format("the VM helper is not installed (looked for {} and {}): set HOTLINE_VM_HELPER",
                                  candidates.front().string(), candidates.back().string()));
}

}  // namespace

Result<std::vector<std::string>> vm_helper_command(const VmOptions& o, const std::string& keep,
                                                   const std::vector<std::string>& scripts,
                                                   const std::vector<std::string>& args) {
    auto helper = vm_helper_path();
    if (!helper) return helper.error();
    auto tmo = parse_duration(o.timeout);
    if (!tmo) return make_error("--timeout: " + tmo.error().message());
    if (*tmo < 1) return make_error("--timeout must be at least 1s");
    std::error_code ec;
    fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (ec) return make_error("cannot find this hotline binary (/proc/self/exe): " + ec.message());
    std::vector<std::string> argv{*helper, "--hotline", self.string(), "--kernel", o.kernel,
                                  "--nodes", std::to_string(o.nodes), "--cpus", std::to_string(o.cpus),
                                  "--memory", o.memory, "--timeout", std::to_string(static_cast<long>(*tmo))};
    if (!o.modules.empty()) argv.insert(argv.end(), {"--modules", o.modules});
    if (!keep.empty()) argv.insert(argv.end(), {"--keep", keep});
    if (o.console) argv.push_back("--console");
    for (auto& s : scripts) argv.insert(argv.end(), {"--script", s});
    if (!args.empty()) {
        argv.push_back("--");
        argv.insert(argv.end(), args.begin(), args.end());
    }
    return argv;
}

namespace {

std::vector<char*> c_argv(const std::vector<std::string>& argv) {
    std::vector<char*> out;
    for (auto& a : argv) out.push_back(const_cast<char*>(a.c_str()));
    out.push_back(nullptr);
    return out;
}

}  // namespace

int run_vm_child(const std::vector<std::string>& argv, bool stdout_to_stderr) {
    // Blocked before the fork: a signal that arrives while the helper starts is
    // still passed on.  The child gets the mask it had before.
    ShutdownSignals signals({SIGCHLD});
    pid_t pid = fork();
    if (pid < 0) return fail(make_error("fork failed", errno), kExitError);
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);
        if (stdout_to_stderr) dup2(STDERR_FILENO, STDOUT_FILENO);
        auto cargv = c_argv(argv);
        execv(cargv[0], cargv.data());
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        int sig = signals.wait(1.0);
        if (is_shutdown_signal(sig)) kill(pid, sig);  // the helper stops the guest and cleans up
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return kExitInterrupted;
}

bool VmCli::selected() const { return (vm && *vm) || (ab && *ab); }

namespace {

void add_guest_options(CLI::App* c, VmOptions& o) {
    c->add_option("--kernel", o.kernel,
                  fmt::format("debian:5.10|debian:6.1|debian:6.12|debian:latest, or a bzImage, vmlinux or "
                              "linux-image .deb (default {})", o.kernel));
    c->add_option("--modules", o.modules, "Modules directory of a kernel image (for veth, unless built in)");
    c->add_option("--nodes", o.nodes, fmt::format("Emulated NUMA nodes (default {})", o.nodes))
        ->check(CLI::Range(1, 64));
    c->add_option("--cpus", o.cpus, fmt::format("vCPUs, split evenly over the nodes (default {})", o.cpus))
        ->check(CLI::Range(1, 256));
    c->add_option("--memory", o.memory, fmt::format("Guest memory, e.g. 2G or 512M (default {})", o.memory));
    c->add_option("--timeout", o.timeout,
                  fmt::format("Limit for the command in the guest; past it the run is an error (default {})",
                              o.timeout));
    c->add_flag("--console", o.console, "Show the whole guest console (kernel log) while it runs");
}

void add_ab_command(CLI::App& app, VmCli& v) {
    v.ab = app.add_subcommand("ab", "Judge a kernel-pair fix: record its scenario on the kernel without it and "
                                    "the kernel with it, each in a guest, and diff; exit codes as validate");
    auto* a = v.ab;
    a->add_option("--fix", v.fix, "Kernel-pair fix (see `hotline fixes list`)")->required();
    a->add_option("--baseline", v.baseline, "Kernel without the fix (default: the fix's baseline_kernel)");
    a->add_option("--candidate", v.candidate, "Kernel with the fix (default: the fix's fixed_kernel)");
    a->add_option("--baseline-modules", v.baseline_modules, "Modules directory of a --baseline image");
    a->add_option("--candidate-modules", v.candidate_modules, "Modules directory of a --candidate image");
    a->add_option("-d,--duration", v.duration, fmt::format("Recording per kernel (default {})", v.duration));
    a->add_option("-t,--targets", v.targets, "Targets to record (default: those the fix's criteria name)")
        ->delimiter(',');
    a->add_option("--fixes", v.fixes_dir, "Also load *.toml fix definitions from DIR");
    a->add_flag("--json", v.json, "Print the verdict as JSON instead of text");
    a->add_option("-o,--output", v.output, "Also write the verdict as JSON to FILE");
    a->add_option("--junit", v.junit_file, "Write the verdict as JUnit XML to FILE");
    a->add_option("--html", v.html_file, "Write the verdict as a self-contained HTML page to FILE");
    a->add_option("--keep", v.keep, "Keep both guests' results (recordings, console logs) in DIR");
    a->add_option("--nodes", v.guest.nodes, fmt::format("Emulated NUMA nodes (default {})", v.guest.nodes));
    a->add_option("--cpus", v.guest.cpus, fmt::format("vCPUs (default {})", v.guest.cpus));
    a->add_option("--memory", v.guest.memory, fmt::format("Guest memory (default {})", v.guest.memory));
    a->add_option("--timeout", v.guest.timeout, fmt::format("Limit per guest run (default {})", v.guest.timeout));
    a->footer(examples({"hotline ab --fix dst-refcnt-false-sharing",
                        "hotline ab --fix dst-refcnt-false-sharing --baseline ./bzImage-without --candidate ./bzImage-with",
                        "hotline ab --fix dst-refcnt-false-sharing -o verdict.json --html verdict.html"}));
}

}  // namespace

void add_vm_commands(CLI::App& app, VmCli& v) {
    v.vm = app.add_subcommand("vm", "Run a hotline command line in a QEMU guest with a chosen kernel and NUMA "
                                    "shape; exits with the command's status (125: the guest failed)");
    add_guest_options(v.vm, v.guest);
    v.vm->add_option("--keep", v.keep, "Keep the run (console log, output, files) in DIR");
    v.vm->add_option("--script", v.scripts, "Run this shell script in the guest instead (repeatable; one boot)");
    v.vm->add_option("args", v.args, "The hotline command line to run (after --)");
    v.vm->positionals_at_end();
    v.vm->footer(examples({"hotline vm --kernel debian:6.12 -- probe",
                           "hotline vm --kernel debian:6.1 -- record -d 3s -o r.json --workload churn-split",
                           "hotline vm --kernel ./bzImage --nodes 4 -- diagnose -d 5s --workload churn-split"}));
    add_ab_command(app, v);
}

int run_vm_cli(const VmCli& v) {
    if (v.ab && *v.ab) return run_ab(v);
    if (v.args.empty() && v.scripts.empty())
        return fail(make_error("nothing to run: hotline vm [options] -- HOTLINE-ARGS..."), kExitUsage);
    auto argv = vm_helper_command(v.guest, v.keep, v.scripts, v.args);
    if (!argv) return fail(argv.error(), kExitUsage);
    // exec: the helper's exit status is this command's, and a signal reaches it directly.
    auto cargv = c_argv(*argv);
    execv(cargv[0], cargv.data());
    return fail(make_error("cannot run " + argv->front(), errno), kExitError);
}

}  // namespace hotline::cli
