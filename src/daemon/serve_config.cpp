// SPDX-License-Identifier: Apache-2.0
// The `hotline serve` TOML configuration: strict schema (unknown keys are errors),
// every error collected, each naming its line (hotline/config/toml_reader.hpp), and
// basic-auth checking against a SHA-256 digest.
#include "serve_config.hpp"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fmt/format.h>

#include "hotline/config/toml_reader.hpp"
#include "hotline/base/base64.hpp"
#include "hotline/base/util.hpp"

namespace hotline {

// ------------------------------------------------------------ listen address
std::string ListenAddress::to_string() const {
    return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port)
                                                : fmt::format("{}:{}", host, port);
}

bool ListenAddress::all_addresses() const { return host.empty() || host == "0.0.0.0" || host == "::"; }

bool ListenAddress::loopback() const {
    return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

std::string ListenAddress::bind_host() const {
    if (!host.empty()) return host;
    // ":PORT": every address; "::" takes IPv4 too (dual stack) where IPv6 exists.
    return access("/proc/net/if_inet6", F_OK) == 0 ? "::" : "0.0.0.0";
}

namespace {

// An IP literal (with an IPv6 zone, "fe80::1%eth0") or a host name: nothing that
// would print back as another address (brackets) or could not name a host.
bool plausible_host(std::string_view h) {
    for (char ch : h)
        if (!std::isalnum(static_cast<unsigned char>(ch)) && !std::strchr(".-_:%", ch)) return false;
    return true;
}

}  // namespace

Result<ListenAddress> parse_listen_address(std::string_view s) {
    const std::string hint = fmt::format("use ADDRESS:PORT, e.g. {}:{}, [::1]:{}, or :{} for every address",
                                         daemon::kDefaultListenHost, daemon::kDefaultListenPort,
                                         daemon::kDefaultListenPort, daemon::kDefaultListenPort);
    ListenAddress a;
    std::string_view port;
    if (!s.empty() && s.front() == '[') {
        auto close = s.find(']');
        if (close == std::string_view::npos || close + 1 >= s.size() || s[close + 1] != ':')
            return make_error(fmt::format("bad listen address \"{}\"", s), EINVAL, hint);
        a.host = std::string(s.substr(1, close - 1));
        port = s.substr(close + 2);
    } else {
        auto colon = s.rfind(':');
        if (colon == std::string_view::npos)
            return make_error(fmt::format("listen address \"{}\" has no port", s), EINVAL, hint);
        a.host = std::string(s.substr(0, colon));
        if (a.host.find(':') != std::string::npos)
            return make_error(fmt::format("bad listen address \"{}\": put an IPv6 address in brackets", s),
                              EINVAL, hint);
        port = s.substr(colon + 1);
    }
    if (!plausible_host(a.host))
        return make_error(fmt::format("bad host in listen address \"{}\"", s), EINVAL, hint);
    int p = -1;
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
    if (port.empty() || ec != std::errc() || ptr != port.data() + port.size() || p < 0 || p > 65535)
        return make_error(fmt::format("bad port in listen address \"{}\"", s), EINVAL, "use a port in 0..65535");
    a.port = p;
    return a;
}

// ------------------------------------------------------------ config
namespace {

// One reading of a file: the values so far, and what the checks across
// sections need to know about it.
struct Reading {
    TomlErrors errs;
    ServeConfig cfg;
    struct NamedTarget {
        const TomlValue* node;
        std::string name;
        std::optional<Mechanism> mech;
    };
    std::vector<NamedTarget> named;
    const TomlValue* tls_table = nullptr;
    const TomlValue* auth_table = nullptr;
};

// "5s", "250ms" or a number of seconds.
std::optional<double> duration(TomlErrors& errs, std::string_view path, const TomlValue& v, double lo, double hi) {
    double secs = 0;
    if (v.kind == TomlValue::Kind::kString) {
        auto d = parse_duration(v.string);
        if (!d) {
            errs.add(v.line, fmt::format("{}: {}", path, d.error().message()));
            return std::nullopt;
        }
        secs = *d;
    } else if (v.kind == TomlValue::Kind::kInteger) {
        secs = double(v.integer);
    } else if (v.kind == TomlValue::Kind::kFloat) {
        secs = v.floating;
    } else {
        errs.add(v.line, fmt::format("{} must be a duration such as \"5s\" or \"250ms\"", path));
        return std::nullopt;
    }
    if (!(secs >= lo && secs <= hi)) {
        errs.add(v.line, fmt::format("{} must be between {}s and {}s", path, lo, hi));
        return std::nullopt;
    }
    return secs;
}

// Calls fn(key, value) for each known key of section [path]; the rest are errors.
template <class Fn>
void each_key(TomlErrors& errs, std::string_view path, const TomlValue& v,
              std::initializer_list<std::string_view> known, Fn fn) {
    if (!v.is_table()) {
        errs.add(v.line, fmt::format("{} must be a table ([{}])", path, path));
        return;
    }
    errs.only_keys(v, known, fmt::format("[{}]", path));
    for (const auto& m : v.members)
        if (std::find(known.begin(), known.end(), m.key) != known.end()) fn(std::string_view(m.key), m.value);
}

void read_listen(Reading& r, const TomlValue& v) {
    auto s = r.errs.string(v, "listen");
    if (!s) return;
    auto a = parse_listen_address(*s);
    if (a) r.cfg.listen = *a;
    else r.errs.add(v.line, a.error().message());
}

void read_strict(Reading& r, const TomlValue& v) {
    if (auto b = r.errs.boolean(v, "strict")) r.cfg.strict = *b;
}

void read_target_list(Reading& r, const TomlValue& v) {
    if (!v.is_array()) {
        r.errs.add(v.line, "targets must be a list of target names, e.g. [\"dst_release\"]");
        return;
    }
    for (const auto& el : v.items)
        if (auto s = r.errs.string(el, "targets[]")) r.named.push_back({&el, *s, std::nullopt});
}

// nullopt with no error: "auto", the planner's choice.
std::optional<Mechanism> read_mechanism(TomlErrors& errs, const TomlValue& v, bool& ok) {
    ok = false;
    auto s = errs.string(v, "mechanism");
    if (!s) return std::nullopt;
    ok = *s == "auto";
    if (ok) return std::nullopt;
    auto m = parse_mechanism(*s);
    if (!m) {
        errs.add(v.line, fmt::format("unknown mechanism \"{}\"; use auto, fentry, kprobe, tracepoint or sampling", *s));
        return std::nullopt;
    }
    ok = true;
    return m;
}

void read_target_tables(Reading& r, const TomlValue& v) {
    if (!v.is_array_of_tables()) {
        r.errs.add(v.line, "target must be given as [[target]] tables with name = \"...\"");
        return;
    }
    for (const auto& el : v.items) {
        const TomlValue* name = nullptr;
        std::optional<Mechanism> mech;
        bool mech_ok = true;
        each_key(r.errs, "target", el, {"name", "mechanism"}, [&](std::string_view k, const TomlValue& tv) {
            if (k == "name") name = &tv;
            else mech = read_mechanism(r.errs, tv, mech_ok);
        });
        if (!name) {
            r.errs.add(el.line, "[[target]] needs name = \"<kernel function>\"");
            continue;
        }
        if (auto s = r.errs.string(*name, "target.name"); s && mech_ok) r.named.push_back({name, *s, mech});
    }
}

void read_probe(Reading& r, const TomlValue& v) {
    TracingOptions& p = r.cfg.probe;
    each_key(r.errs, "probe", v, {"latency", "sample_freq", "handoffs", "handoff_sample", "duty_cycle", "duty_period"},
             [&](std::string_view k, const TomlValue& pv) {
                 std::string path = fmt::format("probe.{}", k);
                 if (k == "latency") {
                     if (auto b = r.errs.boolean(pv, path)) p.latency = *b;
                 } else if (k == "handoffs") {
                     if (auto b = r.errs.boolean(pv, path)) p.handoffs = *b;
                 } else if (k == "sample_freq") {
                     if (auto i = r.errs.integer(pv, path, 1, 100000)) p.sample_freq = int(*i);
                 } else if (k == "duty_cycle") {
                     if (auto i = r.errs.integer(pv, path, 1, 100)) p.duty_cycle = int(*i);
                 } else if (k == "duty_period") {
                     using Secs = std::chrono::duration<double>;
                     if (auto d = duration(r.errs, path, pv, Secs(kMinDutyPeriod).count(), Secs(kMaxDutyPeriod).count()))
                         p.duty_period = std::chrono::round<std::chrono::milliseconds>(Secs(*d));
                 } else if (auto i = r.errs.integer(pv, path, 1, 1 << 20)) {
                     p.handoff_sample = int(*i);
                 }
             });
}

void read_metrics(Reading& r, const TomlValue& v) {
    each_key(r.errs, "metrics", v, {"per_cpu", "max_series"}, [&](std::string_view k, const TomlValue& mv) {
        std::string path = fmt::format("metrics.{}", k);
        if (k == "per_cpu") {
            if (auto b = r.errs.boolean(mv, path)) r.cfg.metrics.per_cpu = *b;
        } else if (auto i = r.errs.integer(mv, path, 1, 10'000'000)) {
            r.cfg.metrics.max_series = std::size_t(*i);
        }
    });
}

void read_http(Reading& r, const TomlValue& v) {
    HttpLimits& h = r.cfg.http;
    each_key(r.errs, "http", v,
             {"max_concurrent", "max_queued", "max_connections", "read_timeout", "write_timeout",
              "keep_alive_timeout", "max_request_bytes"},
             [&](std::string_view k, const TomlValue& hv) {
                 std::string path = fmt::format("http.{}", k);
                 if (k == "max_concurrent") {
                     if (auto i = r.errs.integer(hv, path, 1, 256)) h.workers = int(*i);
                 } else if (k == "max_queued") {
                     if (auto i = r.errs.integer(hv, path, 0, 4096)) h.queued = int(*i);
                 } else if (k == "max_connections") {
                     if (auto i = r.errs.integer(hv, path, 1, 4096)) h.max_connections = int(*i);
                 } else if (k == "read_timeout") {
                     if (auto d = duration(r.errs, path, hv, 0.01, 3600)) h.read_timeout = *d;
                 } else if (k == "write_timeout") {
                     if (auto d = duration(r.errs, path, hv, 0.01, 3600)) h.write_timeout = *d;
                 } else if (k == "keep_alive_timeout") {
                     if (auto d = duration(r.errs, path, hv, 0, 3600)) h.keep_alive_timeout = *d;
                 } else if (auto i = r.errs.integer(hv, path, 1024, 1 << 20)) {
                     h.max_request_bytes = std::size_t(*i);
                 }
             });
}

void read_tls(Reading& r, const TomlValue& v) {
    r.tls_table = &v;
    each_key(r.errs, "tls", v, {"cert", "key"}, [&](std::string_view k, const TomlValue& tv) {
        auto s = r.errs.string(tv, fmt::format("tls.{}", k));
        if (!s) return;
        if (access(s->c_str(), R_OK) != 0) {
            r.errs.add(tv.line, fmt::format("tls.{} \"{}\" cannot be read: {}", k, *s, std::strerror(errno)));
            return;
        }
        (k == "cert" ? r.cfg.tls_cert : r.cfg.tls_key) = *s;
    });
}

bool is_hex_digest(std::string_view s) {
    if (s.size() != 64) return false;
    for (char ch : s)
        if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'))) return false;
    return true;
}

void read_basic_auth(Reading& r, const TomlValue& v) {
    r.auth_table = &v;
    AuthUser user;  // SHA-256, the kind [basic_auth] holds
    each_key(r.errs, "basic_auth", v, {"username", "password_sha256"}, [&](std::string_view k, const TomlValue& av) {
        auto s = r.errs.string(av, fmt::format("basic_auth.{}", k));
        if (!s) return;
        if (k == "username") {
            if (s->empty() || s->find(':') != std::string::npos)
                r.errs.add(av.line, "basic_auth.username must be non-empty and contain no ':'");
            else
                user.name = *s;
        } else if (!is_hex_digest(*s)) {
            r.errs.add(av.line, "basic_auth.password_sha256 must be 64 lower-case hex digits: "
                                "printf %s 'PASSWORD' | sha256sum");
        } else {
            user.hash = *s;
        }
    });
    r.cfg.users.push_back(std::move(user));
}

// The file's top level: one entry per key.
struct Section {
    std::string_view key;
    void (*read)(Reading&, const TomlValue&);
};
constexpr Section kSections[] = {
    {.key = "listen", .read = read_listen},
    {.key = "strict", .read = read_strict},
    {.key = "targets", .read = read_target_list},
    {.key = "target", .read = read_target_tables},
    {.key = "probe", .read = read_probe},
    {.key = "metrics", .read = read_metrics},
    {.key = "http", .read = read_http},
    {.key = "tls", .read = read_tls},
    {.key = "basic_auth", .read = read_basic_auth},
};

// In file order, so "already configured on line N" points upwards.
void add_targets(Reading& r) {
    auto named = std::move(r.named);
    std::stable_sort(named.begin(), named.end(), [](auto& a, auto& b) { return a.node->line < b.node->line; });
    for (auto& n : named) {
        if (!find_target(n.name)) {
            r.errs.add(n.node->line,
                       fmt::format("{}; valid targets: {}", unknown_name_message("target", n.name, builtin_target_names()),
                                   builtin_target_names()));
            continue;
        }
        auto& targets = r.cfg.targets;
        auto dup = std::find_if(targets.begin(), targets.end(), [&](auto& t) { return t.name == n.name; });
        if (dup != targets.end()) {
            r.errs.add(n.node->line, fmt::format("target \"{}\" is already configured on line {}", n.name, dup->line));
            continue;
        }
        targets.push_back({n.name, n.mech, n.node->line});
    }
}

// Pairs that must come together; said only when nothing else is wrong, since a
// refused half (an unreadable file) already has its error.
void check_pairs(Reading& r) {
    if (!r.errs.ok()) return;
    if (r.tls_table && (r.cfg.tls_cert.empty() || r.cfg.tls_key.empty()))
        r.errs.add(r.tls_table->line, "[tls] needs both cert and key");
    if (r.errs.ok() && r.auth_table && (r.cfg.users.front().name.empty() || r.cfg.users.front().hash.empty()))
        r.errs.add(r.auth_table->line, "[basic_auth] needs both username and password_sha256");
}

}  // namespace

Result<ServeConfig> parse_serve_config(std::string_view text, const std::string& source) {
    auto doc = parse_toml(text, source);
    if (!doc) return doc.error();
    Reading r{TomlErrors(source), {}, {}};
    r.cfg.source = source;
    for (const auto& m : doc->members) {
        auto s = std::find_if(std::begin(kSections), std::end(kSections), [&](auto& e) { return e.key == m.key; });
        if (s != std::end(kSections))
            s->read(r, m.value);
        else
            r.errs.add(m.line, fmt::format("unknown key \"{}\"; known: listen, strict, targets, [[target]], "
                                           "[probe], [metrics], [http], [tls], [basic_auth]",
                                           m.key));
    }
    add_targets(r);
    check_pairs(r);
    if (!r.errs.ok()) return r.errs.error();
    return std::move(r.cfg);
}

Result<ServeConfig> load_serve_config(const std::string& path) {
    auto text = read_file(path);
    if (!text) {
        Error e = text.error();
        e.hint = "check the path given to --config";
        return e;
    }
    return parse_serve_config(*text, path);
}

// ------------------------------------------------------------ basic auth
std::string sha256_hex(std::string_view data) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr) != 1) return {};
    std::string out;
    for (unsigned i = 0; i < len; ++i) out += fmt::format("{:02x}", md[i]);
    return out;
}

namespace {

// Equal lengths and contents, in time that depends on the lengths only.
bool same_secret(std::string_view a, std::string_view b) {
    return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

bool password_matches(const AuthUser& u, std::string_view password) {
    if (u.kind == AuthUser::Hash::kSha256) return same_secret(sha256_hex(password), u.hash);
    // bcrypt through libxcrypt: hashing the password with the stored hash as the
    // setting gives the stored hash back exactly when the password is right.
    // crypt_r reads a C string: "secret\0x" would pass as "secret".
    if (password.find('\0') != std::string_view::npos) return false;
    crypt_data data{};
    std::string pw(password);
    const char* out = crypt_r(pw.c_str(), u.hash.c_str(), &data);
    return out && out[0] != '*' && same_secret(out, u.hash);
}

// "Basic base64(user:password)" -> {user, password}; nullopt when malformed.
std::optional<std::pair<std::string, std::string>> decode_basic(std::string_view authorization) {
    constexpr std::string_view kScheme = "Basic ";
    if (authorization.size() <= kScheme.size() || authorization.size() > 1024) return std::nullopt;
    for (std::size_t i = 0; i < kScheme.size() - 1; ++i)
        if (std::tolower(static_cast<unsigned char>(authorization[i])) != "basic"[i]) return std::nullopt;
    if (authorization[kScheme.size() - 1] != ' ') return std::nullopt;
    std::string_view b64 = trim(authorization.substr(kScheme.size()));
    if (b64.empty()) return std::nullopt;
    auto decoded = base64_decode(b64);
    if (!decoded) return std::nullopt;
    const std::string& raw = *decoded;
    auto colon = raw.find(':');
    if (colon == std::string::npos) return std::nullopt;
    return std::pair{raw.substr(0, colon), raw.substr(colon + 1)};
}

}  // namespace

bool check_basic_auth(std::string_view authorization, const std::vector<AuthUser>& users) {
    auto cred = decode_basic(authorization);
    if (!cred) return false;
    // User names compared as digests, so timing tells nothing of their length or content.
    const std::string user_got = sha256_hex(cred->first);
    for (const AuthUser& u : users)
        if (same_secret(sha256_hex(u.name), user_got)) return password_matches(u, cred->second);
    return false;
}

}  // namespace hotline

namespace hotline::daemon {

TracingOptions default_probe_options() {
    TracingOptions o;
    o.duty_cycle = kDefaultDutyPercent;
    o.duty_period = kDefaultDutyPeriod;
    return o;
}

}  // namespace hotline::daemon
