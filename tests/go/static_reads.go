// Read opens as a Go program makes them: the Go runtime's own `syscall`
// instructions, no C library, statically linked (tests/fs/static_reads.rs
// builds this with CGO_ENABLED=0, runs it natively and under the
// supervisor and compares the output line by line).
//
// static_reads DIR (DIR holds `a` and `sub/b`): reads, failing opens
// (errno as a number), 2,000 opens in a row, 8 goroutines opening at once
// (threads the runtime starts with every signal blocked), 40 goroutines
// blocked at once in opens of FIFOs, goroutines
// opening beside busy loops that only the runtime's SIGURG preempts and
// garbage collections that stop the world, threads started and ended
// (goroutines that exit locked to their thread), SIGUSR1 sent to itself
// while it opens, SIGSYS sent to itself and caught by os/signal before
// and after an exec (Go's exec'd child shares its memory and resets every
// handler before its exec), exec'd children (a copy of itself, /bin/cat),
// /proc/self/exe, and an HTTP server and client on loopback whose handler
// reads a file. Last, its text in memory against its file's: unchanged
// natively; the static loader may rewrite two sites and nothing else:
// the `syscall` of runtime/internal/syscall.Syscall6 and the padding
// after the function, and runtime.open's `mov $257, %eax`.
// static_reads --child DIR: the exec'd copy: one read, then exits.
package main

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

func show(what, path string) {
	data, err := os.ReadFile(path)
	var errno syscall.Errno
	switch {
	case errors.As(err, &errno):
		fmt.Printf("%s: errno %d\n", what, int(errno))
	case err != nil:
		fmt.Printf("%s: %v\n", what, err)
	default:
		fmt.Printf("%s: %q\n", what, string(bytes.TrimRight(data, "\n")))
	}
}

func many(path string, n int) bool {
	for i := 0; i < n; i++ {
		data, err := os.ReadFile(path)
		if err != nil || string(data) != "text of a\n" {
			return false
		}
	}
	return true
}

// Goroutines opening beside as many busy loops as there are Ps: the
// loops make no calls, so only the runtime's SIGURG preempts them, and
// each round's GC stops the world (which preempts them by signal too).
func busyWhileOpening(a string) []bool {
	var stop int32
	var spinning sync.WaitGroup
	for i := 0; i < runtime.GOMAXPROCS(0)+1; i++ {
		spinning.Add(1)
		go func() {
			defer spinning.Done()
			n := 0
			for atomic.LoadInt32(&stop) == 0 {
				n++
			}
			_ = n
		}()
	}
	results := make([]bool, 4)
	var wg sync.WaitGroup
	for g := range results {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			ok := true
			for i := 0; i < 10; i++ {
				ok = many(a, 50) && ok
				runtime.GC()
			}
			results[g] = ok
		}(g)
	}
	wg.Wait()
	atomic.StoreInt32(&stop, 1)
	spinning.Wait()
	return results
}

// Rounds of 16 goroutines that open while locked to their thread and
// exit locked: each takes its thread with it, so the runtime starts new
// ones (clone with every signal blocked) all along.
func threadsComeAndGo(a string, rounds int) bool {
	all := true
	for r := 0; r < rounds; r++ {
		ok := make(chan bool)
		for i := 0; i < 16; i++ {
			go func() {
				runtime.LockOSThread()
				ok <- many(a, 20)
			}()
		}
		for i := 0; i < 16; i++ {
			all = <-ok && all
		}
	}
	return all
}

// SIGUSR1 sent to itself 200 times while 4 goroutines open.
func signalsWhileOpening(a string) (bool, bool) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGUSR1)
	defer signal.Stop(c)
	done := make(chan bool)
	for g := 0; g < 4; g++ {
		go func() { done <- many(a, 250) }()
	}
	for i := 0; i < 200; i++ {
		syscall.Kill(os.Getpid(), syscall.SIGUSR1)
		runtime.Gosched()
	}
	ok := true
	for g := 0; g < 4; g++ {
		ok = <-done && ok
	}
	select {
	case <-c:
		return ok, true
	case <-time.After(10 * time.Second):
		return ok, false
	}
}

// The main goroutine stays on the main thread, so that a signal it sends
// its process goes to that thread (the kernel's first choice when it is
// the one running).
func init() {
	runtime.LockOSThread()
}

// SIGSYS sent by kill from the main thread, caught through os/signal.
// (Sent from another thread, the kernel may give it to a thread the
// runtime is starting or ending, which blocks it natively but not through
// the static loader: docs/fast-reads.md, "Go programs". tgkill's SIGSYS
// is not os/signal's: Go's runtime crashes on it, natively too.)
func caughtSigsys() string {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGSYS)
	defer signal.Stop(c)
	syscall.Kill(os.Getpid(), syscall.SIGSYS)
	select {
	case s := <-c:
		return s.String()
	case <-time.After(10 * time.Second):
		return "not caught"
	}
}

// An HTTP server on loopback whose handler reads `a`, and 50 GETs.
func httpOnLoopback(a string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "listen: " + err.Error()
	}
	defer ln.Close()
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, err := os.ReadFile(a)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Write(data)
	}))
	for i := 0; i < 50; i++ {
		resp, err := http.Get("http://" + ln.Addr().String() + "/")
		if err != nil {
			return "get: " + err.Error()
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return fmt.Sprintf("get: %d %v", resp.StatusCode, err)
		}
		if i == 49 {
			return fmt.Sprintf("%q", string(body))
		}
	}
	return ""
}

// n goroutines each blocked in a plain read open of a FIFO until its
// writer comes, all at once: more than the loader's 32 stacks for Go's
// rewritten opens, so that some wait on the thread's signal stack.
func blockedOpens(dir string, n int) bool {
	paths := make([]string, n)
	for i := range paths {
		paths[i] = filepath.Join(dir, fmt.Sprintf("fifo%d", i))
		if err := syscall.Mkfifo(paths[i], 0o600); err != nil {
			return false
		}
	}
	defer func() {
		for _, p := range paths {
			os.Remove(p)
		}
	}()
	var wg sync.WaitGroup
	oks := make([]bool, n)
	for i := range paths {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			f, err := os.Open(paths[i])
			if err != nil {
				return
			}
			defer f.Close()
			b, err := io.ReadAll(f)
			oks[i] = err == nil && string(b) == "x"
		}(i)
	}
	// Let the readers block first (the result does not depend on it).
	time.Sleep(200 * time.Millisecond)
	all := true
	for i := range paths {
		w, err := os.OpenFile(paths[i], os.O_WRONLY, 0)
		if err != nil {
			all = false
			continue
		}
		_, err = w.Write([]byte("x"))
		w.Close()
		all = all && err == nil
	}
	wg.Wait()
	for _, ok := range oks {
		all = all && ok
	}
	return all
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == "--child" {
		show("exec'd child read", filepath.Join(os.Args[2], "sub/b"))
		return
	}
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: static_reads DIR")
		os.Exit(2)
	}
	dir := os.Args[1]
	a := filepath.Join(dir, "a")
	show("read", a)
	show("read rel", filepath.Join(dir, "sub/../sub/b"))
	show("read missing", filepath.Join(dir, "missing"))
	show("read dir", filepath.Join(dir, "sub"))
	fmt.Printf("2000 opens: %v\n", many(a, 2000))

	var wg sync.WaitGroup
	results := make([]bool, 8)
	for g := range results {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			results[g] = many(a, 500)
		}(g)
	}
	wg.Wait()
	fmt.Printf("8 goroutines x 500 opens: %v\n", results)
	fmt.Printf("opens beside busy loops and GCs: %v\n", busyWhileOpening(a))
	fmt.Printf("opens in 64 threads started and ended: %v\n", threadsComeAndGo(a, 4))
	fmt.Printf("40 FIFO opens blocked at once: %v\n", blockedOpens(dir, 40))
	opened, caught := signalsWhileOpening(a)
	fmt.Printf("opens under SIGUSR1: %v, caught: %v\n", opened, caught)
	fmt.Printf("SIGSYS by kill, before an exec: %s\n", caughtSigsys())

	out, err := exec.Command("/proc/self/exe", "--child", dir).Output()
	fmt.Printf("exec'd child: %q %v\n", string(out), err)
	out, err = exec.Command("/bin/cat", filepath.Join(dir, "sub/b")).Output()
	fmt.Printf("exec'd cat: %q %v\n", string(out), err)
	fmt.Printf("SIGSYS by kill, after an exec: %s\n", caughtSigsys())
	fmt.Printf("http on loopback: %s\n", httpOnLoopback(a))

	exe, err1 := os.Readlink("/proc/self/exe")
	self, err2 := filepath.Abs(os.Args[0])
	if err2 == nil {
		self, err2 = filepath.EvalSymlinks(self)
	}
	fmt.Printf("/proc/self/exe is the program: %v\n", err1 == nil && err2 == nil && exe == self)
	textAgainstFile()
}

// Prints whether the program's text in memory is its file's, and where
// it differs, whether only within the two sites' functions (and the
// padding up to the next function).
func textAgainstFile() {
	f, err := elf.Open("/proc/self/exe")
	if err != nil {
		fmt.Printf("text: %v\n", err)
		return
	}
	defer f.Close()
	text := f.Section(".text")
	syms, err := f.Symbols()
	if text == nil || err != nil {
		fmt.Printf("text: no .text or symbols: %v\n", err)
		return
	}
	file, err := text.Data()
	if err != nil {
		fmt.Printf("text: %v\n", err)
		return
	}
	var sites [][2]uint64
	for _, s := range syms {
		if s.Name == "runtime/internal/syscall.Syscall6" || s.Name == "runtime.open.abi0" {
			sites = append(sites, [2]uint64{s.Value, (s.Value + s.Size + 31) &^ 31})
		}
	}
	atSite := func(at uint64) bool {
		for _, s := range sites {
			if at >= s[0] && at < s[1] {
				return true
			}
		}
		return false
	}
	mem := unsafe.Slice((*byte)(unsafe.Pointer(uintptr(text.Addr))), len(file))
	changed, elsewhere := 0, false
	for i := 0; i < len(file); i++ {
		if mem[i] == file[i] {
			continue
		}
		if !atSite(text.Addr + uint64(i)) {
			elsewhere = true
		} else if i == 0 || mem[i-1] == file[i-1] {
			changed++
		}
	}
	b := map[bool]int{false: 0, true: 1}
	fmt.Printf("text unchanged: %d\n", b[changed == 0 && !elsewhere])
	fmt.Printf("text changed only at rewritten sites: %d\n", b[!elsewhere])
	fmt.Printf("rewritten sites: %d\n", changed)
}
