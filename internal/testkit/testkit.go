// Package testkit holds the small helpers that tests of several packages
// (and the benchmark tool) share: a free loopback port, a buffer that a
// child process and the test can use at once, the process's CPU time. It is imported only by tests
// and tools/bench.
package testkit

import (
	"bytes"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"
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
