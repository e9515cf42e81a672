// Shared by the journal and its run locks (src/fix/).
#pragma once

#include <string>

#include "hotline/base/result.hpp"

namespace hotline {

// The journal directory holds files that root writes and later trusts: it must
// belong to this user, be no symlink, and be writable by nobody else.  A
// missing one is created 0700; an existing one is checked, never chmodded.
Status ensure_private_dir(std::string dir);

}  // namespace hotline
