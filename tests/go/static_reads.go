// Read opens as a Go program makes them: the Go runtime's own `syscall`
// instructions, no C library, statically linked (tests/fs/static_reads.rs
// builds this with CGO_ENABLED=0, runs it natively and under the
// supervisor and compares the output line by line).
//
// static_reads DIR (DIR holds `a` and `sub/b`): reads, failing opens
// (errno as a number), 2,000 opens in a row, 8 goroutines opening at once
// (threads the runtime starts with every signal blocked, preempted by its
// SIGURG), an exec'd copy of itself, /proc/self/exe.
// static_reads --child DIR: the exec'd copy: one read, then exits.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
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

	out, err := exec.Command("/proc/self/exe", "--child", dir).Output()
	fmt.Printf("exec'd child: %q %v\n", string(out), err)

	exe, err1 := os.Readlink("/proc/self/exe")
	self, err2 := filepath.Abs(os.Args[0])
	if err2 == nil {
		self, err2 = filepath.EvalSymlinks(self)
	}
	fmt.Printf("/proc/self/exe is the program: %v\n", err1 == nil && err2 == nil && exe == self)
}
