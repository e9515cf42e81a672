// SPDX-License-Identifier: Apache-2.0
// `hotline serve` configuration: defaults, a full file, errors that name their
// line (FILE:LINE: message), listen addresses, and basic-auth checking.
#include <gtest/gtest.h>

#include <fstream>

#include "serve_config.hpp"

using namespace hotline;

TEST(ServeConfig, EmptyFileMeansDefaults) {
    auto c = parse_serve_config("", "serve.toml");
    ASSERT_TRUE(c.ok()) << c.error().message();
    EXPECT_EQ(c->listen.to_string(), "127.0.0.1:10464");
    EXPECT_TRUE(c->targets.empty());
    EXPECT_FALSE(c->metrics.per_cpu);
    EXPECT_FALSE(c->tls());
    EXPECT_FALSE(c->auth());
    EXPECT_EQ(c->metrics.max_series, 10000u);
    // An always-on exporter attaches its programs a share of the time.
    EXPECT_EQ(c->probe.duty_cycle, daemon::kDefaultDutyPercent);
    EXPECT_LT(daemon::kDefaultDutyPercent, 100);
    auto setup = check_tracing_options(c->probe);
    ASSERT_TRUE(setup) << setup.error().message();
    EXPECT_EQ(setup->session.duty_percent, daemon::kDefaultDutyPercent);
    // Over a longer period than a recording's: each attach and detach waits for every CPU.
    EXPECT_EQ(setup->session.duty_period, daemon::kDefaultDutyPeriod);
    EXPECT_GT(daemon::kDefaultDutyPeriod, SessionOptions{}.duty_period);
}

TEST(ServeConfig, FullFile) {
    std::string cert = testing::TempDir() + "/hl_cert.pem";
    std::string key = testing::TempDir() + "/hl_key.pem";
    std::ofstream(cert) << "x";
    std::ofstream(key) << "x";
    std::string text = R"(
listen = "[::1]:9500"
strict = true
targets = ["dst_release"]

[[target]]
name = "queue_work_on"
mechanism = "tracepoint"

[[target]]
name = "ipv4_dst_check"
mechanism = "auto"

[probe]
latency = false
handoffs = false
sample_freq = 199
handoff_sample = 16
duty_cycle = 100
duty_period = "2.5s"

[metrics]
per_cpu = true
max_series = 500

[http]
max_concurrent = 2
max_queued = 0
max_connections = 32
read_timeout = "250ms"
write_timeout = 3
keep_alive_timeout = "0s"
max_request_bytes = 4096

[tls]
cert = ")" + cert + R"("
key = ")" + key + R"("

[basic_auth]
username = "prom"
password_sha256 = "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b"
)";
    auto c = parse_serve_config(text, "serve.toml");
    ASSERT_TRUE(c.ok()) << c.error().message();
    EXPECT_EQ(c->listen.host, "::1");
    EXPECT_EQ(c->listen.port, 9500);
    EXPECT_TRUE(c->strict);
    ASSERT_EQ(c->targets.size(), 3u);
    EXPECT_EQ(c->targets[0].name, "dst_release");
    EXPECT_FALSE(c->targets[0].mechanism.has_value());
    EXPECT_EQ(c->targets[0].line, 4);
    EXPECT_EQ(c->targets[1].name, "queue_work_on");
    EXPECT_EQ(c->targets[1].mechanism, Mechanism::kTracepoint);
    EXPECT_FALSE(c->targets[2].mechanism.has_value());
    EXPECT_FALSE(c->probe.latency);
    EXPECT_FALSE(c->probe.handoffs);
    EXPECT_EQ(c->probe.sample_freq, 199);
    EXPECT_EQ(c->probe.handoff_sample, 16);
    EXPECT_EQ(c->probe.duty_cycle, 100);
    EXPECT_EQ(c->probe.duty_period, std::chrono::milliseconds(2500));
    EXPECT_TRUE(c->metrics.per_cpu);
    EXPECT_EQ(c->metrics.max_series, 500u);
    EXPECT_EQ(c->http.workers, 2);
    EXPECT_EQ(c->http.queued, 0);
    EXPECT_EQ(c->http.max_connections, 32);
    EXPECT_DOUBLE_EQ(c->http.read_timeout, 0.25);
    EXPECT_DOUBLE_EQ(c->http.write_timeout, 3);
    EXPECT_DOUBLE_EQ(c->http.keep_alive_timeout, 0);
    EXPECT_EQ(c->http.max_request_bytes, 4096u);
    EXPECT_TRUE(c->tls());
    ASSERT_EQ(c->users.size(), 1u);
    EXPECT_EQ(c->users[0].name, "prom");
}

struct BadConfig {
    const char* name;
    const char* text;
    int line;
    const char* says;
};

class ServeConfigErrors : public testing::TestWithParam<BadConfig> {};

TEST_P(ServeConfigErrors, NameTheLine) {
    const auto& b = GetParam();
    auto c = parse_serve_config(b.text, "bad.toml");
    ASSERT_FALSE(c.ok()) << b.name;
    std::string msg = c.error().message();
    EXPECT_NE(msg.find("bad.toml:" + std::to_string(b.line) + ":"), std::string::npos) << msg;
    EXPECT_NE(msg.find(b.says), std::string::npos) << msg;
}

INSTANTIATE_TEST_SUITE_P(
    Table, ServeConfigErrors,
    testing::Values(
        BadConfig{"syntax", "listen = \"127.0.0.1:9464\"\n[probe\nlatency = true\n", 2, "not valid TOML"},
        BadConfig{"unknown target", "\n\ntargets = [\"dst_release\",\n  \"dst_relase\"]\n", 4,
                  "unknown target \"dst_relase\"; did you mean \"dst_release\"?; valid targets: dst_release"},
        BadConfig{"unknown target table", "[[target]]\nname = \"queue_work\"\n", 2, "unknown target \"queue_work\""},
        BadConfig{"duplicate", "targets = [\"dst_release\"]\n[[target]]\nname = \"dst_release\"\n", 3,
                  "already configured on line 1"},
        BadConfig{"unknown key", "listen = \"127.0.0.1:1\"\nlisen = 3\n", 2, "unknown key \"lisen\""},
        BadConfig{"unknown key in table", "[http]\nmax_concurent = 3\n", 2, "known keys: max_concurrent"},
        BadConfig{"bad mechanism", "[[target]]\nname = \"dst_release\"\nmechanism = \"uprobe\"\n", 3,
                  "unknown mechanism \"uprobe\""},
        BadConfig{"listen without port", "# comment\nlisten = \"127.0.0.1\"\n", 2, "has no port"},
        BadConfig{"listen bad port", "listen = \"127.0.0.1:99999\"\n", 1, "bad port"},
        BadConfig{"wrong type", "[metrics]\nper_cpu = \"yes\"\n", 2, "metrics.per_cpu must be true or false"},
        BadConfig{"zero series", "[metrics]\nmax_series = 0\n", 2, "out of range"},
        BadConfig{"no connections", "[http]\nmax_connections = 0\n", 2, "out of range"},
        BadConfig{"bad duration", "[http]\nread_timeout = \"5 parsecs\"\n", 2, "bad duration"},
        BadConfig{"handoff sample", "[probe]\nhandoff_sample = 0\n", 2, "probe.handoff_sample"},
        BadConfig{"duty cycle zero", "[probe]\nduty_cycle = 0\n", 2, "probe.duty_cycle"},
        BadConfig{"duty cycle over", "[probe]\n\nduty_cycle = 101\n", 3, "probe.duty_cycle"},
        BadConfig{"duty period short", "[probe]\nduty_period = \"500ms\"\n", 2,
                  "probe.duty_period must be between 1s and 60s"},
        BadConfig{"duty period long", "[probe]\nduty_period = 61\n", 2, "probe.duty_period must be between"},
        BadConfig{"duty period word", "[probe]\nduty_period = \"often\"\n", 2, "probe.duty_period"},
        BadConfig{"tls half", "\n[tls]\ncert = \"/etc/hostname\"\n", 2, "needs both cert and key"},
        BadConfig{"tls missing file", "[tls]\ncert = \"/nonexistent/cert.pem\"\nkey = \"/etc/hostname\"\n", 2,
                  "cannot be read"},
        BadConfig{"auth bad hash", "[basic_auth]\nusername = \"u\"\npassword_sha256 = \"secret\"\n", 3,
                  "64 lower-case hex"},
        BadConfig{"target not table", "target = \"dst_release\"\n", 1, "[[target]] tables"},
        BadConfig{"target without name", "\n[[target]]\nmechanism = \"kprobe\"\n", 2, "needs name"}));

TEST(ServeConfig, ReportsEveryErrorNotJustTheFirst) {
    auto c = parse_serve_config("targets = [\"nope\"]\n[metrics]\nmax_series = -1\n", "x.toml");
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.error().message().find("x.toml:1:"), std::string::npos);
    EXPECT_NE(c.error().message().find("x.toml:3:"), std::string::npos);
}

TEST(ServeConfig, MissingFileSaysSo) {
    auto c = load_serve_config("/nonexistent/serve.toml");
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.error().message().find("/nonexistent/serve.toml"), std::string::npos);
}

TEST(ListenAddress, Parses) {
    auto a = parse_listen_address("127.0.0.1:9464");
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a->host, "127.0.0.1");
    EXPECT_EQ(a->port, 9464);
    auto b = parse_listen_address("[::1]:0");
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b->host, "::1");
    EXPECT_EQ(b->port, 0);
    EXPECT_EQ(b->to_string(), "[::1]:0");
    EXPECT_TRUE(parse_listen_address("localhost:80").ok());
    auto all = parse_listen_address(":10464");  // every address, as node_exporter's --web.listen-address
    ASSERT_TRUE(all.ok());
    EXPECT_TRUE(all->all_addresses());
    EXPECT_FALSE(all->loopback());
    EXPECT_EQ(all->port, 10464);
    EXPECT_TRUE(a->loopback());
    EXPECT_FALSE(parse_listen_address("::1:9464").ok());
    EXPECT_FALSE(parse_listen_address("[::1]9464").ok());
    EXPECT_FALSE(parse_listen_address("host:-1").ok());
    EXPECT_FALSE(parse_listen_address("host:12x").ok());
    EXPECT_TRUE(parse_listen_address("[fe80::1%eth0]:80").ok());
}

// Found by fuzz_listen: "[[gt]:48" gave host "[gt", which prints as "[gt:48",
// an address that does not parse.
TEST(ListenAddress, RefusesHostsThatCannotBeAHost) {
    EXPECT_FALSE(parse_listen_address("[[gt]:48").ok());
    EXPECT_FALSE(parse_listen_address("a]b:48").ok());
    EXPECT_FALSE(parse_listen_address("a b:48").ok());
    EXPECT_FALSE(parse_listen_address("a/b:48").ok());
}

TEST(BasicAuth, ChecksUserAndPasswordDigest) {
    const std::string hash = "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b";
    EXPECT_EQ(sha256_hex("secret"), hash);
    const std::vector<AuthUser> prom{{"prom", hash, AuthUser::Hash::kSha256}};
    const std::vector<AuthUser> other{{"other", hash, AuthUser::Hash::kSha256}};
    EXPECT_TRUE(check_basic_auth("Basic cHJvbTpzZWNyZXQ=", prom));  // prom:secret
    EXPECT_TRUE(check_basic_auth("basic cHJvbTpzZWNyZXQ=", prom));
    EXPECT_FALSE(check_basic_auth("Basic cHJvbTpzZWNyZXQ=", other));
    EXPECT_FALSE(check_basic_auth("Basic cHJvbTpzZWNyZXR4", prom));  // prom:secretx
    EXPECT_FALSE(check_basic_auth("Basic cHJvbXNlY3JldA==", prom));  // no colon
    EXPECT_FALSE(check_basic_auth("Bearer cHJvbTpzZWNyZXQ=", prom));
    EXPECT_FALSE(check_basic_auth("Basic !!!!", prom));
    EXPECT_FALSE(check_basic_auth("Basic abc", prom));
    EXPECT_FALSE(check_basic_auth("", prom));
    EXPECT_FALSE(check_basic_auth("Basic cHJvbTpzZWNyZXQ=", {}));
}

// Found by fuzz_basic_auth: '=' inside the base64 ("...A=B" for "...A==") was
// decoded as if it were padding, so malformed headers were accepted.
TEST(BasicAuth, RefusesMalformedBase64) {
    const std::vector<AuthUser> ops{{"ops", sha256_hex("secret"), AuthUser::Hash::kSha256}};
    EXPECT_TRUE(check_basic_auth("Basic b3BzOnNlY3JldA==", ops));  // ops:secret
    EXPECT_FALSE(check_basic_auth("basic  b3BzOnNlY3JldA=B", ops));
    EXPECT_FALSE(check_basic_auth("Basic b3BzOn=lY3JldA==", ops));
    EXPECT_FALSE(check_basic_auth("Basic b3BzOnNlY3Jl====", ops));
    EXPECT_FALSE(check_basic_auth("Basic b3BzOnNlY3Jl dA==", ops));
}

// bcrypt of "secret" at cost 4 (mkpasswd -m bcrypt -R 16 secret), as exporter-toolkit's basic_auth_users hold it.
constexpr const char* kSecretBcrypt = "$2b$04$ZKoZvC9E.D6hDxQ1SR75xeLlRN3W1dCUHE8m6WlkiybJT/X.QyBCu";

TEST(BasicAuth, ChecksBcryptUsers) {
    const std::vector<AuthUser> users{{"alice", "$2b$04$eTCGVQLGKU3b1I2gQ5VGzueIXCUwj1l.DwfepykI9bnTHT5SBykGO", AuthUser::Hash::kBcrypt},
                                      {"prom", kSecretBcrypt, AuthUser::Hash::kBcrypt}};
    EXPECT_TRUE(check_basic_auth("Basic cHJvbTpzZWNyZXQ=", users));   // prom:secret
    EXPECT_FALSE(check_basic_auth("Basic cHJvbTpzZWNyZXR4", users));  // prom:secretx
    EXPECT_FALSE(check_basic_auth("Basic YWxpY2U6c2VjcmV0", users));  // alice:secret, another hash
    // Found by fuzz_basic_auth: crypt_r stopped at the NUL, so this passed.
    EXPECT_FALSE(check_basic_auth("Basic cHJvbTpzZWNyZXQAeA==", users));  // prom:secret\0x
}

namespace {

std::string write_temp(const std::string& name, const std::string& text) {
    std::string path = testing::TempDir() + "/" + name;
    std::ofstream(path) << text;
    return path;
}

}  // namespace

TEST(WebConfig, ReadsExporterToolkitYaml) {
    std::string cert = write_temp("web_cert.pem", "x"), key = write_temp("web_key.pem", "x");
    std::string path = write_temp("web.yml", "tls_server_config:\n  cert_file: " + cert + "\n  key_file: web_key.pem\n" +
                                                 "basic_auth_users:\n  prom: " + kSecretBcrypt + "\n");
    ServeConfig cfg;
    auto st = apply_web_config(path, cfg);
    ASSERT_TRUE(st.ok()) << st.error().message();
    EXPECT_EQ(cfg.tls_cert, cert);
    EXPECT_EQ(cfg.tls_key, key) << "a relative key_file is relative to the web config's directory";
    ASSERT_EQ(cfg.users.size(), 1u);
    EXPECT_EQ(cfg.users[0].name, "prom");
    EXPECT_EQ(cfg.users[0].kind, AuthUser::Hash::kBcrypt);
    EXPECT_TRUE(check_basic_auth("Basic cHJvbTpzZWNyZXQ=", cfg.users));
}

TEST(WebConfig, RefusesWhatItDoesNotImplementByName) {
    struct Case {
        const char* text;
        const char* says;
    } cases[] = {
        {"http_server_config:\n  http2: false\n", "http_server_config is not supported"},
        {"tls_server_config:\n  client_auth_type: RequireAndVerifyClientCert\n", "tls_server_config.client_auth_type"},
        {"basic_auth_users:\n  prom: plaintext\n", "not a bcrypt hash"},
        {"tls_server_config:\n  cert_file: /nonexistent.pem\n", "cannot be read"},
        {"basic_auth_users: [a, b\n", "not valid YAML"},
    };
    for (auto& c : cases) {
        ServeConfig cfg;
        auto st = apply_web_config(write_temp("bad_web.yml", c.text), cfg);
        ASSERT_FALSE(st.ok()) << c.text;
        EXPECT_NE(st.error().message().find(c.says), std::string::npos) << st.error().message();
    }
    ServeConfig both;
    both.users.push_back({"prom", std::string(64, 'a'), AuthUser::Hash::kSha256});
    EXPECT_FALSE(apply_web_config(write_temp("web_ok.yml", "{}\n"), both).ok()) << "TOML auth and a web config together";
}
