// hotline's exit statuses, every one defined here: they are a contract with CI
// scripts, so a status keeps its meaning from release to release.
#pragma once

namespace hotline {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitNothingObservable = 3;  // probe/record: no target can be observed
inline constexpr int kExitBudget = 4;             // `cost --strict`: a program is over its budget

// validate and diff: exit_code(Verdict) maps PASS 0, FAIL 1, INCONCLUSIVE 2,
// NOT-APPLICABLE 3; an error that prevents a verdict is 4.
inline constexpr int kExitValidateError = 4;

// `hotline vm` passes the inner command's status through; its own are out of
// the range hotline's commands use.
inline constexpr int kExitVmGuestFailed = 125;  // no result: boot, panic, hang past --timeout
inline constexpr int kExitInterrupted = 130;    // Ctrl-C or SIGTERM stopped the guest

}  // namespace hotline
