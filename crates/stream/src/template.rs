//! A stream's frame as the plan builds it: one header stack (the outer headers of its `encap`,
//! then the stream's own headers), built at any size through the wire layer's stack builder,
//! with the layout of the flow's own headers, where named fields (`src-port`, `dst-ip`…) are.

use linerate_wire::{FieldLoc, HeaderSpec, LayerKind, Layout, StackFrame, StackSpec};

use crate::StreamError;

/// The header stack of a stream, checked.
#[derive(Debug, Clone)]
pub(crate) struct Template {
    stack: StackSpec,
}

/// A frame built from a template, and where the flow's headers are in it.
#[derive(Debug, Clone)]
pub(crate) struct Built {
    pub frame: StackFrame,
    pub layout: Layout,
}

impl Template {
    /// `stack` must end in the stream's IP and L4 headers, or in its ARP header.
    pub fn new(stack: StackSpec) -> Result<Self, linerate_wire::WireError> {
        stack.validate()?;
        Ok(Self { stack })
    }

    pub fn build(&self, size: usize) -> Result<Built, StreamError> {
        let frame = self.stack.build(size)?;
        let layout = frame.flow_layout().ok_or_else(|| StreamError::Invalid {
            stream: "template".into(),
            why: "the stack ends in neither the stream's IP and L4 headers nor ARP".into(),
        })?;
        Ok(Built { frame, layout })
    }

    pub fn min_frame_size(&self) -> usize {
        self.stack.min_frame_size()
    }

    /// The headers' bytes, and an inner Ethernet frame's FCS slot: where the payload starts,
    /// counted back from the frame's end.
    pub fn headers_len(&self) -> usize {
        self.stack.headers_len() + self.stack.inner_fcs_len()
    }

    /// VLAN tags of the outer Ethernet header: the bytes they add are not under the MTU.
    pub fn outer_tags(&self) -> usize {
        self.stack.headers[1..]
            .iter()
            .take_while(|h| matches!(h, HeaderSpec::Vlan { .. }))
            .count()
    }
}

/// The header whose checksum covers a located field besides the two its patch updates (the
/// field's IPv4 header and L4 checksums): an outer UDP or GRE checksum over an inner field, an
/// outer IPv4 header under a `byte@` field. The plan refills those in the frames it pre-builds;
/// a field patched frame by frame cannot have one.
pub(crate) fn outer_checksum_over(frame: &StackFrame, loc: &FieldLoc) -> Option<&'static str> {
    let start = usize::from(loc.offset);
    let own = [loc.ip_csum, loc.l4_csum].map(|c| c.map(usize::from));
    frame
        .checksums_over(start..start + usize::from(loc.width))
        .find(|c| !own.contains(&Some(c.field.start)))
        .map(|c| frame.layers[c.layer].kind)
        .map(LayerKind::name)
}

#[cfg(test)]
#[path = "template_tests.rs"]
mod tests;
