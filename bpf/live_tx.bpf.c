// SPDX-License-Identifier: (MIT OR Apache-2.0) OR GPL-2.0
/* The live transmitter: run by BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES (crates/live), once per
 * frame, on a page that holds the template the kernel copied in when the page was new. Pages are
 * recycled without that copy, so the page still holds what an earlier run of this program left in
 * it: every byte that may differ from the template is written in full here (the window and the
 * fields), never incremented in place from an assumed old value.
 *
 * Per frame: find the worker (the entry of the CPU it runs on, or the id in the 4 bytes of
 * metadata before the frame when workers share cores: ro.by_cpu), copy the
 * window of the worker's k-th frame over the page (one word from the worker entry for a short
 * cycle of one-word windows, live_words), trim the frame to its length, write each
 * variable field (its next index, or a random one) with RFC 1624 checksum updates, stamp the
 * signature's trailer if the plan has one (linerate_wire::signature), then bpf_redirect_map()
 * through live_port to the target interface. The worker entry counts frames and bytes handed to
 * the redirect and redirect errors; user space reads it through mmap.
 *
 * Layouts are mirrored in Rust by crates/live (LiveField, LiveStamp, WorkerSlot, and the model
 * layout::simulate): keep them in step;
 * linerate_xdp::load_object_checked refuses an object whose map sizes differ from the Rust types. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define MAX_FIELDS 8
#define MAX_WORKERS 64
#define MAX_WINDOW 2048
/* A worker's cycle of at most this many frames whose window is one 8-byte word at one offset
 * (the seed's ten IP ids, a port over a few values) is held in its worker entry (live_words). */
#define WORDS 16
/* Windows up to this long, in whole 8-byte words (user space widens them so), are copied with
 * 8-byte stores in the program: a helper call costs more than the copy for the few bytes most
 * streams change (the seed's IP id and checksum: 8). */
#define INLINE_WINDOW 64
/* Offsets beyond this are refused by user space; the bound keeps the verifier's ranges small. */
#define MAX_OFFSET 4032
#define NO_CSUM 0xffff
/* The signature's trailer (linerate_wire::signature): the last 18 bytes of the frame. */
#define SIG_LEN 18
#define TS_MASK ((1ULL << 48) - 1)
/* Redirected frames leave in bulks of 16 (the kernel's DEV_MAP_BULK_SIZE, flushed when full and
 * at the end of each batch), so one clock read a bulk is as close to when a frame leaves as a
 * read per frame, at a sixteenth of the cost: bpf_ktime_get_ns() is an rdtsc, ~26 ns in the VMs
 * this was measured on, a quarter of the frame's budget at full rate. User space zeroes
 * stamp_left before each call, so the reads fall on the bulks' first frames. */
#define STAMP_EVERY 16

#define MODE_INC 0
#define MODE_DEC 1
#define MODE_RANDOM 2

/* One variable field, resolved to an aligned 8-byte span of the frame. */
struct live_field {
	/* mask and words are in the frame's byte order (big-endian), as the span is read */
	__u64 mask;	/* span bits the field owns (after the modifier's mask) */
	__u64 start;
	__u64 step;
	__u64 count;	/* ≥ 1 */
	__u64 words;	/* 0xffff over each 16-bit word of the span that holds field bits */
	__u64 kstep;	/* inc/dec: the index advances by the worker count mod count */
	__u16 span;	/* even offset of the 8-byte span */
	__u8 shift;	/* the value, shifted left by this, lands on `mask` */
	__u8 mode;
	__u8 udp;	/* the L4 checksum is UDP's: a computed 0 is sent as 0xffff */
	__u8 pad0;
	__u16 ip_csum;	/* offset, or NO_CSUM */
	__u16 l4_csum;	/* offset, or NO_CSUM */
	__u16 pad1;
	__u32 pad2;
};

/* How the frames carry the signature. */
struct live_stamp {
	__u32 on;	/* stamp the trailer of every frame */
	__u32 tai;	/* CLOCK_TAI (two hosts synced by PTP) instead of CLOCK_MONOTONIC */
	/* 0: the cycle is one flow, and a worker's frames have sequence numbers w, w+W, …: one
	 * counter. 1: several flows (streams in sequence, merged lanes): each frame of the worker's
	 * cycle has its own start and step per lap, in its live_frame entry. */
	__u32 mapped;
	__u32 stride;	/* workers (W): the counter's step */
};

/* Every worker's window is one word at `off`, every frame as long as the template and each
 * cycle WORDS frames at most: the program writes the worker's words[index] there, with no
 * lookup of a frame entry, no length check and no copy loop. With `on` known to the verifier,
 * the program it keeps for such a plan has no other window code. */
struct live_words {
	__u32 on;
	__u32 off;
};

/* The program's read-only data. */
struct live_ro {
	__u32 n;	/* fields */
	__u32 pad;
	struct live_field f[MAX_FIELDS];
	struct live_stamp stamp;
	struct live_words words;
	/* Every worker has a core of its own, and its entry in live_workers is that core's: the
	 * program finds it by the CPU it runs on, not by reading the id in the frame's metadata.
	 * That read is the first touch of the page's data (every page of the pool has it at the same
	 * offset, so they share one L1 set and it misses), and the rest of the frame waited for it. */
	__u32 by_cpu;
	__u32 pad2;
};

/* One worker: a config line written by user space before the run, a state line written here. */
struct live_worker {
	__u64 limit;	/* frames to hand over in all; more runs are dropped */
	__u32 ifindex;	/* the port, as live_port holds it (the redirect goes through live_port) */
	__u32 pad_a;
	__u32 frame_base; /* first entry of this worker's frames in live_frames */
	__u32 period;	/* frames in the worker's cycle */
	__u32 win_off;	/* window: bytes that differ between the worker's frames */
	__u32 win_len;	/* 0: every frame is the template */
	__u32 tmpl_len;	/* length of the template (the longest frame) */
	__u32 pad_b;
	__u32 stop;	/* raised by user space: drop from now on */
	__u32 pad0;
	__u64 pad1[2];
	/* state */
	__u64 rng;	/* xorshift64* state, as linerate_wire::Rng */
	__u32 index;	/* next frame of the cycle */
	__u32 lap;	/* laps of the cycle done (the mapped signature's sequence) */
	__u64 sent;	/* frames handed to the redirect */
	__u64 bytes;	/* their bytes, FCS excluded */
	__u64 errors;	/* redirects refused, or a frame that could not be built */
	__u64 seq;	/* the next frame's flow sequence number (the one-flow signature) */
	__u64 stamp_ns;	/* the clock as last read, for the frames of its bulk */
	__u32 stamp_left; /* frames before the next read; 0: read now */
	__u32 pad3;
	/* Each inc/dec field's index in its cycle: (sequence number) mod count, kept here and
	 * advanced by a compare and subtract, because a 64-bit division per frame would cost more
	 * than the rest of the field. */
	__u64 k[MAX_FIELDS];
	/* live_words: the window word of each frame of the worker's cycle, in the frame's byte
	 * order, written by user space before the run. */
	__u64 words[WORDS];
	/* To 384 bytes, a multiple of 128: Intel's adjacent-line prefetcher pairs 64-byte lines
	 * into 128-byte blocks, so a worker's written lines must not share a block with the next
	 * worker's. */
	__u64 pad4[8];
};

struct live_frame {
	__u32 len;
	/* The mapped signature: this frame's sequence number is seq_base + lap * seq_step. */
	__u32 seq_base;
	__u32 seq_step;
	__u32 pad;
	__u8 bytes[MAX_WINDOW];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, MAX_WORKERS);
	__type(key, __u32);
	__type(value, struct live_worker);
} live_workers SEC(".maps");

/* The port, one entry (key 0: its ifindex), set by user space before the run. bpf_redirect_map
 * through it hands the frame to the device the entry holds; bpf_redirect(ifindex) would look the
 * device up by index (dev_get_by_index_rcu, ~2 % of a core at full rate) for every frame. */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} live_port SEC(".maps");

/* The fields and the signature, set by user space before the program loads (read-only data):
 * the verifier reads them as constants, so the program it keeps for a plan has no loop over
 * absent fields, no branch on a field's mode or checksums and no stamping without a signature —
 * only the work that plan needs. */
const volatile struct live_ro ro = {};

/* max_entries is set by user space before loading (one entry per frame of every worker's cycle). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct live_frame);
} live_frames SEC(".maps");

static __always_inline __u64 rng_next(struct live_worker *w)
{
	__u64 x = w->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	w->rng = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/* The high 64 bits of a * b, from 32-bit pieces (BPF has no 128-bit multiply). */
static __always_inline __u64 mul_hi(__u64 a, __u64 b)
{
	__u64 a_lo = a & 0xffffffff, a_hi = a >> 32, b_lo = b & 0xffffffff, b_hi = b >> 32;
	__u64 lo_lo = a_lo * b_lo, hi_lo = a_hi * b_lo, lo_hi = a_lo * b_hi, hi_hi = a_hi * b_hi;
	__u64 cross = (lo_lo >> 32) + (hi_lo & 0xffffffff) + lo_hi;

	return hi_hi + (hi_lo >> 32) + (cross >> 32);
}

/* A random index in 0..count, as linerate_wire::pick: Lemire's multiply-shift on the high 32
 * bits (one multiply) while count fits 32 bits, on all 64 otherwise. */
static __always_inline __u64 pick(__u64 r, __u64 count)
{
	if (count <= (1ULL << 32))
		return ((r >> 32) * count) >> 32;
	return mul_hi(r, count);
}

/* RFC 1624 eqn. 3: HC' = ~(~HC + sum(~m + m')), `delta` being the sum folded to 16 bits.
 * The one's complement sum does not care about byte order (RFC 1071 §2(B)): the checksum and
 * the words are used as they lie in the frame, with no swaps. */
static __always_inline void csum_update(void *data, void *data_end, __u32 at, __u32 delta,
					int udp)
{
	__u16 *p;
	__u32 s;
	__u16 c;

	if (at > MAX_OFFSET)
		return;
	p = data + at;
	if ((void *)(p + 1) > data_end)
		return;
	s = (__u16)~*p + delta;
	s = (s & 0xffff) + (s >> 16);
	c = ~s;
	if (udp && c == 0)
		c = 0xffff;
	*p = c;
}

/* sum(~m + m') over the span's words that hold the field, folded to 16 bits: the two values'
 * halves add up without overflow in 64 bits, and three folds bring that below 2^16. */
static __always_inline __u32 csum_delta(__u64 old, __u64 new, __u64 words)
{
	__u64 a = ~old & words, b = new & words;
	__u64 s = (a >> 32) + (a & 0xffffffff) + (b >> 32) + (b & 0xffffffff);

	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return s;
}

/* Writes tx ns, seq and the compensation word into the trailer at `at` (linerate_wire::signature:
 * big-endian, the word that keeps seq + ts + comp at ones' complement zero, so no checksum of the
 * frame changes). Returns 0, or -1 when the trailer lies outside the frame. */
static __always_inline int stamp(void *data, void *data_end, __u32 at, __u32 seq, __u64 ts)
{
	__u8 *p;
	__u32 s;

	if (at > MAX_OFFSET)
		return -1;
	p = data + at;
	if ((void *)(p + SIG_LEN) > data_end)
		return -1;
	ts &= TS_MASK;
	s = (__u32)(ts >> 32) + (__u32)((ts >> 16) & 0xffff) + (__u32)(ts & 0xffff) + (seq >> 16) +
	    (seq & 0xffff);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	*(__u16 *)p = bpf_htons((__u16)(ts >> 32));
	*(__u32 *)(p + 2) = bpf_htonl((__u32)ts);
	*(__u32 *)(p + 6) = bpf_htonl(seq);
	*(__u16 *)(p + 12) = bpf_htons((__u16)~s);
	return 0;
}

/* This frame's worker entry: the entry of the CPU the program runs on (ro.by_cpu), or the one
 * whose id sits in the frame's metadata. NULL with *act the frame's verdict when there is none
 * or the worker has stopped or sent its share. */
static __always_inline struct live_worker *worker_of(struct xdp_md *ctx, int *act)
{
	void *meta = (void *)(long)ctx->data_meta;
	void *data = (void *)(long)ctx->data;
	struct live_worker *w;
	__u32 key;

	if (ro.by_cpu) {
		key = bpf_get_smp_processor_id();
	} else {
		/* No worker id: a real packet on the dispatcher anchor's loopback (crates/live),
		 * never sent in practice. */
		if (meta + sizeof(__u32) > data) {
			*act = XDP_PASS;
			return NULL;
		}
		key = *(__u32 *)meta;
	}
	w = bpf_map_lookup_elem(&live_workers, &key);
	if (!w) {
		*act = XDP_ABORTED;
		return NULL;
	}
	if (w->stop || w->sent >= w->limit) {
		*act = XDP_DROP;
		return NULL;
	}
	return w;
}

/* Writes the worker's word for frame `index` of its cycle (struct live_words). -1 when the word
 * lies outside the frame. */
static __always_inline int write_word(struct xdp_md *ctx, struct live_worker *w, __u32 index)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u64 *p;

	if (ro.words.off > MAX_OFFSET)
		return -1;
	p = data + ro.words.off;
	if ((void *)(p + 1) > data_end)
		return -1;
	*p = w->words[index & (WORDS - 1)];
	return 0;
}

/* Hands the frame to live_port's device; counts it and its `len` bytes as sent, or an error. */
static __always_inline int hand_over(struct live_worker *w, __u32 len)
{
	int act = bpf_redirect_map(&live_port, 0, 0);

	if (act == XDP_REDIRECT) {
		w->sent += 1;
		w->bytes += len;
	} else {
		w->errors += 1;
	}
	return act;
}

SEC("xdp")
int live_tx(struct xdp_md *ctx)
{
	void *data, *data_end;
	struct live_worker *w;
	__u32 len, i, seq_base = 0, seq_step = 0;
	int act;

	w = worker_of(ctx, &act);
	if (!w)
		return act;

	len = w->tmpl_len;
	if (ro.words.on) {
		if (write_word(ctx, w, w->index))
			goto fail;
	} else if (w->win_len) {
		__u32 fkey = w->frame_base + w->index;
		__u32 wl = w->win_len;
		struct live_frame *f = bpf_map_lookup_elem(&live_frames, &fkey);

		if (!f || wl > MAX_WINDOW)
			goto fail;
		if (wl <= INLINE_WINDOW && !(wl & 7)) {
			__u32 off = w->win_off;
			__u8 *dst;

			data = (void *)(long)ctx->data;
			data_end = (void *)(long)ctx->data_end;
			if (off > MAX_OFFSET)
				goto fail;
			dst = data + off;
#pragma unroll
			for (i = 0; i < INLINE_WINDOW / 8; i++) {
				if (i * 8 >= wl)
					break;
				if ((void *)(dst + i * 8 + 8) > data_end)
					goto fail;
				*(__u64 *)(dst + i * 8) = *(__u64 *)(f->bytes + i * 8);
			}
		} else if (bpf_xdp_store_bytes(ctx, w->win_off, f->bytes, wl)) {
			goto fail;
		}
		len = f->len;
		if (ro.stamp.mapped) {
			seq_base = f->seq_base;
			seq_step = f->seq_step;
		}
	}
	if (len != w->tmpl_len) {
		if (bpf_xdp_adjust_tail(ctx, (int)len - (int)w->tmpl_len))
			goto fail;
	}

	if (ro.n) {
		data = (void *)(long)ctx->data;
		data_end = (void *)(long)ctx->data_end;
#pragma unroll
		for (i = 0; i < MAX_FIELDS; i++) {
			const volatile struct live_field *f = &ro.f[i];
			__u64 k, v, old, new, m;
			__u32 delta;
			__u8 *p;

			if (i >= ro.n)
				break;
			if (f->mode == MODE_RANDOM) {
				k = pick(rng_next(w), f->count);
			} else {
				/* k + kstep mod count, without overflow (kstep < count) */
				k = w->k[i];
				w->k[i] = k >= f->count - f->kstep ? k - (f->count - f->kstep)
								  : k + f->kstep;
			}
			v = f->mode == MODE_DEC ? f->start - k * f->step : f->start + k * f->step;
			if (f->span > MAX_OFFSET)
				goto fail;
			p = data + f->span;
			if ((void *)(p + 8) > data_end)
				goto fail;
			/* In the frame's byte order: only the value is swapped. */
			old = *(__u64 *)p;
			m = f->mask;
			new = (old & ~m) | (bpf_cpu_to_be64(v << (f->shift & 63)) & m);
			*(__u64 *)p = new;
			if (f->ip_csum == NO_CSUM && f->l4_csum == NO_CSUM)
				continue;
			delta = csum_delta(old, new, f->words);
			csum_update(data, data_end, f->ip_csum, delta, 0);
			csum_update(data, data_end, f->l4_csum, delta, f->udp);
		}
	}

	if (ro.stamp.on) {
		__u64 ts;
		__u32 seq;

		if (!w->stamp_left) {
			w->stamp_ns = ro.stamp.tai ? bpf_ktime_get_tai_ns() : bpf_ktime_get_ns();
			w->stamp_left = STAMP_EVERY;
		}
		w->stamp_left -= 1;
		ts = w->stamp_ns;

		if (ro.stamp.mapped) {
			seq = seq_base + w->lap * seq_step;
		} else {
			seq = (__u32)w->seq;
			w->seq += ro.stamp.stride;
		}
		data = (void *)(long)ctx->data;
		data_end = (void *)(long)ctx->data_end;
		if (len < SIG_LEN || stamp(data, data_end, len - SIG_LEN, seq, ts))
			goto fail;
	}

	if (w->index + 1 >= w->period) {
		w->index = 0;
		if (ro.stamp.mapped)
			w->lap += 1;
	} else {
		w->index += 1;
	}
	return hand_over(w, len);

fail:
	w->errors += 1;
	return XDP_DROP;
}

/* live_tx for the plans of most runs, the default stream's among them: no field, no signature,
 * every worker's window one word (live_words) or none, every frame as long as the template. It
 * sends the same frames as live_tx would, with nothing else in it: live_tx's generality leaves
 * spilled registers and loads of read-only data behind its dead branches, a tenth of its time
 * at full rate (docs/performance.md). User space picks it (Layout::lean). */
SEC("xdp")
int live_tx_words(struct xdp_md *ctx)
{
	struct live_worker *w;
	__u32 index;
	int act;

	w = worker_of(ctx, &act);
	if (!w)
		return act;
	index = w->index;
	if (ro.words.on && write_word(ctx, w, index))
		goto fail;
	index += 1;
	w->index = index >= w->period ? 0 : index;
	return hand_over(w, w->tmpl_len);

fail:
	w->errors += 1;
	return XDP_DROP;
}

/* Run once with BPF_F_TEST_XDP_LIVE_FRAMES to learn whether the kernel has live frames. */
SEC("xdp")
int live_probe(struct xdp_md *ctx)
{
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
