// SPDX-License-Identifier: (MIT OR Apache-2.0) OR GPL-2.0
/* The receiver: per flow, what arrived, in what order, how late. Frames carry linerate's
 * signature, an 18-byte trailer at the end of the frame (crates/wire/src/signature.rs):
 *   tx ns (48 bit) | seq (32) | flow (16) | compensation (16) | magic (32), big-endian.
 * Reading it from the tail needs no header parsing: VLAN, IPv4/IPv6, UDP/TCP look alike here.
 *
 * Per CPU and flow (a per-CPU array indexed by flow id): frames, bytes, first and last arrival,
 * the sequence analysis (a 64-frame window below the highest sequence seen tells a duplicate from
 * a late frame), latency min/max/sum, RFC 3550 interarrival jitter, and for the first
 * `hist_flows` flows a log-linear latency histogram. Frames without the signature are "other",
 * flows beyond the table "untracked": counted, never a flow.
 *
 * With `gaps`, every frame is timed and the gap since the flow's last arrival on this CPU goes
 * into a second histogram of the same buckets (`rx_gap_hists`, the first `hist_flows` flows):
 * what a device behind a paced sender sees (crates/rx/src/gaps.rs reads it against the target).
 *
 * Latency is timed once per departure stamp: a sender reads its clock once for a bulk or batch of
 * frames that leave together (16 for live frames, a batch for AF_XDP and AF_PACKET) and stamps
 * them all with it, so only the first of them carries its own departure time. The clock is read
 * for a flow's frame whose stamp differs from the last one timed on this CPU (its low 32 bits),
 * and for a flow's first frame; the others are counted and sequenced, not timed. The read is most
 * of the program's cost (bpf_ktime_get_ns is an ordered rdtsc, 25-60 ns in the VMs measured,
 * against ~12 ns for the rest), so this is what lets one core count at line rate. `every_frame`
 * times every frame instead (docs/receive.md).
 *
 * crates/rx mirrors every structure here (RxFlow, RxGlobal) and holds a Rust model of this
 * program (FlowState::observe) that the tests hold it to, frame for frame. Keep both in step;
 * the loader refuses an object whose map sizes differ from the Rust types.
 *
 * The port's emulated hosts come first (hosts.h): the ARP, ND and pings they answer or consume
 * are theirs, not "other"; without hosts, nothing is theirs and every frame goes on as before. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "hosts.h"

#define SIG_LEN 18
#define SIG_MAGIC 0x4c527367u
#define TS_MASK ((1ULL << 48) - 1)
/* Masks the trailer's offset so the verifier sees a bounded packet offset (it gives up on
 * offsets that may pass 0xffff once the trailer's length is added). XDP's linear data is a page. */
#define MAX_OFFSET 0x7fff

/* Latency histogram: values below 2 * SUB are exact; above, each power of two is split into SUB
 * buckets (relative width 1/SUB = 1.6 %, so a bucket's midpoint is within 0.8 % of any value in
 * it) up to 2^MAX_EXP ns (34 s); longer latencies land in the last bucket. */
#define SUB_BITS 6
#define SUB (1 << SUB_BITS)
#define MAX_EXP 35
#define HIST_BUCKETS (2 * SUB + (MAX_EXP - SUB_BITS - 1) * SUB)

struct rx_flow {
	__u64 frames;
	__u64 bytes;
	__u64 first_ns;
	__u64 last_ns;
	__u64 lat_min;
	__u64 lat_max;
	__u64 lat_sum;
	__u64 lat_count;	/* frames whose latency was measurable */
	__u64 late;		/* below the highest sequence, first seen: reordered */
	__u64 dups;		/* seen before, within the window */
	__u64 old;		/* below the window: late or duplicate, cannot tell */
	__u64 gaps;		/* sequences skipped by jumps ahead */
	__u64 window;		/* bit i: sequence next_seq - 1 - i has arrived */
	__u64 jitter16;		/* RFC 3550 interarrival jitter, ns, scaled by 16 */
	__s64 prev_transit;
	__u32 next_seq;		/* highest sequence seen + 1 */
	__u32 timed_tx;		/* low 32 bits of the last timed frame's departure stamp */
};

struct rx_global {
	__u64 other_frames;
	__u64 other_bytes;
	__u64 untracked_frames;
	__u64 untracked_bytes;
	__u64 future;		/* stamped later than it arrived: clocks apart */
};

struct rx_hist {
	__u64 b[HIST_BUCKETS];
};

/* Set before load by crates/rx (RxRodata): one struct, so its layout is the declared one. */
struct rx_ro {
	__u32 pass;		/* XDP_PASS the frames (for a capture) instead of dropping */
	__u32 clock_tai;	/* CLOCK_TAI instead of CLOCK_MONOTONIC */
	__u32 every_frame;	/* time every frame, not one a departure stamp */
	__u32 gaps;		/* time every frame and keep the gaps between arrivals */
};
const volatile struct rx_ro ro = {};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 4096);	/* resized by the loader: the flow table */
	__type(key, __u32);
	__type(value, struct rx_flow);
} rx_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 256);	/* resized by the loader: flows with a histogram */
	__type(key, __u32);
	__type(value, struct rx_hist);
} rx_hists SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);		/* resized by the loader: hist_flows with gaps */
	__type(key, __u32);
	__type(value, struct rx_hist);
} rx_gap_hists SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rx_global);
} rx_global SEC(".maps");

static __always_inline __u32 log2_u64(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) { r += 1; }
	return r;
}

static __always_inline __u32 bucket(__u64 ns)
{
	__u32 e, i;

	if (ns < 2 * SUB)
		return ns;
	e = log2_u64(ns);
	if (e >= MAX_EXP)
		return HIST_BUCKETS - 1;
	i = 2 * SUB + (e - SUB_BITS - 1) * SUB + (__u32)((ns >> (e - SUB_BITS)) - SUB);
	return i < HIST_BUCKETS ? i : HIST_BUCKETS - 1;
}

/* The trailer's big-endian fields, read whole: it lies at any offset, and x86 and arm64 load
 * unaligned packet words as fast as aligned ones. A byte at a time cost ~5 ns a frame more
 * (`cargo bench -p linerate-rx --bench program`). */
static __always_inline __u32 be32(const __u8 *p)
{
	return bpf_ntohl(*(const __u32 *)p);
}

static __always_inline __u16 be16(const __u8 *p)
{
	return bpf_ntohs(*(const __u16 *)p);
}

static __always_inline int verdict(void)
{
	return ro.pass ? XDP_PASS : XDP_DROP;
}

static __always_inline void sequence(struct rx_flow *f, __u32 seq, int first)
{
	if (first) {
		f->next_seq = seq + 1;
		f->window = 1;
		return;
	}
	__s32 ahead = (__s32)(seq - f->next_seq);
	if (ahead >= 0) {
		f->gaps += (__u32)ahead;
		f->window = ahead >= 63 ? 1 : (f->window << (ahead + 1)) | 1;
		f->next_seq = seq + 1;
		return;
	}
	__u32 back = f->next_seq - 1 - seq;
	if (back >= 64) {
		f->old += 1;
		return;
	}
	__u64 bit = 1ULL << back;
	if (f->window & bit) {
		f->dups += 1;
	} else {
		f->window |= bit;
		f->late += 1;
	}
}

/* One more count in the bucket of `ns` of `flow`'s histogram in `hists` (rx_hists, rx_gap_hists). */
static __always_inline void record(void *hists, __u32 flow, __u64 ns)
{
	struct rx_hist *h = bpf_map_lookup_elem(hists, &flow);

	if (h) {
		__u32 b = bucket(ns);
		/* The compiler knows b is in range and would drop the check the verifier needs. */
		asm volatile("" : "+r"(b));
		if (b < HIST_BUCKETS)
			h->b[b] += 1;
	}
}

SEC("xdp")
int rx(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u64 len = end - data;
	__u64 now;
	__u32 zero = 0;
	struct rx_global *g = bpf_map_lookup_elem(&rx_global, &zero);
	int host;

	if (!g)
		return verdict();
	if (len < SIG_LEN)
		goto other;
	__u8 *t = data + ((len - SIG_LEN) & MAX_OFFSET);
	if ((void *)(t + SIG_LEN) > end)
		goto other;
	if (*(const __u32 *)(t + 14) != bpf_htonl(SIG_MAGIC))
		goto other;

	__u32 flow = be16(t + 10);
	struct rx_flow *f = bpf_map_lookup_elem(&rx_flows, &flow);
	if (!f) {
		g->untracked_frames += 1;
		g->untracked_bytes += len;
		return verdict();
	}
	__u64 tx = (__u64)be16(t) << 32 | be32(t + 2);
	__u32 seq = be32(t + 6);
	int first = !f->frames;

	f->frames += 1;
	f->bytes += len;
	sequence(f, seq, first);
	if (!first && !ro.every_frame && !ro.gaps && (__u32)tx == f->timed_tx)
		return verdict();
	f->timed_tx = (__u32)tx;
	now = ro.clock_tai ? bpf_ktime_get_tai_ns() : bpf_ktime_get_ns();
	if (first)
		f->first_ns = now;
	else if (ro.gaps)
		record(&rx_gap_hists, flow, now - f->last_ns);
	f->last_ns = now;

	__u64 lat = (now - tx) & TS_MASK;
	if (lat >= (1ULL << 47)) {
		g->future += 1;
		return verdict();
	}
	if (!f->lat_count || lat < f->lat_min)
		f->lat_min = lat;
	if (lat > f->lat_max)
		f->lat_max = lat;
	f->lat_sum += lat;
	if (f->lat_count) {
		/* RFC 3550 §6.4.1 / A.8: J += (|D| - J) / 16, kept scaled by 16. The transit's
		 * clock offset cancels in D, so two hosts' clocks need not agree for jitter. */
		__s64 d = (__s64)lat - f->prev_transit;
		if (d < 0)
			d = -d;
		f->jitter16 += (__u64)d - ((f->jitter16 + 8) >> 4);
	}
	f->prev_transit = (__s64)lat;
	f->lat_count += 1;

	record(&rx_hists, flow, lat);
	return verdict();

other:
	/* Only here, not before the signature: a test frame carries it and is never the hosts'
	 * business (an ARP, ND or ping frame ending in the magic is a 1 in 2^32 chance), so signed
	 * frames pay nothing for the hosts (called first, it cost them about 7-12 ns a frame). */
	host = hosts_answer(ctx);
	if (host == XDP_TX)
		return host;
	/* A control plane's frame (BGP, the answer to its ARP): the device's own, not the test's. */
	if (hosts_to_stack(ctx))
		return XDP_PASS;
	if (host != HOSTS_NOT_MINE)
		return host;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	/* ARP is the link's own traffic, not the test's: the stack behind the port answers it (a
	 * lab's receive end holds the receiver's address), so a router in front keeps its
	 * neighbour resolved. Passed on, not counted. */
	if (data + 14 <= end && ((__u8 *)data)[12] == 0x08 && ((__u8 *)data)[13] == 0x06)
		return XDP_PASS;
	g->other_frames += 1;
	g->other_bytes += len;
	return verdict();
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
