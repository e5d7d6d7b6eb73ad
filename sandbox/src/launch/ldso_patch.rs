//! The guest's copy of glibc's dynamic loader whose own opens are marked
//! from its first instruction (docs/fast-reads.md, "The loader's own
//! opens, from its first instruction").
//!
//! The loader opens the preload list, the preload, `ld.so.cache` and
//! every library before the preload's constructor can rewrite its open
//! site, so each of those opens was a served round trip. The view is
//! ours: the guest gets, over the real file its interpreter path leads
//! to, a copy of the host's loader whose non-cancellable open site
//! (`guest/site_patch.h`'s pattern) is a jump to `guest/ldso_trampoline.c`'s
//! image, written into the zero padding that ends the loader's executable
//! segment (which the kernel maps anyway) and covered by growing that
//! segment's sizes. The image makes a plain read marked, as the preload's
//! open does, and every other call as built. The preload, finding the
//! site changed, leaves it.
//!
//! Only a loader whose bytes are exactly as expected is patched: an
//! x86_64 ELF with one executable segment holding the pattern once,
//! whose padding is zero, free of sections and large enough; anything
//! else keeps the loader as built. So is a sandbox whose text stays as
//! built (`run --no-rewrite`), and a `--rootfs` tree (not done: its
//! loader stays as built and the preload rewrites it at its start).
//!
//! The supervisor reads the file once per identity of it (a pool reads
//! it once), mapped (`sys/mapped.rs`: the host's loader, which only the
//! host's root could cut short under the map), and keeps only the edits; init copies the file into the layer
//! with `copy_file_range`, writes the edits over it and binds the copy.
//!
//! Owns: the patch of the file (its edits), which loader the host's view
//! gets it for, and the copy's making and bind in the view. Does not own the image's code, the
//! pattern or the slot's bytes (`guest/`), nor who gets fast reads at all
//! (`fast_reads.rs`).

use std::fmt;
use std::fs;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use nix::mount::MsFlags;
use parking_lot::Mutex;

use super::bind::{bind, open_source};
use super::elf_fields::{u16_at, u32_at, u64_at};
use super::plan::{TopDir, TopKind};
use crate::sys::mapped::Mapped;

/// `guest/ldso_trampoline.c`'s image, built by `sandbox/build.rs`; empty
/// where it could not be built, and then no loader is patched.
const IMAGE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/ldso_trampoline"));
/// The image's `jmp rel32` back to the site's successor, at its start.
const JUMP_BACK: usize = 0;
/// The image's slot, which the site jumps to; it begins with the site's
/// three moves (`NOCANCEL_MOVE_BYTES`).
const SLOT: usize = 5;
/// The pattern's length and the moves' (`site_patch.h`).
const SITE_LEN: usize = 15;
const MOVES_LEN: usize = 13;
/// The `syscall` that ends the pattern.
const SYSCALL: [u8; 2] = [0x0f, 0x05];
/// glibc's program interpreter on x86_64.
const INTERPRETER: &str = "/lib64/ld-linux-x86-64.so.2";
/// Where init stages the copy: in the layer, outside the new root.
const STAGED: &str = "/ldso";
const PAGE: u64 = 4096;

/// The changes that make the host's loader the guest's copy: the file
/// (and its identity when they were made), the path in the view the
/// copy is bound over, and the bytes written at each offset.
#[derive(Clone, PartialEq, Eq)]
pub struct Patched {
    pub guest_path: PathBuf,
    identity: Identity,
    edits: Arc<Edits>,
}

/// Bytes to write at offsets of the file.
pub type Edits = Vec<(u64, Vec<u8>)>;

/// What identifies the host's loader file: its path, device, inode, size
/// and change time (a package upgrade replaces the file: a new inode).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Identity(PathBuf, u64, u64, u64, i64, i64);

impl Identity {
    fn of(path: &Path, m: &fs::Metadata) -> Identity {
        let (dev, ino, len) = (m.dev(), m.ino(), m.len());
        Identity(path.to_path_buf(), dev, ino, len, m.ctime(), m.ctime_nsec())
    }
}

/// The last loader looked at by this process and its edits (`None`: not
/// patchable): a pool or the serve daemon, launching sandbox after
/// sandbox, reads it once.
static MADE: Mutex<Option<(Identity, Option<Arc<Edits>>)>> = Mutex::new(None);

impl fmt::Debug for Patched {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Patched({}, {} edits)",
            self.guest_path.display(),
            self.edits.len()
        )
    }
}

/// The host's loader, patched, for the host's view whose top directories
/// are `tops`: `None` where the image was not built, the interpreter path
/// leads outside the directories the view shows as the host's, or the
/// file is not exactly as expected ([`patch`]).
pub fn for_host_view(tops: &[TopDir]) -> Option<Patched> {
    if IMAGE.is_empty() {
        return None;
    }
    let real = fs::canonicalize(INTERPRETER).ok()?;
    let Some(Component::Normal(top)) = real.components().nth(1) else {
        return None;
    };
    let shown = tops
        .iter()
        .any(|t| t.name.as_str() == top && matches!(t.kind, TopKind::ReadOnly | TopKind::Overlay));
    if !shown {
        return None;
    }
    let file = fs::File::open(&real).ok()?;
    let identity = Identity::of(&real, &file.metadata().ok()?);
    let mut made = MADE.lock();
    let edits = match made.as_ref() {
        Some((known, edits)) if *known == identity => edits.clone(),
        _ => {
            // Mapped, not read: the page cache's pages in place of a copy
            // into fresh ones (PERFORMANCE.md, 2026-12-07, branch runstart).
            let mapped = Mapped::file(&file).ok()?;
            let edits = edits(&mapped, IMAGE).map(Arc::new);
            *made = Some((identity.clone(), edits.clone()));
            edits
        }
    };
    Some(Patched {
        guest_path: real,
        identity,
        edits: edits?,
    })
}

/// In init, in the layer, once the host's directories are in the new
/// root (`root`): the host's file (beneath `old_root`) copied into the
/// layer by the kernel, the edits written over it, and the copy bound
/// read-only over its path. A file that changed since the edits were
/// made, or any failure (a layer too small), leaves the loader as built.
pub(super) fn bind_copy(root: BorrowedFd<'_>, old_root: &Path, patched: &Patched) {
    let staged = Path::new(STAGED);
    let bound = stage(old_root, patched, staged).and_then(|()| {
        let src = open_source(staged, false).ok()?;
        let flags = MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
        bind(root, src.as_fd(), &patched.guest_path, false, flags).ok()
    });
    if bound.is_none() {
        let _ = fs::remove_file(staged);
    }
}

fn stage(old_root: &Path, patched: &Patched, staged: &Path) -> Option<()> {
    let host = old_root.join(patched.guest_path.strip_prefix("/").ok()?);
    let mut from = fs::File::open(host).ok()?;
    let m = from.metadata().ok()?;
    if Identity::of(&patched.guest_path, &m) != patched.identity {
        return None;
    }
    let mut to = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o755)
        .open(staged)
        .ok()?;
    // std copies between files with copy_file_range: no user-space copy.
    if std::io::copy(&mut from, &mut to).ok()? != m.len() {
        return None;
    }
    for (at, bytes) in patched.edits.iter() {
        to.write_all_at(bytes, *at).ok()?;
    }
    Some(())
}

/// A 64-bit little-endian program header's fields that matter here.
#[derive(Clone, Copy)]
struct Segment {
    at: usize, // the header's own offset in the file
    kind: u32,
    flags: u32,
    offset: u64,
    vaddr: u64,
    filesz: u64,
    memsz: u64,
}

const PT_LOAD: u32 = 1;
const PF_X: u32 = 1;
const SHT_NOBITS: u32 = 8;

/// The headers (program or section) of `file`: (offset of the first,
/// count, size of one), from the ELF header's fields at `off`.
fn table(file: &[u8], off: usize, num: usize, size: usize) -> Option<(usize, usize, usize)> {
    let first = usize::try_from(u64_at(file, off)?).ok()?;
    let count = usize::from(u16_at(file, num)?);
    let one = usize::from(u16_at(file, size)?);
    Some((first, count, one))
}

/// An x86_64 shared object's program headers; `None` for anything else.
fn segments(file: &[u8]) -> Option<Vec<Segment>> {
    let ident_ok = file.get(..6) == Some(b"\x7fELF\x02\x01".as_slice());
    if !ident_ok || u16_at(file, 16)? != 3 || u16_at(file, 18)? != 62 {
        return None;
    }
    let (first, count, one) = table(file, 32, 56, 54)?;
    if one < 56 {
        return None;
    }
    (0..count)
        .map(|i| {
            let at = first.checked_add(i.checked_mul(one)?)?;
            Some(Segment {
                at,
                kind: u32_at(file, at)?,
                flags: u32_at(file, at + 4)?,
                offset: u64_at(file, at + 8)?,
                vaddr: u64_at(file, at + 16)?,
                filesz: u64_at(file, at + 32)?,
                memsz: u64_at(file, at + 40)?,
            })
        })
        .collect()
}

/// Whether a section with file contents overlaps `[from, to)`.
fn section_within(file: &[u8], from: u64, to: u64) -> Option<bool> {
    let (first, count, one) = table(file, 40, 60, 58)?;
    if count > 0 && one < 40 {
        return None;
    }
    for i in 0..count {
        let at = first.checked_add(i.checked_mul(one)?)?;
        let (kind, off, size) = (
            u32_at(file, at + 4)?,
            u64_at(file, at + 24)?,
            u64_at(file, at + 32)?,
        );
        if kind != SHT_NOBITS && size > 0 && off < to && from < off.saturating_add(size) {
            return Some(true);
        }
    }
    Some(false)
}

/// Where the image goes in `file`: its offset and address, after the one
/// executable segment `text`, 16-aligned, within the zero padding before
/// the page of the next segment (by offset and by address alike).
fn room(file: &[u8], segs: &[Segment], text: &Segment, len: u64) -> Option<(u64, u64)> {
    let end = text.offset.checked_add(text.filesz)?;
    let at = end.checked_add(15)? & !15;
    let image_end = at.checked_add(len)?;
    let vat = text.vaddr.checked_add(at - text.offset)?;
    let vend = vat.checked_add(len)?;
    for s in segs.iter().filter(|s| s.kind == PT_LOAD && s.at != text.at) {
        let after_in_file = s.offset > text.offset && image_end > s.offset & !(PAGE - 1);
        let after_in_memory = s.vaddr > text.vaddr && vend > s.vaddr & !(PAGE - 1);
        if after_in_file || after_in_memory {
            return None;
        }
    }
    let padding = file.get(usize::try_from(end).ok()?..usize::try_from(image_end).ok()?)?;
    if padding.iter().any(|&b| b != 0) || section_within(file, end, image_end)? {
        return None;
    }
    Some((at, vat))
}

/// `e9` and the displacement from the end of the jump at `from` to `to`.
fn jump(from: u64, to: u64) -> Option<[u8; 5]> {
    let rel = i32::try_from(to.wrapping_sub(from + 5) as i64).ok()?;
    let r = rel.to_le_bytes();
    Some([0xe9, r[0], r[1], r[2], r[3]])
}

/// The edits that make the loader `file` jump from its open site to
/// `image`'s slot, with the image in its executable segment's padding and
/// the segment grown over it; `None` unless the file is exactly as
/// expected: one executable `PT_LOAD` (file size equal to memory size)
/// holding the pattern (the image's moves and a `syscall`) exactly once,
/// and room for the image.
pub fn edits(file: &[u8], image: &[u8]) -> Option<Edits> {
    let moves = image.get(SLOT..SLOT + MOVES_LEN)?;
    if image.get(JUMP_BACK..JUMP_BACK + 5)? != [0xe9, 0, 0, 0, 0] {
        return None;
    }
    let pattern = [moves, &SYSCALL].concat();
    let segs = segments(file)?;
    let mut texts = segs
        .iter()
        .filter(|s| s.kind == PT_LOAD && s.flags & PF_X != 0);
    let text = *texts.next()?;
    if texts.next().is_some() || text.filesz != text.memsz {
        return None;
    }
    let start = usize::try_from(text.offset).ok()?;
    let seg = file.get(start..start.checked_add(usize::try_from(text.filesz).ok()?)?)?;
    let mut sites = memchr::memmem::find_iter(seg, &pattern);
    let site = sites.next()? as u64;
    if sites.next().is_some() {
        return None;
    }
    let len = u64::try_from(image.len()).ok()?;
    let (at, vat) = room(file, &segs, &text, len)?;
    let site_v = text.vaddr + site;
    let mut placed = image.to_vec();
    let back = jump(vat + JUMP_BACK as u64, site_v + SITE_LEN as u64)?;
    placed[JUMP_BACK..JUMP_BACK + 5].copy_from_slice(&back);
    let size = (vat + len - text.vaddr).to_le_bytes();
    let phdr = text.at as u64;
    Some(vec![
        (at, placed),
        (
            text.offset + site,
            jump(site_v, vat + SLOT as u64)?.to_vec(),
        ),
        (phdr + 32, size.to_vec()),
        (phdr + 40, size.to_vec()),
    ])
}

/// `file` with `edits` written over it (the copy [`bind_copy`] makes).
#[cfg(test)]
fn patch(file: &[u8], image: &[u8]) -> Option<Vec<u8>> {
    let mut out = file.to_vec();
    for (at, bytes) in edits(file, image)? {
        let at = usize::try_from(at).ok()?;
        out.get_mut(at..at + bytes.len())?.copy_from_slice(&bytes);
    }
    Some(out)
}

#[cfg(test)]
mod tests;
