// os.Create of a Go program's own stdio by name, its first opens
// (tests/programs/stdio_files.rs builds it without cgo, a static
// program, and compares its files natively and under the supervisor):
// Go creates with O_RDWR|O_CREAT|O_TRUNC, a read-write open of a stdout
// or stderr handed for writing only. Then a line through descriptor 1,
// whose offset the reopens left where it was.
package main

import (
	"fmt"
	"os"
)

func create(path string, text string) {
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintln(f, text)
	f.Close()
}

func main() {
	create("/dev/stdout", "go: stdout created")
	create("/proc/self/fd/2", "go: stderr created")
	fmt.Println("go: end")
}
