// SPDX-License-Identifier: Apache-2.0
// libbpf's messages: captured per thread while a LibbpfCapture is alive (for
// error messages with the verifier log), otherwise dropped unless
// HOTLINE_LIBBPF_DEBUG is set.
#include <bpf/libbpf.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "hotline/probe/bpf_skeleton.hpp"

namespace hotline {

namespace {
thread_local LibbpfCapture* g_capture = nullptr;

int libbpf_print(enum libbpf_print_level level, const char* fmt, va_list ap) {
    if (g_capture) {
        // Verifier logs arrive as one message of many kilobytes: format it whole.
        va_list cp;
        va_copy(cp, ap);
        char* buf = nullptr;
        if (vasprintf(&buf, fmt, cp) >= 0 && buf) {
            g_capture->append(buf);
            free(buf);
        }
        va_end(cp);
        return 0;
    }
    if (level == LIBBPF_DEBUG || !std::getenv("HOTLINE_LIBBPF_DEBUG")) return 0;
    return vfprintf(stderr, fmt, ap);
}
}  // namespace

void install_libbpf_logger() {
    static bool done = false;
    if (!done) {
        libbpf_set_print(libbpf_print);
        done = true;
    }
}

LibbpfCapture::LibbpfCapture() : prev_(g_capture) {
    install_libbpf_logger();
    g_capture = this;
}
LibbpfCapture::~LibbpfCapture() { g_capture = prev_; }

std::string LibbpfCapture::tail(int n) const {
    std::size_t pos = text_.size();
    while (pos > 0 && (text_[pos - 1] == '\n')) --pos;
    int lines = 0;
    std::size_t i = pos;
    while (i > 0) {
        if (text_[i - 1] == '\n' && ++lines == n) break;
        --i;
    }
    return text_.substr(i, pos - i);
}

}  // namespace hotline
