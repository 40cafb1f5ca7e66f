// SPDX-License-Identifier: (MIT OR Apache-2.0) OR GPL-2.0
/* Pass-through: some drivers (i40e, ixgbe, virtio_net) refuse zero-copy AF_XDP TX unless an
 * XDP program sits on the queue. This one lets every received frame through to the stack. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
