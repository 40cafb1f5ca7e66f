//! linerate's client against linerate's server over joined in-memory links: every connection
//! accounted for, every body byte checked, on a clean link and on one that drops frames.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use linerate_stateful::{
    Addresses, ClientConfig, Range, ServerConfig, mem, run_client, run_server,
};

const SERVER: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

fn configs(connections: u64, requests: u32) -> (ClientConfig, ServerConfig) {
    let client = ClientConfig {
        addresses: Addresses {
            mac: [2, 0, 0, 0, 0, 2],
            range: Range::parse("10.0.1.0/28").unwrap(),
            prefix_len: 16,
            gateway: None,
        },
        ports: (1024, 65535),
        server: SocketAddrV4::new(SERVER, 80),
        connections,
        rate: None,
        concurrent: 32,
        requests,
        response_bytes: 4096,
        think: Duration::ZERO,
        timeout: Duration::from_secs(10),
        rx_buffer: 16 * 1024,
        seed: 1,
    };
    let server = ServerConfig {
        addresses: Addresses {
            mac: [2, 0, 0, 0, 0, 1],
            range: Range::single(SERVER),
            prefix_len: 16,
            gateway: None,
        },
        port: 80,
        default_bytes: 1,
        max_bytes: 1 << 20,
        concurrent: 512,
        send_buffer: 64 * 1024,
        timeout: Duration::from_secs(10),
        time_wait: Duration::from_secs(10),
        seed: 2,
    };
    (client, server)
}

fn run(connections: u64, requests: u32, drop_every: u64) {
    let (client, server) = configs(connections, requests);
    run_with(client, server, drop_every);
}

fn run_with(client: ClientConfig, server: ServerConfig, drop_every: u64) {
    let (connections, requests) = (client.connections, client.requests);
    let (mut a, mut b) = mem::pair(drop_every);
    let stop = AtomicBool::new(false);
    let never = AtomicBool::new(false);
    let (report, served) = std::thread::scope(|s| {
        let srv = s.spawn(|| run_server(&mut b, &server, &stop, |_, _| {}).unwrap());
        let report = run_client(&mut a, &client, &never, |_| {}).unwrap();
        stop.store(true, Ordering::Relaxed);
        (report, srv.join().unwrap())
    });
    let c = report.counters;
    assert_eq!(c.attempted, connections, "{report:#?}");
    assert_eq!(c.established, connections, "{report:#?}");
    assert_eq!(c.closed, connections, "{report:#?}");
    assert_eq!(c.failed() + c.active() + c.connecting(), 0, "{report:#?}");
    assert_eq!(c.requests, connections * u64::from(requests));
    assert_eq!(c.responses, c.requests);
    assert_eq!(c.body_bytes, c.responses * 4096);
    let s = served.counters;
    assert_eq!(s.accepted, connections, "{served:#?}");
    assert_eq!((s.requests, s.responses), (c.requests, c.requests));
    assert_eq!(s.bad_request + s.reset + s.timeout, 0, "{served:#?}");
    if drop_every > 0 {
        assert!(report.link.tx_dropped + served.link.tx_dropped > 0);
    }
}

#[test]
fn every_connection_of_a_clean_link_ends_closed() {
    run(300, 1, 0);
}

#[test]
fn keep_alive_connections_carry_every_request() {
    run(50, 4, 0);
}

#[test]
fn a_link_that_drops_one_frame_in_fifty_loses_no_transfer() {
    run(200, 1, 50);
}

#[test]
fn a_think_time_longer_than_the_timeout_is_no_stall() {
    // The timeout runs from the last move: a connection idle by design (thinking) is not
    // stalled, and its next request's wait starts when it is sent.
    let (mut client, server) = configs(20, 2);
    client.think = Duration::from_millis(300);
    client.timeout = Duration::from_millis(200);
    run_with(client, server, 0);
}
