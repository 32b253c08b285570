//! Which processes may use the proxy: on Linux, a connection is served only when the socket at
//! its other end is held by a process of a given process group (the browser's). The peer's
//! `(address, port)` is looked up in `/proc/net/tcp` and `/proc/net/tcp6` to find its socket
//! inode, then that inode among the open files of the processes whose process group
//! (`/proc/<pid>/stat`, fifth field) is the one allowed. Elsewhere than Linux nothing can be
//! checked, so nothing is accepted.
//!
//! Blocking file reads (run it on a blocking thread); it must not decide anything about URLs.

use std::net::SocketAddr;

/// How many times the lookup is tried before the connection is refused. The peer's socket
/// exists before it connects, so one pass normally decides; the second covers a `/proc` read
/// that raced with another connection changing the tables.
#[cfg(target_os = "linux")]
const ATTEMPTS: usize = 2;

/// Whether the process at the other end of the connection from `peer` to `local` (the
/// proxy's side) belongs to process group `pgid`.
#[cfg(target_os = "linux")]
pub(crate) fn in_process_group(peer: SocketAddr, local: SocketAddr, pgid: i32) -> bool {
    if pgid <= 0 {
        return false;
    }
    (0..ATTEMPTS).any(|_| socket_inode(peer, local).is_some_and(|inode| group_holds(inode, pgid)))
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn in_process_group(_peer: SocketAddr, _local: SocketAddr, _pgid: i32) -> bool {
    false
}

/// The inode of the socket whose local address is `peer` and remote address `local`.
#[cfg(target_os = "linux")]
fn socket_inode(peer: SocketAddr, local: SocketAddr) -> Option<u64> {
    let canon = |a: SocketAddr| SocketAddr::new(a.ip().to_canonical(), a.port());
    let (peer, local) = (canon(peer), canon(local));
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().find_map(|path| {
        let table = std::fs::read_to_string(path).ok()?;
        table.lines().skip(1).find_map(|line| {
            let (from, to, inode) = parse_tcp_line(line)?;
            (canon(from) == peer && canon(to) == local && inode != 0).then_some(inode)
        })
    })
}

/// Whether a process of group `pgid` has the socket `inode` open.
#[cfg(target_os = "linux")]
fn group_holds(inode: u64, pgid: i32) -> bool {
    let wanted = format!("socket:[{inode}]");
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return false;
    };
    procs.flatten().any(|entry| {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            return false;
        };
        let in_group = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| process_group(&stat))
            == Some(pgid);
        if !in_group {
            return false;
        }
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            return false;
        };
        fds.flatten().any(|fd| {
            std::fs::read_link(fd.path()).is_ok_and(|target| target.as_os_str() == wanted.as_str())
        })
    })
}

/// The process group in a `/proc/<pid>/stat` line: `pid (comm) state ppid pgrp …`, where
/// `comm` may itself hold spaces and parentheses (so fields are counted after the last `)`).
fn process_group(stat: &str) -> Option<i32> {
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(2)?.parse().ok()
}

/// A row of `/proc/net/tcp{,6}`: local address, remote address, socket inode.
fn parse_tcp_line(line: &str) -> Option<(SocketAddr, SocketAddr, u64)> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let local = parse_proc_addr(fields.get(1)?)?;
    let remote = parse_proc_addr(fields.get(2)?)?;
    let inode = fields.get(9)?.parse().ok()?;
    Some((local, remote, inode))
}

/// `0100007F:1F90` (IPv4) or 32 hex digits and a port (IPv6). The kernel prints the address
/// as 32-bit words in the machine's byte order, the port as a number.
fn parse_proc_addr(text: &str) -> Option<SocketAddr> {
    let (ip, port) = text.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let word = |hex: &str| u32::from_str_radix(hex, 16).ok().map(u32::to_ne_bytes);
    let ip: std::net::IpAddr = match ip.len() {
        8 => std::net::Ipv4Addr::from(word(ip)?).into(),
        32 => {
            let mut octets = [0u8; 16];
            for (i, chunk) in octets.chunks_mut(4).enumerate() {
                chunk.copy_from_slice(&word(ip.get(i * 8..i * 8 + 8)?)?);
            }
            std::net::Ipv6Addr::from(octets).into()
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_group_is_read_after_the_command_name() {
        assert_eq!(
            process_group("42 (chromium) S 1 4242 4242 0 -1"),
            Some(4242)
        );
        assert_eq!(
            process_group("42 (evil) S 1 99 (x) S 1 7 7 0) R 1 4242 4242"),
            Some(4242)
        );
        assert_eq!(process_group("42 (cut"), None);
        assert_eq!(process_group(""), None);
        assert_eq!(process_group("1 (a) S 1 notanumber"), None);
    }

    #[cfg(target_endian = "little")]
    #[test]
    fn tcp_rows_are_parsed() {
        let v4 = "   3: 0100007F:A2C4 0100007F:0C38 01 00000000:00000000 00:00000000 00000000  1000        0 123456 1 0000000000000000 20 4 30 10 -1";
        let (local, remote, inode) = parse_tcp_line(v4).unwrap();
        assert_eq!(local, "127.0.0.1:41668".parse().unwrap());
        assert_eq!(remote, "127.0.0.1:3128".parse().unwrap());
        assert_eq!(inode, 123456);

        let v6 = "   0: 0000000000000000FFFF00000100007F:A2C4 00000000000000000000000001000000:0C38 01 00000000:00000000 00:00000000 00000000  1000        0 99 1";
        let (local, remote, inode) = parse_tcp_line(v6).unwrap();
        assert_eq!(local, "[::ffff:127.0.0.1]:41668".parse().unwrap());
        assert_eq!(remote, "[::1]:3128".parse().unwrap());
        assert_eq!(inode, 99);
    }

    #[test]
    fn malformed_rows_are_skipped() {
        for row in [
            "",
            "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
            "0: 0100007F 0100007F:0C38 01 0 0 0 0 0 5",
            "0: 0100007F:ZZZZ 0100007F:0C38 01 0 0 0 0 0 5",
            "0: 0100007:A2C4 0100007F:0C38 01 0 0 0 0 0 5",
            "0: 0100007F:A2C4 0100007F:0C38 01 0 0 0 0 0",
            "0: 0100007F:A2C4 0100007F:0C38 01 0 0 0 0 0 -5",
        ] {
            assert_eq!(parse_tcp_line(row), None, "{row}");
        }
        // 32 bytes, a two-byte character across the first word's end.
        let split = format!(
            "0: {}Ω{}:A2C4 0100007F:0C38 01 0 0 0 0 0 5",
            "0".repeat(7),
            "0".repeat(23)
        );
        assert_eq!(parse_tcp_line(&split), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_connection_of_this_process_is_found_in_its_group() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, peer) = listener.accept().unwrap();
        let local = server.local_addr().unwrap();
        assert_eq!(peer, client.local_addr().unwrap());
        // SAFETY: getpgrp has no preconditions and cannot fail.
        let own = unsafe { libc::getpgrp() };
        assert!(in_process_group(peer, local, own));
        assert!(!in_process_group(peer, local, own + 1_000_000));
        assert!(!in_process_group(peer, local, 0));
        assert!(!in_process_group(peer, local, -1));
        let stranger: SocketAddr = "127.0.0.1:1".parse().unwrap();
        assert!(!in_process_group(stranger, local, own));
    }
}
