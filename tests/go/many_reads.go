// Plain read opens of many small files as a Go program makes them: the
// Go runtime's own `syscall` instructions, no C library, statically
// linked (CGO_ENABLED=0), so no preload reaches them and every open is a
// serviced call. The Go counterpart of tests/c/many_reads.c's `read`
// (scripts/compare times both).
//
// many_reads DIR N: reads DIR/0 ... DIR/N-1 (each holding its number)
// and prints the files read and the sum of the numbers.
// many_reads DIR N cost: the same, then a line "CPU_MS WAIT_MS": the
// process's CPU time (getrusage, every thread) and the time its main
// thread waited on a run queue (/proc/self/schedstat; -1 where it cannot
// be read), what scripts/row-cpu sets against native and the floor.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

func main() {
	cost := len(os.Args) == 4 && os.Args[3] == "cost"
	if len(os.Args) != 3 && !cost {
		fmt.Fprintln(os.Stderr, "usage: many_reads DIR N [cost]")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[2])
	if err != nil || n < 0 {
		fmt.Fprintln(os.Stderr, "many_reads: N must be a count")
		os.Exit(2)
	}
	sum := 0
	for i := 0; i < n; i++ {
		data, err := os.ReadFile(filepath.Join(os.Args[1], strconv.Itoa(i)))
		if err != nil {
			fmt.Fprintln(os.Stderr, "many_reads:", err)
			os.Exit(1)
		}
		v, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			fmt.Fprintln(os.Stderr, "many_reads: not a number in", i)
			os.Exit(1)
		}
		sum += v
	}
	fmt.Printf("%d files, sum %d\n", n, sum)
	if cost {
		printCost()
	}
}

// printCost prints "CPU_MS WAIT_MS" of this process (see the head comment).
func printCost() {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := float64(ru.Utime.Sec+ru.Stime.Sec)*1e3 + float64(ru.Utime.Usec+ru.Stime.Usec)/1e3
	waited := -1.0
	text, err := os.ReadFile("/proc/self/schedstat")
	fields := strings.Fields(string(text))
	if err == nil && len(fields) >= 2 {
		if ns, err := strconv.ParseFloat(fields[1], 64); err == nil {
			waited = ns / 1e6
		}
	}
	fmt.Printf("%.2f %.2f\n", cpu, waited)
}
