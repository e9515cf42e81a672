// SPDX-License-Identifier: Apache-2.0
// Files for the tests of every tier: whole-file reads and a temporary
// directory removed at scope exit.  Reads only what the test names, so it
// depends on no hotline layer.
#pragma once

#include <optional>
#include <string>

namespace testlib {

// The file's bytes; "" when it cannot be read.
std::string slurp(const std::string& path);
// The file's bytes; nullopt when it cannot be opened, for callers that tell a
// missing file from an empty one.
std::optional<std::string> read_file(const std::string& path);

// How many times WHAT occurs in S (non-overlapping).
std::size_t count(const std::string& s, const std::string& what);

// A fresh directory under the temporary directory, removed with everything in
// it when the object goes.
class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::string& path() const { return path_; }
    std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

    // Writes REL (its parent directories created) with CONTENT.
    void write(const std::string& rel, const std::string& content) const;
    void touch(const std::string& rel) const { write(rel, "x"); }
    std::string read(const std::string& rel) const { return slurp(*this / rel); }
    bool exists(const std::string& rel) const;

private:
    std::string path_;
};

}  // namespace testlib
