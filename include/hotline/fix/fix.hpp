// SPDX-License-Identifier: Apache-2.0
// The fix catalog: tuned and kernel fixes as data (TOML, embedded plus
// `--fixes DIR`), whether each applies to a kernel and why not, and the knob
// changes it makes for a given scenario.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "hotline/fix/journal.hpp"
#include "hotline/kernel/kernel.hpp"
#include "hotline/base/result.hpp"
#include "hotline/model/verdict.hpp"

namespace hotline {

enum class FixMode {
    kRuntime,     // knobs or placement on the running kernel: ABAB trials
    kKernelPair,  // a kernel change: judged between recordings of two kernels
};
std::string_view to_string(FixMode m);

struct Reference {
    std::string commit;  // upstream Linux commit id
    std::string title;
    std::string role;    // "fix", "culprit", "related"
};

enum class CheckKind { kKnob, kFunction, kField, kNumaNodes };

struct Check {
    CheckKind kind = CheckKind::kKnob;
    std::string knob;         // kKnob: sysctl name
    std::string function;     // kFunction: kernel function (BTF, else kallsyms)
    std::string type;         // kField: struct name
    std::string member;       // kField: member name
    std::string member_type;  // kField, optional: the member's type name
    int min_nodes = 0;        // kNumaNodes
    bool present = true;      // false: the check holds when the thing is absent
    std::string why;          // said when the check does not hold
    std::string source;
    std::string describe() const;  // "sysctl net.ipv4.tcp_low_latency exists"
};

// kQueueFiles: one file under every network device's queues, "rx/rps_flow_cnt"
// for /sys/class/net/DEV/queues/rx-N/rps_flow_cnt (listed, never globbed).
enum class ChangeKind { kSysctl, kSysfs, kIrqAffinity, kCpuPlacement, kQueueFiles };
std::string_view to_string(ChangeKind k);

struct Change {
    ChangeKind kind = ChangeKind::kSysctl;
    std::string knob;    // sysctl name / path under /sys / "rx/FILE" or "tx/FILE"; empty for placement and IRQs
    // What to write; placement: "one-node", "cpu-local" or "cpu-set"; IRQ affinity: "one-node".
    std::string value;
    Scope scope = Scope::kNetns;
    bool optional = false;  // "where any": nothing to change is a note, not an error
    std::string note;
    std::string source;
    std::string describe() const;
};

// Kernel-pair fixes: the kernels `hotline ab` boots (`hotline vm --kernel`
// values, empty when none is in reach) and the version ranges each side needs,
// named when no kernel of that side is in reach.
struct KernelPair {
    std::string baseline;        // e.g. "debian:6.1"
    std::string fixed;           // e.g. "debian:6.12"
    std::string baseline_range;  // e.g. "5.18-6.0"
    std::string fixed_range;     // e.g. "6.1 and later"
};

struct FixDef {
    std::string name;
    std::string summary;
    std::string description;
    FixMode mode = FixMode::kRuntime;
    std::vector<std::string> scenarios;  // scenarios that exercise it, first is the default
    std::vector<Reference> references;
    std::vector<Check> checks;      // all must hold on a kernel for the fix to apply there
    std::vector<Check> fixed_when;  // kernel pairs: all hold on a kernel that carries the fix
    std::vector<Change> changes;
    // What the baseline must show for the fix to have anything to remove.
    std::vector<Precondition> preconditions;
    std::vector<Criterion> criteria;  // expect, guardrail and report, in file order
    KernelPair kernels;               // kernel-pair fixes only
    std::string source;               // "builtin:12" or "DIR/file.toml:3"
};

class FixCatalog {
public:
    // The embedded catalog.  It is tested, so failing here is a build defect.
    static Result<FixCatalog> builtin();
    // Parses TOML text holding [[fix]] tables; `source` names it in errors.
    static Result<FixCatalog> parse(std::string_view text, const std::string& source);
    // Adds every *.toml file of dir (sorted by name); other files are ignored.
    // Errors name the file and line.  A name that already exists is an error.
    Status add_dir(const std::string& dir);
    Status merge(FixCatalog other);

    const std::vector<FixDef>& fixes() const { return fixes_; }
    const FixDef* find(std::string_view name) const;
    std::string names() const;  // "a, b, c"

private:
    std::vector<FixDef> fixes_;
};

// The built-in catalog plus `--fixes DIR` when given.
Result<FixCatalog> load_catalog(const std::string& extra_dir = "");

// The TOML text of the built-in catalog.
std::string_view builtin_catalog_text();

// What a kernel offers, behind a seam so applicability is tested on fakes.
class KernelFacts {
public:
    virtual ~KernelFacts() = default;
    virtual bool knob_exists(const std::string& sysctl) const = 0;
    // nullopt: cannot tell (neither BTF nor kallsyms available).
    virtual std::optional<bool> has_function(const std::string& name) const = 0;
    virtual std::optional<bool> has_field(const std::string& type, const std::string& member) const = 0;
    // The member's type name with typedefs and qualifiers peeled ("timer_list").
    virtual std::optional<std::string> field_type(const std::string& type, const std::string& member) const = 0;
    virtual int numa_nodes() const = 0;
};

// The running kernel: sysctls under roots.proc_sys, BTF, kallsyms, topology.
// Any of btf / kallsyms may be null (then that source is not consulted).
class LiveKernelFacts : public KernelFacts {
public:
    LiveKernelFacts(KnobRoots roots, const KernelBtf* btf, const Kallsyms* kallsyms, int numa_nodes)
        : roots_(std::move(roots)), btf_(btf), kallsyms_(kallsyms), nodes_(numa_nodes) {}
    bool knob_exists(const std::string& sysctl) const override;
    std::optional<bool> has_function(const std::string& name) const override;
    std::optional<bool> has_field(const std::string& type, const std::string& member) const override;
    std::optional<std::string> field_type(const std::string& type, const std::string& member) const override;
    int numa_nodes() const override { return nodes_; }

private:
    KnobRoots roots_;
    const KernelBtf* btf_;
    const Kallsyms* kallsyms_;
    int nodes_;
};

// BTF helper: a struct member's type name, peeling typedefs, modifiers and arrays.
std::optional<std::string> btf_member_type_name(const KernelBtf& btf, std::string_view type,
                                                std::string_view member);

struct CheckOutcome {
    Check check;
    bool held = false;
    bool known = true;   // false: the facts could not tell
    std::string detail;  // what was found
};

struct Applicability {
    bool applicable = false;
    std::vector<CheckOutcome> checks;
    std::vector<std::string> reasons;  // why not, one line each
    // Kernel pairs: does this kernel carry the fix (all fixed_when checks hold)?
    // nullopt when the catalog gives no marker or the facts cannot tell.
    std::optional<bool> carries_fix;
    std::string reason_line() const;  // reasons joined with "; "
};

// Runtime fixes: applicable when every check holds.  Kernel pairs are never
// applicable on one kernel (the reason says to use `hotline diff`); their checks
// and marker are still evaluated so a recording can store them.
Applicability check_applicability(const FixDef& fix, const KernelFacts& facts);

// Where a fix's changes go for one validation run.
struct ApplyTarget {
    std::vector<NetnsRef> netns;  // the scenario's namespaces (netns-scoped knobs go to each)
    bool allow_global = false;
    std::vector<int> irqs;         // device IRQs to pin (--irqs-of); a scenario's veth has none
    std::vector<int> node_cpus;    // CPUs of the node to confine to (placement, IRQ affinity)
    std::vector<int> node;         // that node's id (a live command's memory policy); empty: unknown
    std::vector<int> cpu_set;      // CPUs a "cpu-set" placement confines to (--fix-cpus)
    std::string sys_root = "/sys"; // where queue files are listed
};

// CPU placement the scenario must use for the fix arm (not a system write).
struct Placement {
    std::vector<int> cpus;  // empty: the workload's own CPUs
    // Each CPU's flows keep both ends on that CPU and talk over their own address
    // pair, so no route (nor its refcount line) is shared between CPUs.
    bool per_cpu_routes = false;
    std::string note;
    // Nodes a live command's memory is bound to (MPOL_BIND); empty: unchanged.
    // A scenario's threads live in hotline's own process and keep its policy.
    std::vector<int> mem_nodes;
};

struct ChangePlan {
    std::vector<KnobWrite> writes;
    std::optional<Placement> placement;
    std::vector<std::string> notes;  // changes skipped ("no device IRQs: nothing to pin")
};

// A queue-file change: "rx/FILE" or "tx/FILE", FILE a plain name
// (rps_flow_cnt, rps_cpus, xps_cpus).
Status check_queue_file(std::string_view spec);
// Its sysfs names (relative to /sys) under every device's queues of that
// direction, sorted: class/net/DEV/queues/rx-N/FILE.
std::vector<std::string> list_queue_files(std::string_view spec, const std::string& sys_root);
// A queue change's value that depends on the queue: the CPUs of the NUMA node
// of the queue's device (RPS/XPS maps per node).
inline constexpr std::string_view kNodeCpusValue = "node-cpus";
// The NUMA node of network device DEV: its bus device's numa_node, or the
// nearest parent's; none for a virtual device or a firmware that says -1.
std::optional<int> device_numa_node(const std::string& sys_root, const std::string& dev);
// CPUS as the kernel prints a CPU mask, in LIKE's layout (32-bit hex groups,
// comma-separated, the first as wide as LIKE's: the knob then reads back the
// very string written); an error when a CPU does not fit.
Result<std::string> cpu_mask_like(const std::vector<int>& cpus, std::string_view like);
// The node-cpus value of QUEUE_FILE (relative to SYS_ROOT), laid out like its
// current value; none, with *why, when the queue is left alone (no node, no map).
std::optional<std::string> node_cpus_value(const std::string& sys_root, const std::string& queue_file,
                                           std::string* why);

// Turns the fix's changes into concrete writes.  Refuses (before anything is
// written) netns-scoped changes without a namespace and global changes without
// allow_global, saying which flag to add.
Result<ChangePlan> plan_changes(const FixDef& fix, const ApplyTarget& target);


}  // namespace hotline
