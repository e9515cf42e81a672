// SPDX-License-Identifier: Apache-2.0
// Typed attach points: where a BPF program is handed a pointer to a kernel
// struct, read from vmlinux BTF.  A raw tracepoint's `btf_trace_NAME`
// prototype is (void *__data, args...) and a tp_btf program sees the args as
// its context; a function's FUNC prototype gives fentry's context.
#pragma once

#include <string>
#include <string_view>
#include <vector>

struct btf;

namespace hotline {

enum class AttachKind { kTracepoint, kFunction };

std::string_view to_string(AttachKind k);

struct StructArg {
    int index = 0;     // in the program's context (a tracepoint's __data not counted)
    std::string type;  // the struct's BTF name, e.g. "task_struct"
};

struct TypedAttachPoint {
    AttachKind kind = AttachKind::kTracepoint;
    std::string name;            // tracepoint (without btf_trace_) or function
    std::vector<StructArg> args; // the arguments that point to a named struct
};

// Every tracepoint, or every function, whose name matches one of `globs`
// (fnmatch; empty: every one) and whose prototype takes a pointer to a named
// struct, in BTF order.  "GLOB:N" keeps only argument N of what GLOB matches
// ("sched_switch:2": the task switched to, not the one switched from).
std::vector<TypedAttachPoint> typed_attach_points(const struct btf* b, AttachKind kind,
                                                  const std::vector<std::string>& globs);

}  // namespace hotline
