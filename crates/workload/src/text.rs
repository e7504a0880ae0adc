//! The text format of file-level traces (`docs/file-traces.md`): a streaming parser that
//! names file, line and field in every error, and the writer whose output it reads back to
//! the same operations.

use std::io::{self, BufRead, Read, Write};
use std::path::Path;

use flashstack_content::ContentClass;

use crate::error::{parse_u32, parse_u64, quoted, FieldError, FileTraceError};
use crate::op::{Data, FileOp, FileTrace, OpKind, OpenFlags, INLINE_DATA_MAX_BYTES};
use crate::resolve::Resolver;

/// The first line of every trace in this format; the number is the format version.
pub const HEADER: &str = "#flashstack-filetrace 1";

/// The longest line accepted: a write carrying the largest inline data, plus room.
pub const LINE_MAX_BYTES: usize = 2 * INLINE_DATA_MAX_BYTES + 4096;

/// Reads a trace one operation at a time. Every line goes through the fd state machine, so
/// an operation on an fd that is not open is an error at its line.
pub struct Reader<R> {
    input: R,
    file: String,
    line: u64,
    buffer: Vec<u8>,
    resolver: Resolver,
    last_time_ns: u64,
    header_seen: bool,
    failed: bool,
}

impl<R: BufRead> Reader<R> {
    /// `file` names the input in error messages.
    pub fn new(input: R, file: impl Into<String>) -> Self {
        Reader {
            input,
            file: file.into(),
            line: 0,
            buffer: Vec::new(),
            resolver: Resolver::new(),
            last_time_ns: 0,
            header_seen: false,
            failed: false,
        }
    }

    /// The fd state after the operations read so far.
    pub fn resolver(&self) -> &Resolver {
        &self.resolver
    }

    fn error(&self, error: FieldError) -> FileTraceError {
        error.at(&self.file, self.line)
    }

    /// The next line without its end, `None` at the end of input.
    fn next_line(&mut self) -> Result<Option<&str>, FileTraceError> {
        self.buffer.clear();
        let limit = LINE_MAX_BYTES as u64 + 1;
        let read = (&mut self.input)
            .take(limit)
            .read_until(b'\n', &mut self.buffer)
            .map_err(|source| FileTraceError::Io {
                path: self.file.clone().into(),
                source,
            })?;
        if read == 0 {
            return Ok(None);
        }
        self.line += 1;
        if self.buffer.last() == Some(&b'\n') {
            self.buffer.pop();
            if self.buffer.last() == Some(&b'\r') {
                self.buffer.pop();
            }
        } else if self.buffer.len() > LINE_MAX_BYTES {
            return Err(self.error(FieldError::new(
                "line",
                format!("longer than {LINE_MAX_BYTES} bytes"),
            )));
        }
        std::str::from_utf8(&self.buffer).map(Some).map_err(|e| {
            FieldError::new(
                "line",
                format!("not UTF-8 (bad byte at column {})", e.valid_up_to() + 1),
            )
            .at(&self.file, self.line)
        })
    }

    fn read_op(&mut self) -> Result<Option<FileOp>, FileTraceError> {
        loop {
            let header_seen = self.header_seen;
            let Some(line) = self.next_line()? else {
                if !header_seen {
                    return Err(FieldError::new(
                        "header",
                        format!("the file is empty; the first line must be '{HEADER}'"),
                    )
                    .at(&self.file, 1));
                }
                return Ok(None);
            };
            if !header_seen {
                if line.trim_end() != HEADER {
                    let message = if let Some(version) = line.strip_prefix("#flashstack-filetrace ")
                    {
                        format!(
                            "format version {} is not supported (this build reads '{HEADER}')",
                            quoted(version.trim())
                        )
                    } else {
                        format!("{} is not the header '{HEADER}'", quoted(line))
                    };
                    let error = FieldError::new("header", message);
                    return Err(self.error(error));
                }
                self.header_seen = true;
                continue;
            }
            let trimmed = line.trim_start();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let op = parse_line(line).map_err(|e| self.error(e))?;
            if op.time_ns < self.last_time_ns {
                let error = FieldError::new(
                    "time",
                    format!(
                        "{} ns is earlier than the line before ({} ns); times never decrease",
                        op.time_ns, self.last_time_ns
                    ),
                );
                return Err(self.error(error));
            }
            self.last_time_ns = op.time_ns;
            if let Err(error) = self.resolver.apply(&op) {
                return Err(self.error(error));
            }
            return Ok(Some(op));
        }
    }
}

impl<R: BufRead> Iterator for Reader<R> {
    type Item = Result<FileOp, FileTraceError>;

    /// The next operation; after an error the reader stops.
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.read_op() {
            Ok(Some(op)) => Some(Ok(op)),
            Ok(None) => None,
            Err(error) => {
                self.failed = true;
                Some(Err(error))
            }
        }
    }
}

/// Parses a whole trace held in memory; `file` names it in errors.
pub fn parse_str(text: &str, file: &str) -> Result<FileTrace, FileTraceError> {
    let ops = Reader::new(text.as_bytes(), file).collect::<Result<Vec<_>, _>>()?;
    Ok(FileTrace { ops })
}

/// Reads a trace file.
pub fn read_file(path: &Path) -> Result<FileTrace, FileTraceError> {
    let file = std::fs::File::open(path).map_err(|source| FileTraceError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let reader = Reader::new(io::BufReader::new(file), path.display().to_string());
    let ops = reader.collect::<Result<Vec<_>, _>>()?;
    Ok(FileTrace { ops })
}

/// Writes the header and one line per operation.
pub fn write_trace(out: &mut impl Write, trace: &FileTrace) -> io::Result<()> {
    writeln!(out, "{HEADER}")?;
    for op in &trace.ops {
        writeln!(out, "{op}")?;
    }
    Ok(())
}

/// The trace as text.
pub fn to_text(trace: &FileTrace) -> String {
    let mut out = Vec::new();
    write_trace(&mut out, trace).expect("writing to memory cannot fail");
    String::from_utf8(out).expect("the writer writes UTF-8")
}

/// A stat's optional last field, `size=N` (the regular file's size the call returned).
fn stat_size(fields: &mut Fields) -> Result<Option<u64>, FieldError> {
    let Some(text) = fields.0.next() else {
        return Ok(None);
    };
    let n = text
        .strip_prefix("size=")
        .ok_or_else(|| FieldError::value("size", text, "is not size=BYTES"))?;
    parse_u64(n, "size").map(Some)
}

/// Parses one operation line (not a comment, blank line or header).
pub fn parse_line(line: &str) -> Result<FileOp, FieldError> {
    let mut fields = Fields(line.split_ascii_whitespace());
    let time_ns = parse_u64(fields.next("time")?, "time")?;
    let tid = parse_u32(fields.next("thread")?, "thread")?;
    let name = fields.next("op")?;
    let fd = |fields: &mut Fields| parse_u32(fields.next("fd")?, "fd");
    let offset = |fields: &mut Fields| parse_u64(fields.next("offset")?, "offset");
    let length = |fields: &mut Fields| parse_u64(fields.next("length")?, "length");
    let path = |fields: &mut Fields, field| decode_path(fields.next(field)?, field);
    let kind = match name {
        "open" => OpKind::Open {
            fd: fd(&mut fields)?,
            path: path(&mut fields, "path")?,
            flags: {
                let text = fields.next("flags")?;
                OpenFlags::parse(text).map_err(|m| FieldError::new("flags", m))?
            },
        },
        "close" => OpKind::Close {
            fd: fd(&mut fields)?,
        },
        "read" => OpKind::Read {
            fd: fd(&mut fields)?,
            len_bytes: length(&mut fields)?,
        },
        "pread" => OpKind::Pread {
            fd: fd(&mut fields)?,
            offset_bytes: offset(&mut fields)?,
            len_bytes: length(&mut fields)?,
        },
        "write" => OpKind::Write {
            fd: fd(&mut fields)?,
            len_bytes: length(&mut fields)?,
            data: parse_data(fields.next("data")?)?,
        },
        "pwrite" => OpKind::Pwrite {
            fd: fd(&mut fields)?,
            offset_bytes: offset(&mut fields)?,
            len_bytes: length(&mut fields)?,
            data: parse_data(fields.next("data")?)?,
        },
        "seek" => OpKind::Seek {
            fd: fd(&mut fields)?,
            offset_bytes: offset(&mut fields)?,
        },
        "fsync" => OpKind::Fsync {
            fd: fd(&mut fields)?,
        },
        "fdatasync" => OpKind::Fdatasync {
            fd: fd(&mut fields)?,
        },
        "ftruncate" => OpKind::Ftruncate {
            fd: fd(&mut fields)?,
            len_bytes: length(&mut fields)?,
        },
        "truncate" => OpKind::Truncate {
            path: path(&mut fields, "path")?,
            len_bytes: length(&mut fields)?,
        },
        "unlink" => OpKind::Unlink {
            path: path(&mut fields, "path")?,
        },
        "rename" => OpKind::Rename {
            from: path(&mut fields, "from")?,
            to: path(&mut fields, "to")?,
        },
        "link" => OpKind::Link {
            from: path(&mut fields, "from")?,
            to: path(&mut fields, "to")?,
        },
        "mkdir" => OpKind::Mkdir {
            path: path(&mut fields, "path")?,
        },
        "rmdir" => OpKind::Rmdir {
            path: path(&mut fields, "path")?,
        },
        "stat" => OpKind::Stat {
            path: path(&mut fields, "path")?,
            size_bytes: stat_size(&mut fields)?,
        },
        "fstat" => OpKind::Fstat {
            fd: fd(&mut fields)?,
            size_bytes: stat_size(&mut fields)?,
        },
        "sync" => OpKind::Sync,
        other => {
            return Err(FieldError::value(
                "op",
                other,
                "is not an operation (open, close, read, pread, write, pwrite, seek, fsync, \
                 fdatasync, ftruncate, truncate, unlink, rename, link, mkdir, rmdir, stat, \
                 fstat, sync)",
            ))
        }
    };
    if let Some(extra) = fields.0.next() {
        return Err(FieldError::value(
            "end",
            extra,
            &format!("is one field too many for '{name}'"),
        ));
    }
    Ok(FileOp { time_ns, tid, kind })
}

struct Fields<'a>(std::str::SplitAsciiWhitespace<'a>);

impl<'a> Fields<'a> {
    fn next(&mut self, field: &'static str) -> Result<&'a str, FieldError> {
        self.0.next().ok_or_else(|| FieldError::missing(field))
    }
}

/// `unknown`, `hex:<bytes>` or `<class>[:<change ratio>]`.
pub fn parse_data(text: &str) -> Result<Data, FieldError> {
    if text == "unknown" {
        return Ok(Data::Unknown);
    }
    if let Some(hex) = text.strip_prefix("hex:") {
        return decode_hex(hex).map(Data::Bytes);
    }
    let (class_text, ratio_text) = match text.split_once(':') {
        Some((class, ratio)) => (class, Some(ratio)),
        None => (text, None),
    };
    let class: ContentClass = class_text.parse().map_err(|_| {
        FieldError::value(
            "data",
            text,
            "is not 'unknown', 'hex:…' or a content class (zeros, sqlite, sqlite-index, text, \
             exec, media, meta) with an optional ':RATIO'",
        )
    })?;
    if class.name() != class_text {
        return Err(FieldError::value(
            "data",
            text,
            &format!("spells the class '{}' differently", class.name()),
        ));
    }
    let change_ratio = match ratio_text {
        None => None,
        Some(ratio) => {
            let value: f64 = ratio
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite() && (0.0..=1.0).contains(v))
                .ok_or_else(|| {
                    FieldError::value("data", text, "has a change ratio that is not in [0, 1]")
                })?;
            if !ratio.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
                return Err(FieldError::value(
                    "data",
                    text,
                    "must write the change ratio as plain digits (e.g. 0.138)",
                ));
            }
            Some(value)
        }
    };
    Ok(Data::Class {
        class,
        change_ratio,
    })
}

fn decode_hex(hex: &str) -> Result<Vec<u8>, FieldError> {
    if !hex.len().is_multiple_of(2) {
        return Err(FieldError::new(
            "data",
            format!("hex data has an odd number of digits ({})", hex.len()),
        ));
    }
    if hex.len() / 2 > INLINE_DATA_MAX_BYTES {
        return Err(FieldError::new(
            "data",
            format!("hex data carries more than {INLINE_DATA_MAX_BYTES} bytes (the inline limit)"),
        ));
    }
    let digit = |b: u8, at: usize| match b {
        b'0'..=b'9' => Ok(b - b'0'),
        b'a'..=b'f' => Ok(b - b'a' + 10),
        b'A'..=b'F' => Ok(b - b'A' + 10),
        _ => Err(FieldError::new(
            "data",
            format!("hex data has a non-hex character at digit {}", at + 1),
        )),
    };
    hex.as_bytes()
        .chunks_exact(2)
        .enumerate()
        .map(|(i, pair)| Ok(digit(pair[0], 2 * i)? << 4 | digit(pair[1], 2 * i + 1)?))
        .collect()
}

/// Undoes the `%XX` escapes of a path field.
pub fn decode_path(text: &str, field: &'static str) -> Result<String, FieldError> {
    if !text.contains('%') {
        return Ok(text.to_string());
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let byte = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .filter(|_| bytes[i + 1].is_ascii_hexdigit() && bytes[i + 2].is_ascii_hexdigit())
                .ok_or_else(|| {
                    FieldError::value(field, text, "has a '%' not followed by two hex digits")
                })?;
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out)
        .map_err(|_| FieldError::value(field, text, "decodes to bytes that are not UTF-8"))
}
