// SPDX-License-Identifier: (MIT OR Apache-2.0) OR GPL-2.0
/* The sink: counts every frame that reaches the interface, per CPU, and drops it (ARP and the
 * link's IEEE 802.1 control frames aside).
 * Read by crates/xdp (Sink::counters, PinnedSink::counters), which sums the CPUs. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* Layout shared with crates/xdp/src/linux.rs (RawCounters): two u64, no padding. */
struct sink_counters {
	__u64 packets;
	__u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sink_counters);
} sink_counters SEC(".maps");

SEC("xdp")
int sink(struct xdp_md *ctx)
{
	__u32 key = 0;
	struct sink_counters *c = bpf_map_lookup_elem(&sink_counters, &key);
	__u8 *data = (void *)(long)ctx->data;
	__u8 *end = (void *)(long)ctx->data_end;

	/* ARP goes to the namespace's stack, which holds the receiver's address and answers: a
	 * router in front resolves the receiver as it would any host. Not a frame of the test. */
	if (data + 14 <= end && data[12] == 0x08 && data[13] == 0x06)
		return XDP_PASS;
	/* So do the link's own IEEE 802.1 frames (01:80:c2:00:00:00 to 0f: LLDP, LACP, STP), to
	 * an agent behind the receiver (an LLDP agent's macvlan). A test frame's destination is
	 * unicast: its first byte ends the test. */
	if (data + 14 <= end && data[0] == 0x01 && data[1] == 0x80 && data[2] == 0xc2 &&
	    data[3] == 0 && data[4] == 0 && data[5] < 0x10)
		return XDP_PASS;
	if (c) {
		/* Per-CPU entry: only this CPU writes it, no atomics needed. */
		c->packets += 1;
		c->bytes += (__u64)(ctx->data_end - ctx->data);
	}
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
