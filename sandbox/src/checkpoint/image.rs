//! One process's image: a magic, the length of a JSON header ([`Image`]:
//! registers, signal state, memory map, descriptors, working directory),
//! the header, then the saved memory as runs (address, length, bytes),
//! ended by a run of length 0.
//!
//! Owns the format; not how the parts are gathered or put back.

use std::io::{Read, Write};

use serde::{Deserialize, Serialize};

use crate::sys::ptrace::Regs;

pub const MAGIC: &[u8; 8] = b"SBXCKPT1";
/// A header larger than this is refused (a damaged or hostile image).
const MAX_HEADER: u64 = 64 << 20;

/// What a process was, besides the contents of its memory.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Image {
    /// The general registers, in `user_regs_struct`'s order.
    pub regs: Vec<u64>,
    /// The XSAVE area.
    pub xstate: Vec<u8>,
    pub sigmask: u64,
    /// `struct k_sigaction` of signals 1 to 64 (handler, flags, restorer, mask).
    pub sigactions: Vec<[u64; 4]>,
    pub rseq: Option<Rseq>,
    /// The robust futex list head and length.
    pub robust_list: (u64, u64),
    /// `prctl_mm_map`'s fields from /proc/PID/stat and the heap.
    pub mm: Mm,
    pub cwd: String,
    /// The thread's name (`comm`).
    pub comm: String,
    pub fds: Vec<Fd>,
    pub vmas: Vec<Vma>,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Rseq {
    pub pointer: u64,
    pub size: u32,
    pub signature: u32,
}

#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct Mm {
    pub start_code: u64,
    pub end_code: u64,
    pub start_data: u64,
    pub end_data: u64,
    pub start_brk: u64,
    pub brk: u64,
    pub start_stack: u64,
    pub arg_start: u64,
    pub arg_end: u64,
    pub env_start: u64,
    pub env_end: u64,
}

/// An open descriptor, reopened by path.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Fd {
    pub fd: i32,
    /// `open`'s flags (from fdinfo).
    pub flags: i32,
    pub pos: i64,
    /// The path in the guest's view.
    pub path: String,
}

/// What a map is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Kind {
    Anon,
    File,
    Heap,
    Stack,
    /// The kernel's `[vdso]`, `[vvar]`, `[vvar_vclock]`: moved, not made.
    Vdso,
    Vvar,
    VvarVclock,
    /// `[vsyscall]`: fixed by the kernel.
    Vsyscall,
}

impl Kind {
    pub fn is_kernels(self) -> bool {
        matches!(
            self,
            Kind::Vdso | Kind::Vvar | Kind::VvarVclock | Kind::Vsyscall
        )
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Vma {
    pub start: u64,
    pub end: u64,
    pub offset: u64,
    /// PROT_* bits.
    pub prot: i32,
    pub shared: bool,
    pub kind: Kind,
    pub path: String,
}

impl Vma {
    pub fn len(&self) -> u64 {
        self.end - self.start
    }
}

/// The general registers as a list (the order of `user_regs_struct`).
pub fn regs_to_vec(r: &Regs) -> Vec<u64> {
    vec![
        r.r15, r.r14, r.r13, r.r12, r.rbp, r.rbx, r.r11, r.r10, r.r9, r.r8, r.rax, r.rcx, r.rdx,
        r.rsi, r.rdi, r.orig_rax, r.rip, r.cs, r.eflags, r.rsp, r.ss, r.fs_base, r.gs_base, r.ds,
        r.es, r.fs, r.gs,
    ]
}

/// The registers back from [`regs_to_vec`]'s list.
pub fn regs_from_vec(v: &[u64], base: &Regs) -> Result<Regs, String> {
    let [r15, r14, r13, r12, rbp, rbx, r11, r10, r9, r8, rax, rcx, rdx, rsi, rdi, orig_rax, rip, cs, eflags, rsp, ss, fs_base, gs_base, ds, es, fs, gs] =
        v
    else {
        return Err(format!("{} registers in the image, not 27", v.len()));
    };
    let mut r = *base;
    (r.r15, r.r14, r.r13, r.r12, r.rbp, r.rbx, r.r11, r.r10, r.r9) =
        (*r15, *r14, *r13, *r12, *rbp, *rbx, *r11, *r10, *r9);
    (r.r8, r.rax, r.rcx, r.rdx, r.rsi, r.rdi, r.orig_rax, r.rip) =
        (*r8, *rax, *rcx, *rdx, *rsi, *rdi, *orig_rax, *rip);
    (r.cs, r.eflags, r.rsp, r.ss, r.fs_base, r.gs_base) =
        (*cs, *eflags, *rsp, *ss, *fs_base, *gs_base);
    (r.ds, r.es, r.fs, r.gs) = (*ds, *es, *fs, *gs);
    Ok(r)
}

/// Writes the magic and the header.
pub fn write_header(out: &mut impl Write, image: &Image) -> std::io::Result<()> {
    let header = serde_json::to_vec(image).map_err(std::io::Error::other)?;
    out.write_all(MAGIC)?;
    out.write_all(&(header.len() as u64).to_le_bytes())?;
    out.write_all(&header)
}

/// Writes one run of memory (`bytes` empty: the end).
pub fn write_run(out: &mut impl Write, addr: u64, bytes: &[u8]) -> std::io::Result<()> {
    out.write_all(&addr.to_le_bytes())?;
    out.write_all(&(bytes.len() as u64).to_le_bytes())?;
    out.write_all(bytes)
}

/// Reads the magic and the header.
pub fn read_header(input: &mut impl Read) -> Result<Image, String> {
    let mut magic = [0u8; 8];
    input
        .read_exact(&mut magic)
        .map_err(|e| format!("reading the image: {e}"))?;
    if &magic != MAGIC {
        return Err("not a process image (bad magic)".into());
    }
    let len = read_u64(input)?;
    if len > MAX_HEADER {
        return Err(format!("image header of {len} bytes"));
    }
    let mut header = vec![0u8; len as usize];
    input
        .read_exact(&mut header)
        .map_err(|e| format!("reading the image's header: {e}"))?;
    serde_json::from_slice(&header).map_err(|e| format!("the image's header: {e}"))
}

/// Takes the next run of memory off the front of `input` (the image's
/// bytes after the header): its address and bytes, or `None` at the end.
/// A run longer than what is left is an error, never a read past it.
pub fn next_run<'a>(input: &mut &'a [u8]) -> Result<Option<(u64, &'a [u8])>, String> {
    let (addr, len) = (read_u64(input)?, read_u64(input)?);
    if len == 0 {
        return Ok(None);
    }
    let Some(len) = usize::try_from(len).ok().filter(|&l| l <= input.len()) else {
        return Err(format!(
            "a run of {len} bytes at {addr:#x} goes past the image's end"
        ));
    };
    let (run, rest) = input.split_at(len);
    *input = rest;
    Ok(Some((addr, run)))
}

fn read_u64(input: &mut impl Read) -> Result<u64, String> {
    let mut b = [0u8; 8];
    input
        .read_exact(&mut b)
        .map_err(|e| format!("reading the image: {e}"))?;
    Ok(u64::from_le_bytes(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_come_off_the_front_and_never_past_the_end() {
        let mut bytes = Vec::new();
        write_run(&mut bytes, 0x1000, b"abcd").unwrap();
        write_run(&mut bytes, 0x2000, b"ef").unwrap();
        write_run(&mut bytes, 0, &[]).unwrap();
        let mut input = &bytes[..];
        assert_eq!(next_run(&mut input).unwrap(), Some((0x1000, &b"abcd"[..])));
        assert_eq!(next_run(&mut input).unwrap(), Some((0x2000, &b"ef"[..])));
        assert_eq!(next_run(&mut input).unwrap(), None);
        assert!(input.is_empty());

        // A run whose length says more than the image holds, or a cut head.
        // Cut in the second run's bytes: its head says 2, 1 is left.
        let mut input = &bytes[..bytes.len() - 17];
        next_run(&mut input).unwrap();
        assert!(next_run(&mut input)
            .unwrap_err()
            .contains("past the image's end"));
        let mut huge = Vec::new();
        huge.extend_from_slice(&0x1000u64.to_le_bytes());
        huge.extend_from_slice(&u64::MAX.to_le_bytes());
        assert!(next_run(&mut &huge[..]).is_err());
        assert!(next_run(&mut &huge[..12]).is_err());
    }
}
