// SPDX-License-Identifier: Apache-2.0
// The knob journal a crashed run leaves (<journal-dir>/journal.json), settled by
// `hotline restore` and by the next run: any content is restored, archived or
// refused, and the only knobs written are the ones the entries name, on an
// in-memory kernel.  The journal directory is on tmpfs (fsync is cheap there).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <string_view>

#include "hotline/fix/journal.hpp"
#include "knob_path_check.hpp"

using namespace hotline;
namespace fs = std::filesystem;

namespace {

// Every knob reads "1" until written; namespaces all exist with one identity.
class MemoryKnobs : public KnobIo {
public:
    std::map<std::string, std::string> values;
    Result<std::string> read(KnobKind, const std::string& rel, const std::optional<NetnsRef>&) override {
        auto it = values.find(rel);
        return it == values.end() ? std::string("1") : it->second;
    }
    Status write(KnobKind kind, const std::string& rel, const std::string& v, const std::optional<NetnsRef>&) override {
        // A path a journal could make hotline write stays beneath its root.
        if (!knob_path_stays_beneath_root(rel)) __builtin_trap();
        (void)kind;
        values[rel] = v;
        return ok_status();
    }
    Result<NsIdentity> netns_identity(const NetnsRef&) override { return NsIdentity{1, 2}; }
    std::optional<NetnsRef> find_netns(const NsIdentity&) override { return std::nullopt; }
    Result<std::string> boot_id() override { return std::string("boot-1"); }
};

// Never destroyed: the exit handler that removes it runs after static destructors.
const std::string& work_dir() {
    static const std::string* dir = [] {
        const char* shm = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        auto* d = new std::string(std::string(shm) + "/hotline-fuzz-journal-" + std::to_string(getpid()));
        fs::remove_all(*d);
        fs::create_directory(*d);
        fs::permissions(*d, fs::perms::owner_all);
        std::atexit([] {
            std::error_code ec;
            fs::remove_all(work_dir(), ec);
        });
        return d;
    }();
    return *dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string& dir = work_dir();
    {
        std::ofstream f(dir + "/journal.json", std::ios::binary | std::ios::trunc);
        f.write(reinterpret_cast<const char*>(data), std::streamsize(size));
    }
    JournalOptions opts;
    opts.dir = dir;
    opts.machine_lock = dir + "/machine.lock";
    MemoryKnobs knobs;
    auto rep = recover(opts, knobs);
    if (rep) (void)rep->lines();
    else (void)rep.error().message();
    std::error_code ec;
    fs::remove_all(dir + "/archive", ec);
    fs::remove(dir + "/journal.json", ec);
    return 0;
}
