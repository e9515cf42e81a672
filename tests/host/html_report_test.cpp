// SPDX-License-Identifier: Apache-2.0
// Every HTML report kind rendered by headless Chromium: the DOM holds the
// expected charts and marks, the page asks the network for nothing (every
// request would go through a counting proxy), and the screenshot is not blank.
// Also the terminal side: verdict colours through a pseudo-terminal, never with
// NO_COLOR or into a pipe.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pty.h>
#include <sys/socket.h>
#include <zlib.h>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <vector>
#include <gtest/gtest.h>
#include <thread>

#include "host_util.hpp"

using namespace hosttest;

namespace {

const std::string kGolden = std::string(HOTLINE_FIXTURES) + "/golden/";

// A TCP listener standing in as Chromium's proxy: every connection is a request
// the page (or the browser) tried to make.
class CountingProxy {
public:
    CountingProxy() {
        fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        if (bind(fd_, reinterpret_cast<sockaddr*>(&a), len) || listen(fd_, 16) ||
            getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len))
            ADD_FAILURE() << "proxy listener";
        port_ = ntohs(a.sin_port);
        thread_ = std::thread([this] { accept_loop(); });
    }
    ~CountingProxy() {
        stop_ = true;
        thread_.join();
        close(fd_);
    }
    int port() const { return port_; }
    // Requests other than Chromium's own (its component updater, clock and
    // sign-in services, which it contacts even for about:blank whatever the flags).
    std::vector<std::string> page_requests() const {
        settle();
        static const std::vector<std::string> kChromiumOwn = {"clients2.google.com", "update.googleapis.com",
                                                              "accounts.google.com", "redirector.gvt1.com",
                                                              "optimizationguide-pa.googleapis.com"};
        std::lock_guard<std::mutex> g(mu_);
        std::vector<std::string> out;
        for (auto& r : requests_) {
            bool own = false;
            for (auto& h : kChromiumOwn) own = own || r.find(" " + h + ":") != std::string::npos ||
                                               r.find("://" + h + "/") != std::string::npos;
            if (!own) out.push_back(r);
        }
        return out;
    }

private:
    bool pending() const {
        pollfd p{fd_, POLLIN, 0};
        return poll(&p, 1, 0) > 0;
    }
    // Until every connection made so far is read: one still in the listen queue
    // when the requests are taken would be a request missed.
    void settle() const {
        for (int i = 0; i < 600 && (busy_ || pending()); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    void accept_loop() {
        while (!stop_) {
            pollfd p{fd_, POLLIN, 0};
            if (poll(&p, 1, 50) <= 0) continue;
            busy_ = true;
            int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (c >= 0) {
                record(request_line(c));
                close(c);
            }
            busy_ = false;
        }
    }
    void record(const std::string& line) {
        // Chromium opens spare connections to its proxy and closes them unused
        // when it exits: a connection that ends without a byte asked for nothing.
        if (line.empty()) return;
        std::lock_guard<std::mutex> g(mu_);
        requests_.push_back(line);
    }
    // The request line says what was asked for ("CONNECT host:443", "GET
    // http://host/..."). Read until it ends or the peer closes; a connection that
    // stays open and silent for 10 s is reported, as it may be a request held back.
    static std::string request_line(int c) {
        std::string got;
        char buf[512];
        for (int waited_ms = 0; waited_ms < 10000 && got.find('\n') == std::string::npos; waited_ms += 50) {
            pollfd q{c, POLLIN, 0};
            if (poll(&q, 1, 50) <= 0) continue;
            ssize_t n = read(c, buf, sizeof buf);
            if (n <= 0) return got.substr(0, got.find('\r'));
            got.append(buf, std::size_t(n));
        }
        if (got.empty()) return "(a connection that sent nothing for 10 s)";
        return got.substr(0, got.find_first_of("\r\n"));
    }
    int fd_ = -1;
    int port_ = 0;
    std::atomic<bool> stop_{false};
    std::atomic<bool> busy_{false};  // between a pending connection's accept and its record
    mutable std::mutex mu_;
    std::vector<std::string> requests_;
    std::thread thread_;
};

// Chromium with every request routed to the proxy, loopback included, and its
// own background traffic (updates, sync, first-run) switched off.
std::string chromium(const CountingProxy& proxy, const std::string& args) {
    std::string profile = temp_path("chromium-profile");
    return fmt::format("chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run "
                       "--disable-background-networking --disable-component-update --disable-default-apps "
                       "--disable-sync --disable-breakpad --user-data-dir={} --proxy-server=http://127.0.0.1:{} "
                       "--proxy-bypass-list='<-loopback>' {}",
                       profile, proxy.port(), args);
}

std::size_t count(const std::string& s, const std::string& what) {
    std::size_t n = 0;
    for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size())) ++n;
    return n;
}

std::size_t marks_in(const std::string& dom, const std::string& kind) {
    std::size_t n = 0, at = 0;
    while ((at = dom.find("data-chart=\"" + kind + "\"", at)) != std::string::npos) {
        std::size_t end = dom.find("</figure>", at);
        n += count(dom.substr(at, end - at), "class=\"mark");
        at = end;
    }
    return n;
}

std::uint32_t be32(const unsigned char* p) { return std::uint32_t(p[0]) << 24 | p[1] << 16 | p[2] << 8 | p[3]; }

int paeth(int a, int b, int c) {
    int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

// The share of pixels that are not white in an 8-bit RGB(A) PNG (Chromium's
// screenshots), or -1 when the file is not one.
double ink_share(const std::string& png) {
    auto* d = reinterpret_cast<const unsigned char*>(png.data());
    if (png.size() < 33 || png.compare(1, 3, "PNG") != 0) return -1;
    std::uint32_t w = be32(d + 16), h = be32(d + 20);
    int bpp = d[25] == 6 ? 4 : d[25] == 2 ? 3 : 0;
    if (d[24] != 8 || !bpp || d[28] != 0) return -1;  // 8-bit, RGB(A), not interlaced
    std::string idat;
    for (std::size_t at = 8; at + 12 <= png.size();) {
        std::uint32_t len = be32(d + at);
        if (png.compare(at + 4, 4, "IDAT") == 0) idat.append(png, at + 8, len);
        at += 12 + len;
    }
    std::size_t stride = std::size_t(w) * bpp;
    std::vector<unsigned char> raw((stride + 1) * h);
    uLongf out = raw.size();
    if (uncompress(raw.data(), &out, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) != Z_OK) return -1;
    std::vector<unsigned char> prev(stride, 0), cur(stride);
    std::size_t ink = 0;
    for (std::uint32_t y = 0; y < h; ++y) {
        const unsigned char* line = raw.data() + y * (stride + 1);
        for (std::size_t i = 0; i < stride; ++i) {
            int a = i >= std::size_t(bpp) ? cur[i - bpp] : 0, b = prev[i], c = i >= std::size_t(bpp) ? prev[i - bpp] : 0;
            int pred = line[0] == 1 ? a : line[0] == 2 ? b : line[0] == 3 ? (a + b) / 2 : line[0] == 4 ? paeth(a, b, c) : 0;
            cur[i] = static_cast<unsigned char>(line[1 + i] + pred);
        }
        for (std::size_t x = 0; x < w; ++x)
            if (cur[x * bpp] < 240 || cur[x * bpp + 1] < 240 || cur[x * bpp + 2] < 240) ++ink;
        prev.swap(cur);
    }
    return double(ink) / (double(w) * h);
}

struct Rendered {
    std::string dom;
    double ink = -1;
    std::vector<std::string> requests;
};

Rendered render_in_chromium(const std::string& html) {
    CountingProxy proxy;
    Rendered r;
    std::string url = "file://" + html;
    auto dom = run(chromium(proxy, "--dump-dom " + url));
    EXPECT_EQ(dom.rc, 0) << dom.err;
    r.dom = dom.out;
    std::string png = temp_path("shot.png");
    auto shot = run(chromium(proxy, fmt::format("--window-size=1100,1400 --screenshot={} {}", png, url)));
    EXPECT_EQ(shot.rc, 0) << shot.err;
    r.ink = ink_share(slurp(png));
    unlink(png.c_str());
    r.requests = proxy.page_requests();
    run("rm -rf " + temp_path("chromium-profile"));
    return r;
}

void expect_page_basics(const Rendered& r) {
    EXPECT_TRUE(r.requests.empty()) << "the page asked the network for " << r.requests.front();
    EXPECT_GT(r.ink, 0.02) << "screenshot is blank";
    EXPECT_LT(r.ink, 0.9);
    // No URL in the page but the SVG namespace name (an identifier, never fetched).
    std::string dom = r.dom;
    for (std::size_t at; (at = dom.find("http://www.w3.org/2000/svg")) != std::string::npos;) dom.erase(at, 26);
    EXPECT_EQ(dom.find("http://"), std::string::npos) << "no external URL in the page";
    EXPECT_EQ(dom.find("https://"), std::string::npos);
    EXPECT_EQ(dom.find("url("), std::string::npos);
    EXPECT_EQ(count(r.dom, "<desc>"), count(r.dom, "<figure")) << "a text alternative per chart";
}

}  // namespace

TEST(HtmlInChromium, Recording) {
    std::string html = temp_path("recording.html");
    auto r = run(hosttest::hotline() + " report " + kGolden + "recording.json -o " + html);
    ASSERT_EQ(r.rc, 0) << r.err;
    Rendered page = render_in_chromium(html);
    expect_page_basics(page);
    EXPECT_EQ(count(page.dom, "data-chart=\"heatmap\""), 2u);
    EXPECT_EQ(marks_in(page.dom, "heatmap"), 8u);
    EXPECT_EQ(marks_in(page.dom, "cacheline"), 5u);
    EXPECT_EQ(marks_in(page.dom, "histogram"), 6u);
    EXPECT_EQ(marks_in(page.dom, "bars"), 8u);
    EXPECT_EQ(count(page.dom, "data-chart=\"line\""), 6u);
    unlink(html.c_str());
}

TEST(HtmlInChromium, Verdict) {
    std::string html = temp_path("verdict.html");
    auto r = run(hosttest::hotline() + " report " + kGolden + "verdict_mixed.json -o " + html);
    ASSERT_EQ(r.rc, 0) << r.err;
    Rendered page = render_in_chromium(html);
    expect_page_basics(page);
    EXPECT_EQ(count(page.dom, "data-chart=\"criterion\""), 7u);
    // Trials per criterion with its metric measured (verdict_mixed.json): 12, 12, 12, 12, 0, 12, 12.
    EXPECT_EQ(marks_in(page.dom, "criterion"), 72u);
    EXPECT_NE(page.dom.find("class=\"reproduce\""), std::string::npos);
    unlink(html.c_str());
}

TEST(HtmlInChromium, DiagnosisListsFindingsWithTheirConfirmingCommands) {
    // A real 6.1-guest recording with cross-node churn (tests/fixtures/diagnose/README.md): two findings.
    std::string html = temp_path("diagnosis.html");
    auto r = run(fmt::format("{} diagnose {}/diagnose/guest-6.1-churn-split.json --html {}", hosttest::hotline(),
                             HOTLINE_FIXTURES, html));
    ASSERT_EQ(r.rc, 0) << r.err;
    Rendered page = render_in_chromium(html);
    expect_page_basics(page);
    EXPECT_EQ(count(page.dom, "class=\"finding\""), 2u);
    EXPECT_NE(page.dom.find("numa-local: hotline validate --fix numa-local"), std::string::npos);
    EXPECT_NE(page.dom.find("dst-refcnt-false-sharing: hotline ab --fix dst-refcnt-false-sharing"), std::string::npos);
    unlink(html.c_str());
}

TEST(HtmlInChromium, DiffShowsBothLayouts) {
    // Real recordings of the 6.1 and 6.12 guests (tests/fixtures/html/README.md).
    std::string html = temp_path("diff.html");
    auto r = run(fmt::format("cd {}/html && {} diff tcp-crr-6.1.json tcp-crr-6.12.json --expect dst-refcnt-false-sharing "
                             "--html {}",
                             HOTLINE_FIXTURES, hosttest::hotline(), html));
    ASSERT_EQ(r.rc, 0) << r.err << r.out;
    Rendered page = render_in_chromium(html);
    expect_page_basics(page);
    EXPECT_EQ(count(page.dom, "layout-pair"), 1u);
    EXPECT_EQ(count(page.dom, "data-chart=\"cacheline\""), 2u);
    // Fields with bytes on the refcount's line: 14 on 6.1, 9 on 6.12 (zero-sized markers not drawn).
    EXPECT_EQ(marks_in(page.dom, "cacheline"), 14u + 9u);
    EXPECT_EQ(count(page.dom, "class=\"mark anchor\""), 2u);
    EXPECT_EQ(count(page.dom, "data-chart=\"criterion\""), 5u);
    unlink(html.c_str());
}

TEST(HtmlInChromium, LiveRecording) {
    std::string html = temp_path("live.html");
    auto r = run(hosttest::hotline() + " record -d 2s -i 1s --workload churn --quiet --html " + html);
    ASSERT_EQ(r.rc, 0) << r.err;
    Rendered page = render_in_chromium(html);
    expect_page_basics(page);
    EXPECT_GE(count(page.dom, "data-chart=\"line\""), 1u);
    EXPECT_GE(marks_in(page.dom, "line"), 1u) << "calls were counted and drawn";
    unlink(html.c_str());
}

namespace {

// Runs `cmd` with its stdout on a pseudo-terminal; returns what it printed.
std::string run_on_pty(const std::string& cmd) {
    int master = -1;
    pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = read(master, buf, sizeof buf)) > 0) out.append(buf, std::size_t(n));
    int st = 0;
    waitpid(pid, &st, 0);
    close(master);
    return out;
}

}  // namespace

TEST(TerminalColour, VerdictsInColourOnlyOnATerminalWithoutNoColor) {
    std::string diff = fmt::format("cd {} && env -u NO_COLOR {} diff diff_baseline.json diff_candidate.json --expect "
                                   "dst-refcnt-false-sharing",
                                   kGolden, hosttest::hotline());
    std::string tty = run_on_pty(diff);
    EXPECT_NE(tty.find("\x1b[32mPASS"), std::string::npos) << tty;
    std::string no_color = run_on_pty(fmt::format("cd {} && NO_COLOR=1 {} diff diff_baseline.json diff_candidate.json "
                                                  "--expect dst-refcnt-false-sharing",
                                                  kGolden, hosttest::hotline()));
    EXPECT_NE(no_color.find("PASS"), std::string::npos);
    EXPECT_EQ(no_color.find('\x1b'), std::string::npos) << no_color;
    auto piped = run(diff + " | cat");
    EXPECT_NE(piped.out.find("PASS"), std::string::npos);
    EXPECT_EQ(piped.out.find('\x1b'), std::string::npos);
}
