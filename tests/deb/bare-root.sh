#!/bin/sh
# A bare Debian 12 root for the tests that install streamdrill the way a
# user's machine or a CI container (debian:bookworm) would: made once with
# mmdebstrap (variant apt: no compiler, no -dev package, no Python) and kept
# as a tarball in .cache/deb-test/, unpacked into a fresh folder per use.
#
#   bare-root.sh create DIR   unpack into DIR (new), mount /proc and /dev
#   bare-root.sh destroy DIR  unmount and remove DIR (only a root this made)
#
# Needs root (chroot, mount).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cache="$root/.cache/deb-test"
tarball="$cache/bookworm-apt.tar"
[ "$(id -u)" = 0 ] || { echo "bare-root.sh: needs root (chroot and mount)" >&2; exit 1; }
case ${1:-} in
create)
    dir=$2
    mkdir -p "$cache"
    if [ ! -s "$tarball" ]; then
        mmdebstrap --quiet --variant=apt --include=ca-certificates bookworm "$cache/bookworm-apt.tmp.tar" \
            "deb http://deb.debian.org/debian bookworm main" >"$cache/mmdebstrap.log" 2>&1 \
            || { tail -20 "$cache/mmdebstrap.log" >&2; exit 1; }
        mv "$cache/bookworm-apt.tmp.tar" "$tarball"
    fi
    mkdir "$dir"
    tar -xf "$tarball" -C "$dir"
    touch "$dir/.streamdrill-bare-root"
    mount -t proc proc "$dir/proc"
    mount --bind /dev "$dir/dev"
    cp /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null || true
    # the host's own certificate authorities (a proxy in front of the
    # registries), so the root reaches PyPI the way the host does
    if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
        cp /usr/local/share/ca-certificates/*.crt "$dir/usr/local/share/ca-certificates/"
        chroot "$dir" update-ca-certificates >/dev/null 2>&1
    fi
    ;;
destroy)
    dir=$2
    [ -e "$dir/.streamdrill-bare-root" ] || { echo "bare-root.sh: $dir is not a root bare-root.sh made: left alone" >&2; exit 1; }
    # every mount below DIR, deepest first (a bind of a source tree included)
    awk -v d="$(cd "$dir" && pwd)" '$2 == d || index($2, d "/") == 1 {print $2}' /proc/mounts | sort -r | while read -r m; do
        umount "$m" 2>/dev/null || umount -l "$m"
    done
    if awk -v d="$(cd "$dir" && pwd)" 'index($2, d "/") == 1 {found=1} END {exit !found}' /proc/mounts; then
        echo "bare-root.sh: something is still mounted below $dir: not removed" >&2; exit 1
    fi
    rm -rf "$dir"
    ;;
*) echo "usage: bare-root.sh create DIR | destroy DIR" >&2; exit 2 ;;
esac
