#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Every source file names its license in an SPDX line near its top: the
# agent, tests and scripts Apache-2.0 (LICENSE), the BPF programs GPL-2.0
# (LICENSES/GPL-2.0.txt), the structures both sides compile dual-licensed.
# Usage: spdx.sh SOURCE_DIR
set -u
root=$1
missing=0
while IFS= read -r -d '' f; do
    head -5 "$f" | grep -q 'SPDX-License-Identifier: ' && continue
    echo "no SPDX-License-Identifier in the first lines of ${f#"$root"/}"
    missing=$((missing + 1))
done < <(find "$root/src" "$root/include" "$root/bpf" "$root/libexec" "$root/scripts" "$root/tests" "$root/cmake" \
    -path "$root/bpf/vmlinux" -prune -o -path "$root/tests/fixtures" -prune -o -path "$root/tests/fuzz/corpus" -prune -o \
    -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.c' -o -name '*.sh' -o -name '*.py' \
    -o -name '*.cmake' -o -name CMakeLists.txt \) -print0)
for f in "$root/CMakeLists.txt" "$root/.ci/run" "$root/libexec/vm/hotline-vm" "$root/libexec/vm/guest-init"; do
    head -5 "$f" | grep -q 'SPDX-License-Identifier: ' || { echo "no SPDX-License-Identifier in ${f#"$root"/}"; missing=$((missing + 1)); }
done
# The BPF programs must stay GPL-compatible: the kernel refuses GPL-only helpers otherwise.
for f in "$root"/bpf/*.bpf.c; do
    grep -q 'SEC("license") = "GPL"' "$f" || { echo "${f#"$root"/} does not declare the GPL license section"; missing=$((missing + 1)); }
done
echo "$missing files without their license"
[ "$missing" = 0 ]
