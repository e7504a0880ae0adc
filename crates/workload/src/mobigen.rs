//! Importer for MobiGen syscall traces (the scripts Mobibench replays with `-g`).
//!
//! Each line is `THREAD TIME_US SYSCALL ARGS… RET`, what MobiGen (ESOS Lab, Hanyang
//! University) makes of `strace -f -tt` output of an Android app: threads renumbered,
//! times in µs since the capture's first call, lines grouped by thread. The calls and
//! their arguments:
//!
//! | call | arguments | becomes |
//! |---|---|---|
//! | `open` | `PATH FLAGS FD` | `open` |
//! | `close` | `FD RET` | `close` |
//! | `read`, `write` | `FD BYTES` (bytes moved) | `read`, `write` at the fd's position |
//! | `pread`, `pwrite` | `FD OFFSET BYTES` | `pread`, `pwrite` |
//! | `fsync`, `fdatasync` | `FD RET` | the same |
//! | `fstat64`, `fstat` | `FD RET` | `fstat` |
//! | `stat64`, `lstat64`, `stat`, `lstat`, `access` | `"PATH" RET` | `stat` |
//! | `unlink` | `"PATH" RET` | `unlink` |
//!
//! A negative last field is a failed call, left out. MobiGen keeps a read-only open's path
//! in quotes but cuts a writable open's path to its first two components (`data/data`),
//! and adds `open /data/data O_WRONLY|O_CREAT|O_TRUNC|O_LARGEFILE FD` for fds used without
//! an open in the capture. So: a quoted path is kept; a cut one becomes a stand-in
//! `/<components>/mobigen-fd<FD>` (one file per fd number under that directory); the added
//! opens (`/data/data`, with its leading slash) open the stand-in read-write without
//! creating or truncating it, since the file existed before the capture; and an fd used
//! with no open at all (MobiGen adds at most one open per fd number) gets a stand-in open
//! `/mobigen/fd<FD>`. Writes carry no bytes: their data is the class the path suggests, or
//! `unknown`.

use std::io::BufRead;

use crate::error::{parse_u32, parse_u64, FieldError, FileTraceError};
use crate::import::{parse_linux_flags, Builder, ImportReport, UnknownFd};
use crate::op::{Data, FileTrace, OpKind, OpenFlags};
use crate::text::LINE_MAX_BYTES;

/// Imports a MobiGen script; `file` names it in errors.
pub fn import(
    mut input: impl BufRead,
    file: &str,
) -> Result<(FileTrace, ImportReport), FileTraceError> {
    let mut builder = Builder::new();
    let mut buffer = Vec::new();
    let mut line_number = 0u64;
    loop {
        buffer.clear();
        let read = crate::strace::read_line(&mut input, &mut buffer, file)?;
        if read == 0 {
            break;
        }
        line_number += 1;
        builder.report.lines += 1;
        let line = String::from_utf8_lossy(&buffer);
        if buffer.len() > LINE_MAX_BYTES {
            let error = FieldError::new("line", format!("longer than {LINE_MAX_BYTES} bytes"));
            return Err(error.at(file, line_number));
        }
        parse_line(line.trim_end(), &mut builder).map_err(|e| e.at(file, line_number))?;
    }
    Ok(builder.finish(UnknownFd::StandIn, "/mobigen"))
}

fn parse_line(line: &str, builder: &mut Builder) -> Result<(), FieldError> {
    let words: Vec<&str> = line.split_ascii_whitespace().collect();
    if words.is_empty() || words[0].starts_with('#') {
        builder.report.other_lines += 1;
        return Ok(());
    }
    let thread = parse_u32(words[0], "thread")?;
    let time_us = parse_u64(words.get(1).ok_or(FieldError::missing("time"))?, "time")?;
    let time_ns = time_us
        .checked_mul(1000)
        .ok_or_else(|| FieldError::value("time", words[1], "is too large"))?;
    let syscall = *words.get(2).ok_or(FieldError::missing("syscall"))?;
    let args = &words[3..];
    // The fields each call needs; the last is the call's result (fd, bytes or status).
    let layout: &[&'static str] = match syscall {
        "open" => &["path", "flags", "result"],
        "pread" | "pwrite" => &["fd", "offset", "result"],
        "stat64" | "lstat64" | "stat" | "lstat" | "access" | "unlink" => &["path", "result"],
        "close" | "read" | "write" | "fsync" | "fdatasync" | "fstat64" | "fstat" => {
            &["fd", "result"]
        }
        _ => &["result"],
    };
    if args.len() < layout.len() {
        return Err(FieldError::missing(layout[args.len()]));
    }
    let result_text = args[args.len() - 1];
    let Some(result) = parse_result(result_text)? else {
        ImportReport::tally(&mut builder.report.failed_calls, syscall);
        return Ok(());
    };
    let args = &args[..args.len() - 1];
    let fd = |i: usize| parse_u32(args[i], "fd");
    let kind = match syscall {
        "open" => {
            let flags_text = args[args.len() - 1];
            let raw_path = args[..args.len() - 1].join(" ");
            let fd = u32::try_from(result)
                .map_err(|_| FieldError::value("result", result_text, "is not an fd"))?;
            let (path, flags) = open_target(&raw_path, flags_text, fd);
            OpKind::Open { fd, path, flags }
        }
        "close" => OpKind::Close { fd: fd(0)? },
        "read" | "write" => {
            let (fd, len_bytes) = (fd(0)?, result);
            if syscall == "read" {
                OpKind::Read { fd, len_bytes }
            } else {
                OpKind::Write {
                    fd,
                    len_bytes,
                    data: Data::Unknown,
                }
            }
        }
        "pread" | "pwrite" => {
            let (fd, offset_bytes, len_bytes) = (fd(0)?, parse_u64(args[1], "offset")?, result);
            if syscall == "pread" {
                OpKind::Pread {
                    fd,
                    offset_bytes,
                    len_bytes,
                }
            } else {
                OpKind::Pwrite {
                    fd,
                    offset_bytes,
                    len_bytes,
                    data: Data::Unknown,
                }
            }
        }
        "fsync" => OpKind::Fsync { fd: fd(0)? },
        "fdatasync" => OpKind::Fdatasync { fd: fd(0)? },
        "fstat64" | "fstat" => OpKind::Fstat {
            fd: fd(0)?,
            size_bytes: None,
        },
        "stat64" | "lstat64" | "stat" | "lstat" | "access" | "unlink" => {
            let path = unquote(&args.join(" "));
            if path.is_empty() {
                return Err(FieldError::new("path", "is empty"));
            }
            if syscall == "unlink" {
                OpKind::Unlink { path }
            } else {
                OpKind::Stat {
                    path,
                    size_bytes: None,
                }
            }
        }
        other => {
            ImportReport::tally(&mut builder.report.ignored_calls, other);
            return Ok(());
        }
    };
    builder.push(time_ns, thread, kind);
    Ok(())
}

/// `None` for a failed call (a negative result).
fn parse_result(text: &str) -> Result<Option<u64>, FieldError> {
    if let Some(digits) = text.strip_prefix('-') {
        parse_u64(digits, "result")?;
        return Ok(None);
    }
    parse_u64(text, "result").map(Some)
}

/// The path and flags an open line means (see the module documentation).
fn open_target(raw_path: &str, flags_text: &str, fd: u32) -> (String, OpenFlags) {
    let mut flags = parse_linux_flags(flags_text);
    let quoted = raw_path.len() >= 2 && raw_path.starts_with('"') && raw_path.ends_with('"');
    if quoted {
        let path = unquote(raw_path);
        if !path.is_empty() {
            return (path, flags);
        }
    }
    let dir = raw_path.trim_matches(|c| c == '"' || c == '/');
    let dir = if dir.is_empty() { "mobigen" } else { dir };
    if raw_path.starts_with('/') && !quoted {
        // MobiGen's own open for an fd opened before the capture: the file exists.
        flags.create = false;
        flags.truncate = false;
        flags.exclusive = false;
        flags.access = crate::op::Access::Rdwr;
    }
    (format!("/{dir}/mobigen-fd{fd}"), flags)
}

fn unquote(text: &str) -> String {
    text.trim_matches('"').to_string()
}
