// SPDX-License-Identifier: Apache-2.0
// `hotline serve --check-config` and `--strict`: bad files are refused naming the
// line, a target that cannot attach fails --strict and is left out otherwise.
#include <gtest/gtest.h>

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <string>
#include <vector>

#include "serve_util.hpp"

using namespace servetest;

TEST(ServeHost, CheckConfigRejectsBadFilesNamingTheLine) {
    std::string dir = make_tempdir();
    struct Bad {
        const char* text;
        int line;
    };
    std::vector<Bad> bad = {
        {"listen = \"127.0.0.1:9464\"\n[probe\n", 2},
        {"# targets\n\ntargets = [\"dst_release\", \"no_such_function\"]\n", 3},
        {"[[target]]\nname = \"queue_work_on\"\nmechanism = \"uprobe\"\n", 3},
        {"[http]\nmax_concurrent = 0\n", 2},
        {"[metrics]\nper_cpu = 1\n", 2},
        {"lissen = \"127.0.0.1:1\"\n", 1},
        {"listen = \"127.0.0.1\"\n", 1},
        {"\n\n\n[tls]\ncert = \"/nonexistent.pem\"\nkey = \"/nonexistent.key\"\n", 5},
    };
    for (std::size_t i = 0; i < bad.size(); ++i) {
        std::string path = fmt::format("{}/bad{}.toml", dir, i);
        std::ofstream(path) << bad[i].text;
        CmdResult r = hosttest::run(fmt::format("{} serve --check-config --config {}", HOTLINE_BIN, path));
        EXPECT_EQ(r.rc, hotline::kExitUsage) << bad[i].text << r.out << r.err;
        EXPECT_NE((r.out + r.err).find(fmt::format("{}:{}:", path, bad[i].line)), std::string::npos)
            << bad[i].text << "\n--- said:\n" << r.out << r.err;
    }
    std::string good = dir + "/good.toml";
    std::ofstream(good) << "targets = [\"queue_work_on\"]\n[metrics]\nper_cpu = true\n";
    CmdResult r = hosttest::run(fmt::format("{} serve --check-config --config {}", HOTLINE_BIN, good));
    EXPECT_EQ(r.rc, 0) << r.out << r.err;
    CmdResult l = hosttest::run(fmt::format("{} serve --check-config --listen nope", HOTLINE_BIN));
    EXPECT_EQ(l.rc, hotline::kExitUsage) << l.out << l.err;
    std::filesystem::remove_all(dir);
}

TEST(ServeHost, StrictFailsWhenATargetCannotAttach) {
    std::string dir = make_tempdir();
    std::string cfg = dir + "/strict.toml";
    // tcp_prequeue left the kernel in 4.14: it never attaches here.
    std::ofstream(cfg) << "targets = [\"queue_work_on\", \"tcp_prequeue\"]\n";
    CmdResult strict = hosttest::run(fmt::format("{} serve --check-config --strict --config {}", HOTLINE_BIN, cfg));
    EXPECT_EQ(strict.rc, 1) << strict.out << strict.err;
    EXPECT_NE((strict.out + strict.err).find("tcp_prequeue"), std::string::npos) << strict.out << strict.err;
    std::string ok = dir + "/ok.toml";
    std::ofstream(ok) << "targets = [\"queue_work_on\"]\n";
    CmdResult fine = hosttest::run(fmt::format("{} serve --check-config --strict --config {}", HOTLINE_BIN, ok));
    EXPECT_EQ(fine.rc, 0) << fine.out << fine.err;

    Daemon lenient("targets = [\"queue_work_on\", \"tcp_prequeue\"]\n");
    ASSERT_TRUE(lenient.up()) << lenient.why_not_up();
    std::string m = body_of(get(lenient.port(), "/metrics"));
    EXPECT_EQ(sample(m, "hotline_probe_attached{target=\"tcp_prequeue\",mechanism=\"unavailable\"}"), 0) << m;
    std::filesystem::remove_all(dir);
}
