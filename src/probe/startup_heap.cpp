// SPDX-License-Identifier: Apache-2.0
#include "startup_heap.hpp"

#include <malloc.h>

namespace hotline {

StartupHeap::StartupHeap() {
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
}

StartupHeap::~StartupHeap() {
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
    mallopt(M_TRIM_THRESHOLD, 2 << 20);
    malloc_trim(0);
}

}  // namespace hotline
