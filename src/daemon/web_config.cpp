// SPDX-License-Identifier: Apache-2.0
// `hotline serve --web.config.file`: the exporter-toolkit web configuration
// (the YAML that node_exporter and every exporter built on exporter-toolkit
// read), so one file serves a fleet of exporters.  hotline reads the parts it
// implements and refuses the rest by name rather than ignoring them.
#include <fmt/format.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>

#include "serve_config.hpp"

namespace hotline {

namespace {

// Keys hotline reads, per section; exporter-toolkit's other keys are refused.
constexpr const char* kTopKeys = "tls_server_config, basic_auth_users";
constexpr const char* kTlsKeys = "cert_file, key_file";

Error web_error(const std::string& path, const YAML::Node& at, const std::string& what, std::string hint = {}) {
    auto m = at.Mark();
    std::string where = m.is_null() ? path : fmt::format("{}:{}", path, m.line + 1);
    return make_error(fmt::format("{}: {}", where, what), EINVAL, std::move(hint));
}

// A relative file name is relative to the web configuration's directory, as in exporter-toolkit.
std::string resolve_path(const std::string& config_path, const std::string& file) {
    if (file.empty() || file.front() == '/') return file;
    auto slash = config_path.rfind('/');
    return slash == std::string::npos ? file : config_path.substr(0, slash + 1) + file;
}

Status read_tls(const std::string& path, const YAML::Node& tls, ServeConfig& cfg) {
    if (!tls.IsMap()) return web_error(path, tls, "tls_server_config must be a mapping");
    for (const auto& kv : tls) {
        std::string key = kv.first.as<std::string>();
        if (key != "cert_file" && key != "key_file")
            return web_error(path, kv.first, fmt::format("tls_server_config.{} is not supported by hotline", key),
                             fmt::format("hotline reads {}", kTlsKeys));
        std::string file = resolve_path(path, kv.second.as<std::string>(""));
        if (access(file.c_str(), R_OK) != 0)
            return web_error(path, kv.second,
                             fmt::format("tls_server_config.{} \"{}\" cannot be read: {}", key, file, std::strerror(errno)));
        (key == "cert_file" ? cfg.tls_cert : cfg.tls_key) = file;
    }
    if (cfg.tls_cert.empty() || cfg.tls_key.empty())
        return web_error(path, tls, "tls_server_config needs both cert_file and key_file");
    return ok_status();
}

// bcrypt hashes as htpasswd -B or `mkpasswd -m bcrypt` write them.
bool is_bcrypt(const std::string& h) {
    return h.size() == 60 && h[0] == '$' && h[1] == '2' && (h[2] == 'a' || h[2] == 'b' || h[2] == 'y') && h[3] == '$';
}

Status read_users(const std::string& path, const YAML::Node& users, ServeConfig& cfg) {
    if (!users.IsMap()) return web_error(path, users, "basic_auth_users must be a mapping of user: bcrypt hash");
    for (const auto& kv : users) {
        std::string name = kv.first.as<std::string>("");
        std::string hash = kv.second.as<std::string>("");
        if (name.empty() || name.find(':') != std::string::npos)
            return web_error(path, kv.first, "a basic_auth_users name must be non-empty and contain no ':'");
        if (!is_bcrypt(hash))
            return web_error(path, kv.second, fmt::format("basic_auth_users.{} is not a bcrypt hash", name),
                             "make one with: htpasswd -nBC 10 \"\" | tr -d ':\\n'  (or mkpasswd -m bcrypt)");
        cfg.users.push_back({name, hash, AuthUser::Hash::kBcrypt});
    }
    return ok_status();
}

}  // namespace

namespace {

Status check_no_toml_web_settings(const std::string& path, const ServeConfig& cfg) {
    if (cfg.tls() || cfg.auth())
        return make_error(fmt::format("{} and [tls]/[basic_auth] in {} both configure the web server", path, cfg.source),
                          EINVAL, "keep one of them");
    return ok_status();
}

Status apply_web_doc(const std::string& path, const YAML::Node& doc, ServeConfig& cfg) {
    if (doc.IsNull()) return ok_status();  // an empty file configures nothing, as in exporter-toolkit
    if (!doc.IsMap()) return web_error(path, doc, "the web configuration must be a mapping");
    try {
        for (const auto& kv : doc) {
            std::string key = kv.first.as<std::string>();
            Status st = key == "tls_server_config" ? read_tls(path, kv.second, cfg)
                        : key == "basic_auth_users" ? read_users(path, kv.second, cfg)
                                                    : Status(web_error(path, kv.first,
                                                                       fmt::format("{} is not supported by hotline", key),
                                                                       fmt::format("hotline reads {}", kTopKeys)));
            if (!st) return st;
        }
    } catch (const YAML::Exception& e) {
        return make_error(fmt::format("{}:{}: {}", path, e.mark.line + 1, e.msg), EINVAL);
    }
    cfg.web_config = path;
    return ok_status();
}

}  // namespace

Status apply_web_config(const std::string& path, ServeConfig& cfg) {
    if (auto st = check_no_toml_web_settings(path, cfg); !st) return st;
    YAML::Node doc;
    try {
        doc = YAML::LoadFile(path);
    } catch (const YAML::BadFile&) {
        return make_error(fmt::format("cannot read web configuration {}", path), errno ? errno : ENOENT);
    } catch (const YAML::Exception& e) {
        return make_error(fmt::format("{}:{}: not valid YAML: {}", path, e.mark.line + 1, e.msg), EINVAL);
    }
    return apply_web_doc(path, doc, cfg);
}

Status apply_web_config_text(std::string_view text, const std::string& path, ServeConfig& cfg) {
    if (auto st = check_no_toml_web_settings(path, cfg); !st) return st;
    YAML::Node doc;
    try {
        doc = YAML::Load(std::string(text));
    } catch (const YAML::Exception& e) {
        return make_error(fmt::format("{}:{}: not valid YAML: {}", path, e.mark.line + 1, e.msg), EINVAL);
    }
    return apply_web_doc(path, doc, cfg);
}

}  // namespace hotline
