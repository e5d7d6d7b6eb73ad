//! Serving a rewound file again: a reader that keeps a served /proc
//! file open and rewinds it (`lseek(fd, 0, SEEK_SET)`, `handlers/lseek.rs`)
//! gets a fresh copy, as procfs renders a fresh text at offset 0, of the
//! files whose figures change while it is open: the global ones
//! (`/proc/stat`, `vmstat`, `uptime`, `loadavg`, `meminfo`, /proc/sys's
//! counts) and every served per-process file but `timens_offsets`, whose
//! memfd is named for its process (`tasks::ProcessFile::memfd_name`).
//!
//! A rewound `/proc/stat`, and a `/proc/uptime` or `status` served from
//! the spares of a sandbox set up ahead, is rewritten in the guest's own memfd where the
//! sandbox allows it (`in_place.rs`, [`rewritten`]); every other gets a
//! new one ([`refreshed`]).
//!
//! Owns: which memfd names are such files, and the fresh copy. Does not
//! own: the texts (`texts.rs`), recognising files at an open or serving
//! them (`served.rs`), the in-place memfds (`in_place.rs`).

use std::ffi::CString;
use std::os::fd::OwnedFd;

use nix::errno::Errno;

use super::covers::read_host;
use super::in_place::InPlace;
use super::proc_sys::SysFile;
use super::sealed::read_view;
use super::served::{stat_layout, ProcFile, Scope, Synthetic};
use super::tasks::{PerProcess, ProcessFile};
use super::texts::{host_source, text, HostText};

impl ProcFile {
    /// The served global file whose memfd is named `name`, if its figures
    /// change while a reader holds it open.
    fn changing(name: &str) -> Option<ProcFile> {
        let kind = match name {
            "meminfo" => ProcFile::MemInfo,
            "stat" => ProcFile::Stat,
            "vmstat" => ProcFile::VmStat,
            "uptime" => ProcFile::Uptime,
            "loadavg" => ProcFile::LoadAvg,
            "file-nr" => ProcFile::Sys(SysFile::FileNr),
            "inode-nr" => ProcFile::Sys(SysFile::InodeNr),
            "dentry-state" => ProcFile::Sys(SysFile::DentryState),
            _ => return None,
        };
        Some(kind)
    }

    /// Whether a rewind rewrites this file in place, where the sandbox
    /// allows it and it was served so (`in_place.rs`): `/proc/stat`, whose
    /// figures move at every read, so that no two opens would share a text
    /// anyway, `/proc/uptime` and a process's `status`, whose text changes
    /// with every switch of its task.
    pub(super) fn rewritten_in_place(self) -> bool {
        matches!(
            self,
            ProcFile::Stat | ProcFile::Uptime | ProcFile::PerProcess(PerProcess::Status)
        )
    }

    /// The view's path of a global file (as `changing` knows them).
    fn view_path(self) -> Option<&'static str> {
        let path = match self {
            ProcFile::MemInfo => "/proc/meminfo",
            ProcFile::Stat => "/proc/stat",
            ProcFile::VmStat => "/proc/vmstat",
            ProcFile::Sys(SysFile::FileNr) => "/proc/sys/fs/file-nr",
            ProcFile::Sys(SysFile::InodeNr) => "/proc/sys/fs/inode-nr",
            ProcFile::Sys(SysFile::DentryState) => "/proc/sys/fs/dentry-state",
            _ => return None,
        };
        Some(path)
    }
}

impl Synthetic {
    /// When `memfd` names a served per-process file whose text changes
    /// while a reader holds it open (all but `timens_offsets`): its kind
    /// and view path, if still served.
    fn changing_process_file(&self, memfd: &str) -> Option<Option<(ProcFile, CString)>> {
        let file = ProcessFile::served(memfd)?;
        let kind = self.per_process(file.name);
        if kind == Some(ProcFile::PerProcess(PerProcess::TimensOffsets)) {
            return None;
        }
        Some(kind.zip(file.view_path()))
    }
}

/// A fresh copy, at offset 0, of the served file whose memfd is named
/// `memfd_name`, for a reader that rewinds (`handlers/lseek.rs`); `None` when no
/// such file changes while it is open (its snapshot stays right), or
/// when a per-process file can no longer be read (its process ended:
/// the reader keeps the text it has).
pub fn refreshed(
    ctx: &Scope<'_>,
    memfd_name: &str,
    nonblock: i32,
) -> Option<Result<OwnedFd, Errno>> {
    if let Some(file) = ctx.synthetic.changing_process_file(memfd_name) {
        let (kind, path) = file?;
        let text = process_text(ctx, kind, &path)?;
        return Some(ctx.synthetic.sealed(
            kind,
            &CString::new(memfd_name).ok()?,
            text.as_bytes(),
            nonblock,
        ));
    }
    let kind = ProcFile::changing(memfd_name)?;
    let sealed = global_text(ctx, kind)?.and_then(|text| {
        ctx.synthetic
            .sealed(kind, kind.memfd_name(), text.as_bytes(), nonblock)
    });
    Some(sealed)
}

/// The fresh text of the changing global file `kind`; `None` when it is
/// not one that can be made again.
fn global_text(ctx: &Scope<'_>, kind: ProcFile) -> Option<Result<String, Errno>> {
    let host = match (host_source(kind), kind.view_path()) {
        (HostText::None, _) => Ok(String::new()),
        (HostText::StatLayout, _) => stat_layout(),
        (HostText::Opened, Some(path)) => read_host(path),
        (HostText::Opened, None) => return None,
    };
    Some(host.map(|host| text(ctx, kind, host)))
}

/// For a reader that rewinds the guest's `file`, whose memfd is named
/// `memfd_name`: its fresh text written into it in place, when it is a
/// memfd `in_place.rs` keeps (the kernel then seeks); `None` otherwise
/// (then [`refreshed`] makes a new file).
pub fn rewritten(ctx: &Scope<'_>, memfd_name: &str, file: &OwnedFd) -> Option<Result<(), Errno>> {
    let in_place = &ctx.synthetic.kept.in_place;
    in_place.rewrite(memfd_name, file, |name| in_place_text(ctx, name))
}

/// The fresh text of the file named `name` served in place (`stat`,
/// `status:2`); `Ok(None)` when its process can no longer be read (the
/// reader keeps the text it has, as [`refreshed`] leaves it).
fn in_place_text(ctx: &Scope<'_>, name: &str) -> Result<Option<String>, Errno> {
    if let Some(kind) = ProcFile::changing(name).filter(|k| k.rewritten_in_place()) {
        return global_text(ctx, kind).unwrap_or(Err(Errno::EIO)).map(Some);
    }
    let Some(Some((kind, path))) = ctx.synthetic.changing_process_file(name) else {
        return Ok(None);
    };
    Ok(process_text(ctx, kind, &path))
}

/// The fresh text of a process's served file `kind`, whose view path is
/// `path`; `None` when its process can no longer be read.
fn process_text(ctx: &Scope<'_>, kind: ProcFile, path: &CString) -> Option<String> {
    let host = match host_source(kind) {
        HostText::None => String::new(),
        _ => read_view(ctx.fs, path).ok()?,
    };
    Some(text(ctx, kind, host))
}

/// Whether the served file whose memfd is named `memfd_name` changes
/// while a reader holds it open (a rewind then re-serves it).
pub fn changes(ctx: &Scope<'_>, memfd_name: &str) -> bool {
    ProcFile::changing(memfd_name).is_some()
        || ctx.synthetic.changing_process_file(memfd_name).is_some()
        || InPlace::may_be(memfd_name)
}
