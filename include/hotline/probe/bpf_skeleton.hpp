// SPDX-License-Identifier: Apache-2.0
// Owners for loaded BPF objects: a skeleton (built on the static members bpftool
// emits for C++) plus links created by hand.  Not copyable; destruction detaches.
#pragma once

#include <bpf/libbpf.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace hotline {

class LoadedObject {
public:
    template <class S>
    static std::unique_ptr<LoadedObject> adopt(S* skel) {
        auto l = std::unique_ptr<LoadedObject>(new LoadedObject());
        l->obj_ = skel->obj;
        l->destroy_ = [skel] { S::destroy(skel); };
        return l;
    }
    ~LoadedObject() {
        for (auto* link : extra_links_) bpf_link__destroy(link);
        if (destroy_) destroy_();
    }
    LoadedObject(const LoadedObject&) = delete;
    LoadedObject& operator=(const LoadedObject&) = delete;

    struct bpf_object* obj() const { return obj_; }
    // Links that have no slot in the skeleton (one perf event per CPU).
    void own_link(struct bpf_link* l) { extra_links_.push_back(l); }
    int map_fd(const char* name) const {
        struct bpf_map* m = bpf_object__find_map_by_name(obj_, name);
        return m ? bpf_map__fd(m) : -1;
    }

private:
    LoadedObject() = default;
    struct bpf_object* obj_ = nullptr;
    std::function<void()> destroy_;
    std::vector<struct bpf_link*> extra_links_;
};

// Until an owner adopts it, a freshly opened skeleton is destroyed on scope exit.
template <class S>
class SkelGuard {
public:
    explicit SkelGuard(S* s) : s_(s) {}
    ~SkelGuard() {
        if (s_) S::destroy(s_);
    }
    SkelGuard(const SkelGuard&) = delete;
    SkelGuard& operator=(const SkelGuard&) = delete;
    S* operator->() const { return s_; }
    S* get() const { return s_; }
    explicit operator bool() const { return s_ != nullptr; }
    std::unique_ptr<LoadedObject> release() { return LoadedObject::adopt(std::exchange(s_, nullptr)); }

private:
    S* s_;
};

// Collects libbpf's messages (verifier log included) while alive, on this thread.
class LibbpfCapture {
public:
    LibbpfCapture();
    ~LibbpfCapture();
    LibbpfCapture(const LibbpfCapture&) = delete;
    LibbpfCapture& operator=(const LibbpfCapture&) = delete;
    const std::string& text() const { return text_; }
    void append(const char* s) { text_.append(s); }
    // Last n lines, for error messages.
    std::string tail(int n) const;

private:
    std::string text_;
    LibbpfCapture* prev_;
};

void install_libbpf_logger();

}  // namespace hotline
