// A plain AF_PACKET sender, the baseline a user would write by hand (issue 26): one raw packet
// socket with PACKET_QDISC_BYPASS, one 60-byte UDP frame (64 B on the wire with the FCS), sent
// with sendmmsg in batches of 64, pinned to one core, for N seconds. scripts/bench-peers.sh
// builds it with cc.
//
//   sendmmsg IFACE DST_MAC CPU SECONDS
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH 64
#define FRAME 60

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

static unsigned short ip_checksum(const void *p, size_t n)
{
	const unsigned short *w = p;
	unsigned long sum = 0;
	for (; n > 1; n -= 2)
		sum += *w++;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (unsigned short)~sum;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: %s IFACE DST_MAC CPU SECONDS\n", argv[0]);
		return 2;
	}
	unsigned char dst[6];
	if (sscanf(argv[2], "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &dst[0], &dst[1], &dst[2], &dst[3],
		   &dst[4], &dst[5]) != 6) {
		fprintf(stderr, "sendmmsg: bad MAC %s\n", argv[2]);
		return 2;
	}
	cpu_set_t cpus;
	CPU_ZERO(&cpus);
	CPU_SET(atoi(argv[3]), &cpus);
	if (sched_setaffinity(0, sizeof(cpus), &cpus)) {
		perror("sched_setaffinity");
		return 1;
	}
	int fd = socket(AF_PACKET, SOCK_RAW, 0); // protocol 0: send only, nothing queued to read
	if (fd < 0) {
		perror("socket");
		return 1;
	}
	int one = 1;
	if (setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one))) {
		perror("PACKET_QDISC_BYPASS");
		return 1;
	}
	struct sockaddr_ll to = {
		.sll_family = AF_PACKET,
		.sll_ifindex = (int)if_nametoindex(argv[1]),
		.sll_halen = 6,
	};
	if (!to.sll_ifindex) {
		perror(argv[1]);
		return 1;
	}
	memcpy(to.sll_addr, dst, 6);

	// The frame linerate sends by default: 198.18.0.1:1024 -> 198.18.0.2:9, zeros after the
	// headers. The source MAC is the interface's own.
	unsigned char frame[FRAME] = {0};
	struct ifreq ifr = {0};
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", argv[1]);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr)) {
		perror("SIOCGIFHWADDR");
		return 1;
	}
	struct ether_header *eth = (void *)frame;
	memcpy(eth->ether_dhost, dst, 6);
	memcpy(eth->ether_shost, ifr.ifr_hwaddr.sa_data, 6);
	eth->ether_type = htons(ETHERTYPE_IP);
	struct iphdr *ip = (void *)(frame + sizeof(*eth));
	ip->version = 4;
	ip->ihl = 5;
	ip->tot_len = htons(FRAME - sizeof(*eth));
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->saddr = htonl(0xc6120001);
	ip->daddr = htonl(0xc6120002);
	ip->check = ip_checksum(ip, sizeof(*ip));
	struct udphdr *udp = (void *)(ip + 1);
	udp->source = htons(1024);
	udp->dest = htons(9);
	udp->len = htons(FRAME - sizeof(*eth) - sizeof(*ip));

	struct iovec iov = {.iov_base = frame, .iov_len = FRAME};
	struct mmsghdr msgs[BATCH];
	for (int i = 0; i < BATCH; i++)
		msgs[i] = (struct mmsghdr){.msg_hdr = {.msg_name = &to,
						       .msg_namelen = sizeof(to),
						       .msg_iov = &iov,
						       .msg_iovlen = 1}};

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	double seconds = atof(argv[4]);
	unsigned long long sent = 0, failed = 0;
	// The clock is read once every 1024 batches: a read per batch would cost more than a frame.
	for (unsigned long n = 0; !stop; n++) {
		int k = sendmmsg(fd, msgs, BATCH, 0);
		if (k > 0)
			sent += (unsigned)k;
		else
			failed++;
		if (!(n & 1023)) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			if ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 >= seconds)
				break;
		}
	}
	fprintf(stderr, "sendmmsg: %llu frames sent, %llu failed calls\n", sent, failed);
	return 0;
}
