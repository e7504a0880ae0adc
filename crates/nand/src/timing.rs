//! When operations hold their die (or plane) and channel: the timing half of the array.
//!
//! Planes (or, under one command per die, dies) are `busy_until` servers; channels are
//! either `busy_until` servers or interval books (`nand.timing.channel_model`). Under
//! `nand.die_rules = "one-command-per-die"` a die runs one command at a time; a read,
//! program or erase on another plane of the die joins the die's current command as a
//! multi-plane operation when it is of the same kind, at the same page offset in its block
//! (erases: any block), of the same array time, and was ready when the command's array
//! operation started (MQSim's `issue_command_to_chip` and ONFI's multi-plane commands).
//!
//! A joining program's data goes over the channel right after the command's last data
//! transfer, and its program ends one transfer after the command's; the planes that joined
//! earlier keep the end they were given (the FTL has already used it), so each join makes
//! them look one page transfer (24.6 µs on `mqsim-default`, against a 750 µs program)
//! earlier than the die really finishes. A joining read senses with the command and moves
//! its data when the channel is next free; a joining erase runs with the command.
//!
//! Under `nand.die_rules = "independent-plane-reads"` every plane has its own timer, as
//! with independent planes, but only reads stay on their plane's timer: a program or erase
//! starts when every plane timer of its die is free and is booked on all of them, so it
//! waits for reads in flight on any plane of the die and every later read of the die waits
//! for it (no suspend). Programs and erases join a die's command as under one command per
//! die; reads join nothing (each plane senses on its own) and end the die's command, as a
//! read command does under one command per die.

use flashstack_sim::{IntervalResource, Nanos, Resource};

use crate::config::{ChannelModel, DieRules, NandConfig};
use crate::{DieCommandCounters, OpTiming, UnitOp};

/// A page offset that joins no multi-plane command (translation pages the FTL models
/// outside the array, spare-area reads).
pub(crate) const NO_PAGE_INDEX: u32 = u32::MAX;

/// Booked intervals a channel may hold before its history is pruned; then twice what
/// the last pruning left.
const PRUNE_LEN_MIN: usize = 64;

/// A channel's bus.
#[derive(Clone, Debug)]
enum Bus {
    BusyUntil(Resource),
    Intervals(IntervalResource),
}

impl Bus {
    fn new(model: ChannelModel) -> Bus {
        match model {
            ChannelModel::BusyUntil => Bus::BusyUntil(Resource::default()),
            ChannelModel::Intervals => Bus::Intervals(IntervalResource::default()),
        }
    }
    #[inline]
    fn reserve(&mut self, ready_ns: Nanos, duration_ns: Nanos) -> (Nanos, Nanos) {
        match self {
            Bus::BusyUntil(r) => r.reserve(ready_ns, duration_ns),
            Bus::Intervals(r) => r.reserve(ready_ns, duration_ns),
        }
    }
    #[inline]
    fn earliest_start_ns(&self, ready_ns: Nanos, duration_ns: Nanos) -> Nanos {
        match self {
            Bus::BusyUntil(r) => ready_ns.max(r.busy_until_ns()),
            Bus::Intervals(r) => r.earliest_start_ns(ready_ns, duration_ns),
        }
    }
    fn busy_until_ns(&self) -> Nanos {
        match self {
            Bus::BusyUntil(r) => r.busy_until_ns(),
            Bus::Intervals(r) => r.busy_until_ns(),
        }
    }
    fn reset_busy_total(&mut self) {
        match self {
            Bus::BusyUntil(r) => r.reset_busy_total(),
            Bus::Intervals(r) => r.reset_busy_total(),
        }
    }
}

/// A die's latest command (one command per die), for multi-plane joins.
#[derive(Clone, Copy, Debug)]
struct DieCommand {
    op: Option<UnitOp>,
    page_index: u32,
    /// Planes of the die in the command (bit per plane).
    planes: u32,
    /// The array operation's time: a join needs the same (same page type, no retry).
    array_ns: Nanos,
    /// Joiners must be ready by then.
    array_start_ns: Nanos,
    /// Reads: when the pages are sensed. Programs: the last data transfer's end.
    channel_from_ns: Nanos,
    /// Erases: the erase's end.
    array_end_ns: Nanos,
}

impl DieCommand {
    const NONE: DieCommand = DieCommand {
        op: None,
        page_index: NO_PAGE_INDEX,
        planes: 0,
        array_ns: 0,
        array_start_ns: 0,
        channel_from_ns: Nanos::MAX,
        array_end_ns: 0,
    };

    /// A program of `page_index` on the planes `planes`, its data across the channel at
    /// `xfer_end_ns` (when the array operation starts), ending at `end_ns`.
    fn program(
        page_index: u32,
        planes: u32,
        program_ns: Nanos,
        xfer_end_ns: Nanos,
        end_ns: Nanos,
    ) -> DieCommand {
        DieCommand {
            op: Some(UnitOp::Program),
            page_index,
            planes,
            array_ns: program_ns,
            array_start_ns: xfer_end_ns,
            channel_from_ns: xfer_end_ns,
            array_end_ns: end_ns,
        }
    }
}

/// The timing state of an array: its timers (one per plane, or one per die under one
/// command per die), its channels and the dies' open commands (one command per die and
/// independent plane reads).
#[derive(Clone, Debug)]
pub(crate) struct ArrayTiming {
    model: ChannelModel,
    strict: bool,
    /// Independent plane reads: plane timers, die-wide programs and erases.
    plane_reads: bool,
    multi_plane: bool,
    planes_per_die: u32,
    /// Per unit (plane): its timer and its channel.
    place: Vec<(u32, u32)>,
    timers: Vec<Resource>,
    channels: Vec<Bus>,
    /// Timers on each channel (for the pruning bound).
    channel_timers: Vec<Vec<u32>>,
    prune_len: Vec<usize>,
    /// Per die, under one command per die and independent plane reads.
    commands: Vec<DieCommand>,
    counters: DieCommandCounters,
}

impl ArrayTiming {
    pub(crate) fn new(config: &NandConfig) -> ArrayTiming {
        let g = &config.geometry;
        let strict = config.die_rules == DieRules::OneCommandPerDie;
        let plane_reads = config.die_rules == DieRules::IndependentPlaneReads;
        let timer_of = |unit: u32| {
            if strict {
                unit / g.planes_per_die
            } else {
                unit
            }
        };
        let place: Vec<(u32, u32)> = (0..g.units())
            .map(|unit| (timer_of(unit), (unit / g.planes_per_die) % g.channels))
            .collect();
        let timer_count = if strict { g.dies() } else { g.units() };
        let mut channel_timers = vec![Vec::new(); g.channels as usize];
        for &(timer, channel) in &place {
            let list: &mut Vec<u32> = &mut channel_timers[channel as usize];
            if list.last() != Some(&timer) {
                list.push(timer);
            }
        }
        let model = config.timing.channel_model;
        ArrayTiming {
            model,
            strict,
            plane_reads,
            multi_plane: (strict || plane_reads) && config.multi_plane,
            planes_per_die: g.planes_per_die,
            place,
            timers: vec![Resource::default(); timer_count as usize],
            channels: (0..g.channels).map(|_| Bus::new(model)).collect(),
            channel_timers,
            prune_len: vec![PRUNE_LEN_MIN; g.channels as usize],
            commands: if strict || plane_reads {
                vec![DieCommand::NONE; g.dies() as usize]
            } else {
                Vec::new()
            },
            counters: DieCommandCounters::default(),
        }
    }

    /// Forgets every booking (power returned, or state imported).
    pub(crate) fn reset(&mut self) {
        for t in &mut self.timers {
            *t = Resource::default();
        }
        for c in &mut self.channels {
            *c = Bus::new(self.model);
        }
        self.prune_len.fill(PRUNE_LEN_MIN);
        self.commands.fill(DieCommand::NONE);
    }

    /// Power returned at `now_ns`: work in flight died with the power, so nothing booked
    /// after `now_ns` holds a timer or channel any more (and no command can be joined).
    pub(crate) fn power_on(&mut self, now_ns: Nanos) {
        for t in &mut self.timers {
            if t.busy_until_ns() > now_ns {
                *t = Resource::default();
            }
        }
        for (c, prune_len) in self.channels.iter_mut().zip(&mut self.prune_len) {
            if c.busy_until_ns() > now_ns {
                *c = Bus::new(self.model);
                *prune_len = PRUNE_LEN_MIN;
            }
        }
        self.commands.fill(DieCommand::NONE);
    }

    pub(crate) fn counters(&self) -> &DieCommandCounters {
        &self.counters
    }

    /// A measurement starts: counts and busy totals restart, bookings stay.
    pub(crate) fn reset_counters(&mut self) {
        self.counters = DieCommandCounters::default();
        self.reset_busy_totals();
    }

    fn reset_busy_totals(&mut self) {
        for t in &mut self.timers {
            t.reset_busy_total();
        }
        for c in &mut self.channels {
            c.reset_busy_total();
        }
    }

    /// The latest end booked anywhere.
    pub(crate) fn busy_until_max_ns(&self) -> Nanos {
        let timers = self.timers.iter().map(Resource::busy_until_ns);
        let channels = self.channels.iter().map(Bus::busy_until_ns);
        timers.chain(channels).max().unwrap_or(0)
    }

    /// When `unit`'s timer (its plane, or its die) is next free; under independent plane
    /// reads, when a program on it could start: when every plane of its die is free.
    #[inline]
    pub(crate) fn unit_busy_until_ns(&self, unit: u32) -> Nanos {
        if self.plane_reads {
            return self.die_busy_until_ns(unit / self.planes_per_die);
        }
        self.timers[self.place[unit as usize].0 as usize].busy_until_ns()
    }

    /// Independent plane reads: the timers (planes) of `die`.
    #[inline]
    fn die_planes(&self, die: u32) -> std::ops::Range<usize> {
        let first = (die * self.planes_per_die) as usize;
        first..first + self.planes_per_die as usize
    }

    /// Independent plane reads: when every plane of `die` is free (a program or erase may
    /// start).
    #[inline]
    fn die_busy_until_ns(&self, die: u32) -> Nanos {
        self.timers[self.die_planes(die)]
            .iter()
            .map(Resource::busy_until_ns)
            .max()
            .unwrap_or(0)
    }

    /// Independent plane reads: books `[start_ns, start_ns + duration_ns)` on every plane
    /// of `die` (all free by then). Returns the end.
    #[inline]
    fn hold_die(&mut self, die: u32, start_ns: Nanos, duration_ns: Nanos) -> Nanos {
        let mut end_ns = start_ns + duration_ns;
        for p in self.die_planes(die) {
            let (s, e) = self.timers[p].reserve(start_ns, duration_ns);
            debug_assert_eq!(s, start_ns);
            end_ns = e;
        }
        end_ns
    }

    pub(crate) fn timer_busy_total_ns(&self) -> Nanos {
        self.timers.iter().map(Resource::busy_total_ns).sum()
    }

    #[inline]
    fn plane_bit(&self, unit: u32) -> u32 {
        1 << (unit % self.planes_per_die)
    }

    /// A program of one page on `unit`: its data crosses the channel into the page
    /// register, then the die programs it. `page_index` is the page's offset in its block.
    #[inline]
    pub(crate) fn program(
        &mut self,
        unit: u32,
        page_index: u32,
        ready_ns: Nanos,
        xfer_ns: Nanos,
        program_ns: Nanos,
    ) -> OpTiming {
        if self.plane_reads {
            return self.program_die_wide(unit, page_index, ready_ns, xfer_ns, program_ns);
        }
        let (timer, channel) = self.place[unit as usize];
        let (timer, channel) = (timer as usize, channel as usize);
        if self.multi_plane {
            if let Some(t) = self.join_program(unit, page_index, ready_ns, xfer_ns, program_ns) {
                return t;
            }
        }
        let ready_ns = ready_ns.max(self.timers[timer].busy_until_ns());
        let (start_ns, xfer_end_ns) = self.channels[channel].reserve(ready_ns, xfer_ns);
        let (_, end_ns) = self.timers[timer].reserve(start_ns, xfer_ns + program_ns);
        debug_assert!(end_ns >= xfer_end_ns);
        if self.strict {
            self.commands[timer] = DieCommand::program(
                page_index,
                self.plane_bit(unit),
                program_ns,
                xfer_end_ns,
                end_ns,
            );
        }
        self.after_channel(channel);
        OpTiming { start_ns, end_ns }
    }

    /// Independent plane reads: a program holds every plane of its die, from its data
    /// transfer on, once all are free.
    fn program_die_wide(
        &mut self,
        unit: u32,
        page_index: u32,
        ready_ns: Nanos,
        xfer_ns: Nanos,
        program_ns: Nanos,
    ) -> OpTiming {
        if self.multi_plane {
            if let Some(t) = self.join_program(unit, page_index, ready_ns, xfer_ns, program_ns) {
                return t;
            }
        }
        let die = unit / self.planes_per_die;
        let channel = self.place[unit as usize].1 as usize;
        let ready_ns = ready_ns.max(self.die_busy_until_ns(die));
        let (start_ns, xfer_end_ns) = self.channels[channel].reserve(ready_ns, xfer_ns);
        let end_ns = self.hold_die(die, start_ns, xfer_ns + program_ns);
        self.commands[die as usize] = DieCommand::program(
            page_index,
            self.plane_bit(unit),
            program_ns,
            xfer_end_ns,
            end_ns,
        );
        self.after_channel(channel);
        OpTiming { start_ns, end_ns }
    }

    /// An erase of `unit` joining the open command `cmd` (the die's, or the unit's
    /// timer's) as a multi-plane erase: same kind and duration, another plane, ready
    /// before the command's array operation started.
    fn join_erase(
        &mut self,
        cmd: usize,
        unit: u32,
        ready_ns: Nanos,
        erase_ns: Nanos,
    ) -> Option<OpTiming> {
        if !self.multi_plane {
            return None;
        }
        let bit = self.plane_bit(unit);
        let cmd = &mut self.commands[cmd];
        let joins = cmd.op == Some(UnitOp::Erase)
            && cmd.planes & bit == 0
            && cmd.array_ns == erase_ns
            && ready_ns <= cmd.array_start_ns;
        if !joins {
            return None;
        }
        if cmd.planes.count_ones() == 1 {
            self.counters.multi_plane_erases += 1;
        }
        self.counters.plane_joins_erase += 1;
        cmd.planes |= bit;
        Some(OpTiming {
            start_ns: cmd.array_start_ns,
            end_ns: cmd.array_end_ns,
        })
    }

    #[cold]
    fn join_program(
        &mut self,
        unit: u32,
        page_index: u32,
        ready_ns: Nanos,
        xfer_ns: Nanos,
        program_ns: Nanos,
    ) -> Option<OpTiming> {
        // The die (under one command per die, also the unit's timer).
        let die = (unit / self.planes_per_die) as usize;
        let channel = self.place[unit as usize].1 as usize;
        let bit = self.plane_bit(unit);
        let cmd = self.commands[die];
        let joins = cmd.op == Some(UnitOp::Program)
            && page_index != NO_PAGE_INDEX
            && cmd.page_index == page_index
            && cmd.planes & bit == 0
            && cmd.array_ns == program_ns
            && ready_ns <= cmd.array_start_ns;
        // Its data must follow the command's last transfer back to back.
        let from_ns = cmd.channel_from_ns;
        if !joins || self.channels[channel].earliest_start_ns(from_ns, xfer_ns) != from_ns {
            return None;
        }
        let (start_ns, xfer_end_ns) = self.channels[channel].reserve(from_ns, xfer_ns);
        let end_ns = xfer_end_ns + program_ns;
        if self.plane_reads {
            // Every plane of the die holds the command (a read would have ended it).
            for p in self.die_planes(die as u32) {
                let until_ns = self.timers[p].busy_until_ns();
                debug_assert_eq!(until_ns, cmd.array_end_ns);
                self.timers[p].reserve(until_ns, end_ns - until_ns);
            }
        } else {
            let die_until_ns = self.timers[die].busy_until_ns();
            debug_assert_eq!(die_until_ns, cmd.array_end_ns);
            self.timers[die].reserve(die_until_ns, end_ns - die_until_ns);
        }
        let cmd = &mut self.commands[die];
        if cmd.planes.count_ones() == 1 {
            self.counters.multi_plane_programs += 1;
        }
        self.counters.plane_joins_program += 1;
        cmd.planes |= bit;
        cmd.array_start_ns = xfer_end_ns;
        cmd.channel_from_ns = xfer_end_ns;
        cmd.array_end_ns = end_ns;
        self.after_channel(channel);
        Some(OpTiming { start_ns, end_ns })
    }

    /// A read of one page on `unit`: the die senses it, then holds it in its register
    /// until the channel moves `xfer_ns` worth of it. Returns (sense start, data out end).
    #[inline]
    pub(crate) fn read(
        &mut self,
        unit: u32,
        page_index: u32,
        ready_ns: Nanos,
        read_ns: Nanos,
        xfer_ns: Nanos,
    ) -> OpTiming {
        let (timer, channel) = self.place[unit as usize];
        let (timer, channel) = (timer as usize, channel as usize);
        if self.plane_reads {
            // The plane's own timeline: it waits for the plane's earlier reads and for a
            // program or erase of the die (booked on every plane), not for other planes'
            // reads. It joins nothing and ends the die's command.
            let (start_ns, sensed_ns) = self.timers[timer].reserve(ready_ns, read_ns);
            let (_, end_ns) = self.channels[channel].reserve(sensed_ns, xfer_ns);
            self.timers[timer].reserve(sensed_ns, end_ns - sensed_ns);
            self.commands[(unit / self.planes_per_die) as usize] = DieCommand::NONE;
            self.after_channel(channel);
            return OpTiming { start_ns, end_ns };
        }
        if self.multi_plane {
            if let Some(t) = self.join_read(unit, page_index, ready_ns, read_ns, xfer_ns) {
                return t;
            }
        }
        let (start_ns, sensed_ns) = self.timers[timer].reserve(ready_ns, read_ns);
        let (_, end_ns) = self.channels[channel].reserve(sensed_ns, xfer_ns);
        let (_, timer_end_ns) = self.timers[timer].reserve(sensed_ns, end_ns - sensed_ns);
        debug_assert_eq!(timer_end_ns, end_ns);
        if self.strict {
            self.commands[timer] = DieCommand {
                op: Some(UnitOp::Read),
                page_index,
                planes: self.plane_bit(unit),
                array_ns: read_ns,
                array_start_ns: start_ns,
                channel_from_ns: sensed_ns,
                array_end_ns: sensed_ns,
            };
        }
        self.after_channel(channel);
        OpTiming { start_ns, end_ns }
    }

    #[cold]
    fn join_read(
        &mut self,
        unit: u32,
        page_index: u32,
        ready_ns: Nanos,
        read_ns: Nanos,
        xfer_ns: Nanos,
    ) -> Option<OpTiming> {
        let (die, channel) = self.place[unit as usize];
        let (die, channel) = (die as usize, channel as usize);
        let bit = self.plane_bit(unit);
        let cmd = self.commands[die];
        let joins = cmd.op == Some(UnitOp::Read)
            && page_index != NO_PAGE_INDEX
            && cmd.page_index == page_index
            && cmd.planes & bit == 0
            && cmd.array_ns == read_ns
            && ready_ns <= cmd.array_start_ns;
        if !joins {
            return None;
        }
        let (_, end_ns) = self.channels[channel].reserve(cmd.channel_from_ns, xfer_ns);
        let die_until_ns = self.timers[die].busy_until_ns();
        if end_ns > die_until_ns {
            self.timers[die].reserve(die_until_ns, end_ns - die_until_ns);
        }
        let cmd = &mut self.commands[die];
        if cmd.planes.count_ones() == 1 {
            self.counters.multi_plane_reads += 1;
        }
        self.counters.plane_joins_read += 1;
        cmd.planes |= bit;
        let start_ns = cmd.array_start_ns;
        self.after_channel(channel);
        Some(OpTiming { start_ns, end_ns })
    }

    /// An erase of a block on `unit` (no channel time).
    #[inline]
    pub(crate) fn erase(&mut self, unit: u32, ready_ns: Nanos, erase_ns: Nanos) -> OpTiming {
        if self.plane_reads {
            return self.erase_die_wide(unit, ready_ns, erase_ns, true);
        }
        let timer = self.place[unit as usize].0 as usize;
        if let Some(joined) = self.join_erase(timer, unit, ready_ns, erase_ns) {
            return joined;
        }
        let (start_ns, end_ns) = self.timers[timer].reserve(ready_ns, erase_ns);
        if self.strict {
            self.commands[timer] = DieCommand {
                op: Some(UnitOp::Erase),
                page_index: NO_PAGE_INDEX,
                planes: self.plane_bit(unit),
                array_ns: erase_ns,
                array_start_ns: start_ns,
                channel_from_ns: Nanos::MAX,
                array_end_ns: end_ns,
            };
        }
        OpTiming { start_ns, end_ns }
    }

    /// An erase that joins no multi-plane command (a translation block the FTL models
    /// outside the array).
    #[inline]
    pub(crate) fn erase_unjoined(
        &mut self,
        unit: u32,
        ready_ns: Nanos,
        erase_ns: Nanos,
    ) -> OpTiming {
        if self.plane_reads {
            return self.erase_die_wide(unit, ready_ns, erase_ns, false);
        }
        let timer = self.place[unit as usize].0 as usize;
        let (start_ns, end_ns) = self.timers[timer].reserve(ready_ns, erase_ns);
        if self.strict {
            self.commands[timer] = DieCommand::NONE;
        }
        OpTiming { start_ns, end_ns }
    }

    /// Independent plane reads: an erase holds every plane of its die once all are free;
    /// `joinable` erases join and open multi-plane erase commands.
    fn erase_die_wide(
        &mut self,
        unit: u32,
        ready_ns: Nanos,
        erase_ns: Nanos,
        joinable: bool,
    ) -> OpTiming {
        let die = unit / self.planes_per_die;
        if joinable {
            // A joined command already holds every plane of the die.
            if let Some(joined) = self.join_erase(die as usize, unit, ready_ns, erase_ns) {
                return joined;
            }
        }
        let bit = self.plane_bit(unit);
        let start_ns = ready_ns.max(self.die_busy_until_ns(die));
        let end_ns = self.hold_die(die, start_ns, erase_ns);
        self.commands[die as usize] = if joinable {
            DieCommand {
                op: Some(UnitOp::Erase),
                page_index: NO_PAGE_INDEX,
                planes: bit,
                array_ns: erase_ns,
                array_start_ns: start_ns,
                channel_from_ns: Nanos::MAX,
                array_end_ns: end_ns,
            }
        } else {
            DieCommand::NONE
        };
        OpTiming { start_ns, end_ns }
    }

    /// A spare-area read: the die senses the page; the few bytes moved are not charged.
    /// It joins nothing.
    #[inline]
    pub(crate) fn sense_only(&mut self, unit: u32, ready_ns: Nanos, read_ns: Nanos) -> OpTiming {
        let timer = self.place[unit as usize].0 as usize;
        let (start_ns, end_ns) = self.timers[timer].reserve(ready_ns, read_ns);
        if self.strict {
            self.commands[timer] = DieCommand::NONE;
        } else if self.plane_reads {
            self.commands[(unit / self.planes_per_die) as usize] = DieCommand::NONE;
        }
        OpTiming { start_ns, end_ns }
    }

    /// Prunes an interval channel's history below the earliest time any later booking on
    /// it can be ready: every channel booking of a die is ready no earlier than its timer's
    /// `busy_until` (which never decreases), except a multi-plane join's, which is ready
    /// from its command's sensing or last transfer.
    #[inline]
    fn after_channel(&mut self, channel: usize) {
        if let Bus::Intervals(bus) = &self.channels[channel] {
            if bus.len() > self.prune_len[channel] {
                self.prune_channel(channel);
            }
        }
    }

    #[cold]
    fn prune_channel(&mut self, channel: usize) {
        let floor_ns = self.channel_timers[channel]
            .iter()
            .map(|&t| {
                let until_ns = self.timers[t as usize].busy_until_ns();
                // The timer's die: itself under one command per die.
                let die = match self.plane_reads {
                    true => t / self.planes_per_die,
                    false => t,
                };
                match self.multi_plane {
                    true => until_ns.min(self.commands[die as usize].channel_from_ns),
                    false => until_ns,
                }
            })
            .min()
            .unwrap_or(0);
        if let Bus::Intervals(bus) = &mut self.channels[channel] {
            bus.forget_before(floor_ns);
            self.prune_len[channel] = (2 * bus.len()).max(PRUNE_LEN_MIN);
        }
    }
}
