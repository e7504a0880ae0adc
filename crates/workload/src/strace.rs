//! Importer for `strace -f -tt -e trace=desc,file` output (also `-ttt`, `-t`, `-T`, `-y`,
//! with or without `-f`'s pid column, written by `-o FILE` or to the terminal).
//!
//! Each call becomes at most one operation at the time the call started, relative to the
//! first timestamped line; `<unfinished ...>` and `<... NAME resumed>` halves are joined per
//! pid. The pid becomes the thread id. Calls that failed (`= -1 ENOENT (...)`) are counted,
//! not replayed. Calls on fds the trace never saw opened (stdio, pipes, sockets) are left
//! out. Writes carry the bytes when strace printed all of them (`-s` at least the write's
//! length, no `...` after the string): otherwise the trace records the length and the
//! content class the printed prefix or the file's name suggests, or `unknown`.

use std::collections::BTreeMap;
use std::io::{BufRead, Read};

use crate::error::{FieldError, FileTraceError};
use crate::import::{class_for_prefix, parse_linux_flags, Builder, ImportReport, UnknownFd};
use crate::op::{Data, FileTrace, OpKind};
use crate::text::LINE_MAX_BYTES;

const DAY_NS: u64 = 86_400 * 1_000_000_000;

/// Most calls waiting for their `resumed` half at once.
const UNFINISHED_MAX: usize = 1 << 16;

/// Reads one line of at most `LINE_MAX_BYTES` (+1 to detect longer ones).
pub(crate) fn read_line(
    input: &mut impl BufRead,
    buffer: &mut Vec<u8>,
    file: &str,
) -> Result<usize, FileTraceError> {
    let read = input
        .take(LINE_MAX_BYTES as u64 + 1)
        .read_until(b'\n', buffer)
        .map_err(|source| FileTraceError::Io {
            path: file.into(),
            source,
        })?;
    while matches!(buffer.last(), Some(b'\n' | b'\r')) {
        buffer.pop();
    }
    Ok(read)
}

/// Imports strace output; `file` names it in errors.
pub fn import(
    mut input: impl BufRead,
    file: &str,
) -> Result<(FileTrace, ImportReport), FileTraceError> {
    let mut state = State::default();
    let mut buffer = Vec::new();
    let mut line_number = 0u64;
    loop {
        buffer.clear();
        if read_line(&mut input, &mut buffer, file)? == 0 {
            break;
        }
        line_number += 1;
        state.builder.report.lines += 1;
        if buffer.len() > LINE_MAX_BYTES {
            let error = FieldError::new("line", format!("longer than {LINE_MAX_BYTES} bytes"));
            return Err(error.at(file, line_number));
        }
        let line = String::from_utf8_lossy(&buffer);
        state.line(&line).map_err(|e| e.at(file, line_number))?;
    }
    Ok(state.builder.finish(UnknownFd::Skip, "/strace"))
}

#[derive(Default)]
struct State {
    builder: Builder,
    first_ns: Option<u64>,
    last_ns: u64,
    day_offset_ns: u64,
    /// pid → (start time, the call's text so far).
    unfinished: BTreeMap<u32, (u64, String)>,
    /// Directory fds (opened with O_DIRECTORY), for `*at` calls: fd → path.
    dirs: BTreeMap<u32, String>,
}

impl State {
    fn line(&mut self, line: &str) -> Result<(), FieldError> {
        let mut rest = line.trim_start();
        if rest.is_empty() {
            self.builder.report.other_lines += 1;
            return Ok(());
        }
        // The pid: `[pid  123] ` on a terminal, `123  ` with -o; absent without -f.
        let mut pid = 0u32;
        if let Some(after) = rest.strip_prefix("[pid") {
            let close = after
                .find(']')
                .ok_or_else(|| FieldError::new("pid", "'[pid' without ']'"))?;
            pid = parse_pid(after[..close].trim())?;
            rest = after[close + 1..].trim_start();
        } else if let Some((first, after)) = rest.split_once([' ', '\t']) {
            let next = after.trim_start();
            let second = next.split([' ', '\t']).next().unwrap_or("");
            // `123  12:00:00.1 call(` (-f with -o) vs `12:00:00.1 call(` / `1700000000.1 call(`.
            if !first.is_empty() && first.bytes().all(|b| b.is_ascii_digit()) {
                if parse_time(second).is_none() {
                    return Err(FieldError::value(
                        "time",
                        second,
                        "is not a time of day (HH:MM:SS.ffffff) or seconds (-ttt); run \
                         strace with -tt",
                    ));
                }
                pid = parse_pid(first)?;
                rest = next;
            }
        }
        // The timestamp.
        let (time_text, after) = rest.split_once([' ', '\t']).unwrap_or((rest, ""));
        let Some(time_ns) = parse_time(time_text) else {
            if rest.starts_with("strace:") || rest.starts_with("---") || rest.starts_with("+++") {
                self.builder.report.other_lines += 1;
                return Ok(());
            }
            return Err(FieldError::value(
                "time",
                time_text,
                "is not a time of day (HH:MM:SS.ffffff) or seconds (-ttt); run strace with -tt",
            ));
        };
        let time_ns = self.relative(time_ns);
        let text = after.trim_start();
        if text.starts_with("---") || text.starts_with("+++") || text.is_empty() {
            self.builder.report.other_lines += 1;
            return Ok(());
        }
        if let Some(head) = text.strip_suffix("<unfinished ...>") {
            if self.unfinished.len() >= UNFINISHED_MAX && !self.unfinished.contains_key(&pid) {
                return Err(FieldError::new(
                    "call",
                    format!("more than {UNFINISHED_MAX} unfinished calls at once"),
                ));
            }
            self.unfinished
                .insert(pid, (time_ns, head.trim_end().to_string()));
            return Ok(());
        }
        if let Some(resumed) = text.strip_prefix("<... ") {
            let (name, tail) = resumed
                .split_once(" resumed>")
                .ok_or_else(|| FieldError::new("call", "'<...' without 'resumed>'"))?;
            let Some((start_ns, head)) = self.unfinished.remove(&pid) else {
                // The first half came before the capture began.
                self.builder.report.other_lines += 1;
                return Ok(());
            };
            let joined = format!("{head}{}", tail.trim_start());
            if !head.starts_with(name) {
                return Err(FieldError::value(
                    "call",
                    name,
                    "resumes a call this pid did not leave unfinished",
                ));
            }
            return self.call(start_ns, pid, &joined);
        }
        self.call(time_ns, pid, text)
    }

    fn relative(&mut self, time_ns: u64) -> u64 {
        let first = *self.first_ns.get_or_insert(time_ns);
        let mut t = time_ns.saturating_add(self.day_offset_ns);
        // A time of day that jumps back by more than half a day has passed midnight.
        if t.saturating_add(DAY_NS / 2) < self.last_ns && time_ns < DAY_NS {
            self.day_offset_ns = self.day_offset_ns.saturating_add(DAY_NS);
            t = t.saturating_add(DAY_NS);
        }
        self.last_ns = self.last_ns.max(t);
        t.saturating_sub(first)
    }

    fn call(&mut self, time_ns: u64, pid: u32, text: &str) -> Result<(), FieldError> {
        let call = split_call(text)?;
        let name = call.name;
        let report = &mut self.builder.report;
        let result = match call.result {
            CallResult::Value(value) => value,
            CallResult::Failed => {
                ImportReport::tally(&mut report.failed_calls, name);
                return Ok(());
            }
            CallResult::Unknown => {
                report.other_lines += 1;
                return Ok(());
            }
        };
        let args = &call.args;
        let arg = |i: usize, field: &'static str| -> Result<&str, FieldError> {
            args.get(i)
                .map(String::as_str)
                .ok_or_else(|| FieldError::missing(field))
        };
        let fd_arg = |i: usize| -> Result<u32, FieldError> { parse_fd(arg(i, "fd")?) };
        let result_fd =
            || u32::try_from(result).map_err(|_| FieldError::new("result", "is not an fd"));
        let len = u64::try_from(result).unwrap_or(0);
        let kind = match name {
            "open" | "openat" | "creat" => {
                let (path, flags) = match name {
                    "open" => (self.path(None, arg(0, "path")?)?, arg(1, "flags")?),
                    "openat" => (
                        self.path(Some(arg(0, "dirfd")?), arg(1, "path")?)?,
                        arg(2, "flags")?,
                    ),
                    _ => (
                        self.path(None, arg(0, "path")?)?,
                        "O_WRONLY|O_CREAT|O_TRUNC",
                    ),
                };
                let flags = parse_linux_flags(flags);
                let fd = result_fd()?;
                if flags.directory {
                    self.dirs.insert(fd, path.clone());
                } else {
                    self.dirs.remove(&fd);
                }
                OpKind::Open { fd, path, flags }
            }
            "close" => {
                let fd = fd_arg(0)?;
                self.dirs.remove(&fd);
                OpKind::Close { fd }
            }
            "read" | "readv" => OpKind::Read {
                fd: fd_arg(0)?,
                len_bytes: len,
            },
            "pread64" | "pread" | "preadv" | "preadv2" => OpKind::Pread {
                fd: fd_arg(0)?,
                offset_bytes: parse_number(arg(3, "offset")?, "offset")?,
                len_bytes: len,
            },
            "write" | "writev" => OpKind::Write {
                fd: fd_arg(0)?,
                len_bytes: len,
                data: write_data(name, arg(1, "buf")?, len),
            },
            "pwrite64" | "pwrite" | "pwritev" | "pwritev2" => OpKind::Pwrite {
                fd: fd_arg(0)?,
                offset_bytes: parse_number(arg(3, "offset")?, "offset")?,
                len_bytes: len,
                data: write_data(name, arg(1, "buf")?, len),
            },
            "lseek" => OpKind::Seek {
                fd: fd_arg(0)?,
                offset_bytes: u64::try_from(result).unwrap_or(0),
            },
            "fsync" => OpKind::Fsync { fd: fd_arg(0)? },
            "fdatasync" => OpKind::Fdatasync { fd: fd_arg(0)? },
            "sync" | "syncfs" => OpKind::Sync,
            "ftruncate" | "ftruncate64" => OpKind::Ftruncate {
                fd: fd_arg(0)?,
                len_bytes: parse_number(arg(1, "length")?, "length")?,
            },
            "truncate" | "truncate64" => OpKind::Truncate {
                path: self.path(None, arg(0, "path")?)?,
                len_bytes: parse_number(arg(1, "length")?, "length")?,
            },
            "unlink" => OpKind::Unlink {
                path: self.path(None, arg(0, "path")?)?,
            },
            "unlinkat" => {
                let path = self.path(Some(arg(0, "dirfd")?), arg(1, "path")?)?;
                if args.get(2).is_some_and(|f| f.contains("AT_REMOVEDIR")) {
                    OpKind::Rmdir { path }
                } else {
                    OpKind::Unlink { path }
                }
            }
            "rmdir" => OpKind::Rmdir {
                path: self.path(None, arg(0, "path")?)?,
            },
            "mkdir" => OpKind::Mkdir {
                path: self.path(None, arg(0, "path")?)?,
            },
            "mkdirat" => OpKind::Mkdir {
                path: self.path(Some(arg(0, "dirfd")?), arg(1, "path")?)?,
            },
            "rename" | "link" => {
                let from = self.path(None, arg(0, "from")?)?;
                let to = self.path(None, arg(1, "to")?)?;
                if name == "rename" {
                    OpKind::Rename { from, to }
                } else {
                    OpKind::Link { from, to }
                }
            }
            "renameat" | "renameat2" | "linkat" => {
                let from = self.path(Some(arg(0, "dirfd")?), arg(1, "from")?)?;
                let to = self.path(Some(arg(2, "dirfd")?), arg(3, "to")?)?;
                if name == "linkat" {
                    OpKind::Link { from, to }
                } else {
                    OpKind::Rename { from, to }
                }
            }
            "stat" | "lstat" | "stat64" | "lstat64" | "access" => OpKind::Stat {
                path: self.path(None, arg(0, "path")?)?,
                size_bytes: stat_size(args),
            },
            "newfstatat" | "fstatat64" | "statx" | "faccessat" | "faccessat2" => {
                let path = arg(1, "path")?;
                if path == "\"\"" {
                    // AT_EMPTY_PATH: a stat of the dirfd itself.
                    OpKind::Fstat {
                        fd: fd_arg(0)?,
                        size_bytes: stat_size(args),
                    }
                } else {
                    OpKind::Stat {
                        path: self.path(Some(arg(0, "dirfd")?), path)?,
                        size_bytes: stat_size(args),
                    }
                }
            }
            "fstat" | "fstat64" => OpKind::Fstat {
                fd: fd_arg(0)?,
                size_bytes: stat_size(args),
            },
            "dup" | "dup2" | "dup3" | "fcntl" | "fcntl64" => {
                if name.starts_with("fcntl") && !arg(1, "cmd")?.starts_with("F_DUPFD") {
                    ImportReport::tally(&mut report.ignored_calls, name);
                    return Ok(());
                }
                // A duplicate names the same file; the trace opens it again under the new
                // number (positions are not shared).
                let old = fd_arg(0)?;
                let new = result_fd()?;
                self.builder.push_dup(time_ns, pid, old, new);
                return Ok(());
            }
            other => {
                ImportReport::tally(&mut report.ignored_calls, other);
                return Ok(());
            }
        };
        self.builder.push(time_ns, pid, kind);
        Ok(())
    }

    /// A path argument, joined to its directory fd's path when that is known.
    fn path(&self, dirfd: Option<&str>, text: &str) -> Result<String, FieldError> {
        let (bytes, _) = decode_string(text)
            .ok_or_else(|| FieldError::value("path", text, "is not a quoted string"))?;
        let path = String::from_utf8_lossy(&bytes).into_owned();
        if path.is_empty() {
            return Err(FieldError::new("path", "is empty"));
        }
        if path.starts_with('/') {
            return Ok(path);
        }
        if let Some(dir) = dirfd
            .and_then(|d| parse_fd(d).ok())
            .and_then(|fd| self.dirs.get(&fd))
        {
            return Ok(format!("{}/{path}", dir.trim_end_matches('/')));
        }
        Ok(path)
    }
}

fn parse_pid(text: &str) -> Result<u32, FieldError> {
    text.parse()
        .map_err(|_| FieldError::value("pid", text, "is not a process id"))
}

/// `123`, or `123</path>` as `-y` prints fds.
fn parse_fd(text: &str) -> Result<u32, FieldError> {
    let digits = text.split('<').next().unwrap_or(text).trim();
    digits
        .parse()
        .map_err(|_| FieldError::value("fd", text, "is not an fd"))
}

fn parse_number(text: &str, field: &'static str) -> Result<u64, FieldError> {
    let text = text.trim();
    if let Some(hex) = text.strip_prefix("0x") {
        return u64::from_str_radix(hex, 16)
            .map_err(|_| FieldError::value(field, text, "is not a number"));
    }
    text.parse()
        .map_err(|_| FieldError::value(field, text, "is not a non-negative number"))
}

/// `HH:MM:SS[.frac]` (time of day) or `SECONDS.frac` (-ttt) in ns.
fn parse_time(text: &str) -> Option<u64> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if fraction.len() > 9 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let fraction_ns = if fraction.is_empty() {
        0
    } else {
        fraction.parse::<u64>().ok()? * 10u64.pow(9 - fraction.len() as u32)
    };
    let digits = |t: &str| -> Option<u64> {
        if t.is_empty() || t.len() > 12 || !t.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        t.parse().ok()
    };
    let seconds = if whole.contains(':') {
        let mut parts = whole.split(':');
        let (h, m, s) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || m.len() != 2 || s.len() != 2 {
            return None;
        }
        let (h, m, s) = (digits(h)?, digits(m)?, digits(s)?);
        if h > 23 || m > 59 || s > 60 {
            return None;
        }
        h * 3600 + m * 60 + s
    } else {
        digits(whole)?
    };
    seconds.checked_mul(1_000_000_000)?.checked_add(fraction_ns)
}

enum CallResult {
    Value(i64),
    Failed,
    /// `= ?` (the process exited inside the call) or no result at all.
    Unknown,
}

struct Call<'a> {
    name: &'a str,
    args: Vec<String>,
    result: CallResult,
}

/// `name(arg, arg, …) = result …`, arguments split at top-level commas.
fn split_call(text: &str) -> Result<Call<'_>, FieldError> {
    let open = text
        .find('(')
        .ok_or_else(|| FieldError::value("call", text, "is not 'name(args) = result'"))?;
    let name = text[..open].trim();
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(FieldError::value("call", name, "is not a system call name"));
    }
    let bytes = text.as_bytes();
    let mut args = Vec::new();
    let mut depth = 0usize;
    let mut in_string = false;
    let mut start = open + 1;
    let mut close = None;
    let mut i = open + 1;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match b {
                b'"' => in_string = true,
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' if depth > 0 => depth -= 1,
                b')' => {
                    close = Some(i);
                    break;
                }
                b',' if depth == 0 => {
                    args.push(text[start..i].trim().to_string());
                    start = i + 1;
                }
                _ => {}
            }
        }
        i += 1;
    }
    let close =
        close.ok_or_else(|| FieldError::value("call", text, "has no closing ')' for its args"))?;
    let last = text[start..close].trim();
    if !last.is_empty() || !args.is_empty() {
        args.push(last.to_string());
    }
    let after = text[close + 1..].trim_start();
    let result = match after.strip_prefix('=') {
        None => CallResult::Unknown,
        Some(value) => {
            let value = value.split_ascii_whitespace().next().unwrap_or("");
            // `-y` prints an fd result with its path: `3</tmp/x>`.
            let value = value.split('<').next().unwrap_or(value);
            if value.starts_with('-') {
                CallResult::Failed
            } else if let Some(hex) = value.strip_prefix("0x") {
                i64::from_str_radix(hex, 16).map_or(CallResult::Unknown, CallResult::Value)
            } else {
                value.parse().map_or(CallResult::Unknown, CallResult::Value)
            }
        }
    };
    Ok(Call { name, args, result })
}

/// A strace string argument: the decoded bytes and whether strace cut it (`"…"...`).
fn decode_string(text: &str) -> Option<(Vec<u8>, bool)> {
    let text = text.trim();
    let (body, cut) = match text.strip_suffix("...") {
        Some(body) => (body, true),
        None => (text, false),
    };
    let body = body.strip_prefix('"')?.strip_suffix('"')?;
    let bytes = body.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        let escape = *bytes.get(i + 1)?;
        i += 2;
        let byte = match escape {
            b'n' => b'\n',
            b't' => b'\t',
            b'r' => b'\r',
            b'v' => 0x0b,
            b'f' => 0x0c,
            b'a' => 0x07,
            b'b' => 0x08,
            b'x' => {
                let hex = body.get(i..i + 2)?;
                i += 2;
                u8::from_str_radix(hex, 16).ok()?
            }
            b'0'..=b'7' => {
                // Up to three octal digits in all.
                let mut value = u32::from(escape - b'0');
                let mut taken = 0;
                while taken < 2 && i < bytes.len() && (b'0'..=b'7').contains(&bytes[i]) {
                    value = value * 8 + u32::from(bytes[i] - b'0');
                    i += 1;
                    taken += 1;
                }
                u8::try_from(value).ok()?
            }
            other => other,
        };
        out.push(byte);
    }
    Some((out, cut))
}

/// A write's data: its bytes if strace printed them all, else the class its prefix
/// suggests, else unknown (the builder then tries the file's name).
fn write_data(name: &str, buffer: &str, len: u64) -> Data {
    if name.ends_with('v') || name.ends_with("v2") {
        return Data::Unknown; // an iovec array: not decoded
    }
    match decode_string(buffer) {
        Some((bytes, false)) if bytes.len() as u64 == len => Data::Bytes(bytes),
        Some((bytes, _)) => class_for_prefix(&bytes).map_or(Data::Unknown, |class| Data::Class {
            class,
            change_ratio: None,
        }),
        None => Data::Unknown,
    }
}

/// The size a successful stat of a regular file returned, from strace's decoded struct
/// (`{st_mode=S_IFREG|0644, st_size=12288, ...}`, statx's `stx_mode`/`stx_size`); `None`
/// for other file types, `access`, or a struct strace did not decode.
fn stat_size(args: &[String]) -> Option<u64> {
    let fields = || {
        args.iter()
            .flat_map(|a| a.split([',', '{', '}']))
            .map(str::trim)
    };
    let regular = fields().any(|f| {
        f.strip_prefix("st_mode=")
            .or_else(|| f.strip_prefix("stx_mode="))
            .is_some_and(|m| m.starts_with("S_IFREG"))
    });
    if !regular {
        return None;
    }
    fields()
        .find_map(|f| {
            f.strip_prefix("st_size=")
                .or_else(|| f.strip_prefix("stx_size="))
        })
        .and_then(|n| n.parse().ok())
}
