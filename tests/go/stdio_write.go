// Reopens of a Go program's own stdio for writing by name, its first
// opens (tests/programs/stdio_files.rs builds it without cgo, a static
// program, and compares its files natively and under the supervisor):
// os.OpenFile of /dev/stdout write-only, of /proc/self/fd/2 for
// appending, and of /dev/stderr truncating.
package main

import (
	"fmt"
	"os"
)

func write(path string, flags int, text string) {
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Fprintln(f, text)
	f.Close()
}

func main() {
	write("/dev/stdout", os.O_WRONLY|os.O_APPEND, "go: by name")
	write("/proc/self/fd/2", os.O_WRONLY|os.O_APPEND, "go: stderr appended")
	write("/dev/stdout", os.O_WRONLY|os.O_APPEND, "go: again")
	write("/dev/stderr", os.O_WRONLY|os.O_TRUNC|os.O_CREATE, "go: stderr truncated")
}
