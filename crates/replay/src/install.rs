//! Preconditioning from a trace: mobile trace sets ship the I/O of installing an app beside
//! each run trace; replaying it on the device before the measurement puts the device in
//! the state the run trace was captured from (its files where the install wrote them, its
//! garbage where it overwrote them), and nothing of it is counted in any figure.

use std::fmt;

use flashstack_block::RequestKind;
use flashstack_sim::units::{format_bytes, format_count, format_ns};
use flashstack_trace::TraceRequest;

use crate::{Progress, ReplayError, Replayer};

/// The install-time trace `prepare` replays after the fill preconditioning.
pub(crate) struct InstallTrace {
    name: String,
    requests: Vec<TraceRequest>,
}

/// What replaying the install-time trace did (the report's precondition line says it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TracePreconditionReport {
    /// The trace's name as given (its file).
    pub name: String,
    pub requests: u64,
    pub write_bytes: u64,
    pub read_bytes: u64,
    pub trim_bytes: u64,
    /// Device time from its first arrival until the device was idle again.
    pub duration_ns: u64,
}

impl fmt::Display for TracePreconditionReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "replayed {} ({} requests: {} written, {} read",
            self.name,
            format_count(self.requests),
            format_bytes(self.write_bytes),
            format_bytes(self.read_bytes)
        )?;
        if self.trim_bytes > 0 {
            write!(f, ", {} trimmed", format_bytes(self.trim_bytes))?;
        }
        write!(f, "; {} of device time)", format_ns(self.duration_ns))
    }
}

impl Replayer {
    /// Replays `requests` (the install-time trace `name`) on the device before the
    /// measurement: [`prepare`](Self::prepare) runs it after the fill preconditioning
    /// (if any) and before laying down the data the run trace reads, so the run trace's
    /// reads of what the install wrote find it there. Its arrivals are shifted to start
    /// when the device is idle; it is counted in no figure (nor in the per-process
    /// breakdown), and its reads of LBAs never written read zeros. Fails if called after
    /// `prepare`, or if a request lies beyond the device (unless the run folds addresses,
    /// `OutOfRange::Wrap`).
    pub fn precondition_with_trace(
        &mut self,
        name: &str,
        requests: Vec<TraceRequest>,
    ) -> Result<(), ReplayError> {
        if self.prepared {
            return Err(ReplayError::PreconditionTraceAfterPrepare);
        }
        if let Some((index, r)) = self.first_beyond(&requests) {
            return Err(ReplayError::PreconditionTraceBeyondCapacity {
                name: name.to_string(),
                index,
                kind: r.kind.name(),
                offset_bytes: r.offset_bytes,
                len_bytes: r.len_bytes,
                capacity_bytes: self.capacity_bytes(),
            });
        }
        self.install_trace = Some(InstallTrace {
            name: name.to_string(),
            requests,
        });
        Ok(())
    }

    /// What the device was preconditioned with, in words: the fill, the install trace,
    /// or both in the order they ran.
    pub fn precondition_summary(&self) -> Option<String> {
        let fill = self.precondition.as_ref().map(|p| p.to_string());
        let trace = self.trace_precondition.as_ref().map(|t| t.to_string());
        match (fill, trace) {
            (Some(fill), Some(trace)) => Some(format!("{fill}; then {trace}")),
            (fill, trace) => fill.or(trace),
        }
    }

    /// Replays the install trace, if one was given (called by `prepare`).
    pub(crate) fn replay_install_trace(
        &mut self,
        progress: &mut dyn Progress,
    ) -> Result<(), ReplayError> {
        let Some(InstallTrace { name, requests }) = self.install_trace.take() else {
            return Ok(());
        };
        let start_ns = self.ftl.busy_until_ns().max(self.ftl.last_arrival_ns());
        let first_ns = requests.iter().map(|r| r.arrival_ns).min().unwrap_or(0);
        let mut report = TracePreconditionReport {
            name: name.clone(),
            requests: requests.len() as u64,
            write_bytes: 0,
            read_bytes: 0,
            trim_bytes: 0,
            duration_ns: 0,
        };
        for r in &requests {
            match r.kind {
                RequestKind::Write => report.write_bytes += r.len_bytes,
                RequestKind::Read => report.read_bytes += r.len_bytes,
                RequestKind::Trim => report.trim_bytes += r.len_bytes,
                RequestKind::Flush => {}
            }
        }
        // The run trace's breakdown by process and its count of folded requests must
        // hold none of the install trace.
        let processes = self.processes.take();
        let wrapped = self.wrapped_requests;
        self.time_offset_ns = start_ns;
        self.last_arrival_ns = start_ns;
        self.last_complete_ns = start_ns;
        let total = requests.len() as u64;
        let shifted = requests.into_iter().map(|r| TraceRequest {
            arrival_ns: r.arrival_ns - first_ns,
            ..r
        });
        let result = self.replay_phase("precondition trace", shifted, Some(total), progress);
        self.processes = processes;
        self.wrapped_requests = wrapped;
        result.map_err(|source| ReplayError::PreconditionTrace {
            name,
            source: Box::new(source),
        })?;
        let end_ns = self.ftl.busy_until_ns().max(self.last_complete_ns);
        report.duration_ns = end_ns - start_ns;
        self.trace_precondition = Some(report);
        Ok(())
    }
}
