//! The examples each command's `--help` ends with. Every line that starts with `linerate` is
//! parsed by the real parser in the tests (doc_commands.rs), as the docs' commands are.

pub const TX: &str = "\
Examples:
  linerate tx -i lr0 -d 10s --rate 1M --rx        # 1 Mpps on the lab, checked at its receive end
  linerate tx --pcap out.pcap -n 1000 --vary src-port:inc:1000-1999";

pub const REPLAY: &str = "\
Examples:
  linerate replay trace.pcapng -i lr0             # at the capture's own timing, once
  linerate replay trace.pcap -i lr0 --speed max --loop inf -d 10s --backend live";

pub const LAB: &str = "\
Examples:
  linerate lab up --dut router                    # netns lr-sink, veth lr0 <-> lr1, a router between
  linerate lab impair --loss 1% --delay 1ms";

pub const LAB_UP: &str = "\
Examples:
  linerate lab up                                 # netns lr-sink, veth lr0 <-> lr1, the sink on lr1
  linerate lab up --name lb --queues 2 --dut xdp";

pub const LAB_DOWN: &str = "\
Examples:
  linerate lab down --name lb";

pub const LAB_STATUS: &str = "\
Examples:
  linerate lab status --json";

pub const LAB_NAT: &str = "\
Examples:
  linerate lab nat --ports 10000-10099   # 100 translations to one server, then no more
  linerate lab nat --limit 100           # a firewall that lets 100 connections through at once
  linerate lab nat --nat66               # IPv6 masqueraded too, not only routed
  linerate lab nat --ports any";

pub const LAB_IMPAIR: &str = "\
Examples:
  linerate lab impair --delay 1ms --jitter 100us --reorder 5%
  linerate lab impair --clear";

pub const SINK: &str = "\
Examples:
  linerate sink -i eth1                              # attach the XDP sink; Mpps once per second
  linerate sink -i lr1 --netns lr-sink -d 10s --json # a lab's receive end: its own sink's counts";

pub const TCP: &str = "\
Examples:
  linerate lab up --dut nat                     # a NAT between lr0 and the servers' namespace
  linerate tcp client -i lr0 --src 100.64.1.0/24 --gateway 100.64.0.1/16 --server 198.19.0.2:80 -n 10000 --response-bytes 4096
  linerate tcp server -i eth2 --address 10.0.0.1/24 --port 80 -d 60s
  linerate tcp both -i lr0 --src 100.64.1.0/24 --gateway 100.64.0.1/16 --server 198.51.100.2:80 --server-interface lr1 --server-netns lr-sink --server-address 198.51.100.2/24 --server-gateway 198.51.100.1";

pub const TCP_CLIENT: &str = "\
Examples:
  linerate tcp client -i lr0 --src 100.64.1.0/24 --gateway 100.64.0.1/16 --server 198.19.0.2:80 -n 100000 --rate 5000 --concurrent 1024
  linerate tcp client -i lr0 --src 100.64.1.0/24 --gateway 100.64.0.1/16 --server 198.19.0.2:80 --rate 10000 --ramp-up 30s --duration 60s --ramp-down 10s --csv seconds.csv --plot run.svg
  linerate tcp client -i lr0 --src 100.64.1.0/24 --gateway 100.64.0.1/16 --server 198.51.100.2:80 -n 100000 --time-wait 0 --profile get.pcap";

pub const TCP_SERVER: &str = "\
Examples:
  linerate tcp server -i eth2 --address 10.0.0.1/24 --gateway 10.0.0.254 --response-bytes 4096 --json";

pub const TCP_BOTH: &str = "\
Examples:
  linerate tcp both -i lr0 --src 100.64.1.0/24 --gateway 100.64.0.1/16 --server 198.51.100.2:80 --server-interface lr1 --server-netns lr-sink --server-address 198.51.100.2/24 --server-gateway 198.51.100.1 -n 100000 --cores 0,1 --json";

pub const RX: &str = "\
Examples:
  linerate rx -i eth2 -d 30s                      # the far end of a two-host test
  linerate rx -i lr1 --netns lr-sink -d 30s       # a lab's receive end, borrowed from its sink";

pub const SWEEP: &str = "\
Examples:
  linerate sweep --lab --sizes 64,512,1518 -d 2s --json a.json --plot a.svg
  linerate sweep -i eth1 --link-speed 10G --cores 2,3 --csv b.csv";

pub const COMPARE: &str = "\
Examples:
  linerate compare a.json b.json --plot ab.svg";

pub const PORTS: &str = "\
Examples:
  linerate ports --json";

pub const RFC2544: &str = "\
Examples:
  linerate rfc2544 throughput -i lr0 --rx --sizes 64,1518 --trial 10s
  linerate rfc2544 all -i eth1 --rx eth2 --link-speed 10G --json dut.json --plot dut.svg";

pub const CONVERGENCE: &str = "\
Examples:
  linerate convergence --lab cv                   # a lab from `linerate lab up --name cv --dut bgp`
  linerate convergence --lab cv --prefixes 10000 --rate 100k --repeat 5 --json cv.json --csv cv.csv";

pub const SERVE: &str = "\
Examples:
  linerate serve                                  # https://127.0.0.1:8443, self-signed
  linerate serve --http --listen 127.0.0.1:8080 --backend afpacket
  linerate serve --token-file token --agent-token-file agent-token   # ports on agents";

pub const AGENT: &str = "\
Examples:
  linerate agent --listen 0.0.0.0:8443 --token-file /etc/linerate/token
  linerate agent --listen 192.0.2.10:8443 --token-file token --clock tai --lease 5s";

pub const CONSOLE: &str = "\
Examples:
  linerate console                                # serve on https://127.0.0.1:8443
  linerate console --location https://10.0.0.5:8443 --token-file token
  linerate console --no-tui --interval 5s >> flows.log
  linerate console --config otg.json              # a test bed of its own: serve started and stopped";

pub const COMPLETIONS: &str = "\
Examples:
  linerate completions bash > /etc/bash_completion.d/linerate
  linerate completions zsh > \"${fpath[1]}/_linerate\"";

pub const MAN: &str = "\
Examples:
  linerate man | man -l -
  linerate man --dir /usr/local/share/man/man1";
