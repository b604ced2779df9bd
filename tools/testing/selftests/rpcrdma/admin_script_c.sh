#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# admin_script.sh against the kernel's C rpcrdma.ko: the reference showing that the
# administrator's script, and the test's expectations, are right for the C module.
RPCRDMA_MODULE=c exec bash "$(dirname "$0")/admin_script.sh"
