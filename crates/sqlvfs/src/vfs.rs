//! The SQLite VFS over the FFI: `sqlite3_vfs` + `sqlite3_io_methods` mapped onto a [`FileApi`].
//!
//! Every callback runs inside `catch_unwind` and maps a [`FileError`] to an
//! `SQLITE_IOERR_*` code, so no panic and no Rust error crosses into C.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use rusqlite::ffi;
use rusqlite::{Connection, OpenFlags as SqlOpenFlags};

use crate::api::{FileApi, FileError, FileId, Nanos, OpenFlags};
use crate::config::SqliteConfig;
use crate::rng::SplitMix64;
use crate::SqlVfsError;

/// Virtual time 0 is this Unix time (2026-01-01T00:00:00Z), so SQLite's `now` is fixed.
pub const EPOCH_UNIX_MS: i64 = 1_767_225_600_000;
/// The Unix epoch in Julian-day milliseconds (SQLite's xCurrentTimeInt64 unit).
const UNIX_EPOCH_JULIAN_MS: i64 = 210_866_760_000_000;
const MAX_PATHNAME: c_int = 512;

static NEXT_VFS: AtomicU64 = AtomicU64::new(1);
/// SQLite's PRNG is process-global and seeded only from the default VFS, so simulated
/// connections are serialised and the PRNG is reseeded from the simulation at each open.
static SERIAL: Mutex<()> = Mutex::new(());

struct VfsState {
    api: Box<dyn FileApi>,
    clock_ns: Nanos,
    cpu_ns_per_call: Nanos,
    rng: SplitMix64,
    temp_files: u64,
}

impl VfsState {
    /// Runs one file-system call at the current virtual time plus SQLite's CPU cost and
    /// advances the clock to its completion.
    fn call<T>(
        &mut self,
        f: impl FnOnce(&mut dyn FileApi, Nanos) -> Result<(T, Nanos), FileError>,
    ) -> Result<T, FileError> {
        let now = self.clock_ns + self.cpu_ns_per_call;
        self.clock_ns = now;
        let (v, done) = f(&mut *self.api, now)?;
        self.clock_ns = done.max(now);
        Ok(v)
    }
}

type Shared = Mutex<VfsState>;

#[repr(C)]
struct SimFile {
    base: ffi::sqlite3_file,
    state: *const Shared,
    id: FileId,
    lock: c_int,
}

/// A registered SQLite VFS whose files live on a [`FileApi`], with its own virtual clock.
///
/// The name is unique per instance (`flashstack-N`); it is unregistered on drop, after
/// every [`SimDb`] using it (they hold an `Rc` to it).
pub struct SimVfs {
    raw: *mut ffi::sqlite3_vfs,
    name: CString,
    state: Box<Shared>,
}

impl std::fmt::Debug for SimVfs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimVfs").field("name", &self.name).finish()
    }
}

impl SimVfs {
    /// Registers a new VFS over `api`. `seed` drives xRandomness; `cpu_ns_per_call` is
    /// SQLite's own CPU cost charged before every file call.
    pub fn register(
        api: Box<dyn FileApi>,
        seed: u64,
        cpu_ns_per_call: Nanos,
    ) -> Result<Rc<Self>, SqlVfsError> {
        let n = NEXT_VFS.fetch_add(1, Ordering::Relaxed);
        let name = CString::new(format!("flashstack-{n}")).map_err(|_| SqlVfsError::Register(0))?;
        let state = Box::new(Mutex::new(VfsState {
            api,
            clock_ns: 0,
            cpu_ns_per_call,
            rng: SplitMix64::new(seed),
            temp_files: 0,
        }));
        let raw = Box::into_raw(Box::new(ffi::sqlite3_vfs {
            iVersion: 2,
            szOsFile: std::mem::size_of::<SimFile>() as c_int,
            mxPathname: MAX_PATHNAME,
            pNext: ptr::null_mut(),
            zName: name.as_ptr(),
            pAppData: &*state as *const Shared as *mut c_void,
            xOpen: Some(x_open),
            xDelete: Some(x_delete),
            xAccess: Some(x_access),
            xFullPathname: Some(x_full_pathname),
            xDlOpen: None,
            xDlError: None,
            xDlSym: None,
            xDlClose: None,
            xRandomness: Some(x_randomness),
            xSleep: Some(x_sleep),
            xCurrentTime: Some(x_current_time),
            xGetLastError: Some(x_get_last_error),
            xCurrentTimeInt64: Some(x_current_time_int64),
            xSetSystemCall: None,
            xGetSystemCall: None,
            xNextSystemCall: None,
        }));
        // SAFETY: `raw` points to a fully initialised sqlite3_vfs whose name and app data
        // live as long as the returned SimVfs, which unregisters it before freeing them.
        let rc = unsafe { ffi::sqlite3_vfs_register(raw, 0) };
        if rc != ffi::SQLITE_OK {
            // SAFETY: registration failed, so SQLite holds no pointer to `raw`.
            drop(unsafe { Box::from_raw(raw) });
            return Err(SqlVfsError::Register(rc));
        }
        Ok(Rc::new(Self { raw, name, state }))
    }

    /// The registered name.
    pub fn name(&self) -> &str {
        self.name.to_str().unwrap_or("")
    }

    fn lock(&self) -> MutexGuard<'_, VfsState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The current virtual time.
    pub fn now_ns(&self) -> Nanos {
        self.lock().clock_ns
    }

    /// Moves the virtual clock forward to `t` (think time); never backwards.
    pub fn advance_to(&self, t: Nanos) {
        let mut g = self.lock();
        g.clock_ns = g.clock_ns.max(t);
    }

    fn next_seed(&self) -> u64 {
        self.lock().rng.next()
    }
}

impl Drop for SimVfs {
    fn drop(&mut self) {
        // SAFETY: `raw` was registered by `register` and is unregistered exactly once;
        // every connection using it holds an Rc to `self`, so none is left.
        unsafe {
            ffi::sqlite3_vfs_unregister(self.raw);
            drop(Box::from_raw(self.raw));
        }
    }
}

/// A SQLite connection on a [`SimVfs`], configured by a [`SqliteConfig`].
#[derive(Debug)]
pub struct SimDb {
    conn: Connection,
    vfs: Rc<SimVfs>,
    _serial: MutexGuard<'static, ()>,
}

impl SimDb {
    /// Opens (creating if needed) the database `path` on `vfs` and applies `config`.
    ///
    /// Holds a process-wide lock until dropped: SQLite's PRNG (journal nonces, WAL salts)
    /// is global, so it is reseeded here from the VFS's seeded PRNG and no other
    /// simulated connection may draw from it meanwhile. Open one `SimDb` at a time per thread.
    pub fn open(vfs: &Rc<SimVfs>, path: &str, config: &SqliteConfig) -> Result<Self, SqlVfsError> {
        let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let seed = (vfs.next_seed() as u32 & 0x7fff_ffff).max(1) as c_int;
        // SAFETY: SQLITE_TESTCTRL_PRNG_SEED takes (int, sqlite3*); a null db is allowed.
        unsafe {
            ffi::sqlite3_test_control(
                ffi::SQLITE_TESTCTRL_PRNG_SEED,
                seed,
                ptr::null_mut::<ffi::sqlite3>(),
            );
        }
        let flags = SqlOpenFlags::SQLITE_OPEN_READ_WRITE
            | SqlOpenFlags::SQLITE_OPEN_CREATE
            | SqlOpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags_and_vfs(path, flags, vfs.name())?;
        // Room for every statement an app's schemas run (each attached schema's statements
        // are distinct texts), so `prepare_cached` never evicts in a persona's loop.
        conn.set_prepared_statement_cache_capacity(256);
        for p in config.pragmas() {
            // PRAGMAs that return a row (journal_mode, locking_mode) and those that don't.
            conn.query_row(&p, [], |_| Ok(())).or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(()),
                e => Err(e),
            })?;
        }
        Ok(Self {
            conn,
            vfs: Rc::clone(vfs),
            _serial: serial,
        })
    }

    /// The connection.
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// The VFS.
    pub fn vfs(&self) -> &Rc<SimVfs> {
        &self.vfs
    }

    /// Closes the connection, reporting any error.
    pub fn close(self) -> Result<(), SqlVfsError> {
        let Self { conn, vfs, _serial } = self;
        let r = conn.close().map_err(|(_, e)| SqlVfsError::Sqlite(e));
        drop(vfs);
        r
    }
}

impl std::ops::Deref for SimDb {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self.conn
    }
}

// ---- helpers -------------------------------------------------------------------------

fn guarded(err: c_int, f: impl FnOnce() -> c_int) -> c_int {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(err)
}

/// # Safety
/// `p` must be the app data of a live SimVfs.
unsafe fn shared<'a>(p: *const Shared) -> MutexGuard<'a, VfsState> {
    // SAFETY: guaranteed by the caller.
    let m = unsafe { &*p };
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// # Safety
/// `vfs` must be a SimVfs registered by `SimVfs::register`.
unsafe fn vfs_state<'a>(vfs: *mut ffi::sqlite3_vfs) -> MutexGuard<'a, VfsState> {
    // SAFETY: pAppData is the Shared of the live SimVfs.
    unsafe { shared((*vfs).pAppData as *const Shared) }
}

fn map_err(e: &FileError, io: c_int) -> c_int {
    match e {
        FileError::TooLarge { .. } => ffi::SQLITE_FULL,
        FileError::TableFull { .. } => ffi::SQLITE_FULL,
        FileError::NoSpace(_) => ffi::SQLITE_FULL,
        FileError::ReadOnly(_) => ffi::SQLITE_READONLY,
        _ => io,
    }
}

/// # Safety
/// `name` must be null or a NUL-terminated string.
unsafe fn path_of(name: *const c_char) -> Option<String> {
    if name.is_null() {
        return None;
    }
    // SAFETY: guaranteed by the caller.
    Some(
        unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned(),
    )
}

// ---- sqlite3_vfs methods -------------------------------------------------------------

static IO_METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 1,
    xClose: Some(x_close),
    xRead: Some(x_read),
    xWrite: Some(x_write),
    xTruncate: Some(x_truncate),
    xSync: Some(x_sync),
    xFileSize: Some(x_file_size),
    xLock: Some(x_lock),
    xUnlock: Some(x_unlock),
    xCheckReservedLock: Some(x_check_reserved_lock),
    xFileControl: Some(x_file_control),
    xSectorSize: Some(x_sector_size),
    xDeviceCharacteristics: Some(x_device_characteristics),
    xShmMap: None,
    xShmLock: None,
    xShmBarrier: None,
    xShmUnmap: None,
    xFetch: None,
    xUnfetch: None,
};

unsafe extern "C" fn x_open(
    vfs: *mut ffi::sqlite3_vfs,
    z_name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    guarded(ffi::SQLITE_CANTOPEN, || {
        // SAFETY: SQLite passes szOsFile bytes at `file`; mark it unopened first so a
        // failed open is never closed.
        unsafe { (*file).pMethods = ptr::null() };
        // SAFETY: `vfs` is ours.
        let mut st = unsafe { vfs_state(vfs) };
        // SAFETY: z_name is null or NUL-terminated.
        let (path, temp) = match unsafe { path_of(z_name) } {
            Some(p) => (p, false),
            None => {
                st.temp_files += 1;
                (format!("/tmp/etilqs_{}", st.temp_files), true)
            }
        };
        let of = OpenFlags {
            create: flags & ffi::SQLITE_OPEN_CREATE != 0,
            exclusive: flags & ffi::SQLITE_OPEN_EXCLUSIVE != 0,
            read_only: flags & ffi::SQLITE_OPEN_READONLY != 0,
            delete_on_close: temp || flags & ffi::SQLITE_OPEN_DELETEONCLOSE != 0,
        };
        match st.call(|api, now| api.open(now, &path, of)) {
            Ok(id) => {
                let sf = SimFile {
                    base: ffi::sqlite3_file {
                        pMethods: &IO_METHODS,
                    },
                    state: unsafe { (*vfs).pAppData as *const Shared },
                    id,
                    lock: ffi::SQLITE_LOCK_NONE,
                };
                // SAFETY: `file` has room for a SimFile (szOsFile) and is suitably aligned
                // (SQLite allocates it with malloc).
                unsafe { ptr::write(file as *mut SimFile, sf) };
                if !out_flags.is_null() {
                    // SAFETY: non-null out pointer from SQLite.
                    unsafe { *out_flags = flags };
                }
                ffi::SQLITE_OK
            }
            Err(e) => map_err(&e, ffi::SQLITE_CANTOPEN),
        }
    })
}

unsafe extern "C" fn x_delete(
    vfs: *mut ffi::sqlite3_vfs,
    z_name: *const c_char,
    sync_dir: c_int,
) -> c_int {
    guarded(ffi::SQLITE_IOERR_DELETE, || {
        // SAFETY: `vfs` is ours; z_name is NUL-terminated.
        let mut st = unsafe { vfs_state(vfs) };
        let Some(path) = (unsafe { path_of(z_name) }) else {
            return ffi::SQLITE_IOERR_DELETE;
        };
        match st.call(|api, now| api.delete(now, &path, sync_dir != 0).map(|t| ((), t))) {
            Ok(()) => ffi::SQLITE_OK,
            Err(FileError::NotFound(_)) => ffi::SQLITE_IOERR_DELETE_NOENT,
            Err(e) => map_err(&e, ffi::SQLITE_IOERR_DELETE),
        }
    })
}

unsafe extern "C" fn x_access(
    vfs: *mut ffi::sqlite3_vfs,
    z_name: *const c_char,
    _flags: c_int,
    res: *mut c_int,
) -> c_int {
    guarded(ffi::SQLITE_IOERR_ACCESS, || {
        // SAFETY: `vfs` is ours; z_name is NUL-terminated; res is a valid out pointer.
        let mut st = unsafe { vfs_state(vfs) };
        let Some(path) = (unsafe { path_of(z_name) }) else {
            return ffi::SQLITE_IOERR_ACCESS;
        };
        match st.call(|api, now| api.exists(now, &path)) {
            Ok(e) => {
                unsafe { *res = c_int::from(e) };
                ffi::SQLITE_OK
            }
            Err(e) => map_err(&e, ffi::SQLITE_IOERR_ACCESS),
        }
    })
}

unsafe extern "C" fn x_full_pathname(
    _vfs: *mut ffi::sqlite3_vfs,
    z_name: *const c_char,
    n_out: c_int,
    z_out: *mut c_char,
) -> c_int {
    guarded(ffi::SQLITE_CANTOPEN, || {
        // SAFETY: z_name is NUL-terminated; z_out has n_out bytes.
        let name = unsafe { CStr::from_ptr(z_name) }.to_bytes();
        if name.len() + 1 > n_out.max(0) as usize {
            return ffi::SQLITE_CANTOPEN;
        }
        unsafe {
            ptr::copy_nonoverlapping(name.as_ptr() as *const c_char, z_out, name.len());
            *z_out.add(name.len()) = 0;
        }
        ffi::SQLITE_OK
    })
}

unsafe extern "C" fn x_randomness(vfs: *mut ffi::sqlite3_vfs, n: c_int, out: *mut c_char) -> c_int {
    guarded(0, || {
        // SAFETY: `vfs` is ours; `out` has n bytes.
        let mut st = unsafe { vfs_state(vfs) };
        let n = n.max(0) as usize;
        let buf = unsafe { std::slice::from_raw_parts_mut(out as *mut u8, n) };
        st.rng.fill(buf);
        n as c_int
    })
}

unsafe extern "C" fn x_sleep(vfs: *mut ffi::sqlite3_vfs, micros: c_int) -> c_int {
    guarded(0, || {
        // SAFETY: `vfs` is ours.
        let mut st = unsafe { vfs_state(vfs) };
        st.clock_ns += micros.max(0) as u64 * 1_000;
        micros
    })
}

fn julian_ms(clock_ns: Nanos) -> i64 {
    UNIX_EPOCH_JULIAN_MS + EPOCH_UNIX_MS + (clock_ns / 1_000_000) as i64
}

unsafe extern "C" fn x_current_time(vfs: *mut ffi::sqlite3_vfs, out: *mut f64) -> c_int {
    guarded(ffi::SQLITE_ERROR, || {
        // SAFETY: `vfs` is ours; `out` is valid.
        let st = unsafe { vfs_state(vfs) };
        unsafe { *out = julian_ms(st.clock_ns) as f64 / 86_400_000.0 };
        ffi::SQLITE_OK
    })
}

unsafe extern "C" fn x_current_time_int64(
    vfs: *mut ffi::sqlite3_vfs,
    out: *mut ffi::sqlite3_int64,
) -> c_int {
    guarded(ffi::SQLITE_ERROR, || {
        // SAFETY: `vfs` is ours; `out` is valid.
        let st = unsafe { vfs_state(vfs) };
        unsafe { *out = julian_ms(st.clock_ns) };
        ffi::SQLITE_OK
    })
}

unsafe extern "C" fn x_get_last_error(
    _vfs: *mut ffi::sqlite3_vfs,
    _n: c_int,
    _out: *mut c_char,
) -> c_int {
    0
}

// ---- sqlite3_io_methods --------------------------------------------------------------

/// # Safety
/// `file` must have been opened by `x_open`.
unsafe fn sim<'a>(file: *mut ffi::sqlite3_file) -> &'a mut SimFile {
    // SAFETY: guaranteed by the caller.
    unsafe { &mut *(file as *mut SimFile) }
}

unsafe extern "C" fn x_close(file: *mut ffi::sqlite3_file) -> c_int {
    guarded(ffi::SQLITE_IOERR_CLOSE, || {
        // SAFETY: opened by x_open.
        let f = unsafe { sim(file) };
        let mut st = unsafe { shared(f.state) };
        let id = f.id;
        f.base.pMethods = ptr::null();
        match st.call(|api, now| api.close(now, id).map(|t| ((), t))) {
            Ok(()) => ffi::SQLITE_OK,
            Err(e) => map_err(&e, ffi::SQLITE_IOERR_CLOSE),
        }
    })
}

unsafe extern "C" fn x_read(
    file: *mut ffi::sqlite3_file,
    buf: *mut c_void,
    amt: c_int,
    off: ffi::sqlite3_int64,
) -> c_int {
    guarded(ffi::SQLITE_IOERR_READ, || {
        // SAFETY: opened by x_open; `buf` has `amt` bytes.
        let f = unsafe { sim(file) };
        let mut st = unsafe { shared(f.state) };
        let buf = unsafe { std::slice::from_raw_parts_mut(buf as *mut u8, amt.max(0) as usize) };
        let id = f.id;
        match st.call(|api, now| api.read_at(now, id, off.max(0) as u64, buf)) {
            Ok(n) if n == buf.len() => ffi::SQLITE_OK,
            Ok(n) => {
                buf[n..].fill(0);
                ffi::SQLITE_IOERR_SHORT_READ
            }
            Err(e) => map_err(&e, ffi::SQLITE_IOERR_READ),
        }
    })
}

unsafe extern "C" fn x_write(
    file: *mut ffi::sqlite3_file,
    buf: *const c_void,
    amt: c_int,
    off: ffi::sqlite3_int64,
) -> c_int {
    guarded(ffi::SQLITE_IOERR_WRITE, || {
        // SAFETY: opened by x_open; `buf` has `amt` bytes.
        let f = unsafe { sim(file) };
        let mut st = unsafe { shared(f.state) };
        let data = unsafe { std::slice::from_raw_parts(buf as *const u8, amt.max(0) as usize) };
        let id = f.id;
        match st.call(|api, now| {
            api.write_at(now, id, off.max(0) as u64, data)
                .map(|t| ((), t))
        }) {
            Ok(()) => ffi::SQLITE_OK,
            Err(e) => map_err(&e, ffi::SQLITE_IOERR_WRITE),
        }
    })
}

unsafe extern "C" fn x_truncate(file: *mut ffi::sqlite3_file, size: ffi::sqlite3_int64) -> c_int {
    guarded(ffi::SQLITE_IOERR_TRUNCATE, || {
        // SAFETY: opened by x_open.
        let f = unsafe { sim(file) };
        let mut st = unsafe { shared(f.state) };
        let id = f.id;
        match st.call(|api, now| api.truncate(now, id, size.max(0) as u64).map(|t| ((), t))) {
            Ok(()) => ffi::SQLITE_OK,
            Err(e) => map_err(&e, ffi::SQLITE_IOERR_TRUNCATE),
        }
    })
}

unsafe extern "C" fn x_sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    guarded(ffi::SQLITE_IOERR_FSYNC, || {
        // SAFETY: opened by x_open.
        let f = unsafe { sim(file) };
        let mut st = unsafe { shared(f.state) };
        let id = f.id;
        let data_only = flags & ffi::SQLITE_SYNC_DATAONLY != 0;
        match st.call(|api, now| api.sync(now, id, data_only).map(|t| ((), t))) {
            Ok(()) => ffi::SQLITE_OK,
            Err(e) => map_err(&e, ffi::SQLITE_IOERR_FSYNC),
        }
    })
}

unsafe extern "C" fn x_file_size(
    file: *mut ffi::sqlite3_file,
    out: *mut ffi::sqlite3_int64,
) -> c_int {
    guarded(ffi::SQLITE_IOERR_FSTAT, || {
        // SAFETY: opened by x_open; `out` is valid.
        let f = unsafe { sim(file) };
        let mut st = unsafe { shared(f.state) };
        let id = f.id;
        match st.call(|api, now| api.size(now, id)) {
            Ok(n) => {
                unsafe { *out = n as ffi::sqlite3_int64 };
                ffi::SQLITE_OK
            }
            Err(e) => map_err(&e, ffi::SQLITE_IOERR_FSTAT),
        }
    })
}

// Locks: one connection in one process, so locks are bookkeeping only and never reach the
// file system (see `FileApi`).
unsafe extern "C" fn x_lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    guarded(ffi::SQLITE_IOERR_LOCK, || {
        // SAFETY: opened by x_open.
        let f = unsafe { sim(file) };
        f.lock = f.lock.max(level);
        ffi::SQLITE_OK
    })
}

unsafe extern "C" fn x_unlock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    guarded(ffi::SQLITE_IOERR_UNLOCK, || {
        // SAFETY: opened by x_open.
        let f = unsafe { sim(file) };
        f.lock = f.lock.min(level);
        ffi::SQLITE_OK
    })
}

unsafe extern "C" fn x_check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    guarded(ffi::SQLITE_IOERR_CHECKRESERVEDLOCK, || {
        // SAFETY: opened by x_open; `out` is valid.
        let f = unsafe { sim(file) };
        unsafe { *out = c_int::from(f.lock >= ffi::SQLITE_LOCK_RESERVED) };
        ffi::SQLITE_OK
    })
}

/// Batch atomic writes (SQLite built with `SQLITE_ENABLE_BATCH_ATOMIC_WRITE`, as Android
/// builds it): `BEGIN/COMMIT/ROLLBACK_ATOMIC_WRITE` map to the file system's atomic write
/// calls, as `os_unix.c` maps them to F2FS's ioctls. A failed begin or commit returns an
/// `SQLITE_IOERR_*` code, on which SQLite falls back to a rollback journal.
unsafe extern "C" fn x_file_control(
    file: *mut ffi::sqlite3_file,
    op: c_int,
    _arg: *mut c_void,
) -> c_int {
    guarded(ffi::SQLITE_IOERR, || {
        type AtomicCall = fn(&mut dyn FileApi, Nanos, FileId) -> Result<Nanos, FileError>;
        let (call, err): (AtomicCall, c_int) = match op {
            ffi::SQLITE_FCNTL_BEGIN_ATOMIC_WRITE => (
                |a, t, f| a.atomic_begin(t, f),
                ffi::SQLITE_IOERR_BEGIN_ATOMIC,
            ),
            ffi::SQLITE_FCNTL_COMMIT_ATOMIC_WRITE => (
                |a, t, f| a.atomic_commit(t, f),
                ffi::SQLITE_IOERR_COMMIT_ATOMIC,
            ),
            ffi::SQLITE_FCNTL_ROLLBACK_ATOMIC_WRITE => (
                |a, t, f| a.atomic_abort(t, f),
                ffi::SQLITE_IOERR_ROLLBACK_ATOMIC,
            ),
            _ => return ffi::SQLITE_NOTFOUND,
        };
        // SAFETY: opened by x_open.
        let f = unsafe { sim(file) };
        let mut st = unsafe { shared(f.state) };
        let id = f.id;
        match st.call(|api, now| call(api, now, id).map(|t| ((), t))) {
            Ok(()) => ffi::SQLITE_OK,
            Err(e) => map_err(&e, err),
        }
    })
}

unsafe extern "C" fn x_sector_size(_file: *mut ffi::sqlite3_file) -> c_int {
    4096
}

/// No power-safe overwrite, no sequential ordering; batch atomic writes when the file
/// system below offers them (F2FS's atomic write feature, see `FileApi`).
unsafe extern "C" fn x_device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    guarded(0, || {
        // SAFETY: opened by x_open.
        let f = unsafe { sim(file) };
        let mut st = unsafe { shared(f.state) };
        if st.api.atomic_write_supported() {
            ffi::SQLITE_IOCAP_BATCH_ATOMIC
        } else {
            0
        }
    })
}
