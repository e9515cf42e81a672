// SPDX-License-Identifier: Apache-2.0
// `hotline vm`: the options, handed to the VM layer (src/vm/), which boots
// the guest through its helper and reads the results back.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.hpp"
#include "hotline/vm/guest_run.hpp"
#include "hotline/vm/kernels.hpp"

namespace hotline::cli {

namespace {

Result<vm::GuestRequest> guest_request(const VmOptions& o, const std::string& keep,
                                       const std::vector<std::string>& scripts, const std::vector<std::string>& args,
                                       bool stdout_to_stderr) {
    auto tmo = parse_duration(o.timeout);
    if (!tmo) return make_error("--timeout: " + tmo.error().message());
    return vm::GuestRequest{o.kernel, o.modules, o.nodes,   o.cpus, o.memory,        *tmo,
                            o.console, keep,     scripts,   args,   stdout_to_stderr};
}

int exit_status(const vm::GuestOutcome& out) {
    switch (out.end) {
        case vm::GuestEnd::kRan: return out.rc;
        case vm::GuestEnd::kUsage: return kExitUsage;
        case vm::GuestEnd::kInterrupted: return kExitInterrupted;
        case vm::GuestEnd::kGuestFailed: break;
    }
    return kExitVmGuestFailed;
}

}  // namespace

int run_guest_cli(const VmOptions& o, const std::string& keep, const std::vector<std::string>& scripts,
                  const std::vector<std::string>& args, bool stdout_to_stderr) {
    auto request = guest_request(o, keep, scripts, args, stdout_to_stderr);
    if (!request) return fail(request.error(), kExitUsage);
    if (auto s = vm::check_guest_request(*request); !s) return fail(s.error(), kExitUsage);
    auto outcome = vm::run_in_guest(*request);
    if (!outcome) return fail(outcome.error(), kExitVmGuestFailed);
    return exit_status(*outcome);
}

bool VmCli::selected() const { return (vm && *vm) || (ab && *ab); }

namespace {

void add_guest_options(CLI::App* c, VmOptions& o) {
    c->add_option("--kernel", o.kernel,
                  fmt::format("{}, or a bzImage, vmlinux or linux-image .deb (default {})",
                              vm::kernel_alias_list(), o.kernel));
    c->add_option("--modules", o.modules,
                  "Modules directory of a kernel image (for veth), or none when veth is built in");
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
    return run_guest_cli(v.guest, v.keep, v.scripts, v.args, false);
}

}  // namespace hotline::cli
