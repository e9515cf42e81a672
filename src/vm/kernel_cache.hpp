// SPDX-License-Identifier: Apache-2.0
// The guest kernel of a run: an alias of the Debian archive (kernels.hpp), a
// linux-image .deb, or a bzImage/vmlinux, resolved to a directory holding
// vmlinux, modules/, release and package.
//
// Cache layout (HOTLINE_VM_CACHE, default ~/.cache/hotline):
//   apt/SUITE/        private sources.list, lists/ and apt caches for one suite
//   kernels/PKG_VER/  vmlinux, config, release, package, modules/ (the few modules
//                     the guest loads, uncompressed), sha256sums; complete once `ok`
//                     holds the current cache format (an older one is unpacked again)
//   kernels/local-H/  a .deb given as --kernel, H the start of its content's SHA-256
//   kernels/ALIAS     which PKG_VER the alias resolved to last time
// A cached alias is reused without touching the network; HOTLINE_VM_REFRESH=1
// resolves it again against the archive (and downloads a newer kernel if any).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "hotline/base/result.hpp"
#include "hotline/base/signals.hpp"

namespace hotline::vm {

// Bumped whenever a kernel directory gains something: older ones are unpacked again.
inline constexpr int kCacheFormat = 2;

// Modules the guest loads at boot (everything else the tests use is built in):
// veth, for the scenarios' two namespaces.  Paths under lib/modules/RELEASE/kernel/.
inline const std::vector<std::string> kGuestModules{"drivers/net/veth.ko"};

// The directory holding lib/guest-init.sh: installed beside the binary
// (PREFIX/libexec/hotline/vm), else the source tree the binary was built from.
Result<std::string> libexec_vm_dir();

// The kernel's directory; a kernel image's is made under WORK.  A shutdown
// signal stops a download.
Result<std::string> kernel_dir(const std::string& kernel, const std::string& moddir,
                               const std::string& work, ShutdownSignals& signals);

// A cache entry's name as an alias file may give it: one plain component.
bool valid_entry_name(const std::string& name);

// The directory of the cache the alias file CACHE/kernels/KEY names; an error
// when there is none or it names anything but a plain entry of the cache.
Result<std::string> alias_dir(const std::string& cache, const std::string& key);

// Writes DIR/sha256sums for FILES (paths relative to DIR).
Status write_digests(const std::string& dir, const std::vector<std::string>& files);

// DIR is complete for this cache format and matches its own sha256sums, which
// must exist and name vmlinux (a regular file, not a link): a damaged cache is
// fetched again, never booted.
Status verify_kernel_dir(const std::string& dir);

// Where a linux-image .deb given as --kernel is unpacked, keyed by its content.
Result<std::string> deb_cache_dir(const std::string& cache, const std::string& deb);

// What the cache's children are asked between polls: stop now?
using StopAsked = std::function<bool()>;

// Unpacks boot/ and the guest's modules of DEBS into DIR and cuts out the ELF
// vmlinux (kernel_unpack.cpp).  DIR appears complete or not at all.
Status unpack_debs(const std::string& dir, const std::vector<std::string>& debs,
                   const StopAsked& stop);

// The ELF vmlinux inside a bzImage: the payload is xz (Debian <= 6.1), zstd
// (6.12) or gzip; each compression magic is tried until an ELF comes out.
Status extract_vmlinux(const std::string& vmlinuz, const std::string& out, const StopAsked& stop);

// FILE (.ko, .ko.xz, .ko.zst, .ko.gz) uncompressed into OUT: busybox insmod wants them plain.
Status decompress_module(const std::string& file, const std::string& out, const StopAsked& stop);

// A module of kGuestModules under ROOT (any depth, compressed or not), or "".
std::string find_module(const std::string& root, const std::string& module);

// The archive kernel of SUITE fetched and unpacked into the cache (kernel_apt.cpp);
// its directory.
Result<std::string> fetch_archive_kernel(const std::string& cache, const std::string& suite,
                                         const StopAsked& stop);

}  // namespace hotline::vm
