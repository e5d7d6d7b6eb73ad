//! A whole file mapped read-only into our memory (`mmap` `PROT_READ`,
//! `MAP_PRIVATE | MAP_POPULATE`), seen as a byte slice: a checkpoint's
//! image is read from the page cache in place, hashed and copied into
//! the restored process without a copy into a buffer of ours first.
//!
//! The length is the file's at mapping time. A file cut shorter while it
//! is mapped makes a read past its new end raise `SIGBUS`, which ends
//! this process: only the checkpoint helper maps images, and its end
//! kills the processes it holds (`PTRACE_O_EXITKILL`), so a file changed
//! under it fails the restore rather than run anything. The launch maps
//! the host's dynamic loader to find its open site (`ldso_patch.rs`),
//! before any sandbox process exists: only the host's root could cut that
//! file, and the run would then fail before it starts.
//!
//! Owns the map and its `unsafe`; not what is read from it.

use std::fs::File;
use std::os::fd::AsRawFd;

use nix::errno::Errno;

/// A read-only map of a whole file, unmapped on drop.
pub struct Mapped {
    ptr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the map is read-only and owned by this value alone; shared
// reads of it from several threads are reads of immutable memory.
unsafe impl Send for Mapped {}
// SAFETY: as above: nothing writes through it.
unsafe impl Sync for Mapped {}

impl Mapped {
    /// Maps all of `file` (an empty file: an empty slice, no map).
    pub fn file(file: &File) -> Result<Mapped, Errno> {
        let len = file
            .metadata()
            .map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)))?
            .len();
        let len = usize::try_from(len).map_err(|_| Errno::EFBIG)?;
        if len == 0 {
            return Ok(Mapped {
                ptr: std::ptr::null_mut(),
                len: 0,
            });
        }
        // SAFETY: a new private read-only map chosen by the kernel (no
        // address given), of a descriptor that is open for the call; the
        // map outlives the descriptor and is ours alone until `drop`.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_POPULATE,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(Errno::last());
        }
        Ok(Mapped { ptr, len })
    }
}

impl std::ops::Deref for Mapped {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `ptr` is a live read-only map of `len` bytes that lives
        // as long as `self`, and nothing writes to it.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.len) }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        if self.len != 0 {
            // SAFETY: unmaps exactly the map made in `file`, which no
            // slice outlives (they borrow `self`).
            unsafe { libc::munmap(self.ptr, self.len) };
        }
    }
}
