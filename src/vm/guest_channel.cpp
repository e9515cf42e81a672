// SPDX-License-Identifier: Apache-2.0
#include "hotline/vm/guest_channel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <memory>
#include <set>

#include "hotline/base/base64.hpp"
#include "hotline/base/util.hpp"

namespace hotline::vm {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxIgnoredNotes = 8;
constexpr std::size_t kMaxNameBytes = 128;

std::vector<std::string_view> words(std::string_view line) {
    std::vector<std::string_view> out;
    while (!line.empty()) {
        auto start = line.find_first_not_of(' ');
        if (start == std::string_view::npos) break;
        line.remove_prefix(start);
        auto end = std::min(line.find(' '), line.size());
        out.push_back(line.substr(0, end));
        line.remove_prefix(end);
    }
    return out;
}

template <class T>
std::optional<T> number(std::string_view s) {
    T v{};
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
    return v;
}

std::optional<double> seconds(std::string_view s) {
    auto v = number<double>(s);
    if (!v || !std::isfinite(*v) || *v < 0) return std::nullopt;
    return v;
}

// The value of KEY=VALUE among `ws` (from index 2 on), if present.
std::optional<std::string_view> field(const std::vector<std::string_view>& ws, std::size_t from, std::string_view key) {
    for (std::size_t i = from; i < ws.size(); ++i)
        if (ws[i].size() > key.size() && ws[i].substr(0, key.size()) == key && ws[i][key.size()] == '=')
            return ws[i].substr(key.size() + 1);
    return std::nullopt;
}

bool is_release(std::string_view r) {
    return !r.empty() && r.size() <= kMaxNameBytes && std::all_of(r.begin(), r.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' || c == '+' || c == '~';
    });
}

class Decoder {
public:
    Decoder(const std::vector<std::string>& planned, const ChannelLimits& limits, GuestChannel& out)
        : planned_(planned.begin(), planned.end()), limits_(limits), out_(out) {}

    void line(std::string_view l) {
        if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
        if (l.size() > limits_.max_line_bytes) return refuse_line("a line longer than the protocol's");
        if (l.substr(0, 5) == "HLVM-") return marker(words(l));
        if (!payload_) return refuse_line("text outside a payload");
        append(l);
    }

    void finish() { close_unterminated(); }

private:
    struct Payload {
        GuestTest* test;
        std::string name;  // empty for the test's output
        std::size_t announced;
        std::string text;
        std::string refused;  // why the payload is dropped, empty while it is good
    };

    std::set<std::string> planned_;
    ChannelLimits limits_;
    GuestChannel& out_;
    std::unique_ptr<Payload> payload_;
    std::size_t decoded_total_ = 0;

    void refuse_line(const std::string& why) {
        if (out_.ignored.size() < kMaxIgnoredNotes) out_.ignored.push_back(why);
    }

    GuestTest* planned_test(std::string_view name) {
        if (!planned_.count(std::string(name))) {
            refuse_line(fmt::format("a line for a test the host did not plan ({})", terminal_name(name)));
            return nullptr;
        }
        return &out_.tests[std::string(name)];
    }

    static std::string terminal_name(std::string_view s) {
        std::string out(s.substr(0, 40));
        for (char& c : out)
            if (!std::isprint(static_cast<unsigned char>(c))) c = '?';
        return out;
    }

    void marker(const std::vector<std::string_view>& ws) {
        const std::string_view kind = ws.front();
        if (kind != "HLVM-EOF") close_unterminated();
        if (kind == "HLVM-EOF") return close_payload();
        if (kind == "HLVM-OUTPUT" && ws.size() == 3) return open_payload(ws[1], "", ws[2]);
        if (kind == "HLVM-FILE" && ws.size() == 4) return open_payload(ws[1], ws[2], ws[3]);
        if (kind == "HLVM-RESULT" && ws.size() >= 2) return result(ws);
        if (kind == "HLVM-HELLO") return hello(ws);
        if (kind == "HLVM-DONE") {
            ++out_.done_markers;
            if (auto u = field(ws, 1, "uptime")) out_.done_uptime = seconds(*u);
            return;
        }
        if (kind == "HLVM-START") return;  // read by the progress watch (watch.cpp)
        refuse_line("an unknown or malformed marker");
    }

    void hello(const std::vector<std::string_view>& ws) {
        if (auto r = field(ws, 1, "release"); r && is_release(*r)) out_.release = std::string(*r);
        if (auto u = field(ws, 1, "uptime")) out_.boot_uptime = seconds(*u);
    }

    void result(const std::vector<std::string_view>& ws) {
        GuestTest* t = planned_test(ws[1]);
        if (!t) return;
        if (auto rc = field(ws, 2, "rc")) {
            auto v = number<int>(*rc);
            if (v && *v >= 0 && *v <= 255) t->rc = *v;
        }
        if (auto s = field(ws, 2, "secs")) t->secs = seconds(*s);
    }

    void open_payload(std::string_view test, std::string_view name, std::string_view bytes) {
        GuestTest* t = planned_test(test);
        // A payload of an unplanned test is still consumed to its HLVM-EOF, unused.
        payload_ = std::make_unique<Payload>(
            Payload{t, std::string(name), 0, {}, t ? "" : "unplanned test"});
        if (!t) return;
        const std::string label = name.empty() ? "output.txt" : terminal_name(name);
        auto size = number<std::size_t>(bytes);
        if (!name.empty() && !is_plain_name(name))
            payload_->refused = fmt::format("{}: not a plain file name", label);
        else if (!name.empty() && t->files.size() >= limits_.max_files_per_test)
            payload_->refused = fmt::format("{}: more than {} files", label, limits_.max_files_per_test);
        else if (!size)
            payload_->refused = fmt::format("{}: no byte count", label);
        else if (*size > limits_.max_file_bytes)
            payload_->refused = fmt::format("{}: announced {} bytes, more than the limit of {}", label, *size,
                                            limits_.max_file_bytes);
        else
            payload_->announced = *size;
    }

    void append(std::string_view l) {
        if (!payload_->refused.empty()) return;
        if ((payload_->text.size() + l.size()) / 4 * 3 > payload_->announced + 3) {
            payload_->refused = fmt::format("{}: more data than the {} bytes announced", label(), payload_->announced);
            payload_->text.clear();
            return;
        }
        payload_->text.append(l);
    }

    std::string label() const { return payload_->name.empty() ? "output.txt" : payload_->name; }

    void drop(const std::string& why) {
        if (payload_->test) payload_->test->transfer_errors.push_back(why);
    }

    void close_payload() {
        if (!payload_) return refuse_line("HLVM-EOF outside a payload");
        if (!payload_->refused.empty()) {
            drop(payload_->refused);
        } else if (auto bytes = base64_decode(payload_->text); !bytes) {
            drop(label() + ": not base64");
        } else if (bytes->size() != payload_->announced) {
            drop(fmt::format("{}: announced {} bytes, decoded {}", label(), payload_->announced, bytes->size()));
        } else if (decoded_total_ + bytes->size() > limits_.max_total_bytes) {
            drop(fmt::format("{}: past the limit of {} bytes for a whole run", label(), limits_.max_total_bytes));
        } else {
            decoded_total_ += bytes->size();
            if (payload_->name.empty())
                payload_->test->output = std::move(*bytes);
            else
                payload_->test->files[payload_->name] = std::move(*bytes);
        }
        payload_.reset();
    }

    void close_unterminated() {
        if (!payload_) return;
        if (payload_->refused.empty()) payload_->refused = label() + ": no HLVM-EOF";
        drop(payload_->refused);
        payload_.reset();
    }
};

std::string join_lines(const std::vector<std::string>& lines) {
    std::string out;
    for (auto& l : lines) out += l + "\n";
    return out;
}

std::string seconds_text(double s) { return fmt::format("{:.2f}\n", s); }

Status make_dir(const fs::path& p) {
    std::error_code ec;
    fs::create_directory(p, ec);
    if (ec) return make_error("cannot create " + p.string(), ec.value());
    if (!fs::is_directory(fs::symlink_status(p)))
        return make_error(p.string() + " is not a directory hotline created");
    return ok_status();
}

Status write_test(const std::string& name, const GuestTest& t, const fs::path& dir) {
    if (auto s = make_dir(dir); !s) return s;
    std::vector<std::pair<std::string, std::string>> files;
    if (t.rc) files.emplace_back("rc", fmt::format("{}\n", *t.rc));
    if (t.secs) files.emplace_back("secs", seconds_text(*t.secs));
    if (t.output) files.emplace_back("output.txt", *t.output);
    if (!t.transfer_errors.empty()) files.emplace_back("transfer-errors", join_lines(t.transfer_errors));
    for (auto& [file, data] : files)
        if (auto s = write_file_atomic((dir / file).string(), data); !s) return s;
    if (t.files.empty()) return ok_status();
    if (auto s = make_dir(dir / "files"); !s) return s;
    for (auto& [file, data] : t.files)
        if (auto s = write_file_atomic((dir / "files" / file).string(), data); !s)
            return make_error(fmt::format("test {}: {}", name, s.error().message()));
    return ok_status();
}

}  // namespace

bool is_plain_name(std::string_view name) {
    if (name.empty() || name.size() > kMaxNameBytes || name == "." || name == "..") return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    });
}

GuestChannel decode_channel(std::string_view text, const std::vector<std::string>& planned_tests,
                            const ChannelLimits& limits) {
    GuestChannel out;
    Decoder d(planned_tests, limits, out);
    while (!text.empty()) {
        auto nl = text.find('\n');
        d.line(text.substr(0, nl));
        text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    }
    d.finish();
    return out;
}

Status write_channel_results(const GuestChannel& channel, const std::string& out) {
    const fs::path dir(out);
    std::vector<std::pair<std::string, std::string>> files;
    if (!channel.release.empty()) files.emplace_back("guest-release", channel.release + "\n");
    if (channel.boot_uptime) files.emplace_back("guest-uptime", seconds_text(*channel.boot_uptime));
    if (channel.done_uptime) files.emplace_back("guest-done-uptime", seconds_text(*channel.done_uptime));
    for (auto& [file, data] : files)
        if (auto s = write_file_atomic((dir / file).string(), data); !s) return s;
    for (auto& [name, test] : channel.tests) {
        // Planned names are the host's own; checked again so no caller can pass a path.
        if (!is_plain_name(name)) return make_error("a planned test name is not a plain name: " + name);
        if (auto s = write_test(name, test, dir / name); !s) return s;
    }
    return ok_status();
}

}  // namespace hotline::vm
