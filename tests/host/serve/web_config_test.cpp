// SPDX-License-Identifier: Apache-2.0
// `hotline serve --web.config.file`: the exporter-toolkit YAML that node_exporter
// reads (tls_server_config with relative cert_file/key_file, basic_auth_users with
// bcrypt hashes) gates the real daemon end to end.
#include <crypt.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <string>

#include "serve_util.hpp"

using namespace servetest;

namespace {

// A bcrypt hash as `htpasswd -B` writes it, from libxcrypt; cost 4 (the lowest)
// keeps each check quick in the sanitized daemon.  Empty on failure.
std::string bcrypt(const std::string& password) {
    char salt[CRYPT_GENSALT_OUTPUT_SIZE];
    if (!crypt_gensalt_rn("$2b$", 4, nullptr, 0, salt, sizeof salt)) return "";
    crypt_data data{};
    const char* hash = crypt_r(password.c_str(), salt, &data);
    return hash && hash[0] == '$' ? hash : "";
}

}  // namespace

TEST(ServeHost, WebConfigFileGivesTlsAndBcryptUsers) {
    if (!have("openssl")) GTEST_SKIP() << "openssl not installed";
    std::string dir = make_tempdir();
    CmdResult gen = make_cert(dir);
    ASSERT_EQ(gen.rc, 0) << gen.out << gen.err;
    std::string prom = bcrypt("secret"), ops = bcrypt("other");
    ASSERT_EQ(prom.size(), 60u) << "libxcrypt made no bcrypt hash: \"" << prom << "\"";
    ASSERT_EQ(ops.size(), 60u);
    std::string web = dir + "/web.yml";
    std::ofstream(web) << fmt::format(
        "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"
        "basic_auth_users:\n  prom: '{}'\n  ops: '{}'\n",
        prom, ops);
    Daemon d(kQueueWorkConfig, {"--web.config.file", web});
    ASSERT_TRUE(d.up()) << d.why_not_up();
    EXPECT_NE(d.log().find(fmt::format("listening on https://127.0.0.1:{}/metrics", d.port())), std::string::npos)
        << d.log();

    TlsScrape good = tls_get(d.port(), "/metrics", "prom", "secret");
    ASSERT_EQ(good.status, 200) << good.error << good.body;
    EXPECT_EQ(good.content_type, "text/plain; version=0.0.4; charset=utf-8");
    EXPECT_NE(good.body.find("# TYPE hotline_calls_total counter"), std::string::npos) << good.body;
    EXPECT_NE(good.body.find("hotline_probe_attached{target=\"queue_work_on\""), std::string::npos) << good.body;
    EXPECT_EQ(tls_get(d.port(), "/metrics", "ops", "other").status, 200) << "every user in the file is let in";

    EXPECT_EQ(tls_get(d.port(), "/metrics", "prom", "wrong").status, 401) << "wrong password";
    EXPECT_EQ(tls_get(d.port(), "/metrics", "prom", "other").status, 401) << "another user's password";
    EXPECT_EQ(tls_get(d.port(), "/metrics", "nobody", "secret").status, 401) << "a user not in the file";
    EXPECT_EQ(tls_get(d.port(), "/metrics", "", "").status, 401) << "no credentials";
    std::string plain = get(d.port(), "/metrics");
    EXPECT_EQ(status_of(plain), -1) << "plain HTTP at the TLS port got an HTTP answer: " << plain.substr(0, 200);

    TlsScrape m = tls_get(d.port(), "/metrics");
    ASSERT_EQ(m.status, 200) << "serving goes on: " << m.error;
    EXPECT_EQ(sample(m.body, "hotline_http_rejected_total{reason=\"auth\"}"), 4) << m.body;
    EXPECT_GE(sample(m.body, "hotline_http_rejected_total{reason=\"tls_handshake\"}"), 1) << m.body;
    std::filesystem::remove_all(dir);
}
