// SPDX-License-Identifier: Apache-2.0
// Shared by the journal and its run locks (src/fix/).
#pragma once

#include <string>

#include "hotline/base/result.hpp"

namespace hotline {

// The journal directory holds files that root writes and later trusts: it must
// belong to this user, be no symlink, and be writable by nobody else.  A
// missing one is created 0700; an existing one is checked, never chmodded.
Status ensure_private_dir(std::string dir);
// The same checks on an existing directory, creating nothing.
Status check_private_dir(std::string dir);
// A lock file that exists must be this user's regular file (no link); a
// missing one is fine.  Nothing is created.
Status check_lock_file(const std::string& path);

}  // namespace hotline
