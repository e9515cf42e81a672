// SPDX-License-Identifier: Apache-2.0
// Strict TOML reading for every configuration file hotline takes (the fix
// catalog, the daemon's configuration): the document as plain values that keep
// their line, and one error list in one format, "SOURCE:LINE: message", with
// every error collected and reported in file order.  toml++ stays behind this
// header: only this layer links it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hotline/base/result.hpp"

namespace hotline {

struct TomlMember;

struct TomlValue {
    enum class Kind { kString, kInteger, kFloat, kBoolean, kArray, kTable, kOther };
    Kind kind = Kind::kTable;
    int line = 0;
    std::string string;
    std::int64_t integer = 0;
    double floating = 0;
    bool boolean = false;
    std::vector<TomlValue> items;     // kArray
    std::vector<TomlMember> members;  // kTable, in key order

    bool is_table() const { return kind == Kind::kTable; }
    bool is_array() const { return kind == Kind::kArray; }
    bool is_array_of_tables() const;  // [[name]] tables (an empty array is not)
    const TomlValue* get(std::string_view key) const;
    bool contains(std::string_view key) const { return get(key) != nullptr; }
};

struct TomlMember {
    std::string key;
    int line = 0;  // of the key
    TomlValue value;
};

// A syntax error is "SOURCE:LINE: what toml++ says", hinting that the file is not TOML.
Result<TomlValue> parse_toml(std::string_view text, const std::string& source);

// The errors found in one file.  The typed readers report a value of the wrong
// type or range (naming it as `name`) and return nullopt.
class TomlErrors {
public:
    explicit TomlErrors(std::string source) : source_(std::move(source)) {}
    std::string where(int line) const;  // "SOURCE:LINE"
    void add(int line, std::string_view message, std::string_view hint = {});
    bool ok() const { return errors_.empty(); }
    std::size_t count() const { return errors_.size(); }
    Error error() const;  // every error, one a line, in file order (no errno: the file is wrong, not the system)

    std::optional<std::string> string(const TomlValue& v, std::string_view name);
    std::optional<bool> boolean(const TomlValue& v, std::string_view name);
    std::optional<std::int64_t> integer(const TomlValue& v, std::string_view name, std::int64_t lo,
                                        std::int64_t hi);
    // Reports every key of table `t` that is not in `known`; false when there was one.
    bool only_keys(const TomlValue& t, std::initializer_list<std::string_view> known, std::string_view what);

private:
    std::string source_;
    std::vector<std::pair<int, std::string>> errors_;
};

}  // namespace hotline
