// SPDX-License-Identifier: (MIT OR Apache-2.0) OR GPL-2.0
/* Emulated hosts on a port: answers ARP, IPv6 neighbour solicitations and pings for the hosts in
 * hosts_v4 / hosts_v6, and learns the link-layer addresses of the neighbours that talk to them
 * (neigh_v4 / neigh_v6), so crates/hosts can resolve a host's gateway. One inline function,
 * hosts_answer(), included by rx.bpf.c (called for frames without linerate's signature) and by
 * host.bpf.c (ports that only transmit). Answers go back out of the port with XDP_TX, rewritten
 * in place; an optional 802.1Q tag (the host's VLAN, 0 = untagged) is kept.
 *
 * A frame costs two compares here when it is not for a host (ethertype, then IP protocol or
 * next header): test traffic (UDP, TCP) leaves after the second.
 *
 * A request for a host that the RFCs say to discard gets no answer and teaches nothing; it is
 * dropped and counted (host_counters.ignored). The checks run only once a request was found to
 * be for a host, so they cost ordinary frames nothing (docs/architecture.md, "What the hosts
 * discard"): a group Ethernet source (RFC 1122 §3.3.6: the answer would go to a group); an
 * IPv4 source no host has, or the host's subnet broadcast (§3.2.1.3); a ping to a host's
 * unicast address in a link-layer group frame (§3.3.6); a bad IPv4 header or ICMP checksum
 * (§3.2.1.2, RFC 792); an IPv6 multicast source, a bad ICMPv6 checksum, an NS shorter than 24
 * bytes, with an option of length 0, or from :: to anything but a solicited-node group or
 * with a source link-layer option (RFC 4861 §7.1.1); an NA to a group with S set (§7.1.2).
 * No neighbour is ever learned for an address one of the port's hosts holds.
 *
 * crates/hosts mirrors every structure (src/abi.rs) and refuses an object whose map sizes differ. */
#ifndef LINERATE_HOSTS_H
#define LINERATE_HOSTS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

/* hosts_answer()'s result for a frame that is none of its business: the caller goes on. */
#define HOSTS_NOT_MINE (-1)

#define HOSTS_ETH_ARP 0x0806
#define HOSTS_ETH_IP 0x0800
#define HOSTS_ETH_IPV6 0x86dd
#define HOSTS_ETH_VLAN 0x8100
#define HOSTS_IPPROTO_ICMP 1
#define HOSTS_IPPROTO_ICMPV6 58
#define HOSTS_ICMP_ECHO_REPLY 0
#define HOSTS_ICMP_ECHO 8
#define HOSTS_ICMP6_ECHO 128
#define HOSTS_ICMP6_ECHO_REPLY 129
#define HOSTS_ND_NS 135
#define HOSTS_ND_NA 136
#define HOSTS_ND_OPT_SLLA 1
#define HOSTS_ND_OPT_TLLA 2
#define HOSTS_NA_SOLICITED 0x40000000u
#define HOSTS_NA_OVERRIDE 0x20000000u
/* An NA is ICMPv6 header (4) + flags (4) + target (16) + the Target LLA option (8). */
#define HOSTS_NA_LEN 32
#define HOSTS_TTL 64

struct host_key4 {
	__be32 addr;
	__u16 vlan;		/* 0: untagged */
	__u16 pad;
};

struct host_key6 {
	__u8 addr[16];
	__u16 vlan;
	__u16 pad;
};

struct host_mac {
	__u8 mac[6];
	__u8 prefix4;		/* hosts_v4: the host's IPv4 prefix, for its subnet's broadcast */
	__u8 pad;
};

/* neigh.flags: the answer claimed a MAC no neighbour has (hosts_bogus_mac). Kept only so that
 * crates/hosts can name it when the address stays unresolved; never read as a neighbour. */
#define HOSTS_NEIGH_BOGUS 1
/* neigh.flags: two believed answers for this address named different MACs (a spoofer, or a
 * neighbour whose MAC changed); kept from then on, for the report to warn of it. */
#define HOSTS_NEIGH_CHANGED 2

struct neigh {
	__u8 mac[6];
	__u16 flags;		/* HOSTS_NEIGH_* */
	__u64 ktime_ns;		/* CLOCK_MONOTONIC when last learned */
};

struct host_counters {
	__u64 arp_replies;
	__u64 nd_replies;
	__u64 echo_replies;
	__u64 learned;		/* neighbour entries written */
	__u64 dropped;		/* host.bpf.c: frames for nobody, dropped */
	__u64 ignored;		/* requests for a host the RFCs say to discard, dropped */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct host_key4);
	__type(value, struct host_mac);
} hosts_v4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 2048);	/* each host's address and its link-local one */
	__type(key, struct host_key6);
	__type(value, struct host_mac);
} hosts_v6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct host_key4);
	__type(value, struct neigh);
} neigh_v4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct host_key6);
	__type(value, struct neigh);
} neigh_v6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct host_counters);
} host_counters SEC(".maps");

/* MACs of hosts that have a control plane (crates/routing: a routing daemon in a namespace of
 * its own, behind a macvlan of the port with the host's MAC). Frames to them that the hosts do
 * not answer (BGP's TCP, the answers to the daemon's own ARP) go on to the kernel's stack, where
 * the macvlan takes them by destination MAC; everything else stays the test's. Empty: nothing
 * is passed, and a frame pays one lookup only after it was found to be no test frame. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct host_mac);
	__type(value, __u32);
} stack_macs SEC(".maps");

struct hosts_eth {
	__u8 dst[6];
	__u8 src[6];
	__be16 proto;
};

struct hosts_vlan {
	__be16 tci;
	__be16 proto;
};

struct hosts_arp {
	__be16 htype;
	__be16 ptype;
	__u8 hlen;
	__u8 plen;
	__be16 op;
	__u8 sha[6];
	__u8 spa[4];
	__u8 tha[6];
	__u8 tpa[4];
};

struct hosts_ip4 {
	__u8 vihl;
	__u8 tos;
	__be16 len;
	__be16 id;
	__be16 frag;
	__u8 ttl;
	__u8 proto;
	__u16 check;
	__be32 src;
	__be32 dst;
};

struct hosts_ip6 {
	__be32 vtcflow;
	__be16 plen;
	__u8 next;
	__u8 hop;
	__u8 src[16];
	__u8 dst[16];
};

/* Echo (both families), NS and NA share this prefix; NS and NA carry a target after it. */
struct hosts_icmp {
	__u8 type;
	__u8 code;
	__u16 check;
	__be32 rest;
};

struct hosts_nd {
	struct hosts_icmp h;
	__u8 target[16];
};

struct hosts_lla {
	__u8 type;
	__u8 len;		/* in units of 8 bytes */
	__u8 mac[6];
};

static __always_inline struct host_counters *hosts_counters(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&host_counters, &zero);
}

/* A request for a host that is to be discarded: no answer, nothing learned, counted. */
static __always_inline int hosts_ignore(void)
{
	struct host_counters *c = hosts_counters();

	if (c)
		c->ignored += 1;
	return XDP_DROP;
}

/* The group bit: a broadcast or multicast MAC, no one station's. */
static __always_inline int hosts_group_mac(const __u8 *mac)
{
	return mac[0] & 1;
}

/* RFC 1122 §3.2.1.3: an IPv4 source that names no one host — 0/8 (0.0.0.0 too: whoever sends
 * from it cannot be answered), 127/8, multicast 224/4, 240/4 with the limited broadcast — or
 * the broadcast address of the host's subnet (`own`/`prefix`; a /31 or /32 has none). */
static __always_inline int hosts_bad_src4(__be32 src, __be32 own, __u8 prefix)
{
	__u32 a = bpf_ntohl(src), hostbits;
	__u8 top = a >> 24;

	if (top == 0 || top == 127 || top >= 224)
		return 1;
	if (!prefix || prefix > 30)
		return 0;
	hostbits = 0xffffffffu >> prefix;
	return (a & hostbits) == hostbits && ((a ^ bpf_ntohl(own)) & ~hostbits) == 0;
}

/* One's-complement sums, as 16-bit words read in the frame's byte order (RFC 1071: the sum
 * does not care which order both sides read in). bpf_csum_diff takes a multiple of 4 bytes up
 * to 512; a message is summed in chunks of HOSTS_SUM_CHUNK, then by halving what is left.
 * HOSTS_SUM_MAX bounds a message a host checks: a longer ping is discarded (a 9000-byte MTU's
 * fits). */
#define HOSTS_SUM_CHUNK 256
#define HOSTS_SUM_MAX 9216

static __always_inline __u16 hosts_fold(__u64 sum)
{
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return sum;
}

/* Adds `n` bytes at `p` (a constant multiple of 4, at most 512) to `sum` and moves `p` on;
 * false when they do not lie in the frame. */
#define HOSTS_SUM_STEP(p, end, n, sum)						\
	({									\
		int ok_ = (void *)(p) + (n) <= (end);				\
		if (ok_) {							\
			(sum) += (__u32)bpf_csum_diff(0, 0, (void *)(p), (n), 0);	\
			(p) = (void *)(p) + (n);				\
		}								\
		ok_;								\
	})

/* The sum of the `len` bytes at `off` in the frame and `seed`, folded; -1 when they do not all
 * lie in the frame or are more than HOSTS_SUM_MAX. A global function (not inlined, not
 * static): the verifier checks it once, on its own, instead of once for every path of its
 * callers, whose own checks would multiply its paths past the verifier's limit. */
__noinline int hosts_sum_at(struct xdp_md *ctx, __u32 off, __u32 len, __u32 seed)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u64 sum = seed;
	void *p;

	if (off > 0x3fff || len > HOSTS_SUM_MAX)
		return -1;
	/* The compiler would test one copy of `off` and add another: the mask is what the
	 * verifier sees bound the pointer. */
	asm volatile("" : "+r"(off));
	p = data + (off & 0x3fff);
	for (int i = 0; i < HOSTS_SUM_MAX / HOSTS_SUM_CHUNK; i++) {
		if (len < HOSTS_SUM_CHUNK)
			break;
		if (!HOSTS_SUM_STEP(p, end, HOSTS_SUM_CHUNK, sum))
			return -1;
		len -= HOSTS_SUM_CHUNK;
	}
	if ((len & 128) && !HOSTS_SUM_STEP(p, end, 128, sum))
		return -1;
	if ((len & 64) && !HOSTS_SUM_STEP(p, end, 64, sum))
		return -1;
	if ((len & 32) && !HOSTS_SUM_STEP(p, end, 32, sum))
		return -1;
	if ((len & 16) && !HOSTS_SUM_STEP(p, end, 16, sum))
		return -1;
	if ((len & 8) && !HOSTS_SUM_STEP(p, end, 8, sum))
		return -1;
	if ((len & 4) && !HOSTS_SUM_STEP(p, end, 4, sum))
		return -1;
	if (len & 2) {
		if (p + 2 > end)
			return -1;
		sum += *(__u16 *)p;
		p += 2;
	}
	if (len & 1) {
		if (p + 1 > end)
			return -1;
		/* The odd byte is the high half of a word padded with zero, in network order. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		sum += *(__u8 *)p;
#else
		sum += (__u16)(*(__u8 *)p) << 8;
#endif
	}
	return hosts_fold(sum);
}

/* The folded sum of `n` bytes at `p`, already known to lie in the frame (a constant multiple
 * of 4: an IPv4 header, IPv6's two addresses). */
static __always_inline __u16 hosts_sum_fixed(void *p, __u32 n, __u32 seed)
{
	return hosts_fold((__u64)seed + (__u32)bpf_csum_diff(0, 0, p, n, 0));
}

/* RFC 1624 eqn. 3, HC' = ~(~HC + ~m + m'), on 16-bit words as they lie in the frame: the
 * one's-complement sum does not care which byte order both sides read in. */
static __always_inline __u16 hosts_csum_replace(__u16 check, __u16 old, __u16 new)
{
	__u32 sum = (__u16)~check + (__u16)~old + new;

	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return ~sum;
}

/* RFC 1812 §3.3.2: a broadcast or multicast link-layer address in an ARP reply (or an NA's
 * target option) is no neighbour's, nor is the zero MAC or the host's own (`own`, NULL when the
 * frame is for no one host): believed, it would send a stream to the whole segment or back
 * to the port itself. */
static __always_inline int hosts_bogus_mac(const __u8 *mac, const __u8 *own)
{
	__u16 w[3], o[3];

	__builtin_memcpy(w, mac, 6);
	if ((mac[0] & 1) || !(w[0] | w[1] | w[2]))
		return 1;
	if (!own)
		return 0;
	__builtin_memcpy(o, own, 6);
	return w[0] == o[0] && w[1] == o[1] && w[2] == o[2];
}

/* Writes `n` for `key` in `map`: a bogus answer is written flagged, and only where no neighbour
 * is known, so that a spoofer answering after the real neighbour replaces nothing. A believed
 * answer whose MAC differs from the one known marks the entry changed, for good. */
static __always_inline void hosts_learn(void *map, const void *key, struct neigh *n,
					const __u8 *own)
{
	struct host_counters *c;
	struct neigh *old;

	if (hosts_bogus_mac(n->mac, own)) {
		old = bpf_map_lookup_elem(map, key);
		if (old && !(old->flags & HOSTS_NEIGH_BOGUS))
			return;
		n->flags = HOSTS_NEIGH_BOGUS;
		bpf_map_update_elem(map, key, n, BPF_ANY);
		return;
	}
	old = bpf_map_lookup_elem(map, key);
	if (old && !(old->flags & HOSTS_NEIGH_BOGUS)) {
		__u16 w[3], o[3];

		__builtin_memcpy(w, n->mac, 6);
		__builtin_memcpy(o, old->mac, 6);
		n->flags = old->flags & HOSTS_NEIGH_CHANGED;
		if (w[0] != o[0] || w[1] != o[1] || w[2] != o[2])
			n->flags |= HOSTS_NEIGH_CHANGED;
	}
	if (bpf_map_update_elem(map, key, n, BPF_ANY))
		return;
	c = hosts_counters();
	if (c)
		c->learned += 1;
}

static __always_inline void hosts_learn4(__be32 addr, __u16 vlan, const __u8 *mac,
					 const __u8 *own)
{
	struct host_key4 key = { .addr = addr, .vlan = vlan };
	struct neigh n = { .ktime_ns = bpf_ktime_get_ns() };

	__builtin_memcpy(n.mac, mac, 6);
	hosts_learn(&neigh_v4, &key, &n, own);
}

static __always_inline void hosts_learn6(const __u8 *addr, __u16 vlan, const __u8 *mac,
					 const __u8 *own)
{
	struct host_key6 key = { .vlan = vlan };
	struct neigh n = { .ktime_ns = bpf_ktime_get_ns() };

	__builtin_memcpy(key.addr, addr, 16);
	__builtin_memcpy(n.mac, mac, 6);
	hosts_learn(&neigh_v6, &key, &n, own);
}

static __always_inline void hosts_swap_eth(struct hosts_eth *eth, const struct host_mac *host)
{
	__builtin_memcpy(eth->dst, eth->src, 6);
	__builtin_memcpy(eth->src, host->mac, 6);
}

/* True when `addr` on `vlan` is one of the port's hosts': a neighbour entry for it would let
 * whoever claims it take the traffic of a stream to that host. */
static __always_inline int hosts_own4(__be32 addr, __u16 vlan)
{
	struct host_key4 key = { .addr = addr, .vlan = vlan };

	return bpf_map_lookup_elem(&hosts_v4, &key) != 0;
}

static __always_inline int hosts_own6(const __u8 *addr, __u16 vlan)
{
	struct host_key6 key = { .vlan = vlan };

	__builtin_memcpy(key.addr, addr, 16);
	return bpf_map_lookup_elem(&hosts_v6, &key) != 0;
}

/* An ARP request for a host gets the host's reply; any ARP aimed at a host teaches its sender,
 * unless the sender claims a host's address. A request from a group MAC (its reply would go to
 * that group) or from an address no host has is discarded. */
static __always_inline int hosts_arp(struct hosts_eth *eth, struct hosts_arp *arp, void *end,
				     __u16 vlan)
{
	struct host_key4 key = { .vlan = vlan };
	struct host_mac *host;
	struct host_counters *c;
	__be32 spa;

	if ((void *)(arp + 1) > end)
		return HOSTS_NOT_MINE;
	if (arp->htype != bpf_htons(1) || arp->ptype != bpf_htons(HOSTS_ETH_IP) ||
	    arp->hlen != 6 || arp->plen != 4)
		return HOSTS_NOT_MINE;
	__builtin_memcpy(&key.addr, arp->tpa, 4);
	host = bpf_map_lookup_elem(&hosts_v4, &key);
	if (!host)
		return HOSTS_NOT_MINE;
	__builtin_memcpy(&spa, arp->spa, 4);
	/* A reply from a group MAC is learned flagged (hosts_learn), for resolve to name it. */
	if (arp->op == bpf_htons(1) &&
	    (hosts_group_mac(eth->src) || hosts_group_mac(arp->sha) ||
	     (spa && hosts_bad_src4(spa, key.addr, host->prefix4))))
		return hosts_ignore();
	/* A probe (RFC 5227, sender 0.0.0.0) or someone claiming a host's address teaches
	 * nothing; the request still gets its answer, which defends the address. */
	if (spa && spa != key.addr && !hosts_own4(spa, vlan))
		hosts_learn4(spa, vlan, arp->sha, host->mac);
	if (arp->op != bpf_htons(1))
		return XDP_DROP;

	arp->op = bpf_htons(2);
	__builtin_memcpy(arp->tha, arp->sha, 6);
	__builtin_memcpy(arp->tpa, &spa, 4);
	__builtin_memcpy(arp->sha, host->mac, 6);
	__builtin_memcpy(arp->spa, &key.addr, 4);
	hosts_swap_eth(eth, host);
	c = hosts_counters();
	if (c)
		c->arp_replies += 1;
	return XDP_TX;
}

static __always_inline int hosts_ipv4(struct xdp_md *ctx, __u32 off, struct hosts_eth *eth,
				      struct hosts_ip4 *ip, void *end, __u16 vlan)
{
	struct host_key4 key = { .vlan = vlan };
	struct hosts_icmp *icmp = (void *)(ip + 1);
	struct host_mac *host;
	struct host_counters *c;
	__u16 old;
	__u32 len;

	if ((void *)(ip + 1) > end)
		return HOSTS_NOT_MINE;
	if (ip->proto != HOSTS_IPPROTO_ICMP)
		return HOSTS_NOT_MINE;
	/* Options or fragments: not a ping this answers (the kernel's ping sends neither). */
	if (ip->vihl != 0x45 || (ip->frag & bpf_htons(0x3fff)))
		return HOSTS_NOT_MINE;
	if ((void *)(icmp + 1) > end)
		return HOSTS_NOT_MINE;
	if (icmp->type != HOSTS_ICMP_ECHO || icmp->code != 0)
		return HOSTS_NOT_MINE;
	key.addr = ip->dst;
	host = bpf_map_lookup_elem(&hosts_v4, &key);
	if (!host)
		return HOSTS_NOT_MINE;
	if (hosts_group_mac(eth->src) || hosts_group_mac(eth->dst) ||
	    hosts_bad_src4(ip->src, key.addr, host->prefix4))
		return hosts_ignore();
	len = bpf_ntohs(ip->len);
	if (len < sizeof(*ip) + sizeof(*icmp) || hosts_sum_fixed(ip, sizeof(*ip), 0) != 0xffff ||
	    hosts_sum_at(ctx, off + sizeof(*ip), len - sizeof(*ip), 0) != 0xffff)
		return hosts_ignore();

	old = *(__u16 *)icmp;
	icmp->type = HOSTS_ICMP_ECHO_REPLY;
	icmp->check = hosts_csum_replace(icmp->check, old, *(__u16 *)icmp);
	old = *(__u16 *)&ip->ttl;
	ip->ttl = HOSTS_TTL;
	ip->check = hosts_csum_replace(ip->check, old, *(__u16 *)&ip->ttl);
	/* Swapping the addresses leaves the header checksum as it was. */
	ip->dst = ip->src;
	ip->src = key.addr;
	hosts_swap_eth(eth, host);
	c = hosts_counters();
	if (c)
		c->echo_replies += 1;
	return XDP_TX;
}

static __always_inline int hosts_is_zero6(const __u8 *a)
{
	__u32 w[4];

	__builtin_memcpy(w, a, 16);
	return !(w[0] | w[1] | w[2] | w[3]);
}

/* ff02::1 or a solicited-node group ff02::1:ffXX:XXXX: where an NA for a host may be sent. */
static __always_inline int hosts_nd_group(const __u8 *a)
{
	__u32 w[4];

	__builtin_memcpy(w, a, 16);
	if (w[0] != bpf_htonl(0xff020000) || w[1] != 0)
		return 0;
	if (w[2] == 0 && w[3] == bpf_htonl(1))
		return 1;
	return w[2] == bpf_htonl(1) && (w[3] & bpf_htonl(0xff000000)) == bpf_htonl(0xff000000);
}

/* A solicited-node group, ff02::1:ffXX:XXXX: where an NS from :: must go (RFC 4861 §7.1.1). */
static __always_inline int hosts_solicited_node(const __u8 *a)
{
	__u32 w[4];

	__builtin_memcpy(w, a, 16);
	return w[0] == bpf_htonl(0xff020000) && w[1] == 0 && w[2] == bpf_htonl(1) &&
	       (w[3] & bpf_htonl(0xff000000)) == bpf_htonl(0xff000000);
}

/* HOSTS_ND_OPTS bounds the options of an NS or NA a host reads; one with more is discarded
 * (Linux sends one, or two with a DAD nonce). */
#define HOSTS_ND_OPTS 8

/* RFC 4861 §4.6, §7.1.1/§7.1.2: the `left` bytes of options at `off` in the frame (after an
 * NS's or NA's target) each have a length above zero and end where the message ends. Returns
 * -1 when they do not, else the offset in the frame of the address of the first link-layer
 * address option of `type`, 0 when there is none. Global, as hosts_sum_at, for the verifier. */
__noinline int hosts_nd_opts_at(struct xdp_md *ctx, __u32 off, __u32 left, __u32 type)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	int lla = 0;

	for (int i = 0; i < HOSTS_ND_OPTS; i++) {
		struct hosts_lla *o;
		__u32 n;

		if (!left)
			return lla;
		if (off > 0x3fff || left < sizeof(*o))
			return -1;
		asm volatile("" : "+r"(off));
		o = data + (off & 0x3fff);
		if ((void *)(o + 1) > end)
			return -1;
		n = (__u32)o->len * 8;
		if (!n || n > left)
			return -1;
		if (o->type == type && o->len == 1 && !lla)
			lla = off + 2;
		off += n;
		left -= n;
	}
	return left ? -1 : lla;
}

/* Copies the address of the option hosts_nd_opts_at found at `at` (> 0) into `mac`; false
 * when it does not lie in the frame. */
static __always_inline int hosts_lla_copy(struct xdp_md *ctx, int at, __u8 *mac)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u8 *p;

	if (at <= 0)
		return 0;
	p = data + (at & 0x3fff);
	if ((void *)(p + 6) > end)
		return 0;
	__builtin_memcpy(mac, p, 6);
	return 1;
}

/* RFC 4443 §2.3: the checksum of the `len`-byte ICMPv6 message at `off` in the frame, after
 * `ip6`, holds over the pseudo-header of RFC 8200 §8.1 (the addresses, the length, next
 * header 58). */
static __always_inline int hosts_icmp6_ok(struct xdp_md *ctx, struct hosts_ip6 *ip6, __u32 off,
					  __u32 len)
{
	if (len > HOSTS_SUM_MAX)
		return 0;
	return hosts_sum_at(ctx, off, len,
			    hosts_sum_fixed(ip6->src, 32,
					    bpf_htons(len) + bpf_htons(HOSTS_IPPROTO_ICMPV6))) == 0xffff;
}

/* Checksum of an NA of HOSTS_NA_LEN bytes: the pseudo-header's addresses and the message lie
 * back to back from the IPv6 source address on, 32 words; length and next header are added. */
static __always_inline __u16 hosts_na_csum(struct hosts_ip6 *ip6)
{
	__u16 *w = (__u16 *)ip6->src;
	__u32 sum = bpf_htons(HOSTS_NA_LEN) + bpf_htons(HOSTS_IPPROTO_ICMPV6);

#pragma unroll
	for (int i = 0; i < (32 + HOSTS_NA_LEN) / 2; i++)
		sum += w[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return ~sum;
}

/* A neighbour solicitation for a host: learn its sender (unless it claims a host's address),
 * answer with a Neighbour Advertisement in the same buffer (its length set to the NA's with
 * bpf_xdp_adjust_tail). One RFC 4861 §7.1.1 says to discard is discarded. */
static __always_inline int hosts_ns(struct xdp_md *ctx, __u32 off, struct hosts_eth *eth,
				    struct hosts_ip6 *ip6, struct hosts_nd *nd, void *end, __u16 vlan)
{
	struct host_key6 key = { .vlan = vlan };
	struct host_mac *host;
	struct host_counters *c;
	__u8 peer[16], peer_mac[6];
	int unspecified, delta, at;
	__u32 len;
	void *data;

	if ((void *)(nd + 1) > end || ip6->hop != 255 || nd->h.code != 0)
		return HOSTS_NOT_MINE;
	__builtin_memcpy(key.addr, nd->target, 16);
	host = bpf_map_lookup_elem(&hosts_v6, &key);
	if (!host)
		return HOSTS_NOT_MINE;
	len = bpf_ntohs(ip6->plen);
	if (hosts_group_mac(eth->src) || ip6->src[0] == 0xff || len < sizeof(*nd) ||
	    !hosts_icmp6_ok(ctx, ip6, off + sizeof(*ip6), len))
		return hosts_ignore();
	at = hosts_nd_opts_at(ctx, off + sizeof(*ip6) + sizeof(*nd), len - sizeof(*nd),
			      HOSTS_ND_OPT_SLLA);
	if (at < 0 || (at > 0 && !hosts_lla_copy(ctx, at, peer_mac)))
		return hosts_ignore();
	/* The frame is as it was, but the verifier knows its pointers no more. */
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	eth = data;
	ip6 = data + off;
	if ((void *)(ip6 + 1) > end)
		return XDP_DROP;
	__builtin_memcpy(peer, ip6->src, 16);
	unspecified = hosts_is_zero6(peer);
	/* DAD: from ::, to a solicited-node group, and with no address to learn. */
	if (unspecified && (at || !hosts_solicited_node(ip6->dst)))
		return hosts_ignore();
	if (!at)
		__builtin_memcpy(peer_mac, eth->src, 6);
	if (!unspecified && !hosts_own6(peer, vlan))
		hosts_learn6(peer, vlan, peer_mac, host->mac);

	delta = (int)(off + sizeof(*ip6) + HOSTS_NA_LEN) - (int)(end - (void *)eth);
	if (delta && bpf_xdp_adjust_tail(ctx, delta))
		return XDP_DROP;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	eth = data;
	ip6 = data + off;
	nd = (void *)(ip6 + 1);
	struct hosts_lla *tlla = (void *)(nd + 1);
	if ((void *)(tlla + 1) > end)
		return XDP_DROP;

	if (unspecified) {
		/* DAD (RFC 4862): the answer goes to all nodes, not solicited. Stored word by word:
		 * a constant array would land in .rodata, which rx.bpf.c's loader sizes exactly. */
		__u32 group = bpf_htonl(0xff020000), zero = 0, one = bpf_htonl(1);
		__u16 mac_hi = bpf_htons(0x3333), mac_zero = 0, mac_one = bpf_htons(1);

		__builtin_memcpy(eth->dst, &mac_hi, 2);
		__builtin_memcpy(eth->dst + 2, &mac_zero, 2);
		__builtin_memcpy(eth->dst + 4, &mac_one, 2);
		__builtin_memcpy(ip6->dst, &group, 4);
		__builtin_memcpy(ip6->dst + 4, &zero, 4);
		__builtin_memcpy(ip6->dst + 8, &zero, 4);
		__builtin_memcpy(ip6->dst + 12, &one, 4);
		nd->h.rest = bpf_htonl(HOSTS_NA_OVERRIDE);
	} else {
		__builtin_memcpy(eth->dst, peer_mac, 6);
		__builtin_memcpy(ip6->dst, peer, 16);
		nd->h.rest = bpf_htonl(HOSTS_NA_SOLICITED | HOSTS_NA_OVERRIDE);
	}
	__builtin_memcpy(eth->src, host->mac, 6);
	ip6->vtcflow = bpf_htonl(0x60000000);
	ip6->plen = bpf_htons(HOSTS_NA_LEN);
	ip6->next = HOSTS_IPPROTO_ICMPV6;
	ip6->hop = 255;
	__builtin_memcpy(ip6->src, key.addr, 16);
	nd->h.type = HOSTS_ND_NA;
	nd->h.code = 0;
	nd->h.check = 0;
	__builtin_memcpy(nd->target, key.addr, 16);
	tlla->type = HOSTS_ND_OPT_TLLA;
	tlla->len = 1;
	__builtin_memcpy(tlla->mac, host->mac, 6);
	nd->h.check = hosts_na_csum(ip6);
	c = hosts_counters();
	if (c)
		c->nd_replies += 1;
	return XDP_TX;
}

/* A neighbour advertisement sent to a host (or to a group it is in) teaches its target's
 * address. Sent to the host's own address it is the host's, and dropped; to a group it may
 * interest others, and goes on. */
static __always_inline int hosts_na(struct xdp_md *ctx, __u32 off, struct hosts_eth *eth,
				    struct hosts_ip6 *ip6, struct hosts_nd *nd, void *end, __u16 vlan)
{
	struct host_key6 key = { .vlan = vlan };
	struct host_mac *host;
	__u8 target[16], mac[6];
	__u32 len;
	int at;

	if ((void *)(nd + 1) > end || ip6->hop != 255 || nd->h.code != 0)
		return HOSTS_NOT_MINE;
	/* Someone else claiming a host's address, or a group as a neighbour: not learned. */
	if (nd->target[0] == 0xff || hosts_own6(nd->target, vlan))
		return HOSTS_NOT_MINE;
	__builtin_memcpy(key.addr, ip6->dst, 16);
	host = bpf_map_lookup_elem(&hosts_v6, &key);
	if (!host && !hosts_nd_group(ip6->dst))
		return HOSTS_NOT_MINE;
	/* RFC 4861 §7.1.2; to a group it may be another station's business: left for it. */
	len = bpf_ntohs(ip6->plen);
	if (len < sizeof(*nd) || !hosts_icmp6_ok(ctx, ip6, off + sizeof(*ip6), len) ||
	    (!host && (nd->h.rest & bpf_htonl(HOSTS_NA_SOLICITED))))
		return host ? hosts_ignore() : HOSTS_NOT_MINE;
	__builtin_memcpy(target, nd->target, 16);
	at = hosts_nd_opts_at(ctx, off + sizeof(*ip6) + sizeof(*nd), len - sizeof(*nd),
			      HOSTS_ND_OPT_TLLA);
	if (at < 0 || (at > 0 && !hosts_lla_copy(ctx, at, mac)))
		return host ? hosts_ignore() : HOSTS_NOT_MINE;
	if (!at) {
		eth = (void *)(long)ctx->data;
		if ((void *)(eth + 1) > (void *)(long)ctx->data_end)
			return XDP_DROP;
		__builtin_memcpy(mac, eth->src, 6);
	}
	hosts_learn6(target, vlan, mac, host ? host->mac : 0);
	return host ? XDP_DROP : HOSTS_NOT_MINE;
}

static __always_inline int hosts_echo6(struct xdp_md *ctx, __u32 off, struct hosts_eth *eth,
				       struct hosts_ip6 *ip6, struct hosts_icmp *icmp, void *end,
				       __u16 vlan)
{
	struct host_key6 key = { .vlan = vlan };
	struct host_mac *host;
	struct host_counters *c;
	__u16 old;
	__u32 len;

	if ((void *)(icmp + 1) > end || icmp->code != 0)
		return HOSTS_NOT_MINE;
	__builtin_memcpy(key.addr, ip6->dst, 16);
	host = bpf_map_lookup_elem(&hosts_v6, &key);
	if (!host)
		return HOSTS_NOT_MINE;
	/* The answer goes to the source: not to a group, nor to ::. */
	len = bpf_ntohs(ip6->plen);
	if (hosts_group_mac(eth->src) || ip6->src[0] == 0xff || hosts_is_zero6(ip6->src) ||
	    len < sizeof(*icmp) || !hosts_icmp6_ok(ctx, ip6, off + sizeof(*ip6), len))
		return hosts_ignore();
	/* The pseudo-header's sum does not change when the addresses swap: only the type does. */
	old = *(__u16 *)icmp;
	icmp->type = HOSTS_ICMP6_ECHO_REPLY;
	icmp->check = hosts_csum_replace(icmp->check, old, *(__u16 *)icmp);
	ip6->hop = HOSTS_TTL;
	__builtin_memcpy(ip6->dst, ip6->src, 16);
	__builtin_memcpy(ip6->src, key.addr, 16);
	hosts_swap_eth(eth, host);
	c = hosts_counters();
	if (c)
		c->echo_replies += 1;
	return XDP_TX;
}

static __always_inline int hosts_ipv6(struct xdp_md *ctx, __u32 off, void *end, __u16 vlan)
{
	void *data = (void *)(long)ctx->data;
	struct hosts_ip6 *ip6 = data + off;
	struct hosts_nd *nd = (void *)(ip6 + 1);

	if ((void *)(ip6 + 1) > end)
		return HOSTS_NOT_MINE;
	if (ip6->next != HOSTS_IPPROTO_ICMPV6)
		return HOSTS_NOT_MINE;
	if ((void *)&nd->h + sizeof(nd->h) > end)
		return HOSTS_NOT_MINE;
	switch (nd->h.type) {
	case HOSTS_ICMP6_ECHO:
		return hosts_echo6(ctx, off, data, ip6, &nd->h, end, vlan);
	case HOSTS_ND_NS:
		return hosts_ns(ctx, off, data, ip6, nd, end, vlan);
	case HOSTS_ND_NA:
		return hosts_na(ctx, off, data, ip6, nd, end, vlan);
	}
	return HOSTS_NOT_MINE;
}

/* The frame's verdict if it was for a host (XDP_TX: answered; XDP_DROP: consumed), else
 * HOSTS_NOT_MINE, with the frame untouched. */
static __always_inline int hosts_answer(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct hosts_eth *eth = data;
	__u32 off = sizeof(*eth);
	__u16 vlan = 0;
	__be16 proto;

	if ((void *)(eth + 1) > end)
		return HOSTS_NOT_MINE;
	proto = eth->proto;
	if (proto == bpf_htons(HOSTS_ETH_VLAN)) {
		struct hosts_vlan *tag = data + sizeof(*eth);

		if ((void *)(tag + 1) > end)
			return HOSTS_NOT_MINE;
		vlan = bpf_ntohs(tag->tci) & 0xfff;
		proto = tag->proto;
		off += sizeof(*tag);
	}
	if (proto == bpf_htons(HOSTS_ETH_IP))
		return hosts_ipv4(ctx, off, eth, data + off, end, vlan);
	if (proto == bpf_htons(HOSTS_ETH_IPV6))
		return hosts_ipv6(ctx, off, end, vlan);
	if (proto == bpf_htons(HOSTS_ETH_ARP))
		return hosts_arp(eth, data + off, end, vlan);
	return HOSTS_NOT_MINE;
}

/* True when the frame is addressed to a host with a control plane (stack_macs), or is a Slow
 * Protocols frame (EtherType 0x8809: LACP, markers, OAM), the link's own and read by a LAG's
 * packet socket behind the port: its verdict is XDP_PASS once the hosts have seen it (they may
 * have learned from it). */
static __always_inline int hosts_to_stack(struct xdp_md *ctx)
{
	__u8 *data = (void *)(long)ctx->data;
	__u8 *end = (void *)(long)ctx->data_end;
	struct host_mac key = {};

	if (data + 14 <= end && data[12] == 0x88 && data[13] == 0x09)
		return 1;
	if (data + 6 > end)
		return 0;
	__builtin_memcpy(key.mac, data, 6);
	return bpf_map_lookup_elem(&stack_macs, &key) != 0;
}

#endif
