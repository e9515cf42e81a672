// SPDX-License-Identifier: Apache-2.0
// hotline's exit statuses, every one defined here: they are a contract with CI
// scripts, so a status keeps its meaning from release to release.  The table for
// users is in README.md ("Exit codes"); tests/cli/exit_codes.sh checks it for
// every subcommand.
//
// | code | every subcommand                  | validate, diff (a verdict)  |
// |------|-----------------------------------|-----------------------------|
// | 0    | success                           | PASS                        |
// | 1    | runtime error                     | FAIL                        |
// | 2    | -                                 | INCONCLUSIVE                |
// | 3    | probe/record: nothing observable; | NOT-APPLICABLE              |
// |      | fixes apply: not applicable       |                             |
// | 4    | cost --strict: over budget        | error that prevents a verdict |
// | 64   | bad usage, everywhere             | bad usage                   |
//
// Bad usage (64, sysexits' EX_USAGE) is any command line the program refuses
// before doing anything: an unknown subcommand, option, target, fix or scenario,
// a malformed value, an invalid configuration file.  No verdict uses it, so CI
// can tell a typo from a noisy result.
#pragma once

namespace hotline {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitNothingObservable = 3;  // probe/record: no target can be observed
inline constexpr int kExitNotApplicable = 3;      // `fixes apply`: the fix does not apply here
inline constexpr int kExitBudget = 4;             // `cost --strict`: a program is over its budget
inline constexpr int kExitUsage = 64;             // EX_USAGE: bad command line, name or config

// validate and diff: exit_code(Verdict) maps PASS 0, FAIL 1, INCONCLUSIVE 2,
// NOT-APPLICABLE 3; an error that prevents a verdict is 4.
inline constexpr int kExitValidateError = 4;

// `hotline vm` passes the inner command's status through; its own are out of
// the range hotline's commands use.
inline constexpr int kExitVmGuestFailed = 125;  // no result: boot, panic, hang past --timeout
inline constexpr int kExitInterrupted = 130;    // Ctrl-C or SIGTERM stopped the guest

}  // namespace hotline
