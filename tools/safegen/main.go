// Command safegen runs a code generator and, when it fails, puts the files
// it generates back as they were: gqlgen removes and rewrites its output
// before it type-checks the package, so a failure (hand-written code that
// does not compile, say) could leave the package without its executor,
// unbuildable until restored from git.
//
//	go run ../../tools/safegen -files exec.gen.go,models.gen.go -- go tool gqlgen --config gqlgen.yml
package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
)

func main() {
	files := flag.String("files", "", "comma-separated files the generator writes, restored when it fails")
	flag.Parse()
	if err := run(strings.Split(*files, ","), flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "safegen:", err)
		os.Exit(1)
	}
}

// run runs the command args and restores files to their contents before
// it when it fails (removing the ones that did not exist).
func run(files, args []string) error {
	if len(args) == 0 {
		return errors.New("no command to run")
	}
	saved := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		saved[f] = b // nil: did not exist
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	runErr := cmd.Run()
	if runErr == nil {
		return nil
	}
	for f, b := range saved {
		var err error
		if b == nil {
			err = os.Remove(f)
		} else {
			err = os.WriteFile(f, b, 0o644)
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s failed (%v), and restoring %s failed: %w", args[0], runErr, f, err)
		}
	}
	return fmt.Errorf("%s failed (%v): %s restored as they were; fix the hand-written code the error names and run it again",
		strings.Join(args, " "), runErr, strings.Join(files, ", "))
}
