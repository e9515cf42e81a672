// SPDX-License-Identifier: Apache-2.0
// Device IRQs by action name, as irqbalance and the set_irq_affinity scripts
// find a NIC's queues in /proc/interrupts.  The text is a parameter so tests
// use captured samples.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hotline/base/result.hpp"

namespace hotline {

// The IRQs of `proc_interrupts` (the text of /proc/interrupts) one of whose
// action names contains `name` ("eth0" matches "eth0-TxRx-0").  Numbered IRQs
// only: the per-CPU rows (NMI, LOC, ...) have no affinity to set.
std::vector<int> irqs_named(std::string_view proc_interrupts, std::string_view name);

// The union of irqs_named over `names`, sorted; a name that matches no IRQ is an
// error naming it.
Result<std::vector<int>> resolve_device_irqs(std::string_view proc_interrupts, const std::vector<std::string>& names);

// The same over <proc_root>/interrupts (nothing read when `names` is empty).
Result<std::vector<int>> read_device_irqs(const std::vector<std::string>& names, const std::string& proc_root = "/proc");

}  // namespace hotline
