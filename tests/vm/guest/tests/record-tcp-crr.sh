# SPDX-License-Identifier: Apache-2.0
# tcp-crr recorded for `hotline diff` between kernels: per-interval metrics
# (dst_release calls, fexit latency and handoffs per connection) and this
# kernel's struct dst_entry layout from its BTF.  Checked per kernel by
# --test record-tcp-crr; the 6.1 and 6.12 recordings are then compared on the
# host (--test diff-dst-refcnt-false-sharing).
# hlvm-timeout: 120
hotline record --handoff-share 100 --scenario tcp-crr --duration 3s --targets dst_release --quiet --output record.json
