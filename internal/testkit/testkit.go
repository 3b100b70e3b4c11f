// Package testkit holds the small helpers that tests of several packages
// (and the benchmark tool) share: a free loopback port, a buffer that a
// child process and the test can use at once, the process's CPU time, the
// outcome of a domain table test, the Recorder every domain package's
// fake store embeds (fake.go) and the one build of cmd/api a test binary
// starts (apibinary.go). It is imported only by tests and
// tools/bench.
package testkit

import (
	"bytes"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tenantd/tenantd/internal/errs"
)

// ProcessCPU is the CPU time this process has used so far, user and
// system, all threads (getrusage): what a benchmark divides by its
// operations, steadier than wall time on a shared machine.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// PidCPU is the CPU time process pid has used so far, user and system,
// from /proc/<pid>/stat (USER_HZ is 100 on Linux); 0 where there is no
// /proc.
func PidCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	// After the comm field: state is f[0], utime is field 14 => f[11], stime f[12].
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}

// FreePort returns a TCP port that nothing listens on right now at host
// ("" for every address, "127.0.0.1" for loopback). Another process may take
// it before the caller binds it; callers that cannot retry should listen
// themselves.
func FreePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// FreeAddr returns a loopback host:port nothing listens on right now, or
// fails the test.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// SyncBuffer is a bytes.Buffer safe for writers (a child's stdout and
// stderr, a logger) and a reading test goroutine at once.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Bytes returns a copy of what was written so far.
func (b *SyncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// Outcome is what a call of a domain service should end with, in table
// tests: success, or an error of a kind and code.
type Outcome struct {
	OK   bool
	Kind errs.Kind
	Code string
}

// Succeeds is a call that returns no error.
var Succeeds = Outcome{OK: true}

// Fails is a call that fails with an error of kind k and code.
func Fails(k errs.Kind, code string) Outcome { return Outcome{Kind: k, Code: code} }

// Statuses are the HTTP statuses the API answers each kind with
// (httpapi's mapping; a test there keeps the two equal), for naming
// subtests by status.
var Statuses = map[errs.Kind]string{errs.Internal: "500", errs.Invalid: "400", errs.Unauthenticated: "401",
	errs.Forbidden: "403", errs.NotFound: "404", errs.Conflict: "409", errs.PreconditionFailed: "412",
	errs.Unavailable: "503", errs.Unprocessable: "422", errs.TooManyRequests: "429"}

// Name is a subtest's name, "<status>/<method>/<case>", okStatus being the
// status of a success.
func (o Outcome) Name(okStatus, method, c string) string {
	if o.OK {
		return okStatus + "/" + method + "/" + c
	}
	return Statuses[o.Kind] + "/" + method + "/" + c
}

// Check fails t unless err is what o says (kind and code, never message
// text).
func (o Outcome) Check(t testing.TB, err error) {
	t.Helper()
	if o.OK {
		if err != nil {
			t.Fatalf("got %v, want success", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("got success, want %v/%s", o.Kind, o.Code)
	}
	if got, want := errs.KindOf(err), o.Kind; got != want {
		t.Fatalf("kind: got %v, want %v (err %v)", got, want, err)
	}
	if got, want := errs.CodeOf(err), o.Code; got != want {
		t.Fatalf("code: got %q, want %q (err %v)", got, want, err)
	}
}
