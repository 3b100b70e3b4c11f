package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tenantd/tenantd/internal/testkit"
)

// proc is a child process the bench started: DynamoDB Local or the API.
type proc struct {
	name   string
	cmd    *exec.Cmd
	url    string
	mURL   string // the API's metrics listener
	log    string
	exited chan struct{}
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// stop kills the child's process group (started with Setpgid) and waits.
func (p *proc) stop() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.exited:
		return
	case <-time.After(5 * time.Second):
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.exited
}

func (p *proc) tail() string {
	b, _ := os.ReadFile(p.log)
	s := strings.TrimSpace(string(b))
	if len(s) > 4000 {
		s = s[len(s)-4000:]
	}
	return s
}

// start runs cmd in its own process group with output to dir/<name>.log; the
// child dies with the bench (Pdeathsig).
func start(dir, name string, cmd *exec.Cmd) (*proc, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr, cmd.Stdin = f, f, nil
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	return p, nil
}

// waitHTTP polls url until any HTTP answer arrives (DynamoDB Local answers a
// bare GET with 400), the process exits or the timeout passes.
func (p *proc) waitHTTP(url string, timeout time.Duration) error {
	c := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited during startup (%v):\n%s", p.name, p.cmd.ProcessState, p.tail())
		default:
		}
		if resp, err := c.Get(url); err == nil {
			resp.Body.Close()
			if p.name != "api" || resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer on %s within %v:\n%s", p.name, url, timeout, p.tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// repoRoot walks up from the working directory to the go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod in %s or above", dir)
		}
	}
}

// buildAPI builds cmd/api into dir.
func buildAPI(ctx context.Context, root, dir string) (string, error) {
	bin := filepath.Join(dir, "api")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/api")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/api: %w", err)
	}
	return bin, nil
}

// apiEnv is the API's environment: the bench's without AWS credentials (the
// API then uses DynamoDB Local's dummy ones) plus the bench settings.
func apiEnv(ddb, addr, metricsAddr string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "AWS_") || strings.HasPrefix(kv, "DYNAMODB_") || strings.HasPrefix(kv, "RATE_LIMIT_") ||
			strings.HasPrefix(kv, "AUTH_") || strings.HasPrefix(kv, "CURSOR_SECRET=") || strings.HasPrefix(kv, "LOG_LEVEL=") ||
			strings.HasPrefix(kv, "ADDR=") || strings.HasPrefix(kv, "METRICS_ADDR=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "DYNAMODB_ENDPOINT="+ddb, "DYNAMODB_TABLE="+tableName, "ADDR="+addr, "METRICS_ADDR="+metricsAddr,
		"AUTH_HS256_SECRET="+jwtSecret, "CURSOR_SECRET="+cursorSecret, "RATE_LIMIT_RPS=0", "RATE_LIMIT_CALLER_RPS=0", "LOG_LEVEL=warn",
		"AWS_REGION="+region)
}

// startAPI runs `api migrate`, then `api serve` on a free port, with extra
// settings (VAR=value) over the bench's.
func startAPI(ctx context.Context, bin, dir, ddb string, extra ...string) (*proc, error) {
	mig := exec.CommandContext(ctx, bin, "migrate")
	mig.Env = apiEnv(ddb, "127.0.0.1:0", "")
	if out, err := mig.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("api migrate: %v: %s", err, out)
	}
	port, err := testkit.FreePort("127.0.0.1")
	if err != nil {
		return nil, err
	}
	mport, err := testkit.FreePort("127.0.0.1")
	if err != nil {
		return nil, err
	}
	addr, maddr := "127.0.0.1:"+strconv.Itoa(port), "127.0.0.1:"+strconv.Itoa(mport)
	cmd := exec.CommandContext(ctx, bin, "serve")
	cmd.Env = append(apiEnv(ddb, addr, maddr), extra...)
	p, err := start(dir, "api", cmd)
	if err != nil {
		return nil, err
	}
	p.url, p.mURL = "http://"+addr, "http://"+maddr
	if err := p.waitHTTP(p.url+"/readyz", 30*time.Second); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// cpuSeconds is pid's CPU time, user and system, in seconds.
func cpuSeconds(pid int) float64 { return testkit.PidCPU(pid).Seconds() }

// selfCPU is this process's CPU time (the load generator).
func selfCPU() float64 { return testkit.ProcessCPU().Seconds() }

// timeWaits counts TCP sockets in TIME_WAIT towards port: connections that
// a client closed (a churning connection pool leaves one per connection).
func timeWaits(port int) int {
	n := 0
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 4 || f[3] != "06" {
				continue
			}
			for _, addr := range f[1:3] {
				i := strings.LastIndexByte(addr, ':')
				if p, err := strconv.ParseUint(addr[i+1:], 16, 16); err == nil && int(p) == port {
					n++
					break
				}
			}
		}
	}
	return n
}

// busyCPU is the machine's non-idle CPU time in seconds (all processes).
func busyCPU() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0
	}
	var total float64
	for i, v := range f[1:] {
		x, _ := strconv.ParseFloat(v, 64)
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		if i >= 8 { // guest, guest_nice are already in user
			break
		}
		total += x
	}
	return total / 100
}
