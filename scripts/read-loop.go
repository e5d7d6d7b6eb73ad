// read-loop: the Go row's program (tests/go/many_reads.go: os.ReadFile of
// each file) that reports what it cost itself, as scripts/read-loop.c does
// for the C rows (scripts/row-cpu builds it with CGO_ENABLED=0).
//
// read-loop DIR N prints "SUM CPU_MS WAIT_MS": the sum of the numbers
// read, the process's CPU time (getrusage, every thread) and the time its
// threads waited on a run queue (/proc/self/schedstat, the main thread's;
// -1 where it cannot be read).
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

func waitedMs() float64 {
	text, err := os.ReadFile("/proc/self/schedstat")
	fields := strings.Fields(string(text))
	if err != nil || len(fields) < 2 {
		return -1
	}
	ns, err := strconv.ParseFloat(fields[1], 64)
	if err != nil {
		return -1
	}
	return ns / 1e6
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: read-loop DIR N")
		os.Exit(125)
	}
	n, _ := strconv.Atoi(os.Args[2])
	sum := 0
	for i := 0; i < n; i++ {
		data, err := os.ReadFile(filepath.Join(os.Args[1], strconv.Itoa(i)))
		if err != nil {
			fmt.Fprintln(os.Stderr, "read-loop:", err)
			os.Exit(1)
		}
		v, _ := strconv.Atoi(strings.TrimSpace(string(data)))
		sum += v
	}
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := float64(ru.Utime.Sec+ru.Stime.Sec)*1e3 + float64(ru.Utime.Usec+ru.Stime.Usec)/1e3
	fmt.Printf("%d %.2f %.2f\n", sum, cpu, waitedMs())
}
