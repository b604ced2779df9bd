# SPDX-License-Identifier: GPL-2.0
#
# Out-of-tree build of rpcrdma_rs.ko against a Rust-enabled kernel build directory.
#
#   make KDIR=<kernel build dir>            build the module
#   make KDIR=<kernel build dir> CLIPPY=1   build it with clippy's lints
#   make KDIR=... clean
#
# KDIR defaults to the running kernel's build directory, then to the kernel that
# scripts/build-kernel.sh built last. The toolchain must be the one the kernel was built with
# (LLVM=-19, Debian's rustc); scripts/lib.sh sets it up, and `scripts/build-module.sh` does all of it.

KDIR ?= $(shell cat $(HOME)/.cache/rpcrdma-rs/kernel-current 2>/dev/null || \
	echo /lib/modules/$$(uname -r)/build)
LLVM ?= -19
export LLVM

# The toolchain of scripts/lib.sh, unless given: Debian's rustc (rustup's has no rust-src and
# would not match the kernel's), bindgen from the project's cache, libclang 19.
RPCRDMA_CACHE ?= $(HOME)/.cache/rpcrdma-rs
RUSTC ?= $(firstword $(wildcard /usr/bin/rustc) rustc)
CLIPPY_DRIVER ?= $(firstword $(wildcard /usr/bin/clippy-driver) clippy-driver)
BINDGEN ?= $(firstword $(wildcard $(RPCRDMA_CACHE)/cargo/bin/bindgen) bindgen)
LIBCLANG_PATH ?= $(wildcard /usr/lib/llvm-19/lib)
export LIBCLANG_PATH

all: modules

modules clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) RUSTC=$(RUSTC) CLIPPY_DRIVER=$(CLIPPY_DRIVER) \
		BINDGEN=$(BINDGEN) $@

rustfmt rustfmtcheck:
	rustfmt --edition 2021 --config-path $(CURDIR)/.rustfmt.toml \
		--color never $(if $(filter rustfmtcheck,$@),--check) $(shell find rust tools/rpcrdma-decode -name '*.rs' -not -path '*/target/*' -not -name 'bindings_generated.rs')

.PHONY: all modules clean rustfmt rustfmtcheck
