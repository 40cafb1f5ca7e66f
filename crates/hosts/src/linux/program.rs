//! `bpf/host.bpf.c` on a port that only transmits: the hosts answer, everything else is dropped.

use libbpf_rs::Object;
use linerate_xdp::{AttachMode, XdpError, XdpLink, xdp_act};

use crate::HostError;
use crate::abi::ABI;
use crate::linux::HostTable;

/// `bpf/host.bpf.c` loaded, attached to a port when made by [`HostProgram::attach`]; detached
/// on drop. Its [`HostTable`] says which hosts it answers for.
#[derive(Debug)]
pub struct HostProgram {
    // Declared first: detached before the object goes.
    link: Option<XdpLink>,
    table: HostTable,
    object: Object,
}

impl HostProgram {
    /// Loads the program without attaching it (for `BPF_PROG_RUN` tests).
    pub fn load() -> Result<HostProgram, HostError> {
        let object =
            linerate_xdp::load_object_checked("host", linerate_xdp::host_object(), &ABI, |_| {
                Ok(())
            })?;
        Ok(HostProgram {
            link: None,
            table: HostTable::from_object(&object)?,
            object,
        })
    }

    /// Loads the program and attaches it to `iface` in network namespace `netns` (None = ours),
    /// in the mode [`answer_mode`] picks.
    pub fn attach(iface: &str, netns: Option<&str>) -> Result<HostProgram, HostError> {
        match Self::attach_mode(iface, netns, answer_mode(iface, netns)?) {
            Err(HostError::Xdp(XdpError::ModeUnsupported { .. })) => {
                Self::attach_mode(iface, netns, AttachMode::Skb)
            }
            attached => attached,
        }
    }

    /// [`HostProgram::attach`] in `mode`.
    pub fn attach_mode(
        iface: &str,
        netns: Option<&str>,
        mode: AttachMode,
    ) -> Result<HostProgram, HostError> {
        let mut program = Self::load()?;
        program.link = Some(linerate_xdp::attach_object(
            &program.object,
            iface,
            netns,
            mode,
        )?);
        Ok(program)
    }

    /// The hosts it answers for and the neighbours they learned.
    pub fn table(&self) -> &HostTable {
        &self.table
    }

    /// Still attached to its interface (false once the interface was deleted); a loaded-only
    /// program answers true.
    pub fn attached(&self) -> bool {
        self.link.as_ref().is_none_or(XdpLink::attached)
    }

    /// The program, for `BPF_PROG_RUN` (tests).
    pub fn program(&mut self) -> libbpf_rs::ProgramMut<'_> {
        self.object
            .progs_mut()
            .next()
            .expect("the host object holds its program")
    }
}

/// The XDP mode in which answers sent back with XDP_TX from `iface` (in `netns`) reach the wire:
/// the driver's, unless the driver says it cannot transmit XDP frames (no
/// `NETDEV_XDP_ACT_NDO_XMIT`), then the generic one. A veth says so when its peer neither runs
/// XDP nor has GRO on: its XDP_TX frames would be dropped unseen. For any program that includes
/// `bpf/hosts.h`, the receiver's too.
pub fn answer_mode(iface: &str, netns: Option<&str>) -> Result<AttachMode, HostError> {
    let features = linerate_xdp::in_netns(netns, || {
        let index = linerate_xdp::ifindex(iface).map_err(|e| match e {
            XdpError::UnknownInterface { iface, .. } => XdpError::UnknownInterface {
                iface,
                netns: netns.map(str::to_owned),
            },
            e => e,
        })?;
        // 0: a kernel before 6.3, which does not report features; the driver's mode it is.
        Ok(linerate_xdp::xdp_features(index).unwrap_or(0))
    })?;
    Ok(if features != 0 && features & xdp_act::NDO_XMIT == 0 {
        AttachMode::Skb
    } else {
        AttachMode::Drv
    })
}
