#!/bin/sh
# The Debian package from a build made with Debian's hardening flags:
#   scripts/deb.sh BUILD WORK DEB VERSION ARCH
# BUILD holds that build (make BUILD=... all), WORK is a scratch folder,
# DEB the package to write. CC, CPPFLAGS, DEB_CFLAGS and DEB_LDFLAGS come
# from the Makefile's environment. `make install PREFIX=/usr` lays out the
# files; the reference pipelines are compiled again with the same flags
# (the checkout's copies keep the development flags); then Depends from
# dpkg-shlibdeps, md5sums, dpkg-deb, and lintian (an error fails it).
set -eu
build=$1 work=$2 deb=$3 version=$4 arch=$5
root="$work/root"
rm -rf "$work"
mkdir -p "$root/DEBIAN" "$work/src/debian"
make --no-print-directory BUILD="$build" install PREFIX=/usr DESTDIR="$(pwd)/$root"
# the reference pipelines link what the Makefile's REFWIRE_OBJ and
# REFWIRE_LIBS name (the objects relative to the build folder)
objs=
for o in $REFWIRE_OBJS; do objs="$objs $build/$o"; done
for p in refpipe refjoin reftxn; do
    # shellcheck disable=SC2086 # flag lists are word lists
    ${CC:-cc} $CPPFLAGS $DEB_CFLAGS -Wall -Wextra -Werror $DEB_LDFLAGS -o "$root/usr/libexec/streamdrill/$p" \
        -Iharness/base -Iharness/format "scenarios/pipelines/$p.c" $objs $REFWIRE_LIBS
done
(cd "$root" && strip --strip-unneeded --remove-section=.comment --remove-section=.note \
    usr/bin/streamdrill usr/libexec/streamdrill/refpipe usr/libexec/streamdrill/refjoin usr/libexec/streamdrill/reftxn)
gzip -9n "$root/usr/share/man/man1/streamdrill.1"
install -m 644 dist/debian/copyright "$root/usr/share/doc/streamdrill/copyright"
gzip -9nc dist/debian/changelog > "$root/usr/share/doc/streamdrill/changelog.gz"
chmod 644 "$root/usr/share/doc/streamdrill/changelog.gz"
printf 'Source: streamdrill\n\nPackage: streamdrill\nArchitecture: any\n' > "$work/src/debian/control"
depends=$(cd "$work/src" && dpkg-shlibdeps -O -e../root/usr/bin/streamdrill -e../root/usr/libexec/streamdrill/refpipe \
    -e../root/usr/libexec/streamdrill/refjoin -e../root/usr/libexec/streamdrill/reftxn | sed -n 's/^shlibs:Depends=//p')
size=$(du -sk "$root/usr" | cut -f1)
sed -e "s#@VERSION@#$version#" -e "s#@ARCH@#$arch#" -e "s#@DEPENDS@#$depends#" -e "s#@SIZE@#$size#" \
    dist/debian/control.in > "$root/DEBIAN/control"
(cd "$root" && find usr -type f -print0 | LC_ALL=C sort -z | xargs -0 md5sum > DEBIAN/md5sums)
chmod 644 "$root/DEBIAN/md5sums"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb"
lintian --fail-on error "$deb"
