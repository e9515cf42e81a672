// Test helpers for the fix tests: a temporary fixture tree and fake kernel facts.
#pragma once

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "hotline/fix.hpp"

namespace hotline::test {

class TempDir {
public:
    TempDir() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "hotline-test-XXXXXX").string();
        if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
        path_ = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    const std::string& path() const { return path_; }
    std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

    void write(const std::string& rel, const std::string& content) const {
        std::filesystem::path p = path_ + "/" + rel;
        std::filesystem::create_directories(p.parent_path());
        std::ofstream(p) << content;
    }
    std::string read(const std::string& rel) const {
        std::ifstream in(path_ + "/" + rel);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }
    bool exists(const std::string& rel) const { return std::filesystem::exists(path_ + "/" + rel); }

private:
    std::string path_;
};

class FakeFacts : public KernelFacts {
public:
    std::set<std::string> knobs, functions, fields;  // fields as "type.member"
    std::map<std::string, std::string> field_types;
    int nodes = 1;

    bool knob_exists(const std::string& s) const override { return knobs.count(s) != 0; }
    std::optional<bool> has_function(const std::string& n) const override { return functions.count(n) != 0; }
    std::optional<bool> has_field(const std::string& t, const std::string& m) const override {
        return fields.count(t + "." + m) != 0;
    }
    std::optional<std::string> field_type(const std::string& t, const std::string& m) const override {
        auto it = field_types.find(t + "." + m);
        if (it == field_types.end()) return std::nullopt;
        return it->second;
    }
    int numa_nodes() const override { return nodes; }
};

}  // namespace hotline::test
