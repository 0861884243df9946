#!/bin/sh
# The OCI image of `make image` used as a CI job would use it: unpacked by
# umoci into a runtime bundle (what podman or a CI runner does), its
# config naming streamdrill as the entry point, then the bundle's root
# running the installed parcel drill (exit 0, a report written) and
# checking every installed drill. Needs root (chroot, mount).
#
#   tests/image/test_image.sh build/streamdrill-oci.tar
set -eu
img=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
work=$(mktemp -d /tmp/streamdrill-image-test-XXXXXX)
rootfs="$work/bundle/rootfs"
cleanup() {
    umount "$rootfs/proc" "$rootfs/dev" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT INT TERM
mkdir "$work/oci"
tar -xf "$img" -C "$work/oci"
umoci unpack --image "$work/oci:streamdrill" "$work/bundle" >/dev/null
python3 - "$work/bundle/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
args, cwd = c["process"]["args"], c["process"]["cwd"]
assert args[0] == "/usr/bin/streamdrill", args
assert cwd == "/work", cwd
PY
mount -t proc proc "$rootfs/proc"
mount --bind /dev "$rootfs/dev"
inside() { chroot "$rootfs" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }
inside streamdrill --version | head -1
inside sh -c 'streamdrill check /usr/share/streamdrill/scenarios/*.drill' >/dev/null
rc=0
inside sh -c 'cd /work && streamdrill run /usr/share/streamdrill/scenarios/parcel-restart.drill --out /work/out --quiet' || rc=$?
[ "$rc" = 0 ] || { echo "test_image: the parcel drill exited $rc inside the image" >&2; exit 1; }
inside sh -c 'grep -q "\"verdict\": \"pass\"" /work/out/parcel-restart/summary.json && test -s /work/out/parcel-restart/report.html'
echo "test_image: $(du -h "$img" | cut -f1) OCI image unpacked by umoci, entry point streamdrill, the parcel drill passed inside it"
