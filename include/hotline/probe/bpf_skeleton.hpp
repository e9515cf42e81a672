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

// A link and how to make it again, for programs attached in windows
// (AttachWindows).  Owns the link: destruction detaches it.
class OwnedLink {
public:
    using Attach = std::function<struct bpf_link*()>;
    OwnedLink(std::string name, struct bpf_link* link, Attach again)
        : name_(std::move(name)), link_(link), again_(std::move(again)) {}
    ~OwnedLink() { detach(); }
    OwnedLink(OwnedLink&& o) noexcept
        : name_(std::move(o.name_)), link_(std::exchange(o.link_, nullptr)), again_(std::move(o.again_)) {}
    OwnedLink& operator=(OwnedLink&&) = delete;
    OwnedLink(const OwnedLink&) = delete;
    OwnedLink& operator=(const OwnedLink&) = delete;

    const std::string& name() const { return name_; }
    void detach() {
        if (link_) bpf_link__destroy(link_);
        link_ = nullptr;
    }
    // false (errno set) when the program could not be attached again.
    bool reattach() {
        if (!link_ && again_) link_ = again_();
        return link_ != nullptr;
    }

private:
    std::string name_;
    struct bpf_link* link_;
    Attach again_;
};

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
        links_.clear();
        if (destroy_) destroy_();
    }
    LoadedObject(const LoadedObject&) = delete;
    LoadedObject& operator=(const LoadedObject&) = delete;

    struct bpf_object* obj() const { return obj_; }
    // A link that has no slot in the skeleton and cannot be made again (a
    // tracing program's trampoline: see AttachWindows).
    void own_link(struct bpf_link* l) { links_.emplace_back("", l, OwnedLink::Attach{}); }
    // Attaches with `attach` and keeps the link with the way to make it again;
    // false (errno set) when it fails.
    bool attach_link(std::string name, OwnedLink::Attach attach) {
        struct bpf_link* l = attach();
        if (!l) return false;
        links_.emplace_back(std::move(name), l, std::move(attach));
        return true;
    }
    std::vector<OwnedLink>& links() { return links_; }
    int map_fd(const char* name) const {
        struct bpf_map* m = bpf_object__find_map_by_name(obj_, name);
        return m ? bpf_map__fd(m) : -1;
    }

private:
    LoadedObject() = default;
    struct bpf_object* obj_ = nullptr;
    std::function<void()> destroy_;
    std::vector<OwnedLink> links_;
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
