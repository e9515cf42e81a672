// SPDX-License-Identifier: Apache-2.0
// Test workload: writes one byte at a time into a pty and waits for it on the other
// side, from CPU 0 and CPU 1 alternately ("alt") or always CPU 0 ("pinned").  Each
// write queues the pty's flush_to_ldisc work item from the writing CPU, so "alt"
// hands that one work item between the CPUs on every write.
#include <fcntl.h>
#include <pty.h>
#include <sched.h>
#include <termios.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
    if (argc != 3 || (std::strcmp(argv[2], "alt") && std::strcmp(argv[2], "pinned"))) {
        std::fprintf(stderr, "usage: %s WRITES alt|pinned\n", argv[0]);
        return 2;
    }
    int n = std::atoi(argv[1]);
    bool alt = std::strcmp(argv[2], "alt") == 0;
    int m, s;
    termios raw{};
    cfmakeraw(&raw);
    if (openpty(&m, &s, nullptr, &raw, nullptr)) {
        std::perror("openpty");
        return 1;
    }
    for (int i = 0; i < n; ++i) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(alt ? i % 2 : 0, &set);
        if (sched_setaffinity(0, sizeof set, &set)) {
            std::perror("sched_setaffinity");
            return 1;
        }
        char c = 'x';
        if (write(m, &c, 1) != 1 || read(s, &c, 1) != 1) {
            std::perror("pty");
            return 1;
        }
    }
    return 0;
}
