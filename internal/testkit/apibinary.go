package testkit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// apiBuild is the one build of cmd/api a test binary makes (APIBinary).
var apiBuild struct {
	once     sync.Once
	dir, bin string
	err      error
}

// APIBinary is cmd/api built once per test binary, for the tests that
// start it as a process: each build links it again (2.7 s on a 2-core
// machine), and they start the same program. A failed build fails every
// caller with its output. The package's TestMain calls RemoveAPIBinary
// after its tests.
func APIBinary(tb testing.TB) string {
	tb.Helper()
	apiBuild.once.Do(func() {
		if apiBuild.dir, apiBuild.err = os.MkdirTemp("", "tenantd-api-"); apiBuild.err != nil {
			return
		}
		bin := filepath.Join(apiBuild.dir, "api")
		// A hang's bound, not a speed: a busy machine builds slowly.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		// go test puts its own GOROOT/bin first on PATH: "go" is the go
		// command that runs the test. The import path builds from any
		// package directory of the module.
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/tenantd/tenantd/cmd/api").CombinedOutput(); err != nil {
			apiBuild.err = fmt.Errorf("go build ./cmd/api: %v\n%s", err, out)
			return
		}
		apiBuild.bin = bin
	})
	if apiBuild.err != nil {
		tb.Fatal(apiBuild.err)
	}
	return apiBuild.bin
}

// RemoveAPIBinary deletes what APIBinary built, if it built anything.
func RemoveAPIBinary() {
	if apiBuild.dir != "" {
		_ = os.RemoveAll(apiBuild.dir)
	}
}
