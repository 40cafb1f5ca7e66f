// SPDX-License-Identifier: (MIT OR Apache-2.0) OR GPL-2.0
/* The fast DUT of the lab (`linerate lab up --dut xdp`): every frame that reaches the DUT's
 * ingress veth leaves through the devmap's one entry (the DUT's egress veth toward the sink),
 * untouched, without the kernel stack, qdiscs or tc. Frames are counted per CPU. Loaded and
 * filled by crates/lab (the devmap entry is the egress ifindex, set after load). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* Layout shared with linerate_xdp::SinkCounters: two u64, no padding. */
struct dut_counters {
	__u64 packets;
	__u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} dut_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dut_counters);
} dut_counters SEC(".maps");

SEC("xdp")
int dut_fwd(struct xdp_md *ctx)
{
	__u32 key = 0;
	struct dut_counters *c = bpf_map_lookup_elem(&dut_counters, &key);

	if (c) {
		c->packets += 1;
		c->bytes += (__u64)(ctx->data_end - ctx->data);
	}
	/* An empty entry (not filled yet) drops rather than passing frames to the stack. */
	return bpf_redirect_map(&dut_ports, 0, XDP_DROP);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
