#!/bin/sh
# An OCI container image of the Debian package, built with Debian's tools
# and no container daemon:
#
#   scripts/image.sh DEB OUT.tar
#
# mmdebstrap makes a Debian 12 root (variant apt) with the package
# installed by apt (which brings exactly its Depends); umoci lays it out as
# an OCI image (one layer, tag `streamdrill`), with streamdrill as the entry
# point and /work as the working folder; OUT.tar is that layout as an
# archive (`podman load -i OUT.tar`, `skopeo copy oci-archive:OUT.tar ...`).
# Needs root (mmdebstrap's root mode, device nodes in the layer).
set -eu
deb=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
out=$2
version=$(dpkg-deb -f "$deb" Version)
work=$(mktemp -d /tmp/streamdrill-image-XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
mkdir -p "$work/pkg"
cp "$deb" "$work/pkg/streamdrill.deb"
# shellcheck disable=SC2016 # mmdebstrap runs each hook with the root as $1
mmdebstrap --quiet --variant=apt --include=ca-certificates \
    --customize-hook="copy-in $work/pkg/streamdrill.deb /tmp" \
    --customize-hook='chroot "$1" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends /tmp/streamdrill.deb' \
    --customize-hook='rm -f "$1/tmp/streamdrill.deb"; chroot "$1" apt-get clean; rm -rf "$1"/var/lib/apt/lists/*; mkdir -p "$1/work"' \
    bookworm "$work/rootfs.tar" "deb http://deb.debian.org/debian bookworm main"
umoci init --layout "$work/oci"
umoci new --image "$work/oci:streamdrill"
umoci unpack --image "$work/oci:streamdrill" "$work/bundle"
tar -xf "$work/rootfs.tar" -C "$work/bundle/rootfs"
umoci repack --image "$work/oci:streamdrill" "$work/bundle"
umoci config --image "$work/oci:streamdrill" --author "streamdrill developers" --config.entrypoint /usr/bin/streamdrill \
    --config.cmd --help --config.workingdir /work --config.env LANG=C.UTF-8 \
    --config.label "org.opencontainers.image.title=streamdrill" --config.label "org.opencontainers.image.version=$version"
umoci gc --layout "$work/oci"
tar -cf "$out.tmp" -C "$work/oci" .
mv "$out.tmp" "$out"
echo "image: $out (OCI layout, tag streamdrill, $(du -h "$out" | cut -f1))"
