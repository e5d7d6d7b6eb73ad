//! Exact instruction counts of the supervisor's own work per serviced
//! call (`cargo bench --bench callgrind`, under Callgrind through
//! gungraun; `scripts/bench-gate` compares them with
//! `benches/baselines/callgrind.json`).
//!
//! Owns: what is counted. Each bench is one call into the handlers or
//! the crates below them, made in-process with a scripted guest
//! (`scripted/`): the handlers' entry point on calls it refuses early
//! (`dispatch`), reading guest memory (`guest_memory`), openat in its
//! common cases (`openat`), rename and rmdir (`namei`), the view's resolver
//! alone (`resolver`), the rewritten /proc files whose text is the
//! same run after run (`procfs`), and the netstack's naming and port
//! and socket tables (`netstack`). Setup (the tree, the context, a
//! first call that pays for what a process pays once) runs outside the
//! count; a bench returns what it made, so that dropping it is not
//! counted either. The kernel's side of a call is never counted
//! (Callgrind sees user space only): wall-clock questions are
//! `scripts/bench-compare`'s.
//!
//! Does not own: the scripted guest and the fixtures (`scripted/`),
//! the baselines and the tolerance (`scripts/bench-gate`).

use std::ffi::CStr;
use std::hint::black_box;
use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use ::netstack::{Meta, Namer, Proto, Table};
use gungraun::{
    library_benchmark, library_benchmark_group, main, Callgrind, LibraryBenchmarkConfig,
};
use sandbox_syscalls::{Context, GuestLimits, Reply, SyscallArgs};

mod scripted;

use scripted::{open, Memory, Scripted, View};

/// A call ready to be served, with what it is served in.
type Call = (View, i64, [u64; 6]);

// ---- dispatch: the entry point, on calls refused before any work. ----------

fn unserviced() -> Call {
    let mut v = View::new();
    v.warm_up();
    (v, libc::SYS_getpid, [0; 6])
}

/// openat with O_CREAT|O_DIRECTORY: EINVAL before the path is read.
fn bad_flags() -> Call {
    let mut v = View::new();
    v.warm_up();
    let a = v.openat("/file", libc::O_CREAT | libc::O_DIRECTORY, 0o644);
    (v, libc::SYS_openat, a)
}

#[library_benchmark]
#[bench::unserviced(setup = unserviced)]
#[bench::bad_flags(setup = bad_flags)]
fn refused(call: Call) -> (Call, Reply) {
    let reply = serve(&call);
    (call, reply)
}

library_benchmark_group!(name = dispatch; benchmarks = refused);

/// The handlers' entry point on `call` (what every bench of calls counts).
fn serve(call: &Call) -> Reply {
    let (v, nr, args) = call;
    black_box(sandbox_syscalls::dispatch(
        &v.ctx,
        &v.guest,
        &SyscallArgs {
            nr: *nr,
            args: *args,
        },
    ))
}

// ---- guest_memory: the supervisor's reads of a trapped thread. -------------

/// A guest and the address of a path of `len` bytes.
fn path_of(len: usize) -> (Scripted, Memory, u64) {
    let mut mem = Memory::new(4);
    let path = "/usr/lib/x86_64-linux-gnu/".repeat(len / 26 + 1);
    let addr = mem.cstr(&path[..len]);
    (Scripted::new(Path::new("/")), mem, addr)
}

#[library_benchmark]
#[bench::short(args = (24), setup = path_of)]
#[bench::long(args = (1000), setup = path_of)]
fn read_path(g: (Scripted, Memory, u64)) -> ((Scripted, Memory, u64), Vec<u8>) {
    use sandbox_syscalls::Guest;
    let path = black_box(g.0.read_path(g.2)).unwrap_or_default();
    (g, path)
}

/// A guest and the address of an openat2 `struct open_how`.
fn open_how() -> (Scripted, Memory, u64) {
    let mut mem = Memory::new(2);
    let addr = mem.put(&[0u8; 24]);
    (Scripted::new(Path::new("/")), mem, addr)
}

#[library_benchmark]
#[bench::open_how(setup = open_how)]
fn read_mem(g: (Scripted, Memory, u64)) -> ((Scripted, Memory, u64), [u8; 24]) {
    use sandbox_syscalls::Guest;
    let mut how = [0u8; 24];
    let _ = black_box(g.0.read_mem(g.2, &mut how));
    (g, how)
}

library_benchmark_group!(name = guest_memory; benchmarks = read_path, read_mem);

// ---- openat: the common cases, in a tree of the view. ----------------------

/// `openat(AT_FDCWD, path, flags)` after the view's warm-up.
fn opening(path: &str, flags: i32) -> Call {
    let mut v = View::new();
    v.warm_up();
    let a = v.openat(path, flags, 0o644);
    (v, libc::SYS_openat, a)
}

/// A read of a path the resolver has resolved before (answered from the
/// paths known to name a plain object).
fn remembered(path: &str) -> Call {
    let call = opening(path, libc::O_RDONLY);
    let _ = serve(&call);
    call
}

#[library_benchmark]
#[bench::known_plain(args = ("/dir/sub/inner"), setup = remembered)]
#[bench::first_read(args = ("/dir/sub/inner", libc::O_RDONLY), setup = opening)]
#[bench::relative(args = ("dir/sub/inner", libc::O_RDONLY), setup = opening)]
#[bench::deep(args = ("/a/b/c/d/e/deep", libc::O_RDONLY), setup = opening)]
#[bench::symlinks(args = ("/dlink/sub/../../link", libc::O_RDONLY), setup = opening)]
#[bench::missing(args = ("/dir/sub/missing", libc::O_RDONLY), setup = opening)]
#[bench::create(args = ("/dir/sub/new", libc::O_WRONLY | libc::O_CREAT), setup = opening)]
#[bench::directory(args = ("/dir/sub", libc::O_RDONLY | libc::O_DIRECTORY), setup = opening)]
fn serviced(call: Call) -> (Call, Reply) {
    let reply = serve(&call);
    (call, reply)
}

library_benchmark_group!(name = openat; benchmarks = serviced);

// ---- namei: a call that changes a name. ------------------------------------

/// A serviced name change: `rename(from, to)` (`to` empty: `rmdir(from)`).
/// unlink of a file passes to the kernel (the policy table), so it has
/// no bench here.
fn renaming((from, to): (&str, &str)) -> Call {
    let mut v = View::new();
    v.warm_up();
    let from = v.mem.cstr(from);
    if to.is_empty() {
        return (v, libc::SYS_rmdir, [from, 0, 0, 0, 0, 0]);
    }
    let to = v.mem.cstr(to);
    (v, libc::SYS_rename, [from, to, 0, 0, 0, 0])
}

#[library_benchmark]
#[bench::rename_file(args = (("/victim", "/renamed")), setup = renaming)]
#[bench::rmdir_empty(args = (("/gone", "")), setup = renaming)]
fn name_change(call: Call) -> (Call, Reply) {
    let reply = serve(&call);
    (call, reply)
}

library_benchmark_group!(name = namei; benchmarks = name_change);

// ---- resolver: the view's resolution alone. --------------------------------

/// A resolver of the view (after a first lookup outside the count), the
/// view, and a path to resolve.
type Resolving = (vfs::Resolver, View, &'static CStr);

fn resolving(path: &'static CStr) -> Resolving {
    let v = View::new();
    let fs = vfs::Resolver::with_cache(
        open(&v.root, libc::O_PATH | libc::O_DIRECTORY),
        vfs::CachePolicy::All,
    );
    let _ = fs.lookup(&at(), c"/warm", true);
    (fs, v, path)
}

/// The same, with the path's directory resolved once (then cached).
fn resolving_again(path: &'static CStr) -> Resolving {
    let r = resolving(path);
    let _ = parent_of(&r.0, path);
    r
}

/// Resolution from the view's root, by a caller with fixed ids.
fn at() -> vfs::At<'static> {
    vfs::At {
        dir: None,
        caller: &FixedIds,
    }
}

struct FixedIds;

impl vfs::Caller for FixedIds {
    fn proc_ids(&self) -> Result<(i32, i32), nix::errno::Errno> {
        Ok((1, 1))
    }
}

/// Whether the parent of `path` resolved, and whether from the cache.
fn parent_of(fs: &vfs::Resolver, path: &CStr) -> Option<bool> {
    fs.parent(&at(), path).ok().map(|p| p.is_cached())
}

#[library_benchmark]
#[bench::deep(args = (c"/a/b/c/d/e/deep"), setup = resolving)]
#[bench::symlink(args = (c"/link"), setup = resolving)]
fn lookup(r: Resolving) -> (Resolving, Option<OwnedFd>) {
    let fd = black_box(r.0.lookup(&at(), r.2, true)).ok();
    (r, fd)
}

#[library_benchmark]
#[bench::first(args = (c"/dir/sub/new"), setup = resolving)]
#[bench::cached(args = (c"/dir/sub/new"), setup = resolving_again)]
fn parent(r: Resolving) -> (Resolving, Option<bool>) {
    let found = black_box(parent_of(&r.0, r.2));
    (r, found)
}

library_benchmark_group!(name = resolver; benchmarks = lookup, parent);

// ---- procfs: rewritten /proc files whose text does not change. -------------

/// A context over the host's own root under memory, cpu and pids limits,
/// and a read open of `path` (a /proc file the sandbox rewrites).
fn proc_open(path: &str) -> (Context, Scripted, Memory, [u64; 6]) {
    let mut ctx = Context::new(open(Path::new("/"), libc::O_PATH), 0, 0);
    ctx.set_limits(GuestLimits {
        memory_limit: Some(512 << 20),
        memory_usage: Some(Box::new(|| Some(64 << 20))),
        cpus: Some(1),
        pids: Some(100),
        ..GuestLimits::default()
    });
    let guest = Scripted::new(Path::new("/"));
    let mut mem = Memory::new(4);
    let warm = mem.cstr("/proc/version");
    let p = mem.cstr(path);
    let warm_call = SyscallArgs {
        nr: libc::SYS_openat,
        args: [libc::AT_FDCWD as i64 as u64, warm, 0, 0, 0, 0],
    };
    let _ = sandbox_syscalls::dispatch(&ctx, &guest, &warm_call);
    (
        ctx,
        guest,
        mem,
        [libc::AT_FDCWD as i64 as u64, p, 0, 0, 0, 0],
    )
}

type ProcCall = (Context, Scripted, Memory, [u64; 6]);

#[library_benchmark]
#[bench::meminfo(args = ("/proc/meminfo"), setup = proc_open)]
#[bench::cpuinfo(args = ("/proc/cpuinfo"), setup = proc_open)]
#[bench::cmdline(args = ("/proc/cmdline"), setup = proc_open)]
#[bench::threads_max(args = ("/proc/sys/kernel/threads-max"), setup = proc_open)]
fn rewritten(c: ProcCall) -> (ProcCall, Reply) {
    let call = SyscallArgs {
        nr: libc::SYS_openat,
        args: c.3,
    };
    let reply = black_box(sandbox_syscalls::dispatch(&c.0, &c.1, &call));
    (c, reply)
}

library_benchmark_group!(name = procfs; benchmarks = rewritten);

// ---- netstack: names, guest addresses, the port list, the socket table. ----

fn namer() -> Namer {
    Namer::new("0123456789abcdef")
}

#[library_benchmark]
#[bench::v4(args = ("127.0.0.1:8080"))]
#[bench::v6(args = ("[::1]:8080"))]
fn name_encode(addr: &str) -> Vec<u8> {
    let a: SocketAddr = addr.parse().expect("bench address");
    let n = namer();
    black_box(n.encode(Proto::Tcp, black_box(a), false))
}

fn encoded(addr: &str) -> (Namer, Vec<u8>) {
    let n = namer();
    let a: SocketAddr = addr.parse().expect("bench address");
    let name = n.encode(Proto::Udp, a, false);
    (n, name)
}

#[library_benchmark]
#[bench::v4(args = ("127.0.0.1:8080"), setup = encoded)]
#[bench::v6(args = ("[::1]:8080"), setup = encoded)]
fn name_decode(n: (Namer, Vec<u8>)) -> ((Namer, Vec<u8>), Option<::netstack::name::Named>) {
    let named = black_box(n.0.decode(&n.1));
    (n, named)
}

/// A guest's `sockaddr_in6` for [::1]:8080.
fn sockaddr_in6() -> Vec<u8> {
    ::netstack::addr::encode(libc::AF_INET6, "[::1]:8080".parse().expect("bench address"))
}

#[library_benchmark]
#[bench::v6(setup = sockaddr_in6)]
fn addr_parse(bytes: Vec<u8>) -> (Vec<u8>, Option<SocketAddr>) {
    let a = black_box(::netstack::addr::parse(libc::AF_INET6, &bytes))
        .ok()
        .flatten();
    (bytes, a)
}

/// A namespace's unix socket list (as `/proc/<pid>/net/unix` has it) of
/// 256 of this sandbox's bound names on ports 8000-8255, half TCP.
fn socket_list() -> (tempfile::TempDir, PathBuf, Namer) {
    let dir = tempfile::Builder::new()
        .prefix("sandbox-counted-")
        .tempdir()
        .expect("bench tempdir");
    let n = namer();
    let mut text = String::from("Num       RefCount Protocol Flags    Type St Inode Path\n");
    for i in 0..256u16 {
        let proto = if i % 2 == 0 { Proto::Tcp } else { Proto::Udp };
        let a = SocketAddr::from(([127, 0, 0, 1], 8000 + i));
        let name = String::from_utf8(n.encode(proto, a, false)).expect("ascii name");
        text += &format!(
            "0000000000000000: 00000002 00000000 00010000 0001 01 {} @{name}\n",
            100_000 + u32::from(i)
        );
    }
    let path = dir.path().join("unix");
    std::fs::write(&path, text).expect("bench socket list");
    (dir, path, n)
}

#[library_benchmark]
#[bench::of_256(setup = socket_list)]
fn bound_on(
    l: (tempfile::TempDir, PathBuf, Namer),
) -> ((tempfile::TempDir, PathBuf, Namer), usize) {
    let found = black_box(::netstack::bound::bound_on(&l.1, &l.2, Proto::Tcp, 8128));
    let n = found.len();
    (l, n)
}

/// A socket table holding one socket. Not a fuller one: the table's
/// hash seed is random per process, and with many entries the probes it
/// takes (how many keys share a hash's top bits) vary by a few percent
/// from run to run; with two keys an extra probe costs well under the gate's
/// tolerance.
fn table() -> Table {
    let t = Table::default();
    t.insert(1, Meta::new(libc::AF_INET, Proto::Tcp));
    t
}

#[library_benchmark]
#[bench::insert_get_of_2(setup = table)]
fn socket_table(t: Table) -> (Table, Option<Meta>) {
    t.insert(1000, Meta::new(libc::AF_INET6, Proto::Udp));
    let m = black_box(t.get(black_box(1000)));
    (t, m)
}

/// A stack with an `--allow-net` egress (whose relays keep refusals)
/// and a UDP socket of it connected to a sandbox-local peer.
fn connected_udp() -> (::netstack::Stack, ::netstack::stack::Sock) {
    use std::sync::Arc;
    let rules = vec![::netstack::rules::Rule::parse("127.0.0.1:9").expect("bench rule")];
    let egress = ::netstack::outbound::Outbound::new(
        Arc::new(::netstack::rules::AllowList::new(rules)),
        Arc::new(::netstack::rules::Resolved::new()),
        namer(),
        Arc::new(::netstack::LocalSockets),
    );
    let stack = ::netstack::Stack::new(Box::new(egress));
    let fd = stack
        .create(libc::AF_INET, Proto::Udp, 0, false)
        .expect("bench socket");
    let s = stack.identify(fd).expect("a netstack socket");
    stack.set_peer(&s, Some("127.0.0.1:53".parse().expect("bench address")));
    let s = stack.identify(s.fd).expect("a netstack socket");
    (stack, s)
}

// The kept-error look every serviced UDP receive and send makes first.
#[library_benchmark]
#[bench::connected_local(setup = connected_udp)]
fn take_error(
    st: (::netstack::Stack, ::netstack::stack::Sock),
) -> (
    (::netstack::Stack, ::netstack::stack::Sock),
    Option<nix::errno::Errno>,
) {
    let e = black_box(st.0.take_error(black_box(&st.1)));
    (st, e)
}

library_benchmark_group!(
    name = netstack;
    benchmarks = name_encode, name_decode, addr_parse, bound_on, socket_table, take_error
);

main!(
    config = LibraryBenchmarkConfig::default().tool(Callgrind::with_args(["--cache-sim=no"]));
    library_benchmark_groups = dispatch,
    guest_memory,
    openat,
    namei,
    resolver,
    procfs,
    netstack
);
