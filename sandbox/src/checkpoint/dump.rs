//! Dumping processes: each is seized and stopped (all of them before any
//! is read, so the images are of one moment), its image gathered and
//! written with its hash, and, once every image is on disk, killed. Any
//! failure lets every process go on as it was.
//!
//! Owns the order of a dump; the image's format is `image.rs`'s, /proc's
//! parsing `maps.rs`'s.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::image::{self, Image, Kind, Rseq};
use super::inject::Injector;
use super::manifest::{Entry, Manifest};
use super::maps;
use crate::sys::ptrace;

/// How long a process may take to stop; one that does not is inside a
/// call the sandbox's supervisor holds (a received notification waits
/// killably only).
const STOP_LIMIT: Duration = Duration::from_secs(2);
/// Bytes read from the process at a time.
const CHUNK: usize = 8 << 20;

/// Why a dump failed, by what the caller can do about it.
#[derive(Debug)]
pub enum DumpError {
    /// A process has something a dump cannot carry (threads, a socket...).
    Unsupported(String),
    /// A process is inside a call the sandbox serves: try again later.
    Busy(String),
    /// Writing the images failed (a full disk...).
    Storage(String),
    /// Anything else.
    Other(String),
}

impl std::fmt::Display for DumpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (DumpError::Unsupported(m)
        | DumpError::Busy(m)
        | DumpError::Storage(m)
        | DumpError::Other(m)) = self;
        f.write_str(m)
    }
}

/// What a dump wrote.
#[derive(Debug)]
pub struct Dumped {
    pub manifest: Manifest,
    /// Bytes of memory saved.
    pub memory_bytes: u64,
}

/// Dumps `pids` (host pids) into `dir` (`<n>.img` and `manifest.json`),
/// then kills them. A process that ends meanwhile (an exec's shell on
/// its way out when the processes were listed) is not saved. On an error
/// nothing is killed and every process runs on; `dir` may hold part of
/// the images.
pub fn dump(pids: &[i32], dir: &Path) -> Result<Dumped, DumpError> {
    let mut live = Vec::with_capacity(pids.len());
    for &pid in pids {
        let n = match maps::threads(pid) {
            Ok(n) => n,
            Err(_) if !maps::alive(pid) => continue,
            Err(e) => return Err(DumpError::Other(e)),
        };
        if !maps::alive(pid) {
            continue;
        }
        live.push(pid);
        if n != 1 {
            return Err(DumpError::Unsupported(format!(
                "process {} has {n} threads: only single-threaded processes can be saved",
                maps::named(pid)
            )));
        }
    }
    let pids = live;
    let mut seized = Vec::new();
    let result = (|| {
        for &pid in &pids {
            let p = Pid::from_raw(pid);
            match ptrace::seize(p) {
                Ok(()) => {}
                Err(nix::errno::Errno::ESRCH) => continue,
                Err(e) => {
                    return Err(DumpError::Other(format!(
                        "attaching to process {pid}: {}",
                        e.desc()
                    )))
                }
            }
            seized.push(p);
            ptrace::interrupt(p)
                .map_err(|e| DumpError::Other(format!("stopping process {pid}: {}", e.desc())))?;
        }
        for &p in &seized {
            match ptrace::wait_stop(p, STOP_LIMIT) {
                Ok(true) => {}
                Ok(false) => {
                    return Err(DumpError::Busy(format!(
                        "process {} did not stop: it is inside a call the sandbox is serving",
                        maps::named(p.as_raw())
                    )))
                }
                Err(e) => return Err(DumpError::Other(format!("process {p} ended: {}", e.desc()))),
            }
        }
        // Their descriptors are read once all are stopped: a process
        // caught on its way through an exec (its close-on-exec
        // descriptors closing) holds still, and what is saved is what it
        // holds when it stops.
        let stopped: Vec<i32> = seized.iter().map(|p| p.as_raw()).collect();
        let fds = pipes_outside(&stopped)?;
        let mut manifest = Manifest::default();
        let mut memory_bytes = 0;
        for (n, (&p, fds)) in seized.iter().zip(fds).enumerate() {
            let file = format!("{n}.img");
            let (entry, bytes) = dump_one(p, &dir.join(&file), file, fds)?;
            manifest.processes.push(entry);
            memory_bytes += bytes;
        }
        manifest.save(dir).map_err(DumpError::Storage)?;
        Ok(Dumped {
            manifest,
            memory_bytes,
        })
    })();
    for &p in &seized {
        if result.is_ok() {
            let _ = kill(p, Signal::SIGKILL);
        }
        let _ = ptrace::detach(p);
    }
    result
}

/// The descriptors of each process, a pipe to outside the dumped
/// processes (an exec's stdin, stdout or stderr, whose other end is the
/// daemon's) turned into /dev/null with the same access mode: its output
/// was being discarded and its input was at its end. A pipe between two
/// of the processes is refused.
fn pipes_outside(pids: &[i32]) -> Result<Vec<Vec<image::Fd>>, DumpError> {
    let mut all = Vec::with_capacity(pids.len());
    for &pid in pids {
        let fds = maps::fds(pid)
            .map_err(|e| DumpError::Unsupported(format!("process {}: {e}", maps::named(pid))))?;
        all.push(fds);
    }
    let owners = |inode: &str, me: usize| {
        all.iter()
            .enumerate()
            .find(|(i, fds)| *i != me && fds.iter().any(|f| f.path == inode))
            .map(|(i, _)| pids[i])
    };
    let mut out = all.clone();
    for (i, fds) in out.iter_mut().enumerate() {
        for f in fds.iter_mut().filter(|f| f.path.starts_with("pipe:[")) {
            if let Some(other) = owners(&f.path, i) {
                return Err(DumpError::Unsupported(format!(
                    "process {}: descriptor {} is a pipe to process {}: pipes between processes cannot be saved",
                    maps::named(pids[i]),
                    f.fd,
                    maps::named(other)
                )));
            }
            f.path = "/dev/null".into();
            f.flags &= libc::O_ACCMODE | libc::O_CLOEXEC;
            f.pos = 0;
        }
    }
    Ok(out)
}

/// A writer that hashes what it writes.
struct Hashing<W: Write> {
    inner: W,
    hash: blake3::Hasher,
    bytes: u64,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Writes one stopped process's image to `path`; its manifest entry and
/// the bytes of memory saved.
fn dump_one(
    pid: Pid,
    path: &Path,
    file: String,
    fds: Vec<image::Fd>,
) -> Result<(Entry, u64), DumpError> {
    let raw = pid.as_raw();
    let fail = |what: &str, e: nix::errno::Errno| {
        DumpError::Other(format!("process {raw}: {what}: {}", e.desc()))
    };
    let regs = ptrace::get_regs(pid).map_err(|e| fail("registers", e))?;
    let xstate = ptrace::get_xstate(pid).map_err(|e| fail("extended registers", e))?;
    let sigmask = ptrace::get_sigmask(pid).map_err(|e| fail("signal mask", e))?;
    let rseq = ptrace::rseq_config(pid).map_err(|e| fail("rseq", e))?;
    let robust_list = ptrace::robust_list(pid).map_err(|e| fail("robust list", e))?;
    let refused = |e: String| DumpError::Unsupported(format!("process {raw}: {e}"));
    let vmas = maps::vmas(raw).map_err(refused)?;
    let mm = maps::mm(raw, &vmas).map_err(DumpError::Other)?;
    let cwd = maps::cwd(raw).map_err(DumpError::Other)?;
    let sigactions = sigactions(pid, regs, &vmas).map_err(DumpError::Other)?;
    let image = Image {
        regs: image::regs_to_vec(&regs),
        xstate,
        sigmask,
        sigactions,
        rseq: (rseq.pointer != 0).then_some(Rseq {
            pointer: rseq.pointer,
            size: rseq.size,
            signature: rseq.signature,
        }),
        robust_list,
        mm,
        cwd,
        comm: std::fs::read_to_string(format!("/proc/{raw}/comm"))
            .map(|c| c.trim_end_matches('\n').to_string())
            .unwrap_or_default(),
        fds,
        vmas,
    };
    let out = super::manifest::create_private(path)
        .map_err(|e| DumpError::Storage(format!("{}: {e}", path.display())))?;
    let mut w = Hashing {
        inner: BufWriter::with_capacity(1 << 20, out),
        hash: blake3::Hasher::new(),
        bytes: 0,
    };
    let io = |e: std::io::Error| DumpError::Storage(format!("writing {}: {e}", path.display()));
    image::write_header(&mut w, &image).map_err(io)?;
    let other = |e: std::io::Error| DumpError::Other(format!("process {raw}: {e}"));
    let mem = File::open(format!("/proc/{raw}/mem")).map_err(other)?;
    let pagemap = File::open(format!("/proc/{raw}/pagemap")).map_err(other)?;
    let mut buf = vec![0u8; CHUNK];
    let mut saved = 0u64;
    for vma in image
        .vmas
        .iter()
        .filter(|v| carries_contents(v.kind, v.prot, v.shared))
    {
        for (addr, len) in maps::runs(&pagemap, vma).map_err(DumpError::Other)? {
            let mut done = 0u64;
            while done < len {
                let n = (len - done).min(CHUNK as u64) as usize;
                use std::os::unix::fs::FileExt;
                mem.read_exact_at(&mut buf[..n], addr + done).map_err(|e| {
                    DumpError::Other(format!("process {raw}: memory at {:#x}: {e}", addr + done))
                })?;
                image::write_run(&mut w, addr + done, &buf[..n]).map_err(io)?;
                done += n as u64;
            }
            saved += len;
        }
    }
    image::write_run(&mut w, 0, &[]).map_err(io)?;
    w.flush().map_err(io)?;
    let (hash, bytes) = (w.hash.finalize(), w.bytes);
    let out = w.inner.into_inner().map_err(|e| io(e.into_error()))?;
    out.sync_all().map_err(io)?;
    Ok((
        Entry {
            file,
            blake3: Some(hash.to_hex().to_string()),
            sha256: None,
            bytes,
        },
        saved,
    ))
}

/// Whether a map's contents are saved: readable, private, not the kernel's.
pub fn carries_contents(kind: Kind, prot: i32, shared: bool) -> bool {
    !kind.is_kernels() && prot & libc::PROT_READ != 0 && !shared
}

/// The handler of each signal, read by injected `rt_sigaction` calls
/// that write into the stack below the red zone (put back after).
fn sigactions(pid: Pid, regs: ptrace::Regs, vmas: &[image::Vma]) -> Result<Vec<[u64; 4]>, String> {
    let vdso = vmas
        .iter()
        .find(|v| v.kind == Kind::Vdso)
        .map(|v| (v.start, v.end));
    let mut inj = Injector::new(pid, regs)?;
    inj.find_gadget(vdso)?;
    let scratch = (regs.rsp - 512) & !15;
    let stack_ok = vmas
        .iter()
        .any(|v| v.start <= scratch && scratch + 32 <= v.end && v.prot & libc::PROT_WRITE != 0);
    if !stack_ok {
        return Err(format!(
            "process {pid}: its stack pointer is not in a writable map"
        ));
    }
    let mut saved = [0u8; 32];
    inj.read(scratch, &mut saved)?;
    let mut all = Vec::with_capacity(64);
    let result = (|| {
        for sig in 1..=64u64 {
            if sig == libc::SIGKILL as u64 || sig == libc::SIGSTOP as u64 {
                all.push([0; 4]);
                continue;
            }
            inj.must(
                "rt_sigaction",
                libc::SYS_rt_sigaction,
                [sig, 0, scratch, 8, 0, 0],
            )?;
            let mut b = [0u8; 32];
            inj.read(scratch, &mut b)?;
            let word = |i: usize| {
                let mut w = [0u8; 8];
                w.copy_from_slice(&b[i * 8..i * 8 + 8]);
                u64::from_le_bytes(w)
            };
            all.push([word(0), word(1), word(2), word(3)]);
        }
        Ok(())
    })();
    inj.write(scratch, &saved)?;
    ptrace::set_regs(pid, &regs).map_err(|e| format!("process {pid}: registers: {}", e.desc()))?;
    result.map(|()| all)
}
