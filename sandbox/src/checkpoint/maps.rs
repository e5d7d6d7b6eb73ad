//! What the host's /proc says of a process to checkpoint: its memory map
//! (`maps`), which of its pages hold data (`pagemap`), its descriptors
//! (`fd`, `fdinfo`), the bounds of its memory areas (`stat`), its threads.
//! Paths are as /proc prints them to the reader: for a sandbox's process,
//! seen from the host, they are paths in the guest's view.
//!
//! Owns parsing those files; refusing what a dump cannot carry is here
//! too, so the reason names the map or descriptor.

use std::fs;
use std::os::unix::fs::FileExt;

use super::image::{Fd, Kind, Mm, Vma};

const PAGE: u64 = 4096;

/// Every map of `pid`, or why one cannot be carried.
pub fn vmas(pid: i32) -> Result<Vec<Vma>, String> {
    let text = fs::read_to_string(format!("/proc/{pid}/maps"))
        .map_err(|e| format!("/proc/{pid}/maps: {e}"))?;
    text.lines().map(parse_line).collect()
}

fn parse_line(line: &str) -> Result<Vma, String> {
    let mut parts = line.splitn(6, ' ');
    let mut next = || parts.next().unwrap_or("");
    let (range, perms, offset, _dev, inode) = (next(), next(), next(), next(), next());
    let path = next().trim_start().to_string();
    let bad = || format!("unreadable map line {line:?}");
    let (start, end) = range.split_once('-').ok_or_else(bad)?;
    let hex = |s: &str| u64::from_str_radix(s, 16).map_err(|_| bad());
    let p = perms.as_bytes();
    if p.len() != 4 {
        return Err(bad());
    }
    let prot = if p[0] == b'r' { libc::PROT_READ } else { 0 }
        | if p[1] == b'w' { libc::PROT_WRITE } else { 0 }
        | if p[2] == b'x' { libc::PROT_EXEC } else { 0 };
    let shared = p[3] == b's';
    let kind = match path.as_str() {
        "[heap]" => Kind::Heap,
        "[stack]" => Kind::Stack,
        "[vdso]" => Kind::Vdso,
        "[vvar]" => Kind::Vvar,
        "[vvar_vclock]" => Kind::VvarVclock,
        "[vsyscall]" => Kind::Vsyscall,
        "" => Kind::Anon,
        p if p.starts_with("[anon:") => Kind::Anon,
        p if p.ends_with(" (deleted)") => {
            return Err(format!("a map of a deleted file ({p}) cannot be restored"))
        }
        p if p.starts_with('/') && inode != "0" => Kind::File,
        p => return Err(format!("a map of {p} cannot be restored")),
    };
    if shared && kind != Kind::File {
        return Err(format!(
            "a shared anonymous map ({range}) cannot be restored"
        ));
    }
    Ok(Vma {
        start: hex(start)?,
        end: hex(end)?,
        offset: hex(offset)?,
        prot,
        shared,
        kind,
        path,
    })
}

/// Whether a page's pagemap entry says it holds data worth saving: for a
/// private file map only pages the process changed (anonymous copies);
/// otherwise any page present or swapped out.
fn wanted(entry: u64, kind: Kind) -> bool {
    let present = entry >> 63 & 1 == 1;
    let swapped = entry >> 62 & 1 == 1;
    let file_or_shared = entry >> 61 & 1 == 1;
    match kind {
        Kind::File => (present || swapped) && !file_or_shared,
        _ => present || swapped,
    }
}

/// The runs of `vma`'s pages to save, as (address, length).
pub fn runs(pagemap: &fs::File, vma: &Vma) -> Result<Vec<(u64, u64)>, String> {
    let pages = vma.len() / PAGE;
    let mut found: Vec<(u64, u64)> = Vec::new();
    let mut buf = vec![0u8; 8 * 65536];
    let mut done = 0u64;
    while done < pages {
        let n = (pages - done).min(65536);
        let bytes = &mut buf[..(n * 8) as usize];
        pagemap
            .read_exact_at(bytes, (vma.start / PAGE + done) * 8)
            .map_err(|e| format!("pagemap: {e}"))?;
        for (i, chunk) in bytes.chunks_exact(8).enumerate() {
            let mut e = [0u8; 8];
            e.copy_from_slice(chunk);
            if !wanted(u64::from_le_bytes(e), vma.kind) {
                continue;
            }
            let addr = vma.start + (done + i as u64) * PAGE;
            match found.last_mut() {
                Some((a, l)) if *a + *l == addr => *l += PAGE,
                _ => found.push((addr, PAGE)),
            }
        }
        done += n;
    }
    Ok(found)
}

/// The descriptors of `pid` (pipes as `pipe:[INODE]`, for the caller to
/// judge), or why one cannot be carried.
pub fn fds(pid: i32) -> Result<Vec<Fd>, String> {
    let dir = format!("/proc/{pid}/fd");
    let entries = fs::read_dir(&dir).map_err(|e| format!("{dir}: {e}"))?;
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(fd) = name.to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let path = fs::read_link(entry.path())
            .map_err(|e| format!("{dir}/{fd}: {e}"))?
            .to_string_lossy()
            .into_owned();
        let pipe = path.starts_with("pipe:[");
        if !pipe && (!path.starts_with('/') || path.ends_with(" (deleted)")) {
            return Err(format!(
                "descriptor {fd} is {path}: only files and devices by path can be restored"
            ));
        }
        let meta = fs::metadata(entry.path()).map_err(|e| format!("{dir}/{fd}: {e}"))?;
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if !(pipe || t.is_file() || t.is_char_device() || t.is_dir()) {
            return Err(format!(
                "descriptor {fd} is {path}, neither a file, a directory nor a device"
            ));
        }
        let info = fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}"))
            .map_err(|e| format!("fdinfo {fd}: {e}"))?;
        let field = |name: &str| {
            info.lines()
                .find_map(|l| l.strip_prefix(name))
                .map(str::trim)
                .unwrap_or("0")
                .to_string()
        };
        found.push(Fd {
            fd,
            flags: i32::from_str_radix(&field("flags:"), 8).unwrap_or(0),
            pos: field("pos:").parse().unwrap_or(0),
            path,
        });
    }
    found.sort_by_key(|f| f.fd);
    Ok(found)
}

/// The process's memory bounds from /proc/PID/stat (fields 26-28, 45-51).
pub fn mm(pid: i32, vmas: &[Vma]) -> Result<Mm, String> {
    let stat = stat_fields(pid)?;
    let f = |n: usize| stat.get(n).copied().unwrap_or(0);
    let heap_end = vmas.iter().find(|v| v.kind == Kind::Heap).map(|v| v.end);
    Ok(Mm {
        start_code: f(26),
        end_code: f(27),
        start_stack: f(28),
        start_data: f(45),
        end_data: f(46),
        start_brk: f(47),
        brk: heap_end.unwrap_or(f(47)),
        arg_start: f(48),
        arg_end: f(49),
        env_start: f(50),
        env_end: f(51),
    })
}

/// /proc/PID/stat's numeric fields by their number in proc(5) (1-based;
/// fields that are not numbers read 0).
pub fn stat_fields(pid: i32) -> Result<Vec<u64>, String> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat"))
        .map_err(|e| format!("/proc/{pid}/stat: {e}"))?;
    let stat = procfs::StatLine::parse(&text).ok_or("unreadable stat")?;
    // Fields 1 and 2 are the pid and the name; the rest start at 3.
    let mut fields = vec![0u64; 3];
    fields.extend(stat.fields_from(3).map(|s| s.parse().unwrap_or(0)));
    Ok(fields)
}

/// The kernel's flag of a task that has begun to exit (`PF_EXITING`,
/// /proc/PID/stat's field 9): it closes its files and maps on its way to
/// a zombie, so nothing of it can be saved.
const PF_EXITING: u64 = 0x4;

/// Whether `pid` still runs: it exists, is not a zombie and has not begun
/// to exit.
pub fn alive(pid: i32) -> bool {
    let Ok(text) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let Some(stat) = procfs::StatLine::parse(&text) else {
        return false;
    };
    let running = stat.state().is_some_and(|s| s != 'Z' && s != 'X');
    let exiting = stat.number::<u64>(9).is_some_and(|f| f & PF_EXITING != 0);
    running && !exiting
}

/// How an error names the process `pid` (a host pid) to the session's
/// user: its pid in its own pid namespace (what `ps` shows inside and a
/// session's state lists) and its name, `10 (python3)`; the host pid
/// when /proc does not say.
pub fn named(pid: i32) -> String {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .map(str::trim)
    };
    let inside = field("NSpid:")
        .and_then(|ids| ids.split_whitespace().last())
        .unwrap_or("");
    let inside = match inside.is_empty() {
        true => pid.to_string(),
        false => inside.to_string(),
    };
    match field("Name:") {
        Some(name) => format!("{inside} ({name})"),
        None => inside,
    }
}

/// The number of threads of `pid`.
pub fn threads(pid: i32) -> Result<usize, String> {
    fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| d.count())
        .map_err(|e| format!("/proc/{pid}/task: {e}"))
}

pub fn cwd(pid: i32) -> Result<String, String> {
    fs::read_link(format!("/proc/{pid}/cwd"))
        .map(|p| p.to_string_lossy().into_owned())
        .map_err(|e| format!("/proc/{pid}/cwd: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_lines() {
        let v =
            parse_line("7f0000-7f2000 r-xp 00001000 fe:00 18504    /usr/lib/libc.so.6").unwrap();
        assert_eq!((v.start, v.end, v.offset), (0x7f0000, 0x7f2000, 0x1000));
        assert_eq!(v.prot, libc::PROT_READ | libc::PROT_EXEC);
        assert_eq!(
            (v.kind, v.path.as_str()),
            (Kind::File, "/usr/lib/libc.so.6")
        );
        let h = parse_line("1000-2000 rw-p 00000000 00:00 0 [heap]").unwrap();
        assert_eq!(h.kind, Kind::Heap);
        let a = parse_line("1000-2000 rw-p 00000000 00:00 0 ").unwrap();
        assert_eq!(a.kind, Kind::Anon);
        assert!(parse_line("1000-2000 rw-s 00000000 00:01 7 /dev/zero (deleted)").is_err());
        assert!(parse_line("1000-2000 rw-s 00000000 00:00 0 ").is_err());
        assert!(parse_line("garbage").is_err());
    }

    #[test]
    fn pages_worth_saving() {
        let present = 1u64 << 63;
        let file = 1u64 << 61;
        assert!(wanted(present, Kind::Anon));
        assert!(!wanted(0, Kind::Anon));
        assert!(wanted(present, Kind::File));
        assert!(!wanted(present | file, Kind::File));
    }
}
