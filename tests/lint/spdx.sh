#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Every source file names its license in an SPDX line near its top: the
# agent, tests and scripts Apache-2.0 (LICENSE), the BPF programs GPL-2.0
# (LICENSES/GPL-2.0.txt), the structures both sides compile dual-licensed.
# Usage: spdx.sh SOURCE_DIR
set -u
root=$1
# One awk over every file (a process per file took seconds): the files whose
# first five lines have no SPDX line.
unlicensed=$( { find "$root/src" "$root/include" "$root/bpf" "$root/libexec" "$root/scripts" "$root/tests" "$root/cmake" \
    -path "$root/bpf/vmlinux" -prune -o -path "$root/tests/fixtures" -prune -o -path "$root/tests/fuzz/corpus" -prune -o \
    -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.c' -o -name '*.sh' -o -name '*.py' \
    -o -name '*.cmake' -o -name CMakeLists.txt \) -print0
    printf '%s\0' "$root/CMakeLists.txt" "$root/.ci/run" ; } |
    xargs -0 awk 'FNR == 1 { if (NR > 1 && !seen) print prev; seen = 0; prev = FILENAME }
                  FNR <= 5 && /SPDX-License-Identifier: / { seen = 1 }
                  END { if (NR > 0 && !seen) print prev }')
missing=0
while IFS= read -r f; do
    [ -n "$f" ] || continue
    echo "no SPDX-License-Identifier in the first lines of ${f#"$root"/}"
    missing=$((missing + 1))
done <<<"$unlicensed"
# The BPF programs must stay GPL-compatible: the kernel refuses GPL-only helpers otherwise.
for f in "$root"/bpf/*.bpf.c; do
    grep -q 'SEC("license") = "GPL"' "$f" || { echo "${f#"$root"/} does not declare the GPL license section"; missing=$((missing + 1)); }
done
echo "$missing files without their license"
[ "$missing" = 0 ]
