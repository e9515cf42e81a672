// SPDX-License-Identifier: Apache-2.0
// A real Prometheus (own config, data dir and free port) scrapes `hotline serve`
// while we queue work; its query API must then show a positive rate.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <string>

#include "serve_util.hpp"

using namespace servetest;

namespace {

// A Prometheus scraping 127.0.0.1:target_port once a second; stopped and its data
// removed however the test ends (an ASSERT returns early).
class Prometheus {
public:
    explicit Prometheus(int target_port) : dir_(make_tempdir()) {
        std::ofstream(dir_ + "/prometheus.yml") << fmt::format(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
            "scrape_configs:\n  - job_name: hotline\n    static_configs:\n      - targets: ['127.0.0.1:{}']\n",
            target_port);
    }
    ~Prometheus() {
        stop();
        std::filesystem::remove_all(dir_);
    }
    // Prometheus cannot listen on port 0 and say where: a free port is picked and,
    // when another process took it first (Prometheus then exits), another.  True once
    // /-/ready answers 200.
    bool start() {
        for (int attempt = 0; attempt < 5; ++attempt) {
            stop();
            port_ = free_port();
            pid_ = spawn({"/usr/bin/prometheus", "--config.file=" + dir_ + "/prometheus.yml",
                          "--storage.tsdb.path=" + dir_ + "/data",
                          fmt::format("--web.listen-address=127.0.0.1:{}", port_), "--log.level=warn"},
                         dir_ + "/prometheus.log");
            if (pid_ <= 0) return false;
            httplib::Client probe("127.0.0.1", port_);
            probe.set_connection_timeout(2);
            bool exited = false;
            bool ready = wait_until(
                [&] {
                    auto r = probe.Get("/-/ready");
                    if (r && r->status == 200) return true;
                    exited = waitpid(pid_, nullptr, WNOHANG) == pid_;
                    return exited;
                },
                std::chrono::seconds(30), std::chrono::milliseconds(100));
            if (ready && !exited) return true;
            if (!exited) return false;  // alive but never ready: give up
            pid_ = -1;                  // exited: the port was taken
        }
        return false;
    }
    int port() const { return port_; }
    std::string log() const { return hosttest::slurp(dir_ + "/prometheus.log"); }

private:
    void stop() {
        if (pid_ <= 0) return;
        kill(pid_, SIGTERM);
        if (wait_exit(pid_, 20) < 0) {
            kill(pid_, SIGKILL);
            wait_exit(pid_, 5);
        }
        pid_ = -1;
    }
    std::string dir_;
    pid_t pid_ = -1;
    int port_ = 0;
};

}  // namespace

TEST(ServeHost, PrometheusScrapesAPositiveRate) {
    if (!have("prometheus")) GTEST_SKIP() << "prometheus not installed (Debian package prometheus)";
    Daemon d("targets = [\"queue_work_on\"]\n");
    ASSERT_TRUE(d.up()) << d.why_not_up();
    Prometheus prom(d.port());
    ASSERT_TRUE(prom.start()) << prom.log();
    httplib::Client api("127.0.0.1", prom.port());
    api.set_connection_timeout(2);
    api.set_read_timeout(10);
    auto query = [&](const std::string& q) {
        auto r = api.Get("/api/v1/query", httplib::Params{{"query", q}}, httplib::Headers{});
        if (!r || r->status != 200) return nlohmann::json();
        return nlohmann::json::parse(r->body, nullptr, false);
    };
    auto targets_state = [&] {
        auto t = api.Get("/api/v1/targets");
        return t ? t->body : std::string("(no answer)");
    };
    // Our own work items while Prometheus scrapes once a second, until the rate
    // shows (two scrapes within its window) or 60 s pass.
    const std::string kRate = "sum(rate(hotline_calls_total{target=\"queue_work_on\"}[20s]))";
    auto start = Clock::now();
    double v = 0;
    nlohmann::json rate;
    wait_until(
        [&] {
            stat_refresh(5);
            rate = query(kRate);
            if (rate.is_discarded() || rate.value("status", "") != "success" || rate["data"]["result"].empty())
                return false;
            v = std::stod(rate["data"]["result"][0]["value"][1].get<std::string>());
            return v > 0;
        },
        std::chrono::seconds(60), std::chrono::milliseconds(50));
    std::printf("Prometheus: %s = %.1f/s after %.0f s\n", kRate.c_str(), v,
                std::chrono::duration<double>(Clock::now() - start).count());
    EXPECT_GT(v, 0) << rate.dump() << "\ntargets: " << targets_state() << "\nprometheus log:\n"
                    << prom.log() << "\nserve log:\n" << d.log();
    auto up = query("up{job=\"hotline\"}");
    ASSERT_FALSE(up["data"]["result"].empty()) << up.dump();
    EXPECT_EQ(up["data"]["result"][0]["value"][1], "1");
    auto scrapes = query("count_over_time(up{job=\"hotline\"}[30s])");
    ASSERT_FALSE(scrapes["data"]["result"].empty());
    std::printf("Prometheus scraped %s times\n", scrapes["data"]["result"][0]["value"][1].get<std::string>().c_str());
    auto targets = api.Get("/api/v1/targets");
    ASSERT_TRUE(targets);
    auto tj = nlohmann::json::parse(targets->body, nullptr, false);
    ASSERT_FALSE(tj["data"]["activeTargets"].empty());
    EXPECT_EQ(tj["data"]["activeTargets"][0]["health"], "up") << tj.dump(2);
    EXPECT_EQ(tj["data"]["activeTargets"][0]["lastError"], "") << tj.dump(2);
}
