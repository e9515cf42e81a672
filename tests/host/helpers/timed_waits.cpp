// SPDX-License-Identifier: Apache-2.0
// Test workload: COUNT semtimedop(2) waits on a private SysV semaphore nobody
// posts, each with a timeout of MICROSECONDS, pinned to CPU; each call timed
// from user space with CLOCK_MONOTONIC (the clock of BPF's bpf_ktime_get_ns).
// Writes {"count", "timeout_ns", "outside_sum_ns", "outside_max_ns"} to OUT.
// The kernel never ends such a wait before its timeout, and a call's time inside
// the kernel lies within the pair of clock reads around it, so per call:
// timeout <= time in the kernel <= time measured here.  Few programs use SysV
// semaphores with timeouts, so the kernel's semtimedop path is this program's.
#include <sched.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <time.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

long long now_ns() {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 5) {
        std::fprintf(stderr, "usage: %s COUNT MICROSECONDS CPU OUT\n", argv[0]);
        return 2;
    }
    int count = std::atoi(argv[1]);
    long us = std::atol(argv[2]);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(std::atoi(argv[3]), &set);
    if (sched_setaffinity(0, sizeof set, &set)) {
        std::perror("sched_setaffinity");
        return 1;
    }
    int sem = semget(IPC_PRIVATE, 1, 0600);
    if (sem < 0) {
        std::perror("semget");
        return 1;
    }
    long long sum = 0, max = 0;
    int rc = 0;
    for (int i = 0; i < count && rc == 0; ++i) {
        sembuf take{0, -1, 0};  // the value stays 0: every wait times out
        timespec timeout{us / 1000000, (us % 1000000) * 1000};
        long long t0 = now_ns();
        int r = semtimedop(sem, &take, 1, &timeout);
        long long t = now_ns() - t0;
        if (r == 0 || errno != EAGAIN) {
            std::fprintf(stderr, "semtimedop: %s\n", r == 0 ? "took a semaphore nobody posted" : std::strerror(errno));
            rc = 1;
        }
        sum += t;
        max = t > max ? t : max;
    }
    semctl(sem, 0, IPC_RMID);
    FILE* out = std::fopen(argv[4], "w");
    if (!out) {
        std::perror(argv[4]);
        return 1;
    }
    std::fprintf(out, "{\"count\": %d, \"timeout_ns\": %lld, \"outside_sum_ns\": %lld, \"outside_max_ns\": %lld}\n",
                 count, us * 1000LL, sum, max);
    std::fclose(out);
    return rc;
}
