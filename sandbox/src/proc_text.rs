//! A small text file of /proc read whole in one `read`. Procfs reports
//! such files as empty, so `fs::read_to_string` starts with a 32-byte
//! read and doubles it (`/proc/self/stat`: six reads; a view's
//! `mountinfo`: nine), each a system call on init's path to the guest.
//!
//! Owns that read only; not what is parsed from the text.

use std::fs::File;
use std::io::Read;

/// The text of `path`, read into `room` bytes reserved up front (more is
/// read as needed).
pub fn read(path: &str, room: usize) -> std::io::Result<String> {
    let mut text = String::with_capacity(room);
    File::open(path)?.read_to_string(&mut text)?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_whole_file_past_the_room_reserved() {
        let stat = read("/proc/self/stat", 4096).unwrap();
        assert!(stat.ends_with('\n') && stat.split(' ').count() > 50);
        let small_room = read("/proc/self/mountinfo", 16).unwrap();
        assert!(small_room.lines().count() > 1 && small_room.ends_with('\n'));
    }
}
