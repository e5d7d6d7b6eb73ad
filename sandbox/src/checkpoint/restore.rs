//! Restoring one image into a stub: a process started in the sandbox the
//! image is to live in (any single-threaded program stopped in a system
//! call: `sleep`), so it already has the sandbox's namespaces, filter,
//! limits and a listener of the new supervisor. The stub is stopped; a
//! page of ours holding a `syscall` instruction is mapped where neither
//! the stub nor the image has anything; through it the stub drops its
//! rseq area, its heap, its descriptors and every map, moves the kernel's
//! vDSO and vvar to where the image had them, maps the image's maps at
//! their addresses (`MAP_FIXED_NOREPLACE`; files reopened by path in the
//! sandbox's view), gets the saved pages, its descriptors, working
//! directory, signal handlers, rseq and robust-list registrations; then
//! our page goes, the mask and registers are set, and it is let go. A
//! call interrupted by the dump is restarted as the kernel would have.
//!
//! The stub's heap is emptied first; once the image's maps are in place,
//! `prctl(PR_SET_MM, PR_SET_MM_MAP)` puts back the image's memory-map
//! bounds (code, data, heap, stack, arguments, environment), so the
//! restored program's `brk` grows its own heap and /proc's `cmdline`
//! reads its arguments. The guest's filter passes that call
//! (`syscalls/src/policy/allow.rs`); a kernel that refuses it refuses the
//! restore, rather than leave a program whose next heap growth faults.
//!
//! Owns the order of a restore; not checking the image (`manifest.rs`).

use std::time::{Duration, Instant};

use nix::sys::uio::{process_vm_writev, RemoteIoVec};
use nix::unistd::Pid;

use super::image::{self, Image, Kind, Vma};
use super::inject::{Injector, SYSCALL_INSN};
use super::maps;
use crate::sys::ptrace;

/// Bytes written through /proc/PID/mem at a time.
const CHUNK: usize = 8 << 20;
const PAGE: u64 = 4096;
const PR_SET_MM: u64 = 35;
const PR_SET_MM_MAP: u64 = 14;
/// `sizeof(struct prctl_mm_map)`.
const PRCTL_MM_MAP_SIZE: usize = 104;
const MAP_FIXED_NOREPLACE: u64 = 0x100000;
const ERESTARTSYS: i64 = 512;
const ERESTARTNOINTR: i64 = 513;
const ERESTARTNOHAND: i64 = 514;
const ERESTART_RESTARTBLOCK: i64 = 516;

/// Turns the stub `stub` (host pid) into the process of the image
/// `image` (its file's bytes, unchecked: read as hostile input). On an
/// error the stub is left broken: the caller kills it. The stub stays
/// stopped and traced (the caller lets it go with [`release`] once the
/// images are known good); it dies with this process if that exits
/// first. The time the copy of the saved pages took.
pub fn restore(image: &[u8], stub: i32) -> Result<Duration, String> {
    let mut input = image;
    let image = image::read_header(&mut input)?;
    let pid = Pid::from_raw(stub);
    let fail = |what: &str, e: nix::errno::Errno| format!("stub {stub}: {what}: {}", e.desc());
    ptrace::seize_exitkill(pid).map_err(|e| fail("attaching", e))?;
    ptrace::interrupt(pid).map_err(|e| fail("stopping", e))?;
    if !ptrace::wait_stop(pid, Duration::from_secs(2)).map_err(|e| fail("stopping", e))? {
        return Err(format!("stub {stub} did not stop"));
    }
    into_image(pid, &image, &mut input)
}

/// Lets a restored stub held by [`restore`] go.
pub fn release(stub: i32) -> Result<(), String> {
    ptrace::detach(Pid::from_raw(stub)).map_err(|e| format!("stub {stub}: detaching: {}", e.desc()))
}

fn into_image(pid: Pid, image: &Image, input: &mut &[u8]) -> Result<Duration, String> {
    let raw = pid.as_raw();
    let base = ptrace::get_regs(pid).map_err(|e| format!("stub registers: {}", e.desc()))?;
    let stub_vmas = maps::vmas(raw)?;
    let mut inj = Injector::new(pid, base)?;
    inj.find_gadget(
        stub_vmas
            .iter()
            .find(|v| v.kind == Kind::Vdso)
            .map(|v| (v.start, v.end)),
    )?;
    // Our page: a syscall instruction, then a page of arguments.
    let ours = free_area(&[&image.vmas, &stub_vmas], 2 * PAGE, 0x1000_0000)
        .ok_or("no free address for the restorer's page")?;
    let prot_rx = (libc::PROT_READ | libc::PROT_EXEC) as u64;
    let anon = (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS) as u64 | MAP_FIXED_NOREPLACE;
    inj.must(
        "mapping the restorer's page",
        libc::SYS_mmap,
        [ours, 2 * PAGE, prot_rx, anon, u64::MAX, 0],
    )?;
    inj.write(ours, &SYSCALL_INSN)?;
    inj.gadget = ours;
    let scratch = ours + PAGE;

    let stub_rseq = ptrace::rseq_config(pid).map_err(|e| format!("stub rseq: {}", e.desc()))?;
    if stub_rseq.pointer != 0 {
        let (p, s, sig) = (
            stub_rseq.pointer,
            stub_rseq.size as u64,
            stub_rseq.signature as u64,
        );
        inj.must(
            "unregistering the stub's rseq",
            libc::SYS_rseq,
            [p, s, 1, sig, 0, 0],
        )?;
    }
    let start_brk = maps::stat_fields(raw)?.get(47).copied().unwrap_or(0);
    if start_brk != 0 {
        inj.call(libc::SYS_brk, [start_brk, 0, 0, 0, 0, 0])?;
    }
    inj.must(
        "closing the stub's descriptors",
        libc::SYS_close_range,
        [0, u32::MAX as u64, 0, 0, 0, 0],
    )?;

    // The stub's maps go, the kernel's move out of the way.
    let mut parked: Vec<(Kind, u64, u64)> = Vec::new();
    let mut park = 0x2000_0000_0000u64;
    for v in maps::vmas(raw)? {
        if v.start == ours || v.kind == Kind::Vsyscall {
            continue;
        }
        if v.kind.is_kernels() {
            park = free_area(&[&image.vmas, &stub_vmas], v.len(), park)
                .ok_or("no room to move the vDSO")?;
            mremap(&inj, v.start, v.len(), park)?;
            parked.push((v.kind, park, v.len()));
            park += v.len() + PAGE;
            continue;
        }
        inj.must(
            "unmapping the stub",
            libc::SYS_munmap,
            [v.start, v.len(), 0, 0, 0, 0],
        )?;
    }
    for (kind, at, len) in parked {
        let Some(target) = image.vmas.iter().find(|v| v.kind == kind) else {
            return Err(format!(
                "the image has no {kind:?} (saved on another kernel?)"
            ));
        };
        if target.len() != len {
            return Err(format!(
                "{kind:?} differs in size from the image's (another kernel?)"
            ));
        }
        mremap(&inj, at, len, target.start)?;
    }

    // A file's maps (a library has four or five, in a row) share one
    // descriptor: fewer calls to inject, each a round trip of two stops.
    let mut open: Option<OpenFile> = None;
    for v in image.vmas.iter().filter(|v| !v.kind.is_kernels()) {
        map_one(&inj, v, scratch, &mut open)?;
    }
    if let Some(f) = open.take() {
        inj.call(libc::SYS_close, [f.fd, 0, 0, 0, 0, 0])?;
    }
    let copying = Instant::now();
    write_contents(&inj, input)?;
    let copy_time = copying.elapsed();

    let mm = &image.mm;
    let fields = [
        mm.start_code,
        mm.end_code,
        mm.start_data,
        mm.end_data,
        mm.start_brk,
        mm.brk,
        mm.start_stack,
        mm.arg_start,
        mm.arg_end,
        mm.env_start,
        mm.env_end,
    ];
    // struct prctl_mm_map: the eleven bounds, the auxv pointer (none),
    // auxv_size, exe_fd (-1: keep the link): 104 bytes.
    let mut map = Vec::with_capacity(PRCTL_MM_MAP_SIZE);
    for f in fields.iter().chain([0u64].iter()) {
        map.extend_from_slice(&f.to_le_bytes());
    }
    map.extend_from_slice(&0u32.to_le_bytes()); // auxv_size
    map.extend_from_slice(&u32::MAX.to_le_bytes()); // exe_fd: keep
    debug_assert_eq!(map.len(), PRCTL_MM_MAP_SIZE);
    inj.write(scratch, &map)?;
    inj.must(
        "setting the memory map's bounds (prctl PR_SET_MM_MAP)",
        libc::SYS_prctl,
        [PR_SET_MM, PR_SET_MM_MAP, scratch, map.len() as u64, 0, 0],
    )?;

    for fd in &image.fds {
        let flags = fd.flags & !(libc::O_CREAT | libc::O_TRUNC | libc::O_EXCL);
        let opened = open_path(&inj, scratch, &fd.path, flags)?;
        if opened != fd.fd as u64 {
            let cloexec = (flags & libc::O_CLOEXEC) as u64;
            inj.must(
                "placing a descriptor",
                libc::SYS_dup3,
                [opened, fd.fd as u64, cloexec, 0, 0, 0],
            )?;
            inj.must("closing", libc::SYS_close, [opened, 0, 0, 0, 0, 0])?;
        }
        if fd.pos != 0 {
            inj.call(
                libc::SYS_lseek,
                [fd.fd as u64, fd.pos as u64, libc::SEEK_SET as u64, 0, 0, 0],
            )?;
        }
    }
    if !image.comm.is_empty() {
        put_str(&inj, scratch, &image.comm)?;
        inj.must(
            "naming the thread",
            libc::SYS_prctl,
            [libc::PR_SET_NAME as u64, scratch, 0, 0, 0, 0],
        )?;
    }
    put_str(&inj, scratch, &image.cwd)?;
    inj.must(
        &format!("chdir {}", image.cwd),
        libc::SYS_chdir,
        [scratch, 0, 0, 0, 0, 0],
    )?;
    for (i, act) in image.sigactions.iter().enumerate() {
        let sig = i as u64 + 1;
        if *act == [0; 4] || sig == libc::SIGKILL as u64 || sig == libc::SIGSTOP as u64 {
            continue;
        }
        let bytes: Vec<u8> = act.iter().flat_map(|w| w.to_le_bytes()).collect();
        inj.write(scratch, &bytes)?;
        inj.must(
            "rt_sigaction",
            libc::SYS_rt_sigaction,
            [sig, scratch, 0, 8, 0, 0],
        )?;
    }
    if let Some(r) = image.rseq {
        let args = [r.pointer, r.size as u64, 0, r.signature as u64, 0, 0];
        inj.must("registering rseq", libc::SYS_rseq, args)?;
    }
    let (head, len) = image.robust_list;
    if head != 0 {
        inj.must(
            "set_robust_list",
            libc::SYS_set_robust_list,
            [head, len, 0, 0, 0, 0],
        )?;
    }
    inj.must(
        "unmapping the restorer's page",
        libc::SYS_munmap,
        [ours, 2 * PAGE, 0, 0, 0, 0],
    )?;

    let fail = |what: &str, e: nix::errno::Errno| format!("{what}: {}", e.desc());
    ptrace::set_sigmask(pid, image.sigmask).map_err(|e| fail("signal mask", e))?;
    ptrace::set_xstate(pid, &image.xstate).map_err(|e| fail("extended registers", e))?;
    let mut regs = image::regs_from_vec(&image.regs, &base)?;
    if regs.orig_rax != u64::MAX {
        // Stopped in a call: restart it as the kernel would have.
        match -(regs.rax as i64) {
            ERESTARTSYS | ERESTARTNOINTR | ERESTARTNOHAND => {
                regs.rax = regs.orig_rax;
                regs.rip -= 2;
            }
            ERESTART_RESTARTBLOCK => regs.rax = (-libc::EINTR) as u64,
            _ => {}
        }
    }
    regs.orig_rax = u64::MAX;
    ptrace::set_regs(pid, &regs).map_err(|e| fail("registers", e))?;
    Ok(copy_time)
}

/// The lowest address at or above `from` where `len` bytes overlap none
/// of `sets`' maps (searched in 256 MiB steps).
fn free_area(sets: &[&[Vma]], len: u64, from: u64) -> Option<u64> {
    let step = 0x1000_0000u64;
    let mut at = from.div_ceil(step) * step;
    while at + len < 0x7f00_0000_0000 {
        let clash = sets
            .iter()
            .any(|s| s.iter().any(|v| at < v.end && at + len > v.start));
        if !clash {
            return Some(at);
        }
        at += step;
    }
    None
}

fn mremap(inj: &Injector, from: u64, len: u64, to: u64) -> Result<(), String> {
    let flags = (libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED) as u64;
    let r = inj.must(
        "moving the vDSO",
        libc::SYS_mremap,
        [from, len, len, flags, to, 0],
    )?;
    if r != to {
        return Err(format!("the vDSO moved to {r:#x}, not {to:#x}"));
    }
    Ok(())
}

fn put_str(inj: &Injector, at: u64, s: &str) -> Result<(), String> {
    if s.len() >= PAGE as usize || s.contains('\0') {
        return Err(format!("a path the restorer cannot pass: {s:?}"));
    }
    let mut b = s.as_bytes().to_vec();
    b.push(0);
    inj.write(at, &b)
}

fn open_path(inj: &Injector, scratch: u64, path: &str, flags: i32) -> Result<u64, String> {
    put_str(inj, scratch, path)?;
    let cwd = libc::AT_FDCWD as i64 as u64;
    inj.must(
        &format!("reopening {path}"),
        libc::SYS_openat,
        [cwd, scratch, flags as u64, 0, 0, 0],
    )
}

/// The file the last file map was made from, still open in the process.
struct OpenFile {
    path: String,
    mode: i32,
    fd: u64,
}

fn map_one(
    inj: &Injector,
    v: &Vma,
    scratch: u64,
    open: &mut Option<OpenFile>,
) -> Result<(), String> {
    let prot = v.prot as u64;
    let got = if v.kind == Kind::File {
        let writable_shared = v.shared && v.prot & libc::PROT_WRITE != 0;
        let mode = if writable_shared {
            libc::O_RDWR
        } else {
            libc::O_RDONLY
        };
        let fd = match open {
            Some(f) if f.path == v.path && f.mode == mode => f.fd,
            _ => {
                if let Some(f) = open.take() {
                    inj.call(libc::SYS_close, [f.fd, 0, 0, 0, 0, 0])?;
                }
                let fd = open_path(inj, scratch, &v.path, mode | libc::O_CLOEXEC)?;
                *open = Some(OpenFile {
                    path: v.path.clone(),
                    mode,
                    fd,
                });
                fd
            }
        };
        let share = if v.shared {
            libc::MAP_SHARED
        } else {
            libc::MAP_PRIVATE
        } as u64;
        inj.call(
            libc::SYS_mmap,
            [
                v.start,
                v.len(),
                prot,
                share | MAP_FIXED_NOREPLACE,
                fd,
                v.offset,
            ],
        )?
    } else {
        let mut flags = (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS) as u64 | MAP_FIXED_NOREPLACE;
        if v.kind == Kind::Stack {
            flags |= libc::MAP_GROWSDOWN as u64;
        }
        inj.call(libc::SYS_mmap, [v.start, v.len(), prot, flags, u64::MAX, 0])?
    };
    if got as u64 != v.start {
        return Err(format!(
            "mapping {:#x}-{:#x} ({}): got {got}",
            v.start, v.end, v.path
        ));
    }
    Ok(())
}

/// Copies the image's runs of memory into the process, each run straight
/// from the image's bytes: as the process would write them where the
/// pages are writable (`process_vm_writev`, one call for a run, which
/// faults the run's pages in as it goes), through /proc/PID/mem from the
/// first page it may not write. A run of [`SPLIT_AT`] or more is copied
/// in two halves on two threads at once: the copy's time is the kernel's
/// allocating, zeroing and filling of fresh pages, which two CPUs do
/// side by side (a 100 MiB Python heap is one such run).
fn write_contents(inj: &Injector, input: &mut &[u8]) -> Result<(), String> {
    while let Some((addr, run)) = image::next_run(input)? {
        if run.len() < SPLIT_AT {
            write_run(inj, addr, run)?;
            continue;
        }
        let half = (run.len() / 2) & !(PAGE as usize - 1);
        let (first, second) = run.split_at(half);
        let second_at = addr.wrapping_add(half as u64);
        let pid = inj.pid;
        let (first_written, second_done) = std::thread::scope(|s| {
            let other = s.spawn(move || write_writable(pid, second_at, second));
            let first_written = write_run(inj, addr, first);
            // A thread that failed to start or panicked copied nothing
            // this side knows of: the rest is copied below.
            (first_written, other.join().unwrap_or(0))
        });
        first_written?;
        let rest = second.get(second_done..).unwrap_or_default();
        write_run(inj, second_at.wrapping_add(second_done as u64), rest)?;
    }
    Ok(())
}

/// Runs at least this long are copied on two threads.
const SPLIT_AT: usize = 16 << 20;

/// Copies one run, as [`write_contents`] says.
fn write_run(inj: &Injector, addr: u64, run: &[u8]) -> Result<(), String> {
    let mut done = 0usize;
    while done < run.len() {
        let rest = &run[done..];
        let at = addr.wrapping_add(done as u64);
        let written = write_writable(inj.pid, at, rest);
        if written > 0 {
            done += written;
            continue;
        }
        let n = rest.len().min(CHUNK);
        inj.write(at, &rest[..n])?;
        done += n;
    }
    Ok(())
}

/// Copies what it can of `bytes` to `addr` in the process with
/// `process_vm_writev`, up to the first page it may not write; how many
/// bytes it copied.
fn write_writable(pid: Pid, addr: u64, bytes: &[u8]) -> usize {
    let mut done = 0usize;
    while done < bytes.len() {
        let rest = &bytes[done..];
        let remote = [RemoteIoVec {
            base: addr.wrapping_add(done as u64) as usize,
            len: rest.len(),
        }];
        let local = [std::io::IoSlice::new(rest)];
        match process_vm_writev(pid, &local, &remote) {
            Ok(n) if n > 0 => done += n,
            _ => break,
        }
    }
    done
}
