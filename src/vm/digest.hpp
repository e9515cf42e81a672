// SPDX-License-Identifier: Apache-2.0
// SHA-256 of files (OpenSSL EVP): the host binaries' proof, the kernel cache's
// digests and its content keys.
#pragma once

#include <string>

#include "hotline/base/result.hpp"

namespace hotline::vm {

// Lower-case hex digest of the file at PATH.
Result<std::string> sha256_file(const std::string& path);

}  // namespace hotline::vm
