package dynamotest

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

var (
	forkOnce sync.Once
	forkReqs = make(chan func())
)

// startChild starts cmd in its own process group, with SIGKILL as its
// parent-death signal so that DynamoDB Local dies with the test binary
// however that ends (a panicking test, -timeout, SIGKILL). The kernel sends
// that signal when the forking *thread* exits, so the fork is done from one
// goroutine that keeps its OS thread locked for the life of the process.
func startChild(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	forkOnce.Do(func() {
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for f := range forkReqs {
				f()
			}
		}()
	})
	errc := make(chan error, 1)
	forkReqs <- func() { errc <- cmd.Start() }
	return <-errc
}

// killTree kills the process group that startChild made.
func killTree(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
		_ = cmd.Process.Kill()
	}
}

// lockInstall takes an exclusive lock, shared by all test binaries of the
// repository at root, for installing the npm package.
func lockInstall(root string) (unlock func(), err error) {
	sum := sha256.Sum256([]byte(root))
	path := filepath.Join(os.TempDir(), "dynamotest-install-"+hex.EncodeToString(sum[:8])+".lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open install lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("take install lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}

// listenerOwnedBy reports whether the TCP socket listening on port belongs to
// process pid. known is false when /proc cannot tell.
func listenerOwnedBy(pid, port int) (owned, known bool) {
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" { // 0A: LISTEN
				continue
			}
			i := strings.LastIndexByte(fields[1], ':')
			if i < 0 {
				continue
			}
			if p, err := strconv.ParseUint(fields[1][i+1:], 16, 16); err == nil && int(p) == port {
				inodes[fields[9]] = true
			}
		}
		f.Close()
	}
	if len(inodes) == 0 {
		return false, false
	}
	fdDir := "/proc/" + strconv.Itoa(pid) + "/fd"
	entries, err := os.ReadDir(fdDir)
	if err != nil {
		return false, false
	}
	for _, e := range entries {
		link, err := os.Readlink(filepath.Join(fdDir, e.Name()))
		if err != nil || !strings.HasPrefix(link, "socket:[") {
			continue
		}
		if inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
			return true, true
		}
	}
	return false, true
}
