// SPDX-License-Identifier: Apache-2.0
#include "files.hpp"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace testlib {

namespace fs = std::filesystem;

std::optional<std::string> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string slurp(const std::string& path) { return read_file(path).value_or(""); }

std::size_t count(const std::string& s, const std::string& what) {
    std::size_t n = 0;
    for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size())) ++n;
    return n;
}

TempDir::TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "hotline-test-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
}

TempDir::~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
}

void TempDir::write(const std::string& rel, const std::string& content) const {
    fs::path p = *this / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << content;
}

bool TempDir::exists(const std::string& rel) const { return fs::exists(*this / rel); }

}  // namespace testlib
