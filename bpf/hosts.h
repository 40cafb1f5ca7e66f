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
	__u16 pad;
};

struct neigh {
	__u8 mac[6];
	__u16 pad;
	__u64 ktime_ns;		/* CLOCK_MONOTONIC when last learned */
};

struct host_counters {
	__u64 arp_replies;
	__u64 nd_replies;
	__u64 echo_replies;
	__u64 learned;		/* neighbour entries written */
	__u64 dropped;		/* host.bpf.c: frames for nobody, dropped */
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

/* RFC 1624 eqn. 3, HC' = ~(~HC + ~m + m'), on 16-bit words as they lie in the frame: the
 * one's-complement sum does not care which byte order both sides read in. */
static __always_inline __u16 hosts_csum_replace(__u16 check, __u16 old, __u16 new)
{
	__u32 sum = (__u16)~check + (__u16)~old + new;

	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return ~sum;
}

static __always_inline void hosts_learn4(__be32 addr, __u16 vlan, const __u8 *mac)
{
	struct host_key4 key = { .addr = addr, .vlan = vlan };
	struct neigh n = { .ktime_ns = bpf_ktime_get_ns() };
	struct host_counters *c;

	__builtin_memcpy(n.mac, mac, 6);
	if (bpf_map_update_elem(&neigh_v4, &key, &n, BPF_ANY))
		return;
	c = hosts_counters();
	if (c)
		c->learned += 1;
}

static __always_inline void hosts_learn6(const __u8 *addr, __u16 vlan, const __u8 *mac)
{
	struct host_key6 key = { .vlan = vlan };
	struct neigh n = { .ktime_ns = bpf_ktime_get_ns() };
	struct host_counters *c;

	__builtin_memcpy(key.addr, addr, 16);
	__builtin_memcpy(n.mac, mac, 6);
	if (bpf_map_update_elem(&neigh_v6, &key, &n, BPF_ANY))
		return;
	c = hosts_counters();
	if (c)
		c->learned += 1;
}

static __always_inline void hosts_swap_eth(struct hosts_eth *eth, const struct host_mac *host)
{
	__builtin_memcpy(eth->dst, eth->src, 6);
	__builtin_memcpy(eth->src, host->mac, 6);
}

/* An ARP request for a host gets the host's reply; any ARP aimed at a host teaches its sender. */
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
	/* A probe (RFC 5227, sender 0.0.0.0) or someone claiming the host's own address teaches
	 * nothing; the probe still gets its answer, which defends the address. */
	if (spa && spa != key.addr)
		hosts_learn4(spa, vlan, arp->sha);
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

static __always_inline int hosts_ipv4(struct hosts_eth *eth, struct hosts_ip4 *ip, void *end,
				      __u16 vlan)
{
	struct host_key4 key = { .vlan = vlan };
	struct hosts_icmp *icmp = (void *)(ip + 1);
	struct host_mac *host;
	struct host_counters *c;
	__u16 old;

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

/* The link-layer address option of `type` among the first two options of an NS or NA whose
 * ICMPv6 message is `len` bytes long; NULL if there is none. Senders put it first (Linux
 * always); a DAD nonce or another option may come before it. */
static __always_inline const __u8 *hosts_nd_lla(struct hosts_nd *nd, void *end, __u32 len,
						__u8 type)
{
	struct hosts_lla *opt = (void *)(nd + 1);

	if (len < sizeof(*nd) + sizeof(*opt) || (void *)(opt + 1) > end)
		return 0;
	if (opt->type == type && opt->len == 1)
		return opt->mac;
	if (opt->len != 1 || len < sizeof(*nd) + 2 * sizeof(*opt) || (void *)(opt + 2) > end)
		return 0;
	opt += 1;
	if (opt->type == type && opt->len == 1)
		return opt->mac;
	return 0;
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

/* A neighbour solicitation for a host: learn its sender, answer with a Neighbour Advertisement
 * in the same buffer (its length set to the NA's with bpf_xdp_adjust_tail). */
static __always_inline int hosts_ns(struct xdp_md *ctx, __u32 off, struct hosts_eth *eth,
				    struct hosts_ip6 *ip6, struct hosts_nd *nd, void *end, __u16 vlan)
{
	struct host_key6 key = { .vlan = vlan };
	struct host_mac *host;
	struct host_counters *c;
	const __u8 *slla;
	__u8 peer[16], peer_mac[6];
	int unspecified, delta;
	void *data;

	if ((void *)(nd + 1) > end || ip6->hop != 255 || nd->h.code != 0)
		return HOSTS_NOT_MINE;
	__builtin_memcpy(key.addr, nd->target, 16);
	host = bpf_map_lookup_elem(&hosts_v6, &key);
	if (!host)
		return HOSTS_NOT_MINE;
	__builtin_memcpy(peer, ip6->src, 16);
	unspecified = hosts_is_zero6(peer);
	slla = hosts_nd_lla(nd, end, bpf_ntohs(ip6->plen), HOSTS_ND_OPT_SLLA);
	__builtin_memcpy(peer_mac, slla ? slla : eth->src, 6);
	if (!unspecified)
		hosts_learn6(peer, vlan, peer_mac);

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
static __always_inline int hosts_na(struct hosts_eth *eth, struct hosts_ip6 *ip6,
				    struct hosts_nd *nd, void *end, __u16 vlan)
{
	struct host_key6 key = { .vlan = vlan };
	const __u8 *tlla;
	int unicast;

	if ((void *)(nd + 1) > end || ip6->hop != 255 || nd->h.code != 0)
		return HOSTS_NOT_MINE;
	__builtin_memcpy(key.addr, nd->target, 16);
	if (bpf_map_lookup_elem(&hosts_v6, &key))
		return HOSTS_NOT_MINE;	/* someone else claims a host's address: not learned */
	__builtin_memcpy(key.addr, ip6->dst, 16);
	unicast = bpf_map_lookup_elem(&hosts_v6, &key) != 0;
	if (!unicast && !hosts_nd_group(ip6->dst))
		return HOSTS_NOT_MINE;
	tlla = hosts_nd_lla(nd, end, bpf_ntohs(ip6->plen), HOSTS_ND_OPT_TLLA);
	hosts_learn6(nd->target, vlan, tlla ? tlla : eth->src);
	return unicast ? XDP_DROP : HOSTS_NOT_MINE;
}

static __always_inline int hosts_echo6(struct hosts_eth *eth, struct hosts_ip6 *ip6,
				       struct hosts_icmp *icmp, void *end, __u16 vlan)
{
	struct host_key6 key = { .vlan = vlan };
	struct host_mac *host;
	struct host_counters *c;
	__u16 old;

	if ((void *)(icmp + 1) > end || icmp->code != 0)
		return HOSTS_NOT_MINE;
	__builtin_memcpy(key.addr, ip6->dst, 16);
	host = bpf_map_lookup_elem(&hosts_v6, &key);
	if (!host)
		return HOSTS_NOT_MINE;
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
		return hosts_echo6(data, ip6, &nd->h, end, vlan);
	case HOSTS_ND_NS:
		return hosts_ns(ctx, off, data, ip6, nd, end, vlan);
	case HOSTS_ND_NA:
		return hosts_na(data, ip6, nd, end, vlan);
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
		return hosts_ipv4(eth, data + off, end, vlan);
	if (proto == bpf_htons(HOSTS_ETH_IPV6))
		return hosts_ipv6(ctx, off, end, vlan);
	if (proto == bpf_htons(HOSTS_ETH_ARP))
		return hosts_arp(eth, data + off, end, vlan);
	return HOSTS_NOT_MINE;
}

#endif
