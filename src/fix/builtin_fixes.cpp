// The built-in fix catalog, as TOML data parsed by the same code as `--fixes DIR`
// files.  Facts and commit ids: shared/reference/kernel-facts.md.  Metric names
// are the validator's vocabulary (docs/validate-design.md).
#include "hotline/fix.hpp"

namespace hotline {

namespace {

constexpr std::string_view kBuiltin = R"toml(# hotline built-in fixes
[[fix]]
name = "tcp-low-latency"
mode = "runtime"
summary = "net.ipv4.tcp_low_latency=1: bypass TCP prequeue, the first report's tuned fix (kernels 3.10-4.13)"
description = """
On 3.10-4.13, tcp_prequeue() takes a reference on the skb's dst in softirq
(skb_dst_force, 093162553c33) and the reader drops it on its own CPU.  Every
flow to one local address shares one cached input route, so that refcount's
cache line bounces between CPUs and nodes.  tcp_low_latency=1 skips prequeue.
Report: 2 Gb/s at 100% receiver CPU before, 4 Gb/s at 12% with the knob."""
scenarios = ["dst-refcount"]

  [[fix.reference]]
  commit = "093162553c33"
  title = "tcp: force a dst refcount when prequeue packet"
  role = "culprit"

  [[fix.reference]]
  commit = "ca777eff51f7"
  title = "tcp: remove dst refcount false sharing for prequeue mode"
  role = "fix"

  [[fix.reference]]
  commit = "e7942d0633c4"
  title = "tcp: remove prequeue support"
  role = "related"

  [[fix.check]]
  function = "tcp_prequeue"
  why = "tcp_prequeue does not exist on this kernel: prequeue was removed in v4.14 (e7942d0633c4), so net.ipv4.tcp_low_latency has nothing to bypass"

  [[fix.check]]
  knob = "net.ipv4.tcp_low_latency"
  why = "net.ipv4.tcp_low_latency does not exist on this kernel"

  [[fix.change]]
  sysctl = "net.ipv4.tcp_low_latency"
  value = "1"
  scope = "global"
  note = "a machine-wide sysctl on the kernels where it has an effect"

  [[fix.expect]]
  metric = "calls.tcp_prequeue.per_op"
  down = "90%"
  note = "prequeue is bypassed, so tcp_prequeue runs (almost) never"

  [[fix.expect]]
  metric = ["handoff.dst_release.cross_node_per_op", "handoff.dst_release.cross_cpu_per_op"]
  down = "50%"
  note = "no prequeue refcount taken in softirq and dropped by the reader"

  [[fix.expect]]
  metric = "scenario.cpu_us_per_op"
  down = "30%"
  note = "the report went from 100% CPU at 2 Gb/s to 12% at 4 Gb/s"

  [[fix.guardrail]]
  metric = "scenario.ops_per_s"
  better = "higher"
  max_worse = "5%"

[[fix]]
name = "early-demux-off"
mode = "runtime"
summary = "ip_early_demux=0 and tcp_early_demux=0 in the scenario's namespaces: no early dst_check of the socket's cached route"
description = """
Early demux finds the socket during IP receive and validates its cached input
route with dst_check() -> ipv4_dst_check(), which reads dst->obsolete on the
cache line holding the refcount; tcp_v4_do_rcv() checks the same route again.
With early demux off each packet takes a route lookup instead and one of the
two checks goes away.  Whether that reduces contention is unmeasured: this
entry is the hypothesis, and a FAIL is a finding.  Both knobs are per network
namespace, so only the scenario's namespaces change."""
scenarios = ["dst-refcount", "tcp-crr"]

  [[fix.check]]
  knob = "net.ipv4.ip_early_demux"
  why = "net.ipv4.ip_early_demux does not exist on this kernel"

  [[fix.check]]
  knob = "net.ipv4.tcp_early_demux"
  why = "net.ipv4.tcp_early_demux does not exist on this kernel"

  [[fix.change]]
  sysctl = "net.ipv4.ip_early_demux"
  value = "0"
  scope = "netns"

  [[fix.change]]
  sysctl = "net.ipv4.tcp_early_demux"
  value = "0"
  scope = "netns"

  [[fix.expect]]
  metric = ["calls.ipv4_dst_check.per_op", "share.ipv4_dst_check"]
  down = "30%"
  note = "two route checks per received segment become one"

  [[fix.guardrail]]
  metric = "scenario.ops_per_s"
  better = "higher"
  max_worse = "10%"

  [[fix.guardrail]]
  metric = "scenario.cpu_us_per_op"
  better = "lower"
  max_worse = "10%"
  note = "a route lookup per packet costs CPU"

  [[fix.report]]
  metric = "handoff.dst_release.cross_cpu_per_op"
  better = "lower"

  [[fix.report]]
  metric = "handoff.dst_release.cross_node_per_op"
  better = "lower"

[[fix]]
name = "numa-local"
mode = "runtime"
summary = "run the workload, and its device IRQs where there are any, on one NUMA node"
description = """
Cross-node cache-line transfers cost ~110-200 ns against ~45-115 ns within a
socket.  Confining the scenario's threads (and the IRQs of its devices) to one
node keeps a shared refcount's line on that node.  The fix arm runs the
scenario on the CPUs of one node; the baseline spreads it over all nodes."""
scenarios = ["tcp-crr", "dst-refcount"]

  [[fix.check]]
  numa_nodes = 2
  why = "this machine has one NUMA node: nothing crosses nodes, so confining the workload to one changes nothing"

  [[fix.change]]
  cpu_placement = "one-node"
  scope = "netns"
  note = "only the scenario's own threads move"

  [[fix.change]]
  irq_affinity = "one-node"
  scope = "global"
  optional = true
  note = "veth has no device IRQs; a real NIC's IRQs follow the workload to its node"

  [[fix.expect]]
  metric = "handoff.dst_release.cross_node_per_op"
  down = "50%"
  note = "every toucher of the shared route is on one node"

  [[fix.guardrail]]
  metric = "scenario.cpu_us_per_op"
  better = "lower"
  max_worse = "10%"
  note = "half the CPUs may mean less throughput, so per-operation CPU is the fair guardrail"

  [[fix.report]]
  metric = "scenario.ops_per_s"
  better = "higher"

[[fix]]
name = "prequeue-dst-drop"
mode = "kernel-pair"
summary = "kernel fix ca777eff51f7: drop the dst instead of taking a reference when the socket has a cached route"
description = """
tcp_prequeue() does skb_dst_drop() when sk->sk_rx_dst is set and only forces a
reference otherwise, so prequeued packets stop bouncing the shared route's
refcount.  Commit message: ~6 Mpps at ~95% CPU before, ~9 Mpps at ~35% after.
Judged between two kernels with prequeue (3.10-4.13), before and after the
fix; none is in Debian's archive, so this path is supported but not exercised
here.  BTF cannot tell the two kernels apart (the change is inside a function)."""
scenarios = ["dst-refcount"]

  [[fix.reference]]
  commit = "ca777eff51f7"
  title = "tcp: remove dst refcount false sharing for prequeue mode"
  role = "fix"

  [[fix.reference]]
  commit = "093162553c33"
  title = "tcp: force a dst refcount when prequeue packet"
  role = "culprit"

  [[fix.check]]
  function = "tcp_prequeue"
  why = "tcp_prequeue does not exist on this kernel (removed in v4.14): compare two kernels between 3.10 and 4.13"

  [[fix.expect]]
  metric = "calls.dst_release.per_op"
  down = "50%"
  note = "noref dsts are dropped without a refcount operation"

  [[fix.expect]]
  metric = ["handoff.dst_release.cross_node_per_op", "handoff.dst_release.cross_cpu_per_op"]
  down = "50%"

  [[fix.expect]]
  metric = "scenario.cpu_us_per_op"
  down = "30%"
  note = "the commit reports ~75% less CPU per packet"

  [[fix.guardrail]]
  metric = "scenario.ops_per_s"
  better = "higher"
  max_worse = "5%"

[[fix]]
name = "dst-refcnt-false-sharing"
mode = "kernel-pair"
summary = "kernel fixes d288a162dd1c + bc9d3a9f2afc (v6.4): move lwtstate and rt_genid off the refcount's cache line, rcuref_t refcount"
description = """
Before v6.4, struct dst_entry keeps __refcnt at offset 64 with lwtstate at 80,
and struct rtable puts rt_genid at 112: one 64-byte line, so every refcount
change stalls readers of the route (false sharing).  d288a162dd1c moves those
fields off the line; bc9d3a9f2afc replaces the atomic with rcuref_t
(__rcuref).  Judged between two kernels (Debian 6.1 vs 6.12): the layout
criterion decides, the measured costs are reported beside it."""
scenarios = ["tcp-crr"]

  [[fix.reference]]
  commit = "d288a162dd1c"
  title = "net: dst: Prevent false sharing vs. dst_entry::__refcnt"
  role = "fix"

  [[fix.reference]]
  commit = "bc9d3a9f2afc"
  title = "net: dst: Switch to rcuref_t reference counting"
  role = "fix"

  [[fix.check]]
  field = "dst_entry.obsolete"
  why = "struct dst_entry is not in this kernel's BTF: the layout cannot be compared"

  [[fix.fixed_when]]
  field = "dst_entry.__rcuref"
  why = "dst_entry has no __rcuref member: this kernel predates bc9d3a9f2afc (v6.4)"

  [[fix.expect]]
  metric = "layout.dst_entry.read_fields_on_refcnt_line"
  down = "100%"
  exact = true
  note = "lwtstate and rtable.rt_genid share the refcount's line before the fix and not after (__use and lastuse stay: they are written with the refcount)"

  [[fix.report]]
  metric = "latency.dst_release.mean_ns"
  better = "lower"

  [[fix.report]]
  metric = "handoff.dst_release.cross_node_per_op"
  better = "lower"

  [[fix.report]]
  metric = "scenario.ops_per_s"
  better = "higher"

  [[fix.report]]
  metric = "scenario.cpu_us_per_op"
  better = "lower"

[[fix]]
name = "random-mix-timer"
mode = "kernel-pair"
summary = "kernel fix 748bc4dd9e66 (v6.1): mix the interrupt entropy pool from a per-CPU timer instead of queue_work_on()"
description = """
58340f8e952b (v5.18) made add_interrupt_randomness() queue
mix_interrupt_randomness on system_highpri_wq every 64 interrupts or once a
second per CPU: ~10% qperf tcp_lat regression on IPoIB.  534d2eaf1970 made it
less frequent and did not cure it; 748bc4dd9e66 uses an expired per-CPU timer,
so no queue_work_on comes from this path on 6.1+.  No sysctl turns it off:
judged between two kernels.  Kernels 5.18-6.0 are not in Debian's archive."""
scenarios = ["irq-lat"]

  [[fix.reference]]
  commit = "58340f8e952b"
  title = "random: defer fast pool mixing to worker"
  role = "culprit"

  [[fix.reference]]
  commit = "748bc4dd9e66"
  title = "random: use expired timer rather than wq for mixing fast pool"
  role = "fix"

  [[fix.reference]]
  commit = "534d2eaf1970"
  title = "random: schedule mix_interrupt_randomness() less often"
  role = "related"

  [[fix.check]]
  function = "mix_interrupt_randomness"
  why = "mix_interrupt_randomness does not exist on this kernel: the deferred mixing path predates v5.18"

  [[fix.fixed_when]]
  field = "fast_pool.mix"
  member_type = "timer_list"
  why = "fast_pool.mix is not a timer_list: this kernel queues the mixing as work (before 748bc4dd9e66)"

  [[fix.expect]]
  metric = "work.mix_interrupt_randomness.queued_per_irq"
  down = "90%"
  note = "the timer replaces the work item: no queue_work_on from this path"

  [[fix.report]]
  metric = "scenario.latency_p50_us"
  better = "lower"

  [[fix.report]]
  metric = "scenario.latency_p99_us"
  better = "lower"
)toml";

}  // namespace

std::string_view builtin_catalog_text() { return kBuiltin; }

}  // namespace hotline
