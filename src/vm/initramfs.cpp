// SPDX-License-Identifier: Apache-2.0
#include "initramfs.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "hotline/base/util.hpp"
#include "process.hpp"

namespace hotline::vm {

namespace fs = std::filesystem;

namespace {

constexpr unsigned kDirMode = 0755;
// The root file system's mount points and the runner's directories.
constexpr const char* kGuestDirs[] = {"bin", "dev",  "proc",         "sys",       "tmp",
                                      "run", "hlvm", "hlvm/modules", "hlvm/tests"};

std::string pad4(std::size_t n) { return std::string((4 - n % 4) % 4, '\0'); }

std::string relative(const std::string& abs) {
    std::size_t i = abs.find_first_not_of('/');
    return i == std::string::npos ? std::string() : abs.substr(i);
}

Status copy_member(std::ofstream& out, const ArchiveEntry& e, const std::string& name,
                   unsigned ino) {
    std::uint64_t size = e.data.size();
    std::ifstream in;
    if (!e.source.empty()) {
        in.open(e.source, std::ios::binary);
        std::error_code ec;
        size = fs::file_size(e.source, ec);
        if (!in || ec) return make_error("cannot read " + e.source + " for the initramfs");
    }
    const unsigned type = e.directory ? S_IFDIR : S_IFREG;
    out << cpio_header(name, type | e.mode, e.directory ? 0 : size, ino);
    if (e.directory) return ok_status();
    if (e.source.empty()) {
        out << e.data;
    } else {
        std::vector<char> buf(1 << 20);
        std::uint64_t left = size;
        while (left > 0 && in.read(buf.data(), static_cast<std::streamsize>(
                                                   std::min<std::uint64_t>(left, buf.size())))) {
            out.write(buf.data(), in.gcount());
            left -= static_cast<std::uint64_t>(in.gcount());
        }
        if (left != 0) return make_error(e.source + " changed while it was put into the initramfs");
    }
    out << pad4(size);
    return ok_status();
}

Status add_binary(ArchiveTree& tree, const std::string& file, const std::string& name) {
    if (access(file.c_str(), X_OK) != 0)
        return make_error(file + " is not an executable (build the project first)");
    if (auto s = tree.add_copy("bin/" + name, file); !s) return s;
    for (const auto& lib : ldd_libraries(file)) {
        if (tree.contains(relative(lib))) continue;
        if (auto s = tree.add_copy(relative(lib), lib); !s)
            return make_error(fmt::format("cannot copy {} (needed by {})", lib, file));
    }
    return ok_status();
}

Status add_tree(ArchiveTree& tree, const std::string& dir, const std::string& dest) {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        const std::string path = dest + "/" + fs::relative(it->path(), dir).string();
        if (it->is_directory()) {
            tree.add_directory(path);
        } else if (auto s = tree.add_copy(path, it->path().string()); !s) {
            return s;
        }
    }
    if (ec) return make_error("cannot read " + dir, ec.value());
    return ok_status();
}

}  // namespace

std::string cpio_header(const std::string& name, unsigned mode, std::uint64_t size, unsigned ino) {
    const unsigned nlink = (mode & S_IFMT) == S_IFDIR ? 2 : 1;
    // magic, ino, mode, uid, gid, nlink, mtime, filesize, devmajor, devminor,
    // rdevmajor, rdevminor, namesize (with its NUL), check.
    std::string h = fmt::format(
        "070701{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}", ino,
        mode, 0, 0, nlink, 0, static_cast<unsigned>(size), 0, 0, 0, 0,
        static_cast<unsigned>(name.size() + 1), 0);
    h += name;
    h += '\0';
    return h + pad4(h.size());
}

void ArchiveTree::add_parents(const std::string& path) {
    for (std::size_t slash = path.find('/'); slash != std::string::npos;
         slash = path.find('/', slash + 1))
        entries_.try_emplace(path.substr(0, slash), ArchiveEntry{kDirMode, true, {}, {}});
}

void ArchiveTree::add_directory(const std::string& path) {
    add_parents(path);
    entries_.try_emplace(path, ArchiveEntry{kDirMode, true, {}, {}});
}

void ArchiveTree::add_data(const std::string& path, std::string data, unsigned mode) {
    add_parents(path);
    entries_[path] = ArchiveEntry{mode, false, {}, std::move(data)};
}

Status ArchiveTree::add_copy(const std::string& path, const std::string& source) {
    struct stat st {};
    if (stat(source.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
        return make_error("cannot copy " + source, errno);
    add_parents(path);
    entries_[path] = ArchiveEntry{static_cast<unsigned>(st.st_mode & 07777), false, source, {}};
    return ok_status();
}

Status ArchiveTree::write(const std::string& out) const {
    std::ofstream f(out, std::ios::binary | std::ios::trunc);
    if (!f) return make_error("cannot write " + out);
    unsigned ino = 1;
    for (const auto& [name, e] : entries_)
        if (auto s = copy_member(f, e, name, ino++); !s) return s;
    f << cpio_header("TRAILER!!!", 0, 0, 0);
    f.flush();
    if (!f) return make_error("cannot write " + out, errno);
    return ok_status();
}

std::vector<std::string> ldd_libraries(const std::string& file) {
    // "name => /path (addr)" and "/lib64/ld-linux... (addr)"; a static binary
    // prints no path at all (and ldd fails on it).
    auto text = run_output({"ldd", file});
    std::vector<std::string> libs;
    if (!text) return libs;
    for (std::size_t at = text->find('/'); at != std::string::npos; at = text->find('/', at)) {
        if (at > 0 && (*text)[at - 1] != ' ' && (*text)[at - 1] != '\t') {
            at = text->find_first_of(" \n", at);
            continue;
        }
        std::size_t end = text->find_first_of(" \t\n", at);
        libs.push_back(text->substr(at, end - at));
        at = end;
    }
    return libs;
}

Status build_initramfs(const InitramfsInput& in, const std::string& out) {
    ArchiveTree tree;
    for (const char* d : kGuestDirs) tree.add_directory(d);
    if (auto s = add_binary(tree, in.busybox, "busybox"); !s) return s;
    for (const auto& bin : in.binaries)
        if (auto s = add_binary(tree, bin, fs::path(bin).filename().string()); !s) return s;
    // Its interpreter line is added here: busybox is the shell inside the guest only.
    tree.add_data("init", "#!/bin/busybox sh\n" + in.init_body, 0755);
    tree.add_data("hlvm/env", in.env, 0644);
    if (auto s = add_tree(tree, in.tests_dir, "hlvm/tests"); !s) return s;
    std::error_code ec;
    for (const auto& m : fs::directory_iterator(in.modules_dir, ec))
        if (m.path().extension() == ".ko")
            if (auto s = tree.add_copy("hlvm/modules/" + m.path().filename().string(),
                                       m.path().string());
                !s)
                return s;
    return tree.write(out);
}

}  // namespace hotline::vm
