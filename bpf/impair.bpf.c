// SPDX-License-Identifier: (MIT OR Apache-2.0) OR GPL-2.0
/* Impairments of the lab's DUT (`linerate lab impair`), on tc clsact egress of the DUT's veth
 * toward the sink: loss and duplication drawn per frame with bpf_get_prandom_u32 against
 * thresholds out of 2^32, and, when the delay line runs, a diversion of every frame into the
 * delay line's veth. The delay line sends frames back out of this same interface with
 * IMPAIR_MARK_DELAYED set, so they pass; duplicates re-enter this hook with IMPAIR_MARK_CLONE
 * so they are neither dropped nor duplicated again. What follows this hook (a tbf qdisc for
 * rate and queue limit) sees every frame that survives. Layouts shared with crates/lab. */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#define IMPAIR_MARK_CLONE 0x4c520001
#define IMPAIR_MARK_DELAYED 0x4c520002

/* Read-only data, set at load (crates/lab: ImpairRodata). A threshold t drops or duplicates
 * with probability t / 2^32. */
struct impair_config {
	__u32 loss;
	__u32 duplicate;
	/* The ifindex frames are diverted to for the delay line; 0 = no delay line. */
	__u32 divert_ifindex;
	__u32 pad;
};

const volatile struct impair_config config = {};

/* Layout shared with crates/lab (ImpairCounters). */
struct impair_counters {
	__u64 seen;
	__u64 dropped;
	__u64 duplicated;
	__u64 diverted;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct impair_counters);
} impair_counters SEC(".maps");

SEC("tc")
int impair(struct __sk_buff *skb)
{
	__u32 key = 0;
	struct impair_counters *c = bpf_map_lookup_elem(&impair_counters, &key);

	/* ARP is the router's own resolution, not the test's traffic: never impaired or counted,
	 * so a lossy link does not also cost the router its neighbour. */
	if (skb->protocol == __builtin_bswap16(0x0806))
		return TC_ACT_OK;
	if (skb->mark == IMPAIR_MARK_DELAYED) {
		skb->mark = 0;
		return TC_ACT_OK;
	}
	if (skb->mark == IMPAIR_MARK_CLONE) {
		skb->mark = 0;
		goto divert;
	}
	if (c)
		c->seen += 1;
	if (config.loss && bpf_get_prandom_u32() < config.loss) {
		if (c)
			c->dropped += 1;
		return TC_ACT_SHOT;
	}
	if (config.duplicate && bpf_get_prandom_u32() < config.duplicate) {
		skb->mark = IMPAIR_MARK_CLONE;
		if (bpf_clone_redirect(skb, skb->ifindex, 0) == 0 && c)
			c->duplicated += 1;
		skb->mark = 0;
	}
divert:
	if (config.divert_ifindex) {
		if (c)
			c->diverted += 1;
		return bpf_redirect(config.divert_ifindex, 0);
	}
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
