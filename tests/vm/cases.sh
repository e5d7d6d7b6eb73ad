#!/bin/bash
# The OCI runtime under Debian 12's stock engines on a cgroup v2 / systemd
# host: the job `scripts/vm check` runs in the VM (as /job/job.sh, with the
# binary under test at /job/supervisor and the oci test binary at
# /job/oci-tests). It checks that the host is what it claims (systemd pid
# 1, unified cgroup v2, Docker's systemd cgroup driver), imports a
# busybox-static image into Docker and Podman, and runs the cases with
# `--runtime supervisor`: on the engine's default network an echo, and
# with `--network none` output, exit code, a hog killed at -m 64m
# (OOMKilled under Docker), --cpus 0.5 --pids-limit 50 in the container's
# cgroup and as the container sees them, exec, stats and update, Docker's
# shared /dev/shm and --shm-size, every process of a container on the
# subordinate range (from this host's side) with and without --rm; on a
# user-defined network, -p and a second container connecting by name.
# Then the CRI tests of tests/oci/cri against the installed containerd.
# Each case prints one line, "ok NAME (S s)" or "FAIL NAME (S s): why";
# the job fails when any case fails. The engines run as installed: only
# the runtime is registered (scripts/vm writes daemon.json,
# containers.conf and containerd's config.toml).
set -u

failures=0
cases=0
report() { # report NAME START WHY (WHY empty: passed)
    local took=$((SECONDS - $2))
    cases=$((cases + 1))
    if [ -z "$3" ]; then
        echo "ok $1 ($took s)"
    else
        failures=$((failures + 1))
        echo "FAIL $1 ($took s): $3"
    fi
}
# expect WHAT ACTUAL EXPECTED: appends to $why when they differ.
expect() {
    if [ "$2" != "$3" ]; then
        why="${why:+$why; }$1: got '$2', want '$3'"
    fi
}
# expect_match WHAT ACTUAL REGEX
expect_match() {
    if ! [[ $2 =~ $3 ]]; then
        why="${why:+$why; }$1: got '$2', want /$3/"
    fi
}

# The cgroup v2 directory of a process.
cgroup_of() { echo "/sys/fs/cgroup$(sed -n 's/^0:://p' "/proc/$1/cgroup" 2>/dev/null)"; }
# The pids limit the container's cgroup CG keeps: under v2 the runtime
# puts it on the scope's `sandbox` leaf (the guest's processes, not the
# runtime's), plus 2 for the anchor and the sandbox's init (docs/oci.md);
# else the scope's.
pids_limit() {
    if [ -d "$1/sandbox" ]; then
        local max
        max=$(read_file "$1/sandbox/pids.max")
        [[ $max =~ ^[0-9]+$ ]] && echo $((max - 2)) || echo "sandbox/pids.max: $max"
    else
        read_file "$1/pids.max"
    fi
}
read_file() { cat "$1" 2>/dev/null | tr '\n' ' ' | sed 's/ $//'; }
# host_ids_of_container ID: "all on the range" when every process the
# runtime lists for container ID (`supervisor ps`, under the engine's
# runtime root, found by the container's state.json) runs with all its
# uids and gids (real, effective, saved, filesystem) in the 65536 ids of
# the `supervisor` entry of /etc/subuid and /etc/subgid, else what is not.
host_ids_of_container() {
    local state root pids p ids start gstart bad=
    state=$(find /run -maxdepth 6 -path "*/$1/state.json" 2>/dev/null | head -1)
    [ -n "$state" ] || { echo "no state.json of $1 under /run"; return; }
    root=$(dirname "$(dirname "$state")")
    pids=$(supervisor --root "$root" ps --format json "$1" 2>&1 | tr -d '[] ' | tr ',' ' ')
    [[ $pids =~ ^[0-9\ ]+$ ]] || { echo "ps: $pids"; return; }
    start=$(awk -F: '$1 == "supervisor" { print $2 }' /etc/subuid)
    gstart=$(awk -F: '$1 == "supervisor" { print $2 }' /etc/subgid)
    [[ $start =~ ^[0-9]+$ && $gstart =~ ^[0-9]+$ ]] || { echo "no supervisor range in /etc/subuid, /etc/subgid"; return; }
    for p in $pids; do
        ids=$(awk '/^Uid:/ { print "u", $2, $3, $4, $5 } /^Gid:/ { print "g", $2, $3, $4, $5 }' "/proc/$p/status" 2>/dev/null)
        [ -n "$ids" ] || continue # ended since ps
        echo "$ids" | awk -v u="$start" -v g="$gstart" '
            { base = ($1 == "u") ? u : g
              for (i = 2; i <= 5; i++) if ($i < base || $i >= base + 65536) exit 1 }' ||
            bad="$bad pid $p: $(echo "$ids" | tr '\n' ' ')"
    done
    echo "${bad:-all on the range}"
}

install -m 0755 /job/supervisor /usr/local/bin/supervisor

start=$SECONDS why=
expect "pid 1" "$(cat /proc/1/comm)" systemd
expect "/sys/fs/cgroup" "$(stat -fc %T /sys/fs/cgroup)" cgroup2fs
expect "is-system-running" "$(systemctl is-active docker.service containerd.service | tr '\n' ' ')" "active active "
for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
expect "docker info cgroup" "$(docker info --format '{{.CgroupVersion}} {{.CgroupDriver}}' 2>&1)" "2 systemd"
expect_match "docker info runtimes" "$(docker info --format '{{json .Runtimes}}' 2>&1)" '"supervisor"'
expect "podman cgroup" "$(podman info --format '{{.Host.CgroupsVersion}} {{.Host.CgroupManager}}' 2>&1)" "v2 systemd"
report host "$start" "$why"

# The sandbox alone, without an engine, on this kernel.
start=$SECONDS why=
out=$(supervisor run -- /bin/sh -c 'echo hi; exit 3' 2>&1)
expect "status" "$?" 3
expect "output" "$out" hi
report sandbox-run "$start" "$why"

# The image: busybox-static as the whole root file system.
start=$SECONDS why=
img=/tmp/image-rootfs
mkdir -p "$img/bin" "$img/etc" "$img/proc" "$img/sys" "$img/dev" "$img/root"
install -m 1777 -d "$img/tmp"
cp /bin/busybox "$img/bin/busybox"
for applet in $(/bin/busybox --list); do
    [ "$applet" = busybox ] || ln -sf busybox "$img/bin/$applet"
done
tar -C "$img" -cf /tmp/image.tar .
out=$(docker import --change 'CMD ["sh"]' /tmp/image.tar vmtest:latest 2>&1) || why="docker import: $out"
out=$(podman import --change 'CMD=["sh"]' /tmp/image.tar localhost/vmtest:latest 2>&1) || why="${why:+$why; }podman import: $out"
report import "$start" "$why"

# engine_cases ENGINE RUNTIME_FLAG...: the cases, for docker or podman,
# each `run` with the flags that select the runtime: one on the engine's
# default network (Docker's bridge, Podman's netavark bridge), the others with
# `--network none`.
engine_cases() {
    local e=$1
    shift
    local out rc pid cg
    local rt=("$@" --network none)

    start=$SECONDS why=
    out=$($e run --rm "$@" vmtest echo hi 2>&1)
    rc=$?
    expect "status" "$rc" 0
    expect "output" "$out" hi
    report "$e-default-network" "$start" "$why"

    start=$SECONDS why=
    out=$($e run --rm "${rt[@]}" vmtest echo hi 2>&1)
    rc=$?
    expect "status" "$rc" 0
    expect "output" "$out" hi
    report "$e-echo" "$start" "$why"

    start=$SECONDS why=
    out=$($e run --rm "${rt[@]}" vmtest sh -c 'echo out; exit 7' 2>&1)
    rc=$?
    expect "status" "$rc" 7
    expect "output" "$out" out
    report "$e-exit-code" "$start" "$why"

    start=$SECONDS why=
    out=$($e run --name hog "${rt[@]}" -m 64m vmtest sh -c 'x=a; while :; do x=$x$x; done' 2>&1)
    rc=$?
    expect "status (output: $out)" "$rc" 137
    expect "inspect exit code" "$($e inspect -f '{{.State.ExitCode}}' hog 2>&1)" 137
    # Podman 4.3 never reports OOMKilled, with any runtime (docs/oci.md).
    [ "$e" = docker ] && expect "OOMKilled" "$($e inspect -f '{{.State.OOMKilled}}' hog 2>&1)" true
    $e rm -f hog >/dev/null 2>&1
    report "$e-oom-killed" "$start" "$why"

    # Docker's /dev/shm: a container of `--ipc container:shm-a` reads the
    # POSIX shared memory and named semaphore that shm-a (`--ipc
    # shareable`) made in the engine's tmpfs, bound as it is (a tmpfs on
    # 6.1 takes no idmap: docs/oci.md, "/dev/shm"); `--shm-size` shows in
    # the container's df as under runc.
    if [ "$e" = docker ]; then
        start=$SECONDS why=
        local probe=(-v /tmp/pod-probe:/probe:ro) make='/probe/pod_probe.static posix-make /pod-a from-a && exec sleep 1000'
        out=$($e run -d --name shm-a --ipc shareable "${probe[@]}" "${rt[@]}" vmtest sh -c "$make" 2>&1)
        expect "run -d status (output: $out)" "$?" 0
        out=
        for _ in $(seq 30); do
            out=$($e run --rm --ipc container:shm-a "${probe[@]}" "${rt[@]}" vmtest \
                /probe/pod_probe.static posix-read /pod-a 2>&1) && break
            sleep 1
        done
        expect "posix-read with --ipc container:shm-a" "$out" "shm=from-a sem=7"
        out=$($e run --rm "${rt[@]}" --shm-size 24m vmtest sh -c "df -k /dev/shm | awk 'NR == 2 { print \$2 }'" 2>&1)
        expect "df /dev/shm with --shm-size 24m" "$out" 24576
        $e rm -f shm-a >/dev/null 2>&1
        report "$e-shm" "$start" "$why"
    fi

    # One container for the limits, exec, stats and update.
    start=$SECONDS why=
    out=$($e run -d --name lim "${rt[@]}" -m 64m --cpus 0.5 --pids-limit 50 vmtest sleep 1000 2>&1)
    rc=$?
    expect "run -d status (output: $out)" "$rc" 0
    pid=$($e inspect -f '{{.State.Pid}}' lim 2>/dev/null)
    cg=$(cgroup_of "${pid:-0}")
    # The systemd driver's scope: system.slice/docker-ID.scope,
    # machine.slice/libpod-ID.scope (under v2 the runtime's processes sit
    # in leaves beneath it: docs/oci.md).
    case $cg in *.scope/*) cg=${cg%%.scope/*}.scope ;; esac
    expect_match "container's cgroup" "$cg" '\.slice/(docker|libpod)-[0-9a-f]{64}\.scope$'
    expect "memory.max" "$(read_file "$cg/memory.max")" 67108864
    expect "cpu.max" "$(read_file "$cg/cpu.max")" "50000 100000"
    expect "pids limit" "$(pids_limit "$cg")" 50
    report "$e-limits-in-cgroup" "$start" "$why"

    start=$SECONDS why=
    out=$($e exec lim sh -c 'echo in-exec; head -1 /proc/meminfo; nproc' 2>&1)
    rc=$?
    expect "status" "$rc" 0
    expect "output" "$(echo "$out" | tr -s ' \n' ' ')" "in-exec MemTotal: 65536 kB 1 "
    report "$e-exec" "$start" "$why"

    start=$SECONDS why=
    out=$($e stats --no-stream --format '{{.MemUsage}} {{.PIDs}}' lim 2>&1)
    rc=$?
    expect "status" "$rc" 0
    # Docker says 64MiB, Podman 67.11MB.
    expect_match "stats" "$out" '^[0-9.]+[kKMG]i?B / (64MiB|67\.11MB) [1-9][0-9]*$'
    report "$e-stats" "$start" "$why"

    # 1.5 CPUs: nproc 2 where the VM has 2 (a change from 0.5's 1). Podman
    # 4.3's update has no --pids-limit.
    start=$SECONDS why=
    local cpus_seen=1 pids=()
    [ "$(nproc)" -ge 2 ] && cpus_seen=2
    [ "$e" = docker ] && pids=(--pids-limit 60)
    out=$($e update --cpus 1.5 "${pids[@]}" --memory 96m lim 2>&1)
    rc=$?
    expect "status (output: $out)" "$rc" 0
    expect "cpu.max" "$(read_file "$cg/cpu.max")" "150000 100000"
    [ "$e" = docker ] && expect "pids limit" "$(pids_limit "$cg")" 60
    expect "memory.max" "$(read_file "$cg/memory.max")" 100663296
    out=$($e exec lim sh -c 'head -1 /proc/meminfo; nproc' 2>&1)
    expect "in the container" "$(echo "$out" | tr -s ' \n' ' ')" "MemTotal: 98304 kB $cpus_seen "
    report "$e-update" "$start" "$why"

    $e rm -f lim >/dev/null 2>&1

    # The container's ids, read from this host: every process of the
    # container (the runtime's `ps`) runs with all its uids and gids on
    # the `supervisor` subordinate range, none as host root, and the
    # container's root writes to its root directory (Podman's is 0555) as
    # under runc. Both with --rm, for which Podman mounts the rootfs with
    # `volatile` (docs/oci.md, "An overlayfs rootfs"), and without.
    local rm
    for rm in --rm ""; do
        start=$SECONDS why=
        out=$($e run -d $rm --name onrange "${rt[@]}" vmtest \
            sh -c 'mkdir /made && echo by-root > /made/file && exec sleep 1000' 2>&1)
        expect "run -d $rm status (output: $out)" "$?" 0
        expect "made at /" "$($e exec onrange cat /made/file 2>&1)" by-root
        out=$(host_ids_of_container "$($e inspect -f '{{.Id}}' onrange 2>&1)")
        expect "host ids of the container's processes" "$out" "all on the range"
        $e rm -f onrange >/dev/null 2>&1
        report "$e-ids-on-range${rm:+-rm}" "$start" "$why"
    done

    # A user-defined network of the engine's (Docker's bridge, iptables and
    # embedded resolver; Podman's netavark bridge and aardvark-dns): the
    # sandboxed web server published with -p and reached from this host
    # at one of its own addresses, then by name from a second sandboxed
    # container on the network. The server's files are in /www, made by
    # the container's root in its root directory (Podman's is mode 0555),
    # as under runc. (busybox wget has no -T here: with it the static
    # busybox of Debian 12 segfaults.)
    local serve='mkdir /www && echo hello-from-web > /www/index.html && exec httpd -f -p 80 -h /www'
    local host_ip
    host_ip=$(ip -4 -o addr show scope global | awk '{ sub("/.*", "", $4); print $4; exit }')
    start=$SECONDS why=
    out=$($e network create vmnet 2>&1) || why="network create: $out"
    out=$($e run -d --name web --network vmnet -p 18080:80 "$@" vmtest sh -c "$serve" 2>&1)
    rc=$?
    expect "run -d status (output: $out)" "$rc" 0
    out=
    for _ in $(seq 60); do
        out=$(busybox wget -qO- "http://$host_ip:18080/index.html" 2>&1) && break
        sleep 1
    done
    expect "-p 18080:80 at $host_ip" "$out" hello-from-web
    [ "$out" = hello-from-web ] || why="$why; the server's log: $($e logs web 2>&1 | tail -5 | tr '\n' ' ')"
    report "$e-publish" "$start" "$why"

    start=$SECONDS why=
    out=
    for _ in $(seq 10); do
        out=$($e run --rm --network vmnet "$@" vmtest wget -qO- http://web/index.html 2>&1) && break
        sleep 1
    done
    expect "wget http://web/ from a second container" "$out" hello-from-web
    report "$e-container-to-container" "$start" "$why"
    $e rm -f web >/dev/null 2>&1
    $e network rm vmnet >/dev/null 2>&1
}

# The pod's probe comes built from the host (scripts/vm check), copied off
# the 9p share to a directory of its own: the containers (Docker's shm
# case, the CRI pod) bind that at /probe.
mkdir -p /tmp/pod-probe && cp /job/pod_probe.static /tmp/pod-probe/ 2>/dev/null
engine_cases docker --runtime=supervisor
engine_cases podman --runtime supervisor

# Kubernetes' path: the CRI tests of tests/oci/cri (the binary `cargo test`
# built on the host, /job/oci-tests) against this machine's containerd as
# installed, through its CRI plugin with the runtime handler `supervisor`
# under the systemd cgroup driver (scripts/vm's config.toml): a pod on the
# node's network (a command's log and exit code, ExecSync, StopContainer,
# a 64 MiB limit's OOMKilled, removal leaving nothing), a pod of two
# containers on the CNI bridge talking over localhost, and a pod whose
# containers share its pid namespace (shareProcessNamespace). A skipped
# test is a failure here.
for t in containerds_cri_runs_pods_with_the_supervisor_handler a_pods_two_containers_talk_over_localhost \
    a_pods_containers_share_one_pid_namespace; do
    start=$SECONDS why=
    if [ -x /job/oci-tests ]; then
        out=$(cd /tmp && SUPERVISOR_CRI_CONTAINERD=/run/containerd/containerd.sock \
            SUPERVISOR_POD_PROBE=/tmp/pod-probe/pod_probe.static \
            /job/oci-tests --exact "cri::$t" --test-threads 1 2>&1)
        rc=$?
        expect "status" "$rc" 0
        expect_match "result" "$out" "test cri::$t \.\.\. ok"
        if [[ $out == *SKIPPED* ]] || [ -n "$why" ]; then
            why="${why:+$why; }output: $(echo "$out" | grep -v '^$' | tail -30)"
        fi
    else
        why="no /job/oci-tests (scripts/vm check passes the oci test binary)"
    fi
    report "cri-${t//_/-}" "$start" "$why"
done

echo "$cases cases, $failures failed; the job took $SECONDS s"
# For the diagnosis of failures: the guest's journal, kept in the job's
# directory (scripts/vm check keeps it when the job fails).
[ "$failures" = 0 ] || journalctl -b --no-pager >/job/journal.txt 2>&1
[ "$failures" = 0 ]
