// SPDX-License-Identifier: Apache-2.0
// The guest's root file system, written as an uncompressed cpio "newc"
// archive (the guest unpacks it without a decompressor, the fastest path under
// TCG): busybox, the host-built binaries exactly as built plus the shared
// libraries `ldd` names (at their own paths, so the host's dynamic loader
// finds them), the guest runner as /init, the tests and the kernel's modules.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "hotline/base/result.hpp"

namespace hotline::vm {

// One archive member: a directory, a copy of a host file, or given bytes.
struct ArchiveEntry {
    unsigned mode = 0;  // permission bits
    bool directory = false;
    std::string source;  // host file whose bytes it holds, when not empty
    std::string data;    // its bytes otherwise
};

// The archive's tree, paths relative to the guest's / without a leading slash.
// Parents are added as directories; members are written in byte order, so a
// directory comes before what it holds.
class ArchiveTree {
  public:
    void add_directory(const std::string& path);
    void add_data(const std::string& path, std::string data, unsigned mode);
    Status add_copy(const std::string& path, const std::string& source);  // the file's own mode
    bool contains(const std::string& path) const { return entries_.count(path) != 0; }
    const std::map<std::string, ArchiveEntry>& entries() const { return entries_; }

    // The whole tree as cpio newc into OUT.
    Status write(const std::string& out) const;

  private:
    void add_parents(const std::string& path);
    std::map<std::string, ArchiveEntry> entries_;
};

// One newc member header plus its name, padded (exposed for the tests).
std::string cpio_header(const std::string& name, unsigned mode, std::uint64_t size, unsigned ino);

// The libraries `ldd FILE` names (absolute paths); none for a static binary.
std::vector<std::string> ldd_libraries(const std::string& file);

struct InitramfsInput {
    std::string busybox;                // the guest's shell and tools
    std::vector<std::string> binaries;  // hotline, ip, scenario tools: to /bin
    std::string init_body;              // guest-init.sh
    std::string env;                    // /hlvm/env
    std::string tests_dir;              // the plan and its scripts: /hlvm/tests
    std::string modules_dir;            // *.ko: /hlvm/modules
};

Status build_initramfs(const InitramfsInput& in, const std::string& out);

}  // namespace hotline::vm
