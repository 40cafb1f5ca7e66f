// SPDX-License-Identifier: (MIT OR Apache-2.0) OR GPL-2.0
/* The tests' own arrival stamps: the clock read first thing for every UDP frame (IPv4 or IPv6,
 * no VLAN) and kept in arrival order, nothing else. It shares no code with linerate's receiver
 * (bpf/rx.bpf.c), so the gaps it shows are an independent view of what a sender leaves on the
 * wire. Frames beyond the table are counted, not stamped. Everything else (ARP, ND, the link's
 * control frames) goes to the stack untouched. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << 20);	/* resized by the loader */
	__type(key, __u32);
	__type(value, __u64);
} stamps SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} seen SEC(".maps");

SEC("xdp")
int stamp(struct xdp_md *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u8 *data = (void *)(long)ctx->data;
	__u8 *end = (void *)(long)ctx->data_end;
	__u32 zero = 0, at;
	__u64 *n, *slot;

	if (data + 54 > end)
		return XDP_PASS;
	if (!((data[12] == 0x08 && data[13] == 0x00 && data[23] == 17) ||
	      (data[12] == 0x86 && data[13] == 0xdd && data[20] == 17)))
		return XDP_PASS;
	n = bpf_map_lookup_elem(&seen, &zero);
	if (!n)
		return XDP_DROP;
	at = (__u32)__sync_fetch_and_add(n, 1);
	slot = bpf_map_lookup_elem(&stamps, &at);
	if (slot)
		*slot = now;
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
