// SPDX-License-Identifier: Apache-2.0
// What the running kernel offers: topology, symbols, BTF, lockdown, capabilities.
// Every reader takes its filesystem root as a parameter so tests use fixture trees.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hotline/base/result.hpp"
#include "hotline/model/topology.hpp"

struct btf;

namespace hotline {

// Reads <root>/devices/system/cpu/possible and <root>/devices/system/node/node*/cpulist.
Result<Topology> read_topology(const std::string& sysfs_root = "/sys");

void* map_pages(std::size_t bytes);  // anonymous pages; throws std::bad_alloc
void unmap_pages(void* p, std::size_t bytes);

// Allocator for big, long-lived tables: blocks of 64 KiB and more come straight
// from mmap and go back when freed.  A table built on a loader thread would
// otherwise leave its growth garbage in that thread's malloc arena for good.
template <class T>
struct PageAllocator {
    using value_type = T;
    static constexpr std::size_t kMinBytes = 64 * 1024;
    PageAllocator() = default;
    template <class U>
    PageAllocator(const PageAllocator<U>&) {}
    T* allocate(std::size_t n) {
        std::size_t bytes = n * sizeof(T);
        if (bytes < kMinBytes) return static_cast<T*>(::operator new(bytes));
        return static_cast<T*>(map_pages(bytes));
    }
    void deallocate(T* p, std::size_t n) {
        std::size_t bytes = n * sizeof(T);
        if (bytes < kMinBytes) ::operator delete(p);
        else unmap_pages(p, bytes);
    }
    template <class U>
    bool operator==(const PageAllocator<U>&) const { return true; }
};
struct SymRange {
    std::uint64_t start = 0;
    std::uint64_t end = 0;  // exclusive: the next higher symbol's address
};

// /proc/kallsyms, sorted, for function ranges and symbolization.  Compact: only
// text symbols are kept (other symbols only end the function before them), names
// live in one arena, and by-name lookup is a sorted index: a live session holds
// this for its whole run, so it must stay a few MB for ~100k+ symbols.  By-name
// lookup goes through sorted name hashes, because sorting the names themselves
// dominates start-up (docs/overhead.md).
class Kallsyms {
public:
    static Result<Kallsyms> load(const std::string& path = "/proc/kallsyms");
    static Kallsyms parse(std::string_view text);

    bool addresses_visible() const { return visible_; }
    bool contains(std::string_view name) const;
    std::optional<SymRange> range(std::string_view name) const;
    // "func+0x12" for a kernel text address, nullopt when unknown.
    std::optional<std::string> symbolize(std::uint64_t addr) const;
    // Symbols parsed (of every type), as listed in the file.
    std::size_t size() const { return parsed_; }
    // Bytes held by the tables (for the overhead benchmark).
    std::size_t memory_bytes() const;

    class Builder;

private:
    struct Sym {
        std::uint64_t addr;
        std::uint32_t size;  // to the next higher symbol of any type; 0: unknown
        std::uint32_t name;  // offset into names_, | kPrimary for the first listed at its address
    };
    static constexpr std::uint32_t kPrimary = 1u << 31;
    std::string_view name_of(const Sym& s) const { return names_.data() + (s.name & ~kPrimary); }
    const Sym* find(std::string_view name) const;

    std::vector<Sym, PageAllocator<Sym>> syms_;  // text symbols by address
    std::basic_string<char, std::char_traits<char>, PageAllocator<char>> names_;  // NUL-separated names
    std::vector<std::uint64_t, PageAllocator<std::uint64_t>> by_name_;  // (name hash << 32 | index into syms_), sorted
    std::size_t parsed_ = 0;
    bool visible_ = false;
};

// Kernel BTF (vmlinux), owned.
class KernelBtf {
public:
    KernelBtf() = default;
    ~KernelBtf();
    KernelBtf(const KernelBtf&) = delete;
    KernelBtf& operator=(const KernelBtf&) = delete;
    KernelBtf(KernelBtf&& o) noexcept : btf_(std::exchange(o.btf_, nullptr)) {}
    KernelBtf& operator=(KernelBtf&& o) noexcept;

    static Result<KernelBtf> load(const std::string& path = "/sys/kernel/btf/vmlinux");
    bool has_func(std::string_view name) const { return func_id(name) > 0; }
    // BTF type id of a function (BTF_KIND_FUNC), 0 when absent.
    int func_id(std::string_view name) const;
    // The same for several names in one pass over the types.
    std::map<std::string, int> func_ids(const std::vector<std::string>& names) const;
    bool has_member(std::string_view type, std::string_view member) const;
    // Name of the struct/union type of a member ("" when absent or not an aggregate).
    std::string member_type(std::string_view type, std::string_view member) const;
    const struct btf* raw() const { return btf_; }

private:
    struct btf* btf_ = nullptr;
};

// Whether the kernel takes a tracing program (fentry, or fexit with exit) on the
// vmlinux function with this BTF id: loads a program that only returns 0, as bcc's
// fentry_can_attach does, so asking costs one small load and no object open.
// Returns 0 when it loads (nothing stays loaded), else -errno and, for EINVAL or
// EACCES, the verifier's last lines in *log.
int probe_tracing_load(int btf_func_id, bool exit, std::string* log = nullptr);

struct Capabilities {
    bool root = false;
    std::vector<std::string> held;     // of the ones hotline cares about
    std::vector<std::string> missing;  // of the ones hotline needs
    bool can_bpf() const;              // CAP_BPF or CAP_SYS_ADMIN
    bool can_perfmon() const;          // CAP_PERFMON or CAP_SYS_ADMIN
};
Capabilities read_capabilities();

struct KernelInfo {
    std::string release;
    std::string machine;
    bool btf = false;
    std::string lockdown;  // none, integrity, confidentiality, or "unknown (...)"
    bool tracefs_mounted = false;
    bool kprobes = false;  // kprobe PMU registered (CONFIG_KPROBES)
    bool pmu = false;      // a hardware cycles event can be opened
    Capabilities caps;
};

// root: "" for the live system, or a fixture tree holding sys/ and proc/.
KernelInfo probe_kernel(const std::string& root = "");

// Lockdown mode from <securityfs>/lockdown text "none [integrity] confidentiality".
std::string parse_lockdown(std::string_view text);

}  // namespace hotline
