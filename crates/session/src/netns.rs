//! Ports in another network namespace (`IFACE@NETNS`): a port there is opened, and each of its
//! runs driven, from a thread that entered the namespace. Threads inherit the namespace of the
//! thread that spawns them, so the engine's workers — AF_XDP queues bound as they start, live
//! frames redirected by ifindex — all act inside it, never on an interface of the same index
//! in the caller's namespace.

use crate::error::{Result, SessionError, Setting};

/// `IFACE` or `IFACE@NETNS`, split; `what` is the setting it is, for the error.
pub fn split(what: Setting, at: &str) -> Result<(&str, Option<&str>)> {
    match at.split_once('@') {
        Some((i, n)) if !i.is_empty() && !n.is_empty() && !n.contains('/') => Ok((i, Some(n))),
        Some(_) => Err(SessionError::setting(
            what,
            format!("{what} {at}: write IFACE or IFACE@NETNS"),
        )),
        None => Ok((at, None)),
    }
}

/// Runs `f` on a thread inside `netns` (here when None).
#[cfg(target_os = "linux")]
pub(crate) fn within<T: Send>(
    netns: Option<&str>,
    f: impl FnOnce() -> Result<T> + Send,
) -> Result<T> {
    let Some(ns) = netns else {
        return f();
    };
    let file = std::fs::File::open(std::path::Path::new("/run/netns").join(ns)).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            SessionError::usage(format!(
                "no network namespace {ns} (ip netns list shows those there are)"
            ))
        } else {
            SessionError::usage(format!("opening network namespace {ns}: {e}"))
        }
    })?;
    linerate_xdp::in_netns_file(file, f, |errno| {
        let e = std::io::Error::from_raw_os_error(errno as i32);
        let hint = if e.kind() == std::io::ErrorKind::PermissionDenied {
            ": run as root"
        } else {
            ""
        };
        SessionError::usage(format!("entering network namespace {ns}: {e}{hint}"))
    })
}

/// Namespaces are Linux's: elsewhere a port named `IFACE@NETNS` is refused.
#[cfg(not(target_os = "linux"))]
pub(crate) fn within<T: Send>(
    netns: Option<&str>,
    f: impl FnOnce() -> Result<T> + Send,
) -> Result<T> {
    match netns {
        None => f(),
        Some(ns) => Err(SessionError::usage(format!(
            "network namespaces ({ns}) are Linux's: name the interface alone"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interface_may_name_its_namespace_after_an_at() {
        assert_eq!(split(Setting::Interface, "eth1").unwrap(), ("eth1", None));
        assert_eq!(
            split(Setting::Interface, "lab1@lab-sink").unwrap(),
            ("lab1", Some("lab-sink"))
        );
        for bad in ["@ns", "eth1@", "eth1@a/b"] {
            let e = split(Setting::Interface, bad).unwrap_err();
            assert!(e.is_usage() && e.to_string().contains("IFACE@NETNS"), "{e}");
            assert_eq!(e.refused_setting(), Some(Setting::Interface), "{e}");
        }
    }
}
