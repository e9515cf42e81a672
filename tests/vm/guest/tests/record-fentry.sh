# SPDX-License-Identifier: Apache-2.0
# fentry/fexit counts and latency while node 1 works (see lib/record.sh).
# hlvm-timeout: 120
. /hlvm/tests/lib/record.sh
record_on_node1 fentry
