// SPDX-License-Identifier: Apache-2.0
// A diagnosis: what the rules found in a recording, the evidence, the catalog
// fixes for each finding and the command that would confirm it.  Pure data: the
// rule engine (src/diagnose) fills it, the renderers (report/finding_output.hpp)
// print it as text, JSON and /metrics.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hotline {

enum class Severity { kLow, kMedium, kHigh };
std::string_view to_string(Severity s);

// One condition of a rule as it held in the recording.
struct Evidence {
    std::string metric;     // "handoff.dst_release.cross_node_share"
    double value = 0;
    std::string op;         // "above", "below", "equals"
    double threshold = 0;
    double past = 0;        // how far past the threshold: value/threshold (above), threshold/value (below)
    std::string mechanism;  // how the number was measured: "fentry", "BTF", "sysctl", ...
    std::string fidelity;   // "exact", "partial", "sampled"
};

// What a fix's applicability says here, for one finding.
enum class FixStatus {
    kApplies,           // a runtime fix whose checks hold on this kernel
    kNotApplicable,     // its checks do not hold (why says which)
    kKernelFixAbsent,   // a kernel fix this kernel lacks: the upgrade is the remedy
    kKernelFixPresent,  // this kernel already carries it
    kUnknown,           // the facts could not tell
};
std::string_view to_string(FixStatus s);

struct FixAdvice {
    std::string fix;
    std::string mode;  // "runtime", "kernel-pair"
    std::string summary;
    FixStatus status = FixStatus::kUnknown;
    std::string why;            // the applicability's reason line, or what was found
    std::string confirm;        // the exact command that would confirm the fix
    bool prescribed() const { return status == FixStatus::kApplies || status == FixStatus::kKernelFixAbsent; }
};

struct Finding {
    std::string rule;
    Severity severity = Severity::kMedium;
    std::string summary;  // one line
    std::string meaning;  // one or two sentences
    std::vector<Evidence> evidence;
    std::vector<FixAdvice> fixes;
    double score = 0;  // ranking: severity first, then how far past the thresholds
    std::string source;  // the rule's file:line
};

// A rule that could not be judged: a number it needs was not measured.
struct Unjudged {
    std::string rule;
    std::string why;  // "handoff.dst_release.cross_node_share not measured: dst_release: fentry refused ..."
};

struct Diagnosis {
    std::string recording;  // the file, or "live"
    std::string kernel;     // release
    std::vector<Finding> findings;  // ranked, most severe first
    std::vector<std::string> quiet;    // when nothing was found: the numbers that say nothing is contended
    std::vector<std::string> refused;  // mechanisms and targets this kernel refused, with the reason
    std::vector<Unjudged> unjudged;
    int rules = 0;  // rules evaluated
};

}  // namespace hotline
