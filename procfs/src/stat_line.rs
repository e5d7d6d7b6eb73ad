//! One line of a task's `stat` file (`/proc/<pid>/stat`, proc_pid_stat(5)),
//! read field by field as the manual numbers them. The command name
//! (field 2) stands in parentheses and may hold any byte, spaces and ')'
//! included, so the fields after it start after the line's last ')'.
//!
//! Owns: splitting a `stat` line and reading a field by its number; the
//! one parser of such lines for every crate above this one (the engine,
//! the handlers, the front-ends) and for the tests. Does not own: reading
//! the file (each user reads the procfs it means, the host's or the
//! view's), or what a field means to the one who asks.

use std::str::FromStr;

/// A `stat` line, split at its command name. Fields are numbered from 1
/// as in proc_pid_stat(5): 1 the pid, 2 the command, 3 the state letter,
/// 4 the parent's pid, 14 `utime`, 19 the nice value, 22 the start time.
#[derive(Clone, Copy, Debug)]
pub struct StatLine<'a> {
    /// `pid (comm`: everything before the last ')'.
    head: &'a str,
    /// Field 3 on: everything after the last ')'.
    rest: &'a str,
}

impl<'a> StatLine<'a> {
    /// The line's fields; `None` for text without a ')' (no command name).
    pub fn parse(line: &'a str) -> Option<StatLine<'a>> {
        let (head, rest) = line.rsplit_once(')')?;
        Some(StatLine { head, rest })
    }

    /// Field `n` as text (1-based; the command without its parentheses);
    /// `None` for 0 or past the end of the line.
    pub fn field(&self, n: usize) -> Option<&'a str> {
        match n {
            0 => None,
            1 => Some(self.head.split_once('(')?.0.trim()),
            2 => Some(self.head.split_once('(')?.1),
            _ => self.fields_from(n).next(),
        }
    }

    /// Field `n` as a number; `None` when absent or not one.
    pub fn number<T: FromStr>(&self, n: usize) -> Option<T> {
        self.field(n)?.parse().ok()
    }

    /// The state letter (field 3): `R`, `S`, `D`, `Z`...
    pub fn state(&self) -> Option<char> {
        self.fields_from(3).next()?.chars().next()
    }

    /// The fields from `n` on (`n` of 3 or more; below 3, from 3), in one
    /// pass, for a caller that reads several in a row.
    pub fn fields_from(&self, n: usize) -> impl Iterator<Item = &'a str> {
        self.rest.split_ascii_whitespace().skip(n.saturating_sub(3))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_numbered_as_the_manual_does() {
        let line = "7 (a) b) c) R 1 7 7 0 -1 0 0 0 0 0 11 22 33 44 20 0 1 0 5 1 2\n";
        let s = StatLine::parse(line).expect("a stat line");
        assert_eq!(s.field(0), None);
        assert_eq!(s.field(1), Some("7"));
        assert_eq!(s.field(2), Some("a) b) c"));
        assert_eq!(s.state(), Some('R'));
        assert_eq!(s.number::<i32>(4), Some(1));
        assert_eq!(s.number::<u64>(14), Some(11));
        assert_eq!(s.number::<i32>(18), Some(20));
        assert_eq!(s.number::<i32>(19), Some(0));
        assert_eq!(s.number::<u64>(24), Some(2));
        assert_eq!(s.number::<u64>(22), Some(5));
        assert_eq!(s.field(25), None);
        let times: Vec<&str> = s.fields_from(14).take(4).collect();
        assert_eq!(times, ["11", "22", "33", "44"]);
    }

    #[test]
    fn a_line_without_a_command_is_none() {
        assert!(StatLine::parse("7 x R 1").is_none());
        assert!(StatLine::parse("").is_none());
        let bare = StatLine::parse("7 (x)").expect("a command alone");
        assert_eq!(bare.state(), None);
        assert_eq!(bare.number::<i32>(4), None);
    }

    #[test]
    fn our_own_stat_is_read() {
        let text = std::fs::read_to_string("/proc/self/stat").expect("our stat");
        let s = StatLine::parse(&text).expect("a stat line");
        assert_eq!(s.number::<u32>(1), Some(std::process::id()));
        assert!(matches!(s.state(), Some('R' | 'S')));
        assert!(s.number::<u64>(22).is_some());
    }
}
