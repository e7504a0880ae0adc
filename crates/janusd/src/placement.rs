//! Where a logical block sits physically: which parallel unit (plane) and die of the
//! flash array, and which flash page. Read through the FTL's read-only accessors (its
//! mapping and the NAND's block numbering); nothing here changes the mapping.
//!
//! The FTL's parallel unit is a plane (`Geometry::units`), each with its own timeline;
//! planes of a die share the die's channel. Two of a file's flash pages on one plane are
//! read one after the other however the host asks: that is a collision.

use flashstack_block::BlockDevice;
use flashstack_f2fs::MemDevice;
use flashstack_ftl::Ftl;

/// A logical block's physical home.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PhysLoc {
    /// Plane (the FTL's parallel unit).
    pub unit: u32,
    pub die: u32,
    /// Global flash page number.
    pub flash_page: u32,
    /// Global slot (the block's place within its flash page, in the FTL's slots).
    pub slot: u32,
}

/// A device whose physical placement can be looked up and whose reads are timed: the
/// FTL, and anything that wraps one. A plain image (`MemDevice`) has neither.
pub trait FragDevice: BlockDevice {
    /// The FTL underneath, if any.
    fn ftl(&self) -> Option<&Ftl>;
    fn ftl_mut(&mut self) -> Option<&mut Ftl>;
}

impl FragDevice for Ftl {
    fn ftl(&self) -> Option<&Ftl> {
        Some(self)
    }
    fn ftl_mut(&mut self) -> Option<&mut Ftl> {
        Some(self)
    }
}

impl FragDevice for MemDevice {
    fn ftl(&self) -> Option<&Ftl> {
        None
    }
    fn ftl_mut(&mut self) -> Option<&mut Ftl> {
        None
    }
}

impl<D: FragDevice> FragDevice for flashstack_block::VolatileCache<D> {
    fn ftl(&self) -> Option<&Ftl> {
        self.inner().ftl()
    }
    fn ftl_mut(&mut self) -> Option<&mut Ftl> {
        self.inner_mut().ftl_mut()
    }
}

impl<D: FragDevice> FragDevice for flashstack_block::BlockRecorder<D> {
    fn ftl(&self) -> Option<&Ftl> {
        (**self).ftl()
    }
    fn ftl_mut(&mut self) -> Option<&mut Ftl> {
        (**self).ftl_mut()
    }
}

/// The FTL's placement, read-only.
pub struct Placement<'a> {
    ftl: &'a Ftl,
    slots_per_page: u32,
    slots_per_block: u32,
    planes_per_die: u32,
    /// Parallel units (planes) of the array.
    pub units: u32,
    pub dies: u32,
}

impl<'a> Placement<'a> {
    pub fn of(ftl: &'a Ftl) -> Placement<'a> {
        let config = ftl.config();
        let g = &config.nand.geometry;
        Placement {
            ftl,
            slots_per_page: (g.page_size_bytes / config.ftl.slot_bytes).max(1),
            slots_per_block: ftl.slots_per_block(),
            planes_per_die: g.planes_per_die,
            units: g.units(),
            dies: g.dies(),
        }
    }

    /// Where `lba` is stored; `None` when unmapped (or past the device).
    pub fn locate(&self, lba: u64) -> Option<PhysLoc> {
        let slot = self.ftl.mapping().get(lba as usize)?;
        if slot == u32::MAX {
            return None;
        }
        let unit = self.ftl.nand().unit_of_block(slot / self.slots_per_block);
        Some(PhysLoc {
            unit,
            die: unit / self.planes_per_die,
            flash_page: slot / self.slots_per_page,
            slot,
        })
    }
}
