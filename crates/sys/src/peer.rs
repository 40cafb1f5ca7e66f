//! Who is on the other end of a loopback TCP connection: the kernel's socket table, read from
//! procfs (a server that takes requests only from the user who started it asks this).

use std::net::{IpAddr, SocketAddr};

/// The uid of the client's end of a loopback TCP connection: the kernel's socket table entry
/// whose local address is the client's and whose remote is ours. None when it is not there
/// (the client already closed) or the table cannot be read.
pub fn peer_uid(client: SocketAddr, server: SocketAddr) -> Option<u32> {
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .find_map(|table| {
            let text = std::fs::read_to_string(table).ok()?;
            uid_in_table(&text, client, server)
        })
}

fn uid_in_table(table: &str, client: SocketAddr, server: SocketAddr) -> Option<u32> {
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (local, remote, uid) = (fields.get(1)?, fields.get(2)?, fields.get(7)?);
        // Only a connected socket (01: ESTABLISHED) has its owner's uid; a closing one reads 0.
        let established = fields.get(3) == Some(&"01");
        (established && parse_endpoint(local)? == client && parse_endpoint(remote)? == server)
            .then(|| uid.parse().ok())
            .flatten()
    })
}

/// `0100007F:1F90` (IPv4) or 32 hex digits and a port (IPv6): the address is the kernel's
/// 32-bit words in host byte order, the port big-endian hex.
fn parse_endpoint(text: &str) -> Option<SocketAddr> {
    let (addr, port) = text.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let mut bytes = Vec::with_capacity(16);
    for word in addr.as_bytes().chunks(8) {
        let word = u32::from_str_radix(std::str::from_utf8(word).ok()?, 16).ok()?;
        bytes.extend_from_slice(&word.to_ne_bytes());
    }
    let ip: IpAddr = match bytes.len() {
        4 => <[u8; 4]>::try_from(bytes).ok()?.into(),
        16 => <[u8; 16]>::try_from(bytes).ok()?.into(),
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

/// Who started a process running as `euid`: `sudo linerate serve` was started by the user
/// who ran sudo (their snappi script, run without sudo, is served). Only root's `SUDO_UID`
/// counts (anyone else's would only name who may use their own unprivileged server).
pub fn started_by(euid: u32, sudo_uid: Option<&str>) -> u32 {
    match sudo_uid.and_then(|u| u.parse().ok()) {
        Some(uid) if euid == 0 => uid,
        _ => euid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_client_end_of_a_loopback_connection_names_its_uid() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let server = listener.local_addr().expect("addr");
        let client = std::net::TcpStream::connect(server).expect("connect");
        let (_accepted, peer) = listener.accept().expect("accept");
        assert_eq!(peer, client.local_addr().expect("addr"));
        assert_eq!(
            peer_uid(peer, server),
            Some(std::os::unix::fs::MetadataExt::uid(
                &std::fs::metadata("/proc/self").expect("procfs")
            ))
        );
        drop(client);
        drop(_accepted);
        // A client that has gone is nobody's.
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(peer_uid(peer, server), None);
    }

    #[test]
    fn the_user_who_ran_sudo_is_the_one_who_started_it() {
        assert_eq!(started_by(0, Some("1000")), 1000);
        assert_eq!(started_by(0, None), 0);
        assert_eq!(started_by(0, Some("x")), 0);
        assert_eq!(started_by(1000, Some("1001")), 1000);
    }

    #[test]
    fn table_lines_name_addresses_as_the_kernel_writes_them() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   \
                     0: 0100007F:9C40 0100007F:1F90 01 00000000:00000000 00:00000000 00000000 65534        0 1 1\n";
        let client: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let server: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        if cfg!(target_endian = "little") {
            assert_eq!(uid_in_table(table, client, server), Some(65534));
        }
        assert_eq!(uid_in_table(table, server, client), None);
        let v6 = parse_endpoint("00000000000000000000000001000000:1F90");
        if cfg!(target_endian = "little") {
            assert_eq!(v6, Some("[::1]:8080".parse().unwrap()));
        }
    }
}
