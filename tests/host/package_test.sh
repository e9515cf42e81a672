#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The Debian package as a user meets it: build it, `dpkg -i` it on this machine,
# run the installed binary, verify the installed unit, read the man page, use
# the completion, then purge it and check that nothing is left.  Root; run it
# under the host lock (it installs into /usr and probes the kernel).
# usage: package_test.sh BUILD_DIR
set -u
build=$1
CHECK_VERBOSE=1
source "$(dirname "$0")/../lib/checks.sh"


[ "$(id -u)" = 0 ] || { echo "package_test: needs root (dpkg -i)" >&2; exit 1; }
if dpkg-query -W -f='${Status}' hotline 2>/dev/null | grep -q installed; then
    echo "package_test: a hotline package is already installed; remove it first" >&2
    exit 1
fi
# The purge removes /var/lib/hotline: refuse to run where it holds a journal or
# the lock of a live run (a lock left by a finished run names a dead pid).
in_use() {
    local f
    for f in /var/lib/hotline/* /var/lib/hotline/.[!.]*; do
        [ -e "$f" ] || continue
        [ "$(basename "$f")" = lock ] && ! kill -0 "$(cat "$f" 2>/dev/null)" 2>/dev/null && continue
        return 0
    done
    return 1
}
if in_use; then
    echo "package_test: /var/lib/hotline is not empty (a journal of another run?); not touching it" >&2
    exit 1
fi

# Build the package.
rm -f "$build"/hotline_*.deb
(cd "$build" && cpack -G DEB >cpack.log 2>&1) || { cat "$build/cpack.log" >&2; exit 1; }
deb=$(ls "$build"/hotline_*.deb 2>/dev/null | head -1)
assert "cpack built a .deb" test -f "$deb"
[ -f "$deb" ] || exit 1
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for lib in libbpf1 libfmt libtomlplusplus libcpp-httplib libyaml-cpp libcrypt1 libssl3 libc6; do
    assert "Depends (from shlibdeps) names $lib" grep -q "$lib" <<<"$depends"
done

# Install and use it.
before_units=$(systemctl list-units --all --no-legend 'hotline*' 2>/dev/null)
assert "dpkg -i installs it" dpkg -i "$deb"
files=$(dpkg -L hotline)
assert "the binary is /usr/bin/hotline" test -x /usr/bin/hotline
/usr/bin/hotline probe >"$build/package-probe.txt" 2>&1
rc=$?
assert "the installed hotline probe runs (exit $rc: 0, or 3 when nothing is observable)" test "$rc" = 0 -o "$rc" = 3
assert "the install did not start the daemon" test -z "$(systemctl is-active hotline.service 2>/dev/null | grep -x active)"
assert "the install did not enable the daemon" test "$(systemctl is-enabled hotline.service 2>/dev/null)" != enabled
assert "systemd-analyze verify passes on the installed unit" systemd-analyze verify /lib/systemd/system/hotline.service
assert "the unit runs the installed binary" grep -q "^ExecStart=/usr/bin/hotline serve --config /etc/hotline/serve.toml" \
    /lib/systemd/system/hotline.service
assert "the example configuration is /etc/hotline/serve.toml and valid" \
    /usr/bin/hotline serve --check-config --config /etc/hotline/serve.toml
assert "/etc/hotline/serve.toml is a conffile" grep -q /etc/hotline/serve.toml /var/lib/dpkg/info/hotline.conffiles
man_text=$(MANPAGER=cat MANWIDTH=100 man hotline 2>/dev/null)
assert "man hotline shows the subcommands" grep -q "validate" <<<"$man_text"
assert "man hotline shows the exit status table" grep -qi "exit status" <<<"$man_text"
assert "man hotline-validate exists" man -w hotline-validate
assert "the alert rules are installed" test -f /usr/share/hotline/prometheus/hotline-alerts.yml
assert "the dashboard is installed" test -f /usr/share/hotline/grafana/hotline-dashboard.json
assert "the copyright file names both licenses" \
    bash -c 'grep -q "^License: Apache-2.0" /usr/share/doc/hotline/copyright && grep -q "^License: GPL-2.0" /usr/share/doc/hotline/copyright'
assert "the changelog is installed compressed and reads as one" \
    bash -c 'zcat /usr/share/doc/hotline/changelog.gz | head -1 | grep -q "^hotline ([0-9.]*) "'
completion=$(bash -c 'source /usr/share/bash-completion/completions/hotline
    complete -p hotline >/dev/null || exit 1
    COMP_WORDS=(hotline valid); COMP_CWORD=1; _hotline; printf "%s\n" "${COMPREPLY[@]}"
    COMP_WORDS=(hotline validate --fix numa); COMP_CWORD=3; _hotline; printf "%s\n" "${COMPREPLY[@]}"')
assert "the installed completion completes subcommands" grep -qx validate <<<"$completion"
assert "the installed completion completes fixes" grep -qx numa-local <<<"$completion"

# An administrator's enable survives an upgrade (deb-systemd-helper's
# semantics: no disable in prerm), and the purge below forgets it.
systemctl enable hotline.service >/dev/null 2>&1
assert "systemctl enable works on the installed unit" test "$(systemctl is-enabled hotline.service 2>/dev/null)" = enabled
assert "dpkg -i of the package over itself (an upgrade) works" dpkg -i "$deb"
assert "the enable survives the upgrade" test "$(systemctl is-enabled hotline.service 2>/dev/null)" = enabled
assert "dpkg -r removes it" dpkg -r hotline
assert "dpkg -i installs it again" dpkg -i "$deb"
assert "the enable survives a remove and a reinstall" test "$(systemctl is-enabled hotline.service 2>/dev/null)" = enabled

# The installed binary's restore takes the machine's knob lock in /run; the
# purge below must not leave it.
assert "the installed hotline restore runs" /usr/bin/hotline restore
assert "restore took /run/hotline-knobs.lock" test -f /run/hotline-knobs.lock

# Purge: nothing of it may stay.
assert "dpkg --purge removes it" dpkg --purge hotline
assert "dpkg -L hotline lists nothing" test -z "$(dpkg -L hotline 2>/dev/null)"
left=()
while read -r f; do
    [ -e "$f" ] || continue
    [ -d "$f" ] && continue  # shared directories (/usr/bin, /usr/share/man/man1, ...)
    left+=("$f")
done <<<"$files"
assert "no installed file is left (${left[*]:-none})" test "${#left[@]}" = 0
assert "/etc/hotline is gone" test ! -e /etc/hotline
assert "/var/lib/hotline is gone" test ! -e /var/lib/hotline
assert "/usr/share/hotline is gone" test ! -e /usr/share/hotline
wants=$(ls /etc/systemd/system/*.wants/hotline.service 2>/dev/null)
assert "the purge forgot the enable (${wants:-no link left})" test -z "$wants"
# A lock a live process holds (another hotline, a build tree's) is not the package's to take.
left_run=$(for f in /run/hotline/* /run/hotline-knobs.lock; do [ -f "$f" ] && flock -n "$f" true && echo "$f"; done)
assert "no lock file nothing holds is left in /run (${left_run:-none})" test -z "$left_run"
after_units=$(systemctl list-units --all --no-legend 'hotline*' 2>/dev/null)
assert "systemd has no hotline unit loaded afterwards" test "$after_units" = "$before_units"

checks_done
