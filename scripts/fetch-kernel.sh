#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Fetch Debian's linux-source package (default linux-source-7.3 from trixie-backports) through a
# private apt list directory, without touching the machine's apt sources, and unpack it into the
# cache. Prints the unpacked source directory. Idempotent.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

apt_dir=$RPCRDMA_CACHE/apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial" "$RPCRDMA_CACHE/src"
cat > "$apt_dir/sources.list" <<EOS
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $DEBIAN_MIRROR $KERNEL_SUITE main
EOS
APT=(apt-get -q -o APT::Sandbox::User=root -o Dir::Etc::SourceList="$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
	-o Dir::State::Lists="$apt_dir/lists" -o Dir::Cache::Archives="$apt_dir/archives"
	-o APT::Default-Release="$KERNEL_SUITE")

# Refresh the private index at most once a day.
if [ -z "$(find "$apt_dir/lists" -name '*Packages*' -mtime -1 2>/dev/null | head -1)" ]; then
	log "updating private apt index for $KERNEL_SUITE"
	"${APT[@]}" update >/dev/null
fi
ver=$(apt-cache -o Dir::Etc::SourceList="$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null \
	-o Dir::State::Lists="$apt_dir/lists" show "$KERNEL_PKG" 2>/dev/null |
	awk '/^Version:/ {print $2; exit}')
[ -n "$ver" ] || die "$KERNEL_PKG not found in $KERNEL_SUITE"
dest=$RPCRDMA_CACHE/src/$KERNEL_PKG-$ver
if [ ! -f "$dest/.unpacked" ]; then
	log "downloading $KERNEL_PKG $ver"
	deb_dir=$apt_dir/debs; mkdir -p "$deb_dir"
	(cd "$deb_dir" && "${APT[@]}" download "$KERNEL_PKG=$ver" >/dev/null)
	deb=$(ls "$deb_dir"/"${KERNEL_PKG}"_*.deb | grep -F "$(echo "$ver" | sed 's/:/%3a/')" | head -1)
	rm -rf "$dest" "$dest.tmp"; mkdir -p "$dest.tmp"
	dpkg-deb -x "$deb" "$dest.tmp"
	tarball=$(ls "$dest.tmp"/usr/src/linux-source-*.tar.* | head -1)
	log "unpacking $(basename "$tarball")"
	tar -C "$dest.tmp" -xf "$tarball"
	mv "$dest.tmp"/linux-source-*/ "$dest"
	rm -rf "$dest.tmp"
	touch "$dest/.unpacked"
fi
echo "$dest"
