//! The census of the sandbox's tasks and the texts counted from it:
//! `/proc/loadavg` (the sandbox's tasks), sysinfo's task count, and a process's `status` under
//! `--cpus` (its `Cpus_allowed` cut as `sched_getaffinity` is). Also
//! which per-process files are recognised by their procfs path, and the
//! memfd name a served one carries to be found again on a rewind.
//!
//! Does not own: recognising the global files (by identity, `served.rs`)
//! or serving any text (`served::substitute`); `/proc/stat` and
//! `/proc/uptime` (`stat.rs`), `/proc/sys` (`proc_sys.rs`).

use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU8, Ordering};

use super::stat_line::StatLine;
use super::view_dir::ProcDir;

/// The sandbox's tasks as its procfs lists them.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Census {
    pub running: u32,
    pub blocked: u32,
    pub total: u32,
    /// The highest pid in the sandbox's pid namespace.
    pub last_pid: u32,
    /// The user and system time (USER_HZ) of its processes and of the
    /// children they reaped (`utime + cutime`, `stime + cstime`).
    pub user: u64,
    pub system: u64,
    /// The living tasks' context switches (only when their `status` was
    /// read: [`census_reading`]).
    pub switches: u64,
}

/// What the census reads of each task: its `stat` (the state), and for
/// [`TaskFile::Switches`] its context switches too (`/proc/stat`'s
/// `ctxt`), from [`switches_of`].
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum TaskFile {
    Stat,
    Switches,
}

/// Counts the tasks under `proc` (the sandbox's procfs): every
/// `<pid>/task/<tid>`, by the state in its `stat`, and every process's
/// CPU time in `<pid>/stat`. Tasks that end meanwhile are skipped. With
/// [`TaskFile::Switches`], `switches` is the sum of the living tasks'
/// context switches too (the kernel keeps no such count per pid
/// namespace; a task's switches leave the sum when it ends).
///
/// A process whose `stat` says it has one thread has one task, its
/// leader (tid = pid), whose `task/<pid>` files are the process's own:
/// its `stat` already read gives the state, and its switches are read
/// as `<pid>/schedstat`, with no listing of its `task` directory.
/// Reading a procfs file costs microseconds to tens of microseconds on
/// a VM, the listing several: the census of two single-threaded
/// processes went from seven reads and three listings to two reads
/// (four with their switches) and one listing. A thread made after the
/// `stat` was read is missed, as it would be after the listing.
pub fn census_reading(proc: &ProcDir, file: TaskFile) -> Census {
    let mut c = Census::default();
    for pid in proc.numbered(".") {
        c.last_pid = c.last_pid.max(pid);
        let stat = proc.read(&format!("{pid}/stat"));
        if let Some((user, system)) = stat.as_deref().and_then(cpu_time) {
            c.user += user;
            c.system += system;
        }
        if stat.as_deref().and_then(thread_count) == Some(1) {
            if let Some(stat) = stat {
                c.count(proc, &pid.to_string(), pid, file, &stat);
            }
            continue;
        }
        for tid in proc.numbered(&format!("{pid}/task")) {
            let task = format!("{pid}/task/{tid}");
            if let Some(stat) = proc.read(&format!("{task}/stat")) {
                c.count(proc, &task, tid, file, &stat);
            }
        }
    }
    c
}

impl Census {
    /// One living task `tid`, at `dir` under `proc`, whose `stat` reads
    /// `stat`.
    fn count(&mut self, proc: &ProcDir, dir: &str, tid: u32, file: TaskFile, stat: &str) {
        self.total += 1;
        self.last_pid = self.last_pid.max(tid);
        match StatLine::parse(stat).and_then(|l| l.state()) {
            Some('R') => self.running += 1,
            Some('D') => self.blocked += 1,
            _ => {}
        }
        if file == TaskFile::Switches {
            self.switches += switches_of(proc, dir);
        }
    }
}

/// Whether this kernel has `<pid>/schedstat` (CONFIG_SCHED_INFO): 0 not
/// known yet, 1 yes, 2 no.
static SCHEDSTAT: AtomicU8 = AtomicU8::new(0);

/// The context switches of the task at `dir` under `proc` (`2`,
/// `2/task/9`): the third field of its `schedstat`, the times it was
/// switched in (`sched_info.pcount`), which is its voluntary and
/// involuntary switches out (`status`'s two `ctxt_switches` lines), one
/// more while it runs. procfs renders `schedstat` from three numbers
/// where it renders `status` from most of the task (3 against 23 µs a
/// `pread` here, natively), and `/proc/stat`'s census reads it for every
/// task at every open and rewind. Without it (a kernel built without
/// CONFIG_SCHED_INFO), `status`'s two lines. 0 if neither can be read
/// (the task ended).
fn switches_of(proc: &ProcDir, dir: &str) -> u64 {
    if SCHEDSTAT.load(Ordering::Relaxed) != 2 {
        let read = proc.read(&format!("{dir}/schedstat"));
        if let Some(n) = read.as_deref().and_then(pcount) {
            SCHEDSTAT.store(1, Ordering::Relaxed);
            return n;
        }
        if SCHEDSTAT.load(Ordering::Relaxed) == 1 {
            return 0;
        }
        SCHEDSTAT.store(2, Ordering::Relaxed);
    }
    proc.read(&format!("{dir}/status"))
        .map_or(0, |t| switches(&t))
}

/// The times a task was switched in: the third of the three numbers of
/// its `schedstat` (run time, wait time, timeslices).
fn pcount(schedstat: &str) -> Option<u64> {
    schedstat.split_whitespace().nth(2)?.parse().ok()
}

/// The sandbox's tasks (threads, as sysinfo's `procs` counts them): for
/// each process under `proc`, the link count of its `task` directory
/// less two (`proc_task_getattr` adds the thread count to a directory's
/// two), so no file of the census is read. A process that ends
/// meanwhile is not counted.
pub fn task_count(proc: &ProcDir) -> u64 {
    proc.numbered(".")
        .into_iter()
        .filter_map(|pid| proc.link_count(&format!("{pid}/task")))
        .map(|links| links.saturating_sub(2))
        .sum()
}

/// A task's voluntary and involuntary context switches, from its `status`.
fn switches(status: &str) -> u64 {
    status
        .lines()
        .filter_map(|l| {
            let v = l
                .strip_prefix("voluntary_ctxt_switches:")
                .or_else(|| l.strip_prefix("nonvoluntary_ctxt_switches:"))?;
            v.trim().parse::<u64>().ok()
        })
        .sum()
}

/// A process's thread count from its `stat`: field 20, `num_threads`.
fn thread_count(stat: &str) -> Option<u64> {
    StatLine::parse(stat)?.number(20)
}

/// A process's (user, system) time from its `stat`: fields 14 to 17,
/// `utime stime cutime cstime`.
fn cpu_time(stat: &str) -> Option<(u64, u64)> {
    let fields: Vec<u64> = StatLine::parse(stat)?
        .fields_from(14)
        .take(4)
        .map(|v| v.parse().unwrap_or(0))
        .collect();
    match fields.as_slice() {
        [ut, st, cut, cst] => Some((ut + cut, st + cst)),
        _ => None,
    }
}

/// The descriptors the sandbox's processes hold (`<pid>/fd` under
/// `proc`), for `/proc/sys/fs/file-nr`.
pub fn open_files(proc: &ProcDir) -> u64 {
    proc.numbered(".")
        .into_iter()
        .filter_map(|pid| proc.entry_count(&format!("{pid}/fd")))
        .map(|n| n as u64)
        .sum()
}

/// `/proc/loadavg` of the sandbox: load averages 0.00 (the sandbox keeps
/// none), its running and total tasks, and its highest pid.
pub fn loadavg(c: &Census) -> String {
    format!(
        "0.00 0.00 0.00 {}/{} {}\n",
        c.running.max(1),
        c.total,
        c.last_pid
    )
}

/// A process's `status` with `Cpus_allowed` and `Cpus_allowed_list`
/// keeping only the first `n` CPUs of the process's own mask (as
/// `sched_getaffinity` answers under `--cpus`).
pub fn status(host: &str, n: usize) -> String {
    let mut out = String::with_capacity(host.len());
    for line in host.lines() {
        if let Some(mask) = line.strip_prefix("Cpus_allowed:") {
            out.push_str(&format!("Cpus_allowed:\t{}", cut_hex_mask(mask.trim(), n)));
        } else if let Some(list) = line.strip_prefix("Cpus_allowed_list:") {
            out.push_str(&format!("Cpus_allowed_list:\t{}", cut_list(list.trim(), n)));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// The kernel's `%*pb` mask (hex words of 32 bits, most significant first,
/// comma-separated) with only its first `n` set bits kept, same widths.
fn cut_hex_mask(mask: &str, n: usize) -> String {
    let words: Vec<&str> = mask.split(',').collect();
    let mut values: Vec<u32> = words
        .iter()
        .map(|w| u32::from_str_radix(w, 16).unwrap_or(0))
        .collect();
    let mut seen = 0;
    for word in values.iter_mut().rev() {
        for bit in 0..32 {
            if *word & (1 << bit) != 0 {
                if seen >= n {
                    *word &= !(1 << bit);
                }
                seen += 1;
            }
        }
    }
    let cut: Vec<String> = words
        .iter()
        .zip(values)
        .map(|(w, v)| format!("{v:0width$x}", width = w.len()))
        .collect();
    cut.join(",")
}

/// The kernel's `%*pbl` list (`0-3,8`) with only its first `n` CPUs.
fn cut_list(list: &str, n: usize) -> String {
    let mut cpus = Vec::new();
    for part in list.split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) else {
            continue;
        };
        cpus.extend((a..=b).take(n.saturating_sub(cpus.len())));
        if cpus.len() >= n {
            break;
        }
    }
    let mut ranges: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        while i + 1 < cpus.len() && cpus[i + 1] == cpus[i] + 1 {
            i += 1;
        }
        ranges.push(if cpus[i] == start {
            start.to_string()
        } else {
            format!("{start}-{}", cpus[i])
        });
        i += 1;
    }
    ranges.join(",")
}

/// Per-process files of the view's procfs served rewritten besides the
/// mount tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PerProcess {
    /// `status` under a cpu limit, or when the guest's ids read otherwise
    /// than the supervisor's (`guest_ids.rs`).
    Status,
    /// `loginuid` when the guest's ids read otherwise (`guest_ids.rs`).
    Loginuid,
    /// `timens_offsets` and `autogroup`, always (`timens_autogroup.rs`).
    TimensOffsets,
    Autogroup,
}

/// A per-process file of the view's procfs: its name and the process
/// (and thread) it is of.
#[derive(Debug, PartialEq, Eq)]
pub struct ProcessFile<'a> {
    pub name: &'a str,
    pid: u32,
    tid: Option<u32>,
}

impl<'a> ProcessFile<'a> {
    /// The per-process file `path` is (`/proc/<pid>[/task/<tid>]/<name>`,
    /// as the kernel names a descriptor of the view's procfs).
    pub fn at(path: &'a str) -> Option<ProcessFile<'a>> {
        let rest = path.strip_prefix("/proc/")?;
        let mut parts: Vec<&str> = rest.split('/').collect();
        let name = parts.pop()?;
        let (pid, tid) = match parts.as_slice() {
            [pid] => (number(pid)?, None),
            [pid, "task", tid] => (number(pid)?, Some(number(tid)?)),
            _ => return None,
        };
        Some(ProcessFile { name, pid, tid })
    }

    /// The name of the memfd it is served in: `status:2`, `status:2:9`
    /// for a thread's, so that a rewind finds the file again
    /// (`ProcessFile::served`).
    pub fn memfd_name(&self) -> Option<CString> {
        let name = match self.tid {
            Some(tid) => format!("{}:{}:{tid}", self.name, self.pid),
            None => format!("{}:{}", self.name, self.pid),
        };
        CString::new(name).ok()
    }

    /// The file served in the memfd named `memfd` (as `memfd_name` names it).
    pub fn served(memfd: &'a str) -> Option<ProcessFile<'a>> {
        let mut parts = memfd.split(':');
        let name = parts.next().filter(|n| !n.is_empty())?;
        let pid = number(parts.next()?)?;
        let tid = parts.next().map(number);
        if parts.next().is_some() || tid == Some(None) {
            return None;
        }
        Some(ProcessFile {
            name,
            pid,
            tid: tid.flatten(),
        })
    }

    /// Its path in the view (`/proc/2/status`).
    pub fn view_path(&self) -> Option<CString> {
        let path = match self.tid {
            Some(tid) => format!("/proc/{}/task/{tid}/{}", self.pid, self.name),
            None => format!("/proc/{}/{}", self.pid, self.name),
        };
        CString::new(path).ok()
    }
}

/// A pid or tid as procfs spells it (decimal digits, no sign).
fn number(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// A descriptor and what the kernel names it ([`fd_name`]), read at
/// most once however many checks ask (a served read asks two).
pub struct Named<'a> {
    pub fd: &'a OwnedFd,
    name: std::cell::OnceCell<Option<String>>,
}

impl<'a> Named<'a> {
    pub fn new(fd: &'a OwnedFd) -> Named<'a> {
        Named {
            fd,
            name: std::cell::OnceCell::new(),
        }
    }

    /// A descriptor whose name is known already (the direct route's,
    /// `direct.rs`: what [`fd_name`] would read).
    pub fn known(fd: &'a OwnedFd, name: String) -> Named<'a> {
        Named {
            fd,
            name: std::cell::OnceCell::from(Some(name)),
        }
    }

    /// [`fd_name`] of the descriptor.
    pub fn name(&self) -> Option<&str> {
        self.name.get_or_init(|| fd_name(self.fd)).as_deref()
    }

    /// [`Named::name`], owned, the descriptor let go.
    pub fn into_name(self) -> Option<String> {
        self.name.get_or_init(|| fd_name(self.fd));
        self.name.into_inner().flatten()
    }
}

/// What the kernel names `fd`, if it fits 64 bytes (every per-process
/// file of interest does).
pub fn fd_name(fd: &OwnedFd) -> Option<String> {
    let mut buf = [0u8; 64];
    let n = super::own_fds::name_of(fd.as_fd(), &mut buf).ok()?;
    if n == buf.len() {
        return None;
    }
    Some(std::str::from_utf8(buf.get(..n)?).ok()?.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_keeps_the_first_cpus() {
        let host = "Name:\tx\nCpus_allowed:\t0000000f\nCpus_allowed_list:\t0-3\nMems_allowed:\t1\n";
        assert_eq!(
            status(host, 2),
            "Name:\tx\nCpus_allowed:\t00000003\nCpus_allowed_list:\t0-1\nMems_allowed:\t1\n"
        );
        assert_eq!(cut_hex_mask("00000001,00000006", 2), "00000000,00000006");
        assert_eq!(cut_hex_mask("00000001,00000004", 2), "00000001,00000004");
        assert_eq!(cut_list("1,3-7,9", 3), "1,3-4");
        assert_eq!(cut_list("0-1", 1), "0");
        assert_eq!(cut_list("bad", 1), "");
    }

    #[test]
    fn census_of_a_stat() {
        let stat = "7 (a) b) c) R 1 7 7 0 -1 0 0 0 0 0 11 22 33 44 20 0 1 0 5 1 2";
        assert_eq!(cpu_time(stat), Some((44, 66)));
        assert_eq!(thread_count(stat), Some(1));
        assert_eq!(thread_count("7 (x) R 1"), None);
        assert_eq!(cpu_time("7 (x) R 1"), None);
        let status = "Name:\tx\nvoluntary_ctxt_switches:\t7\nnonvoluntary_ctxt_switches:\t5\n";
        assert_eq!(switches(status), 12);
        assert_eq!(switches("Name:\tx\n"), 0);
        assert_eq!(pcount("1000 200 12\n"), Some(12));
        assert_eq!(pcount("1000 200\n"), None);
        assert_eq!(pcount("1000 200 x\n"), None);
        let c = Census {
            running: 2,
            total: 3,
            last_pid: 4,
            ..Census::default()
        };
        assert_eq!(loadavg(&c), "0.00 0.00 0.00 2/3 4\n");
    }

    #[test]
    fn per_process_paths() {
        let name = |p| ProcessFile::at(p).map(|f| f.name);
        assert_eq!(name("/proc/2/status"), Some("status"));
        assert_eq!(name("/proc/2/task/9/status"), Some("status"));
        assert_eq!(name("/proc/self/status"), None);
        assert_eq!(name("/tmp/proc/2/status"), None);
        assert_eq!(name("/proc/+2/status"), None);
    }

    #[test]
    fn served_names_find_the_file_again() {
        for path in ["/proc/2/status", "/proc/2/task/9/mountinfo"] {
            let file = ProcessFile::at(path).unwrap();
            let memfd = file.memfd_name().unwrap();
            let again = ProcessFile::served(memfd.to_str().unwrap()).unwrap();
            assert_eq!(again, file);
            assert_eq!(again.view_path().unwrap().to_str(), Ok(path));
        }
        assert_eq!(ProcessFile::served("status"), None);
        assert_eq!(ProcessFile::served("status:2:x"), None);
        assert_eq!(ProcessFile::served("status:2:3:4"), None);
        assert_eq!(ProcessFile::served(":2"), None);
    }
}
