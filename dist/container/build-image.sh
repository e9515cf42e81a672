#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Builds the hotline container image from Debian packages only: a minimal
# Debian root (debootstrap --variant=minbase), hotline's own .deb installed in it
# with apt (so its dependencies come from Debian, as on a host), then imported
# into podman's store.  No Dockerfile base image is pulled from anywhere.
#
# usage: dist/container/build-image.sh BUILD_DIR [IMAGE]     (root; IMAGE default hotline:VERSION)
# Needs: debootstrap, podman (both in Debian), and a Debian mirror apt can reach.
set -euo pipefail
build=$(cd "$1" && pwd)
suite=${HOTLINE_IMAGE_SUITE:-bookworm}
mirror=${HOTLINE_IMAGE_MIRROR:-http://deb.debian.org/debian}

(cd "$build" && cpack -G DEB >/dev/null)
deb=$(ls "$build"/hotline_*.deb | head -1)
version=$(dpkg-deb -f "$deb" Version)
image=${2:-hotline:$version}
root=$(mktemp -d /var/tmp/hotline-image.XXXXXX)
trap 'umount -R "$root/proc" 2>/dev/null || true; rm -rf "$root"' EXIT

debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$build/image-debootstrap.log" 2>&1 ||
    { tail -20 "$build/image-debootstrap.log" >&2; exit 1; }
cp "$deb" "$root/tmp/"
# A container is not read by people: no manuals, documentation or translations
# (dpkg leaves them out of every package installed from here on; the copyright
# files stay, as Debian's own slim images keep them).
cat >"$root/etc/dpkg/dpkg.cfg.d/01-hotline-image" <<'CFG'
path-exclude=/usr/share/man/*
path-exclude=/usr/share/info/*
path-exclude=/usr/share/doc/*
path-include=/usr/share/doc/*/copyright
path-exclude=/usr/share/locale/*
path-exclude=/usr/share/lintian/*
CFG
rm -rf "$root/usr/share/man/"* "$root/usr/share/info/"* "$root/usr/share/locale/"*
find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete 2>/dev/null || true
# policy-rc.d: nothing may start a service while the image is assembled.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
chroot "$root" sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends /tmp/$(basename "$deb") && apt-get clean" \
    >"$build/image-apt.log" 2>&1 || { tail -20 "$build/image-apt.log" >&2; exit 1; }
rm -rf "$root/tmp/"*.deb "$root/var/lib/apt/lists/"* "$root/usr/sbin/policy-rc.d"
# The exporter's port (docs/metrics.md); inside a pod it listens on every address.
tar -C "$root" -c . | podman import \
    --change 'ENTRYPOINT ["/usr/bin/hotline"]' \
    --change 'CMD ["serve", "--config", "/etc/hotline/serve.toml", "--listen", ":10464"]' \
    --change 'EXPOSE 10464/tcp' \
    --change "LABEL org.opencontainers.image.version=$version" \
    - "$image" >/dev/null
echo "$image: $(( $(podman image inspect --format '{{.Size}}' "$image") / 1000000 )) MB" >&2
echo "$image"
