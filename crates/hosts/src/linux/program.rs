//! `bpf/host.bpf.c` on a port that only transmits: the hosts answer, everything else is dropped.

use libbpf_rs::Object;
use linerate_xdp::{AttachMode, XdpError, XdpLink};

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
    /// in the driver where the driver runs XDP, else on the generic path.
    pub fn attach(iface: &str, netns: Option<&str>) -> Result<HostProgram, HostError> {
        match Self::attach_mode(iface, netns, AttachMode::Drv) {
            Err(HostError::Xdp(XdpError::ModeUnsupported { .. })) => {
                Self::attach_mode(iface, netns, AttachMode::Skb)
            }
            attached => attached,
        }
    }

    /// [`HostProgram::attach`] in `mode`. A veth port answers in driver mode only if its peer
    /// takes XDP frames (GRO on, or an XDP program of its own), as any XDP_TX on a veth.
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
