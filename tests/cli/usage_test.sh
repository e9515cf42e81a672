#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The command-line contract that needs no root: exit status 64 (EX_USAGE) for
# bad usage on every subcommand, "did you mean" for mistyped subcommands and
# names (the help texts: help_test.sh).
# Every subcommand is found from the binary's own help, so a new one is covered
# without editing this file.
# usage: usage_test.sh HOTLINE_BINARY
set -u
bin=$1
usage=64
fixtures="$(dirname "$0")/../fixtures"
source "$(dirname "$0")/../lib/checks.sh"
source "$(dirname "$0")/cli_lib.sh"


mapfile -t paths < <(all_paths)
assert "the help lists the subcommands (found ${#paths[@]})" test "${#paths[@]}" -ge 10

# No subcommand, a mistyped one, and an unknown option anywhere.
expect_usage
expect_usage prob
expect_in "did you mean for prob" "$err" 'did you mean "probe"'
expect_usage validat --fix numa-local
expect_in "did you mean for validat" "$err" 'did you mean "validate"'
expect_usage fixes shwo numa-local
expect_in "did you mean for fixes shwo" "$err" 'did you mean "show"'
expect_usage scenario rnu tcp-crr
expect_in "did you mean for scenario rnu" "$err" 'did you mean "run"'
expect_usage help prob
expect_in "did you mean for help prob" "$err" 'did you mean "probe"'
for p in "${paths[@]}"; do
    # shellcheck disable=SC2086
    expect_usage $p --no-such-option
done
# A mistyped option: the closest one the command takes, no errno text.
expect_usage record --duraton 3s
expect_in "did you mean for record --duraton" "$err" 'hotline record: unknown option "--duraton"; did you mean "--duration"?'
expect_usage fixes show --jsn numa-local
expect_in "did you mean for fixes show --jsn" "$err" 'did you mean "--json"?'
expect_usage probe -t nosuchtarget
assert "a usage error ends without errno text ($err)" bash -c "! grep -q 'EINVAL' <<<\"\$1\"" _ "$err"
version=$("$bin" -V 2>&1)
assert "-V prints the version ($version)" bash -c '[[ $1 =~ ^hotline\ [0-9]+\.[0-9]+\.[0-9]+$ ]]' _ "$version"

# Unknown names: targets, fixes, scenarios, with the closest name suggested.
expect_usage probe -t dst_relase
expect_in "did you mean for a target" "$err" 'did you mean "dst_release"'
expect_usage record -t nosuchtarget -d 1s
expect_usage record --scenario tcp-cr -d 1s
expect_in "did you mean for a scenario" "$err" 'did you mean "tcp-crr"'
expect_usage cost -t nosuchtarget
expect_usage scenario run tcp-cr
expect_usage fixes show numa-locl
expect_in "did you mean for a fix" "$err" 'did you mean "numa-local"'
expect_usage fixes apply nosuchfix
expect_usage validate --fix numa-locl
expect_in "did you mean for validate --fix" "$err" 'did you mean "numa-local"'
expect_usage validate --fix numa-local --scenario tcp-cr
expect_usage report "$fixtures/golden/recording.json" -o ''
expect_in "report -o '' names what is missing" "$err" "-o names no file"
# A FIFO given as the TLS certificate is refused, not waited on.
tmpd=$(mktemp -d)
mkfifo "$tmpd/cert.pem"
printf '[tls]\ncert = "%s"\nkey = "%s"\n' "$tmpd/cert.pem" "$tmpd/cert.pem" > "$tmpd/serve.toml"
err=$(timeout 20 "$bin" serve --check-config --config "$tmpd/serve.toml" 2>&1 </dev/null)
rc=$?
assert "serve --check-config with a FIFO certificate exits $usage (got $rc: $err)" test "$rc" = "$usage"
expect_in "a FIFO certificate is named" "$err" "not a regular file"
rm -rf "$tmpd"
# The command after -- is the command's, whatever options came before it.
expect_usage validate --fix placement -t dst_release -- sh -c true
expect_in "words after -- are the command's" "$err" "add --live"
expect_usage validate --fix numa-local -t nosuchtarget
expect_usage discover --tracepoints @nosuchset -d 1s
expect_in "discover names its tracepoint sets" "$err" "@default and @busy"
expect_usage validate --fix numa-local -d nonsense
expect_usage validate
expect_usage diff a.json b.json --expect nosuchfix
expect_usage serve -c /nonexistent/serve.toml --check-config
expect_usage probe --mechanism nosuch
expect_usage ab --fix numa-locl
expect_in "did you mean for ab --fix" "$err" 'did you mean "numa-local"'
expect_usage ab --fix numa-local
expect_in "ab refuses a runtime fix" "$err" 'hotline validate --fix numa-local'

# `hotline ab` on a fix no archived kernel reaches: NOT-APPLICABLE (exit 3)
# before any guest boots, the verdict document says why and what to pass.
run ab --fix random-mix-timer --json
assert "hotline ab --fix random-mix-timer exits 3 (got $rc: $err)" test "$rc" = 3
expect_in "ab's NOT-APPLICABLE verdict" "$out" '"verdict": "NOT-APPLICABLE"'
expect_in "ab names the option to pass" "$out" '--baseline PATH'

# A recording's page shows its findings, judged as `hotline diagnose FILE` judges them
# (the saved recording keeps the rules' inputs only).
tmpd=$(mktemp -d)
run report "$fixtures/html/tcp-crr-6.12.json" -o "$tmpd/rec.html"
assert "hotline report of a recording exits 0 (got $rc: $err)" test "$rc" = 0
page=$(cat "$tmpd/rec.html" 2>/dev/null)
expect_in "the recording page has a findings section" "$page" '<h2>Findings</h2>'
expect_in "the recording page names the cross-node finding" "$page" 'dst-cross-node-handoffs (high)'
expect_in "a finding's evidence in 3 significant digits" "$page" 'cross_node_share = 0.0487 (above 0.01'
rm -rf "$tmpd"

checks_done
