package main

// Graceful drain of the real binary under load.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tenantd/tenantd/internal/dynamotest"
	"github.com/tenantd/tenantd/internal/httpapi"
	"github.com/tenantd/tenantd/internal/testkit"
)

// drainOutcome is what a client saw of one request.
type drainOutcome struct {
	id, what string
	status   int
	err      error
	sentAt   time.Time
}

// TestGracefulDrain serves cmd/api (testkit.APIBinary) against DynamoDB Local and
// puts it under load; a slow request is in flight (its body still
// arriving) when SIGTERM comes. Then: /readyz answers 503 at once, while
// the process still runs; every request the server accepted (it logged it)
// completed at the client with its status, never a 5xx and never a reset
// mid-response; the slow request completes; the process exits 0 within
// SHUTDOWN_TIMEOUT.
func TestGracefulDrain(t *testing.T) {
	const (
		secret          = "drain-test-secret-0123456789abcdef"
		shutdownTimeout = 5 * time.Second
	)
	bin, table := testkit.APIBinary(t), newTable(t)

	addr := testkit.FreeAddr(t)
	base := "http://" + addr

	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "ADDR="+addr, "DYNAMODB_ENDPOINT="+dynamotest.Endpoint(), "DYNAMODB_TABLE="+table,
		"AUTH_HS256_SECRET="+secret, "AUTH_JWKS_URL=", "AUTH_ISSUER=", "AUTH_AUDIENCE=", "CURSOR_SECRET=drain-test-cursor-secret-0123456789abcdef",
		"SHUTDOWN_TIMEOUT="+shutdownTimeout.String(), "REQUEST_TIMEOUT=10s", "RATE_LIMIT_RPS=0", "RATE_LIMIT_CALLER_RPS=0", "LOG_LEVEL=info", "METRICS_ADDR=",
		"WEBHOOK_DISPATCHER=lambda", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local", "AWS_REGION=us-east-1")
	var stdout, stderr testkit.SyncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("server stdout (tail):\n%s\nstderr:\n%s", tail(stdout.String(), 30), stderr.String())
		}
	})

	probe := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	ready := time.Now().Add(2 * time.Minute) // a bound for a hang, not a speed: a busy machine is slow
	for {
		resp, err := probe.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-exited:
			t.Fatalf("the server exited before it was ready: %v\n%s", waitErr, stderr.String())
		default:
		}
		if time.Now().After(ready) {
			t.Fatalf("the server was not ready within 2m: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	now := time.Now()
	token, err := httpapi.MintHS256(secret, httpapi.Claims{Email: "drain@example.com", Name: "Drain", RegisteredClaims: jwt.RegisteredClaims{
		Subject: "drainer", IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))}})
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: 30 * time.Second}
	do := func(method, path, body string, extra http.Header) drainOutcome {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, base+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("drain-%d", reqSeq.Add(1))
		req.Header.Set("X-Request-Id", id)
		req.Header.Set("Authorization", "Bearer "+token)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		for k, v := range extra {
			req.Header[k] = v
		}
		o := drainOutcome{id: id, what: method + " " + path, sentAt: time.Now()}
		resp, err := hc.Do(req)
		if err != nil {
			o.err = err
			return o
		}
		defer resp.Body.Close()
		if _, err := io.ReadAll(resp.Body); err != nil {
			o.err = fmt.Errorf("reading the body of a %d: %w", resp.StatusCode, err)
		}
		o.status = resp.StatusCode
		return o
	}
	created := do(http.MethodPost, "/v1/orgs", `{"name":"Drained"}`, nil)
	if created.status != http.StatusCreated {
		t.Fatalf("create org: %d %v", created.status, created.err)
	}
	var org struct{ ID string }
	{
		r, _ := http.NewRequest(http.MethodGet, base+"/v1/me", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		var me struct {
			Orgs []struct {
				OrgID string `json:"orgId"`
			} `json:"orgs"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&me)
		resp.Body.Close()
		if len(me.Orgs) != 1 {
			t.Fatalf("me: %+v", me)
		}
		org.ID = me.Orgs[0].OrgID
	}

	// Load: 4 goroutines reading and writing until the process is gone.
	var mu sync.Mutex
	var outcomes []drainOutcome
	var loadWG sync.WaitGroup
	stopLoad := make(chan struct{})
	for g := range 4 {
		loadWG.Add(1)
		go func() {
			defer loadWG.Done()
			for i := 0; ; i++ {
				select {
				case <-stopLoad:
					return
				default:
				}
				var o drainOutcome
				if (g+i)%2 == 0 {
					o = do(http.MethodGet, "/v1/orgs/"+org.ID+"/tickets?limit=5", "", nil)
				} else {
					o = do(http.MethodPost, "/v1/orgs/"+org.ID+"/tickets", fmt.Sprintf(`{"title":"load %d-%d"}`, g, i), nil)
				}
				mu.Lock()
				outcomes = append(outcomes, o)
				mu.Unlock()
				if o.err != nil {
					select {
					case <-exited:
						return
					case <-time.After(5 * time.Millisecond): // no busy loop on a closed listener
					}
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond) // let the load run a moment

	// A slow request: headers and half its body now, the rest after SIGTERM.
	pr, pw := io.Pipe()
	slowDone := make(chan drainOutcome, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/orgs/"+org.ID+"/tickets", pr)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Request-Id", "drain-slow")
		o := drainOutcome{id: "drain-slow", what: "slow POST"}
		resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
		if err != nil {
			o.err = err
		} else {
			_, o.err = io.ReadAll(resp.Body)
			resp.Body.Close()
			o.status = resp.StatusCode
		}
		slowDone <- o
	}()
	if _, err := pw.Write([]byte(`{"title":"slow`)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the server has read the headers and is reading the body

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	termAt := time.Now()

	// Readiness: poll on fresh connections until the listener is gone.
	var probes []string
	for time.Since(termAt) < shutdownTimeout {
		resp, err := probe.Get(base + "/readyz")
		if err != nil {
			probes = append(probes, "error: "+err.Error())
			break
		}
		resp.Body.Close()
		probes = append(probes, fmt.Sprint(resp.StatusCode))
		if resp.StatusCode == http.StatusServiceUnavailable {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	if last := probes[len(probes)-1]; last != "503" {
		t.Errorf("readiness after SIGTERM: %v; want a 503 while the process still runs", compact(probes))
	}

	time.Sleep(300 * time.Millisecond)
	_, _ = pw.Write([]byte(` request"}`))
	_ = pw.Close()

	select {
	case <-exited:
	case <-time.After(shutdownTimeout + 5*time.Second):
		t.Fatalf("the process did not exit within %v of SIGTERM", shutdownTimeout+5*time.Second)
	}
	took := time.Since(termAt)
	close(stopLoad)
	loadWG.Wait()
	if waitErr != nil {
		t.Errorf("exit: %v (want status 0)\n%s", waitErr, stderr.String())
	}
	if took > shutdownTimeout+5*time.Second { // slack for a busy machine
		t.Errorf("exited %v after SIGTERM, SHUTDOWN_TIMEOUT is %v", took.Round(time.Millisecond), shutdownTimeout)
	}
	slow := <-slowDone
	if slow.err != nil || slow.status != http.StatusCreated {
		t.Errorf("the request in flight at SIGTERM: status %d, error %v; want 201", slow.status, slow.err)
	}

	// What the server accepted: its one log line per request.
	logged := map[string]int{}
	drained503 := 0
	sc := bufio.NewScanner(strings.NewReader(stdout.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Level     string `json:"level"`
			Msg       string `json:"msg"`
			Route     string `json:"route"`
			RequestID string `json:"clientRequestId"` // the X-Request-Id sent; the server has its own
			Status    int    `json:"status"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		if line.Msg == "request" {
			logged[line.RequestID] = line.Status
		}
		if line.Route == "/readyz" && line.Status == http.StatusServiceUnavailable {
			drained503++
			if line.Level != "INFO" {
				t.Errorf("a planned 503 of /readyz during the drain logged at %s, want INFO: %s", line.Level, sc.Bytes())
			}
		}
	}
	if drained503 == 0 {
		t.Error("no 503 of /readyz in the log: the drain's probes are not logged")
	}
	ok, refused, before := 0, 0, 0
	for _, o := range outcomes {
		status, accepted := logged[o.id]
		switch {
		case o.err != nil && accepted:
			t.Errorf("%s (%s): accepted (the server answered %d) but the client got %v", o.what, o.id, status, o.err)
		case o.err != nil:
			refused++ // never reached a handler: refused or closed before it was read
		case o.status >= 500:
			t.Errorf("%s (%s): %d during the drain", o.what, o.id, o.status)
		case accepted && status != o.status:
			t.Errorf("%s (%s): the server logged %d, the client got %d", o.what, o.id, status, o.status)
		default:
			ok++
			if o.sentAt.Before(termAt) {
				before++
			}
		}
	}
	if ok == 0 || before == 0 {
		t.Errorf("no request completed under load (%d outcomes): the test proves nothing", len(outcomes))
	}
	t.Logf("%d requests completed (%d sent before SIGTERM), %d refused once the listener closed; readiness probes %v; exit %v after SIGTERM",
		ok, before, refused, compact(probes), took.Round(time.Millisecond))
}

var reqSeq atomic.Int64

// compact shortens a run of equal probe results to "x N".
func compact(s []string) []string {
	var out []string
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && s[j] == s[i] {
			j++
		}
		if j-i > 1 {
			out = append(out, fmt.Sprintf("%s x%d", s[i], j-i))
		} else {
			out = append(out, s[i])
		}
		i = j
	}
	return out
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
