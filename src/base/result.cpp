// SPDX-License-Identifier: Apache-2.0
// Error formatting shared by every front end.
#include "hotline/base/result.hpp"

#include <cstring>

namespace hotline {

std::string Error::message() const {
    std::string m = what;
    if (err) {
        m += ": ";
        m += strerrorname_np(err) ? strerrorname_np(err) : "errno";
        m += " (";
        m += std::strerror(err);
        m += ")";
    }
    if (!hint.empty()) {
        m += "; ";
        m += hint;
    }
    if (!detail.empty()) {
        m += "\n";
        m += detail;
    }
    return m;
}

Error make_error(std::string what, int err, std::string hint) {
    Error e;
    e.what = std::move(what);
    e.err = err < 0 ? -err : err;
    e.hint = std::move(hint);
    return e;
}

}  // namespace hotline
