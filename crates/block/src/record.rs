//! A recorder at the block-device seam: [`BlockRecorder`] wraps a device and, while a
//! [`RequestSink`] is attached, hands it every request the host sent and the device
//! completed (reads, writes, trims, flushes and remaps), with its virtual arrival time.
//! Without a sink it only passes requests through; with one it changes neither timing
//! nor state. A failed request is not recorded: the device counts only what it served,
//! and a trace of the run must match those counters.

use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex};

use flashstack_sim::Nanos;

use crate::{
    remap_below, BlockDevice, BlockError, Completion, Hints, Payload, Remap, RemapExtent,
    RequestKind,
};

/// One request as the device received it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockRequest {
    pub arrival_ns: Nanos,
    pub kind: RequestKind,
    /// First LBA; 0 for a flush.
    pub lba: u64,
    /// LBAs addressed; 0 for a flush.
    pub lba_count: u32,
    /// A write with force unit access.
    pub fua: bool,
}

/// Where recorded requests go, in the order the device served them.
pub trait RequestSink: Send {
    fn request(&mut self, request: &BlockRequest);
    /// A remap (one call, all its extents); most trace formats cannot carry it.
    fn remap(&mut self, arrival_ns: Nanos, extents: &[RemapExtent]);
}

/// A sink shared with whoever reads it back after the recording (the caller keeps a clone).
impl<S: RequestSink> RequestSink for Arc<Mutex<S>> {
    fn request(&mut self, request: &BlockRequest) {
        self.lock()
            .unwrap_or_else(|p| p.into_inner())
            .request(request);
    }

    fn remap(&mut self, arrival_ns: Nanos, extents: &[RemapExtent]) {
        self.lock()
            .unwrap_or_else(|p| p.into_inner())
            .remap(arrival_ns, extents);
    }
}

/// A device that reports what it serves to an optional [`RequestSink`]. It derefs to the
/// device it wraps, so that device's own methods (power cuts, configuration) are reached
/// through it unchanged.
pub struct BlockRecorder<D> {
    inner: D,
    sink: Option<Box<dyn RequestSink>>,
    /// The device below's limit, learnt when `as_remap` offers the capability.
    remap_lbas_max: u32,
}

impl<D: BlockDevice> BlockRecorder<D> {
    /// `inner` with nothing recorded yet (no sink).
    pub fn new(inner: D) -> Self {
        Self {
            inner,
            sink: None,
            remap_lbas_max: 0,
        }
    }

    /// Attaches `sink` (or, with `None`, stops recording); returns the sink it replaces.
    pub fn set_sink(&mut self, sink: Option<Box<dyn RequestSink>>) -> Option<Box<dyn RequestSink>> {
        std::mem::replace(&mut self.sink, sink)
    }

    pub fn is_recording(&self) -> bool {
        self.sink.is_some()
    }

    /// The device it wraps (any sink is dropped).
    pub fn into_wrapped(self) -> D {
        self.inner
    }

    fn note(&mut self, arrival_ns: Nanos, kind: RequestKind, lba: u64, lba_count: u32, fua: bool) {
        if let Some(sink) = self.sink.as_mut() {
            sink.request(&BlockRequest {
                arrival_ns,
                kind,
                lba,
                lba_count,
                fua,
            });
        }
    }
}

impl<D> Deref for BlockRecorder<D> {
    type Target = D;
    fn deref(&self) -> &D {
        &self.inner
    }
}

impl<D> DerefMut for BlockRecorder<D> {
    fn deref_mut(&mut self) -> &mut D {
        &mut self.inner
    }
}

impl<D: BlockDevice> BlockDevice for BlockRecorder<D> {
    fn capacity_lbas(&self) -> u64 {
        self.inner.capacity_lbas()
    }

    fn write(
        &mut self,
        arrival_ns: Nanos,
        lba: u64,
        payload: Payload<'_>,
        hints: Hints,
    ) -> Result<Completion, BlockError> {
        let count = payload.lba_count();
        let done = self.inner.write(arrival_ns, lba, payload, hints)?;
        self.note(arrival_ns, RequestKind::Write, lba, count, hints.fua);
        Ok(done)
    }

    fn read(
        &mut self,
        arrival_ns: Nanos,
        lba: u64,
        count: u32,
        out: Option<&mut [u8]>,
    ) -> Result<Completion, BlockError> {
        let done = self.inner.read(arrival_ns, lba, count, out)?;
        self.note(arrival_ns, RequestKind::Read, lba, count, false);
        Ok(done)
    }

    fn trim(&mut self, arrival_ns: Nanos, lba: u64, count: u32) -> Result<Completion, BlockError> {
        let done = self.inner.trim(arrival_ns, lba, count)?;
        self.note(arrival_ns, RequestKind::Trim, lba, count, false);
        Ok(done)
    }

    fn flush(&mut self, arrival_ns: Nanos) -> Result<Completion, BlockError> {
        let done = self.inner.flush(arrival_ns)?;
        self.note(arrival_ns, RequestKind::Flush, 0, 0, false);
        Ok(done)
    }

    /// Offered when the device below can remap, so that remaps are recorded too.
    fn as_remap(&mut self) -> Option<&mut dyn Remap> {
        self.remap_lbas_max = self.inner.as_remap()?.remap_lbas_max();
        Some(self)
    }

    fn physical_free_bytes(&self) -> Option<u64> {
        self.inner.physical_free_bytes()
    }

    fn physical_budget_bytes(&self) -> Option<u64> {
        self.inner.physical_budget_bytes()
    }
}

impl<D: BlockDevice> Remap for BlockRecorder<D> {
    fn remap_lbas_max(&self) -> u32 {
        // Learnt by `as_remap`, the only way to reach this impl.
        self.remap_lbas_max
    }

    fn remap_extents(
        &mut self,
        arrival_ns: Nanos,
        extents: &[RemapExtent],
    ) -> Result<Completion, BlockError> {
        let done = remap_below(&mut self.inner, "recorder")?.remap_extents(arrival_ns, extents)?;
        if let Some(sink) = self.sink.as_mut() {
            sink.remap(arrival_ns, extents);
        }
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{check_range, LBA_SIZE};

    /// A device that serves everything inside its capacity and stores nothing.
    struct Null {
        lbas: u64,
    }

    impl BlockDevice for Null {
        fn capacity_lbas(&self) -> u64 {
            self.lbas
        }
        fn write(
            &mut self,
            arrival_ns: Nanos,
            lba: u64,
            payload: Payload<'_>,
            _: Hints,
        ) -> Result<Completion, BlockError> {
            check_range(lba, payload.lba_count(), self.lbas)?;
            Ok(Completion {
                start_ns: arrival_ns,
                complete_ns: arrival_ns + 1,
            })
        }
        fn read(
            &mut self,
            arrival_ns: Nanos,
            lba: u64,
            count: u32,
            _: Option<&mut [u8]>,
        ) -> Result<Completion, BlockError> {
            check_range(lba, count, self.lbas)?;
            Ok(Completion {
                start_ns: arrival_ns,
                complete_ns: arrival_ns + 2,
            })
        }
        fn trim(
            &mut self,
            arrival_ns: Nanos,
            lba: u64,
            count: u32,
        ) -> Result<Completion, BlockError> {
            check_range(lba, count, self.lbas)?;
            Ok(Completion {
                start_ns: arrival_ns,
                complete_ns: arrival_ns,
            })
        }
        fn flush(&mut self, arrival_ns: Nanos) -> Result<Completion, BlockError> {
            Ok(Completion {
                start_ns: arrival_ns,
                complete_ns: arrival_ns + 3,
            })
        }
    }

    #[derive(Default)]
    struct Log(Vec<BlockRequest>);

    impl RequestSink for Log {
        fn request(&mut self, request: &BlockRequest) {
            self.0.push(*request);
        }
        fn remap(&mut self, _: Nanos, _: &[RemapExtent]) {}
    }

    #[test]
    fn records_what_the_device_served_and_only_while_a_sink_is_attached() {
        let mut dev = BlockRecorder::new(Null { lbas: 16 });
        let page = vec![0u8; 2 * LBA_SIZE];
        dev.write(1, 0, Payload::Bytes(&page), Hints::default())
            .unwrap();
        let log = Arc::new(Mutex::new(Log::default()));
        assert!(dev.set_sink(Some(Box::new(log.clone()))).is_none());
        let fua = Hints {
            fua: true,
            ..Hints::default()
        };
        let done = dev
            .write(5, 2, Payload::Unstored { lba_count: 3 }, fua)
            .unwrap();
        assert_eq!(done.complete_ns, 6, "the device's own completion");
        dev.read(7, 1, 4, None).unwrap();
        assert!(dev.read(8, 15, 2, None).is_err(), "refused: not recorded");
        dev.trim(9, 4, 1).unwrap();
        dev.flush(10).unwrap();
        assert!(dev.set_sink(None).is_some());
        dev.flush(11).unwrap();
        let kinds: Vec<_> = log.lock().unwrap().0.iter().map(|r| r.kind).collect();
        assert_eq!(
            kinds,
            [
                RequestKind::Write,
                RequestKind::Read,
                RequestKind::Trim,
                RequestKind::Flush
            ]
        );
        let first = log.lock().unwrap().0[0];
        assert_eq!(
            first,
            BlockRequest {
                arrival_ns: 5,
                kind: RequestKind::Write,
                lba: 2,
                lba_count: 3,
                fua: true
            }
        );
        assert!(dev.as_remap().is_none(), "no REMAP below, none offered");
    }
}
