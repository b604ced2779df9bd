// SPDX-License-Identifier: GPL-2.0
/*
 * The client's data path in the C shim: the page of a kernel address (static inlines). See
 * rpcrdma_shim_client.h; the decisions are made in rust/client.
 */

#include <linux/mm.h>
#include <linux/vmalloc.h>

#include "rpcrdma_shim.h"

struct page *rpcrdma_shim_virt_to_page(const void *p)
{
	return is_vmalloc_addr(p) ? vmalloc_to_page(p) : virt_to_page(p);
}
