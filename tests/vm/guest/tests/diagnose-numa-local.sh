# SPDX-License-Identifier: Apache-2.0
# `hotline diagnose` live: churn-split with its ends on CPUs 0 and 2 (both
# nodes) should name numa-local and print the command that confirms it; that
# command is then run, TCG-sized (1 s trials, 3-10 per arm, as
# validate-numa-local), and its handoff criterion should PASS.  Checked by
# hotline_vm_check --test diagnose-numa-local.
# hlvm-timeout: 300
hotline diagnose --workload churn-split --workload-cpus 0,2 --duration 3s > diagnose.txt
rc=$?
cat diagnose.txt
[ "$rc" = 0 ] || exit "$rc"
cmd=$(sed -n 's/^ *confirm: \(hotline validate --fix numa-local .*\)$/\1/p' diagnose.txt | head -n 1)
echo "$cmd" > confirm.txt
[ -n "$cmd" ] || { echo "diagnose printed no command for numa-local"; exit 1; }
eval "$cmd --trials 3 --max-trials 10 --duration 1s -o verdict.json"
