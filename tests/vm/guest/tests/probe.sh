# SPDX-License-Identifier: Apache-2.0
# What hotline sees on this kernel: the attach plan per target and the topology.
# Checked by hotline_vm_check --test probe (fentry for the three present targets,
# tcp_prequeue unavailable with its reason, CPUs 2-3 on node 1).
# hlvm-timeout: 90
hotline probe --json >probe.json
