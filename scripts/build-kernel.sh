#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build the test kernel: Debian's linux-source, tinyconfig + scripts/kernel/rpcrdma.config, the
# Debian Rust toolchain and LLVM 19. The build lives in $RPCRDMA_CACHE/build/<key>, where the key
# hashes the source version, the fragment(s) and the toolchain versions; a second run with the
# same key does nothing. Prints the build directory (usable as KDIR and by vng --run).
#
#   scripts/build-kernel.sh [--debug | --perf]
#
# --debug builds the debug variant: scripts/kernel/debug.config (KASAN, lockdep, kmemleak,
# DMA-API debugging, UBSAN, ...) merged on top, under its own key; kernel_build_dir (lib.sh)
# then returns it when RPCRDMA_KERNEL=debug. The normal build and its key are unaffected.
# --perf builds the benchmark's variant: scripts/kernel/perf.config (built for speed, as a
# distribution kernel is) on top, under its own key (RPCRDMA_KERNEL=perf).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

variant=normal
case "${1:-}" in
--debug) variant=debug ;;
--perf) variant=perf ;;
"") ;;
*) die "usage: $0 [--debug | --perf]" ;;
esac
src=$("$RPCRDMA_TOP/scripts/fetch-kernel.sh")
frags=("$RPCRDMA_TOP/scripts/kernel/rpcrdma.config")
[ $variant = normal ] || frags+=("$RPCRDMA_TOP/scripts/kernel/$variant.config")
[ -x "$BINDGEN" ] || die "bindgen missing: run scripts/install-deps.sh"
toolchain="$(/usr/bin/rustc --version) | $(clang-19 --version | head -1) | $("$BINDGEN" --version)"
# The normal key hashes exactly what it always hashed (one fragment), so it stays cached.
key=$( { basename "$src"; cat "${frags[@]}"; echo "$toolchain"; } | sha256sum | cut -c1-16)
out=$RPCRDMA_CACHE/build/$key

if [ -f "$out/.built" ]; then
	log "kernel build $key is cached"
else
	log "building kernel $(basename "$src") into $out (key $key)"
	mkdir -p "$out"
	cd "$src"
	"${KMAKE[@]}" O="$out" tinyconfig >/dev/null
	scripts/kconfig/merge_config.sh -m -O "$out" "$out/.config" "${frags[@]}" >/dev/null
	"${KMAKE[@]}" O="$out" olddefconfig >/dev/null
	# Every option of the fragments must have survived olddefconfig.
	bad=0
	while read -r line; do
		case "$line" in CONFIG_*=*) ;; *) continue ;; esac
		opt=${line%%=*}; val=${line#*=}
		if [ "$val" = n ]; then
			grep -q "^$opt=" "$out/.config" && { log "$opt should be off"; bad=1; }
		else
			grep -qx "$line" "$out/.config" || { log "$line did not stick"; bad=1; }
		fi
	done < <(cat "${frags[@]}")
	[ $bad = 0 ] || die "config fragment not satisfied (see above)"
	"${KMAKE[@]}" O="$out" rustavailable >/dev/null
	start=$(date +%s)
	"${KMAKE[@]}" O="$out" -j"$JOBS" bzImage modules > "$out/build.log" 2>&1 ||
		{ tail -40 "$out/build.log"; die "kernel build failed (log: $out/build.log)"; }
	# Modules installed into the build dir, as vng --run expects.
	"${KMAKE[@]}" O="$out" INSTALL_MOD_PATH="$out/.mods" modules_install >/dev/null 2>&1 || true
	log "kernel built in $(( $(date +%s) - start )) s"
	echo "$key $(basename "$src") $toolchain" > "$out/.built"
fi
echo "$out" > "$RPCRDMA_CACHE/$(kernel_pointer $variant)"
echo "$out"
