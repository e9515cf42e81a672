// SPDX-License-Identifier: Apache-2.0
// Errors as values: what failed, the errno, and what the user can do about it.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace hotline {

struct Error {
    int err = 0;         // positive errno, 0 when not a system error
    std::string what;    // what failed, e.g. "fentry: load of dst_release"
    std::string hint;    // what to do about it, may be empty
    std::string detail;  // extra text such as the verifier log tail

    std::string message() const;
};

Error make_error(std::string what, int err = 0, std::string hint = {});

template <class T>
class [[nodiscard]] Result {
public:
    Result(T value) : v_(std::move(value)) {}
    Result(Error e) : v_(std::move(e)) {}

    bool ok() const { return v_.index() == 0; }
    explicit operator bool() const { return ok(); }
    T& value() & { return std::get<0>(v_); }
    const T& value() const& { return std::get<0>(v_); }
    T&& value() && { return std::get<0>(std::move(v_)); }
    T* operator->() { return &std::get<0>(v_); }
    const T* operator->() const { return &std::get<0>(v_); }
    T& operator*() { return std::get<0>(v_); }
    const Error& error() const { return std::get<1>(v_); }

private:
    std::variant<T, Error> v_;
};

struct Ok {};
using Status = Result<Ok>;
inline Status ok_status() { return Ok{}; }

}  // namespace hotline
