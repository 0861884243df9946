#!/bin/sh
# Fetch the jars a pom.xml lists from Maven Central into a folder, once:
# the folder gets a .complete-<checksum of the pom> mark, and a second call
# with the mark present does nothing (a changed pom fetches again). Shared
# by kafka.sh, connect.sh and flink.sh.
#
#   fetch-jars.sh POM DIR [WHAT [MVN-ARG...]]
#                   WHAT names them in the error message; MVN-ARGs go to
#                   Maven's copy-dependencies (a pom's property, an exclusion)
set -eu
pom=$1; dir=$2; what=${3:-the jars}
shift $(($# < 3 ? $# : 3))
mark="$dir/.complete-$(cksum <"$pom" | cut -d' ' -f1)"
if [ -f "$mark" ]; then exit 0; fi
command -v mvn >/dev/null || { echo "fetch-jars.sh: mvn is needed to fetch $what" >&2; exit 1; }
rm -rf "$dir"
mvn -q -f "$pom" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$dir" "$@" >&2
touch "$mark"
