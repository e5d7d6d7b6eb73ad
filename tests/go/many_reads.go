// Plain read opens of many small files as a Go program makes them: the
// Go runtime's own `syscall` instructions, no C library, statically
// linked (CGO_ENABLED=0), so no preload reaches them and every open is a
// serviced call. The Go counterpart of tests/c/many_reads.c's `read`
// (scripts/compare times both).
//
// many_reads DIR N: reads DIR/0 ... DIR/N-1 (each holding its number)
// and prints the files read and the sum of the numbers.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: many_reads DIR N")
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
}
