// SPDX-License-Identifier: (MIT OR Apache-2.0) OR GPL-2.0
/* A port that only transmits, behaving as its emulated hosts: answers ARP, neighbour
 * solicitations and pings for them and learns their neighbours (hosts.h); every other frame is
 * counted and dropped, so nothing that reaches a test port goes on to the kernel's stack but
 * what a host's control plane is sent (hosts_to_stack). */
#include "hosts.h"

SEC("xdp")
int host(struct xdp_md *ctx)
{
	int verdict = hosts_answer(ctx);
	struct host_counters *c;

	if (verdict == XDP_TX)
		return verdict;
	if (hosts_to_stack(ctx))
		return XDP_PASS;
	if (verdict != HOSTS_NOT_MINE)
		return verdict;
	c = hosts_counters();
	if (c)
		c->dropped += 1;
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
