// The `hotline serve` TOML configuration: strict schema (unknown keys are errors),
// every error names its line, and basic-auth checking against a SHA-256 digest.
#include "serve_config.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <toml++/toml.h>

#include "hotline/util.hpp"

namespace hotline {

// ------------------------------------------------------------ listen address
std::string ListenAddress::to_string() const {
    return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port)
                                                : fmt::format("{}:{}", host, port);
}

Result<ListenAddress> parse_listen_address(std::string_view s) {
    const std::string hint = "use ADDRESS:PORT, e.g. 127.0.0.1:9464 or [::1]:9464";
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
    if (a.host.empty())
        return make_error(fmt::format("listen address \"{}\" has no host", s), EINVAL,
                          "name the interface, e.g. 127.0.0.1:9464 (0.0.0.0 exposes it to the network)");
    int p = -1;
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
    if (port.empty() || ec != std::errc() || ptr != port.data() + port.size() || p < 0 || p > 65535)
        return make_error(fmt::format("bad port in listen address \"{}\"", s), EINVAL, "use a port in 0..65535");
    a.port = p;
    return a;
}

// ------------------------------------------------------------ config
namespace {

class Checker {
public:
    explicit Checker(std::string source) : source_(std::move(source)) {}

    void error(const toml::source_region& where, const std::string& msg) {
        errors_.push_back({where.begin.line, fmt::format("{}, line {}: {}", source_, where.begin.line, msg)});
    }
    bool ok() const { return errors_.empty(); }
    // Tables iterate in key order; report in file order.
    Error result() {
        std::stable_sort(errors_.begin(), errors_.end(), [](auto& a, auto& b) { return a.first < b.first; });
        std::string all;
        for (const auto& e : errors_) all += (all.empty() ? "" : "\n") + e.second;
        return make_error(all, EINVAL);
    }

    std::optional<std::string> string(std::string_view path, const toml::node& v) {
        if (auto* s = v.as_string()) return s->get();
        error(v.source(), fmt::format("{} must be a string", path));
        return std::nullopt;
    }
    std::optional<bool> boolean(std::string_view path, const toml::node& v) {
        if (auto* b = v.as_boolean()) return b->get();
        error(v.source(), fmt::format("{} must be true or false", path));
        return std::nullopt;
    }
    std::optional<std::int64_t> integer(std::string_view path, const toml::node& v, std::int64_t lo,
                                        std::int64_t hi) {
        auto* i = v.as_integer();
        if (!i) {
            error(v.source(), fmt::format("{} must be an integer in {}..{}", path, lo, hi));
            return std::nullopt;
        }
        if (i->get() < lo || i->get() > hi) {
            error(v.source(), fmt::format("{} = {} is out of range {}..{}", path, i->get(), lo, hi));
            return std::nullopt;
        }
        return i->get();
    }
    // "5s", "250ms" or a number of seconds.
    std::optional<double> duration(std::string_view path, const toml::node& v, double lo, double hi) {
        double secs = 0;
        if (auto* s = v.as_string()) {
            auto d = parse_duration(s->get());
            if (!d) {
                error(v.source(), fmt::format("{}: {}", path, d.error().message()));
                return std::nullopt;
            }
            secs = *d;
        } else if (auto* i = v.as_integer()) {
            secs = double(i->get());
        } else if (auto* f = v.as_floating_point()) {
            secs = f->get();
        } else {
            error(v.source(), fmt::format("{} must be a duration such as \"5s\" or \"250ms\"", path));
            return std::nullopt;
        }
        if (!(secs >= lo && secs <= hi)) {
            error(v.source(), fmt::format("{} must be between {}s and {}s", path, lo, hi));
            return std::nullopt;
        }
        return secs;
    }

    // Visits a table's keys, reporting the ones not in `known`.
    template <class Fn>
    void table(std::string_view path, const toml::node& v, std::initializer_list<std::string_view> known, Fn fn) {
        auto* t = v.as_table();
        if (!t) {
            error(v.source(), fmt::format("{} must be a table ([{}])", path, path));
            return;
        }
        for (auto&& [k, node] : *t) {
            bool found = false;
            for (auto n : known) found |= k.str() == n;
            if (!found) {
                std::string list;
                for (auto n : known) list += (list.empty() ? "" : ", ") + std::string(n);
                error(k.source(), fmt::format("unknown key \"{}\" in [{}]; known keys: {}", k.str(), path, list));
                continue;
            }
            fn(k.str(), node);
        }
    }

private:
    std::string source_;
    std::vector<std::pair<toml::source_index, std::string>> errors_;
};

struct NamedTarget {
    const toml::node* node;
    std::string name;
    std::optional<Mechanism> mech;
};

// In file order, so "already configured on line N" points upwards.
void add_targets(Checker& c, ServeConfig& cfg, std::vector<NamedTarget> named) {
    std::stable_sort(named.begin(), named.end(),
                     [](auto& a, auto& b) { return a.node->source().begin.line < b.node->source().begin.line; });
    for (auto& n : named) {
        int line = int(n.node->source().begin.line);
        if (!find_target(n.name)) {
            c.error(n.node->source(),
                    fmt::format("unknown target \"{}\"; valid targets: {}", n.name, builtin_target_names()));
            continue;
        }
        auto dup = std::find_if(cfg.targets.begin(), cfg.targets.end(), [&](auto& t) { return t.name == n.name; });
        if (dup != cfg.targets.end()) {
            c.error(n.node->source(),
                    fmt::format("target \"{}\" is already configured on line {}", n.name, dup->line));
            continue;
        }
        cfg.targets.push_back({n.name, n.mech, line});
    }
}

std::optional<Mechanism> parse_mech(Checker& c, const toml::node& v, bool& ok) {
    ok = false;
    auto s = c.string("mechanism", v);
    if (!s) return std::nullopt;
    if (*s == "auto") {
        ok = true;
        return std::nullopt;
    }
    auto m = parse_mechanism(*s);
    if (!m) {
        c.error(v.source(),
                fmt::format("unknown mechanism \"{}\"; use auto, fentry, kprobe, tracepoint or sampling", *s));
        return std::nullopt;
    }
    ok = true;
    return m;
}

bool readable(const std::string& path) { return access(path.c_str(), R_OK) == 0; }

bool is_hex_digest(std::string_view s) {
    if (s.size() != 64) return false;
    for (char ch : s)
        if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'))) return false;
    return true;
}

}  // namespace

Result<ServeConfig> parse_serve_config(std::string_view text, const std::string& source) {
    toml::table root;
    try {
        root = toml::parse(text, source);
    } catch (const toml::parse_error& e) {
        return make_error(fmt::format("{}, line {}: {}", source, e.source().begin.line, e.description()),
                          EINVAL, "the file is not valid TOML");
    }
    Checker c(source);
    ServeConfig cfg;
    cfg.source = source;
    const toml::node* tls_cert = nullptr;
    const toml::node* tls_key = nullptr;
    const toml::node* auth_user = nullptr;
    const toml::node* auth_hash = nullptr;
    const toml::node* tls_table = nullptr;
    const toml::node* auth_table = nullptr;
    std::vector<NamedTarget> named;

    for (auto&& [k, v] : root) {
        std::string_view key = k.str();
        if (key == "listen") {
            if (auto s = c.string("listen", v)) {
                auto a = parse_listen_address(*s);
                if (a) cfg.listen = *a;
                else c.error(v.source(), a.error().message());
            }
        } else if (key == "strict") {
            if (auto b = c.boolean("strict", v)) cfg.strict = *b;
        } else if (key == "targets") {
            auto* arr = v.as_array();
            if (!arr) {
                c.error(v.source(), "targets must be a list of target names, e.g. [\"dst_release\"]");
                continue;
            }
            for (const auto& el : *arr)
                if (auto s = c.string("targets[]", el)) named.push_back({&el, *s, std::nullopt});
        } else if (key == "target") {
            auto* arr = v.as_array();
            if (!arr || !arr->is_array_of_tables()) {
                c.error(v.source(), "target must be given as [[target]] tables with name = \"...\"");
                continue;
            }
            for (const auto& el : *arr) {
                const toml::node* name = nullptr;
                std::optional<Mechanism> mech;
                bool mech_ok = true;
                c.table("target", el, {"name", "mechanism"}, [&](std::string_view tk, const toml::node& tv) {
                    if (tk == "name") name = &tv;
                    else mech = parse_mech(c, tv, mech_ok);
                });
                if (!name) {
                    c.error(el.source(), "[[target]] needs name = \"<kernel function>\"");
                    continue;
                }
                if (auto s = c.string("target.name", *name); s && mech_ok) named.push_back({name, *s, mech});
            }
        } else if (key == "probe") {
            c.table("probe", v, {"latency", "sample_freq", "handoffs", "handoff_sample"}, [&](std::string_view pk, const toml::node& pv) {
                if (pk == "latency") {
                    if (auto b = c.boolean("probe.latency", pv)) cfg.latency = *b;
                } else if (pk == "handoffs") {
                    if (auto b = c.boolean("probe.handoffs", pv)) cfg.handoffs = *b;
                } else if (pk == "sample_freq") {
                    if (auto i = c.integer("probe.sample_freq", pv, 1, 100000)) cfg.sample_freq = int(*i);
                } else if (auto i = c.integer("probe.handoff_sample", pv, 1, 1 << 20)) {
                    cfg.handoff_sample = int(*i);
                }
            });
        } else if (key == "metrics") {
            c.table("metrics", v, {"per_cpu", "max_series"}, [&](std::string_view mk, const toml::node& mv) {
                if (mk == "per_cpu") {
                    if (auto b = c.boolean("metrics.per_cpu", mv)) cfg.per_cpu = *b;
                } else if (auto i = c.integer("metrics.max_series", mv, 1, 10'000'000)) {
                    cfg.max_series = std::size_t(*i);
                }
            });
        } else if (key == "http") {
            c.table("http", v,
                    {"max_concurrent", "max_queued", "read_timeout", "write_timeout", "keep_alive_timeout",
                     "max_request_bytes"},
                    [&](std::string_view hk, const toml::node& hv) {
                        std::string path = "http." + std::string(hk);
                        if (hk == "max_concurrent") {
                            if (auto i = c.integer(path, hv, 1, 256)) cfg.max_concurrent = int(*i);
                        } else if (hk == "max_queued") {
                            if (auto i = c.integer(path, hv, 0, 4096)) cfg.max_queued = int(*i);
                        } else if (hk == "read_timeout") {
                            if (auto d = c.duration(path, hv, 0.01, 3600)) cfg.read_timeout = *d;
                        } else if (hk == "write_timeout") {
                            if (auto d = c.duration(path, hv, 0.01, 3600)) cfg.write_timeout = *d;
                        } else if (hk == "keep_alive_timeout") {
                            if (auto d = c.duration(path, hv, 0, 3600)) cfg.keep_alive_timeout = *d;
                        } else if (auto i = c.integer(path, hv, 1024, 1 << 20)) {
                            cfg.max_request_bytes = std::size_t(*i);
                        }
                    });
        } else if (key == "tls") {
            tls_table = &v;
            c.table("tls", v, {"cert", "key"}, [&](std::string_view tk, const toml::node& tv) {
                auto s = c.string("tls." + std::string(tk), tv);
                if (!s) return;
                if (!readable(*s)) {
                    c.error(tv.source(), fmt::format("tls.{} \"{}\" cannot be read: {}", tk, *s, std::strerror(errno)));
                    return;
                }
                if (tk == "cert") {
                    cfg.tls_cert = *s;
                    tls_cert = &tv;
                } else {
                    cfg.tls_key = *s;
                    tls_key = &tv;
                }
            });
        } else if (key == "basic_auth") {
            auth_table = &v;
            c.table("basic_auth", v, {"username", "password_sha256"}, [&](std::string_view ak, const toml::node& av) {
                auto s = c.string("basic_auth." + std::string(ak), av);
                if (!s) return;
                if (ak == "username") {
                    if (s->empty() || s->find(':') != std::string::npos) {
                        c.error(av.source(), "basic_auth.username must be non-empty and contain no ':'");
                        return;
                    }
                    cfg.auth_username = *s;
                    auth_user = &av;
                } else {
                    if (!is_hex_digest(*s)) {
                        c.error(av.source(),
                                "basic_auth.password_sha256 must be 64 lower-case hex digits: "
                                "printf %s 'PASSWORD' | sha256sum");
                        return;
                    }
                    cfg.auth_password_sha256 = *s;
                    auth_hash = &av;
                }
            });
        } else {
            c.error(k.source(), fmt::format("unknown key \"{}\"; known: listen, strict, targets, [[target]], "
                                            "[probe], [metrics], [http], [tls], [basic_auth]",
                                            key));
        }
    }
    add_targets(c, cfg, std::move(named));
    if (tls_table && c.ok() && (!tls_cert || !tls_key))
        c.error(tls_table->source(), "[tls] needs both cert and key");
    if (auth_table && c.ok() && (!auth_user || !auth_hash))
        c.error(auth_table->source(), "[basic_auth] needs both username and password_sha256");
    if (!c.ok()) return c.result();
    return cfg;
}

Result<ServeConfig> load_serve_config(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return make_error("cannot open config file " + path, errno, "check the path given to --config");
    std::ostringstream ss;
    ss << f.rdbuf();
    return parse_serve_config(ss.str(), path);
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

bool check_basic_auth(std::string_view authorization, std::string_view username,
                      std::string_view password_sha256_hex) {
    constexpr std::string_view kScheme = "Basic ";
    if (authorization.size() <= kScheme.size() || authorization.size() > 1024) return false;
    for (std::size_t i = 0; i < kScheme.size() - 1; ++i)
        if (std::tolower(static_cast<unsigned char>(authorization[i])) != "basic"[i]) return false;
    if (authorization[kScheme.size() - 1] != ' ') return false;
    std::string_view b64 = authorization.substr(kScheme.size());
    while (!b64.empty() && b64.front() == ' ') b64.remove_prefix(1);
    while (!b64.empty() && b64.back() == ' ') b64.remove_suffix(1);
    if (b64.empty() || b64.size() % 4 != 0) return false;
    std::string raw(b64.size() / 4 * 3, '\0');
    int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(raw.data()),
                            reinterpret_cast<const unsigned char*>(b64.data()), int(b64.size()));
    if (n < 0) return false;
    std::size_t pad = 0;
    if (b64.back() == '=') ++pad;
    if (b64.size() >= 2 && b64[b64.size() - 2] == '=') ++pad;
    raw.resize(std::size_t(n) - pad);
    auto colon = raw.find(':');
    if (colon == std::string::npos) return false;
    // Compare digests, so timing depends on neither secret's length or content.
    std::string user_got = sha256_hex(std::string_view(raw).substr(0, colon));
    std::string user_want = sha256_hex(username);
    std::string pass_got = sha256_hex(std::string_view(raw).substr(colon + 1));
    if (pass_got.size() != password_sha256_hex.size() || user_got.size() != user_want.size()) return false;
    bool user_ok = CRYPTO_memcmp(user_got.data(), user_want.data(), user_got.size()) == 0;
    bool pass_ok = CRYPTO_memcmp(pass_got.data(), password_sha256_hex.data(), pass_got.size()) == 0;
    return user_ok & pass_ok;
}

}  // namespace hotline
