package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRun: a generator that fails leaves its files as they were, however
// far it got (one rewritten, one removed, one made); one that succeeds
// keeps what it wrote.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	exec, models, made := filepath.Join(dir, "exec.gen.go"), filepath.Join(dir, "models.gen.go"), filepath.Join(dir, "new.gen.go")
	files := []string{exec, models, made}
	write := func(f, s string) {
		if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(f string) string {
		b, err := os.ReadFile(f)
		if os.IsNotExist(err) {
			return "<none>"
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	write(exec, "old exec")
	write(models, "old models")
	half := "echo half > " + exec + "; rm " + models + "; echo new > " + made
	if err := run(files, []string{"sh", "-c", half + "; exit 1"}); err == nil {
		t.Fatal("a failed generator: no error")
	}
	for f, want := range map[string]string{exec: "old exec", models: "old models", made: "<none>"} {
		if got := read(f); got != want {
			t.Errorf("after a failure, %s: %q, want %q", filepath.Base(f), got, want)
		}
	}
	if err := run(files, []string{"sh", "-c", half}); err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]string{exec: "half\n", models: "<none>", made: "new\n"} {
		if got := read(f); got != want {
			t.Errorf("after a success, %s: %q, want %q", filepath.Base(f), got, want)
		}
	}
}
