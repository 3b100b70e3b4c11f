//go:build unix

package main

// Findings 3 and 4 of the outside attack, against the real binary and real
// sockets: metrics on their own listener; read, write and idle timeouts; a
// bound on connections; a drain that ends in time whatever is attached.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/golang-jwt/jwt/v5"

	"github.com/tenantd/tenantd/internal/dynamotest"
	"github.com/tenantd/tenantd/internal/httpapi"
	"github.com/tenantd/tenantd/internal/store"
	"github.com/tenantd/tenantd/internal/testkit"
)

const testSecret = "hardening-test-secret-0123456789abcdef"

// newTable creates a table in the shared DynamoDB Local, dropped at
// cleanup, with its stream off: the API that startAPI runs reads none.
func newTable(t *testing.T) string {
	t.Helper()
	db := store.NewClient(dynamotest.Config(t), store.Options{Endpoint: dynamotest.Endpoint()})
	table := dynamotest.TableName(t)
	if err := store.Migrate(context.Background(), db, table); err != nil {
		t.Fatal(err)
	}
	dynamotest.StreamOff(t, db, table)
	t.Cleanup(func() {
		_, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	return table
}

// apiProc is a running `api serve`.
type apiProc struct {
	addr, base     string
	cmd            *exec.Cmd
	stdout, stderr testkit.SyncBuffer
	exited         chan struct{}
	waitErr        error
}

// startAPI runs `api serve` on a free address against table, with env added
// to (and overriding) the defaults below, and waits until /readyz answers
// 200. The process is killed at cleanup if it still runs. By default it
// reads no stream (WEBHOOK_DISPATCHER=lambda): a test of webhooks sets
// WEBHOOK_DISPATCHER=local, on a table with its stream on.
func startAPI(t *testing.T, bin, table string, env ...string) *apiProc {
	t.Helper()
	return startAPIAt(t, testkit.FreeAddr(t), bin, table, env...)
}

// startAPIAt is startAPI on a given address (a restart on the same address).
func startAPIAt(t *testing.T, addr, bin, table string, env ...string) *apiProc {
	t.Helper()
	p := &apiProc{addr: addr, exited: make(chan struct{})}
	p.base = "http://" + p.addr
	p.cmd = exec.Command(bin, "serve")
	p.cmd.Env = append(os.Environ(), "ADDR="+p.addr, "DYNAMODB_ENDPOINT="+dynamotest.Endpoint(), "DYNAMODB_TABLE="+table,
		"AUTH_HS256_SECRET="+testSecret, "AUTH_JWKS_URL=", "AUTH_ISSUER=", "AUTH_AUDIENCE=",
		"CURSOR_SECRET=hardening-cursor-secret-0123456789abcdef", "RATE_LIMIT_RPS=0", "RATE_LIMIT_CALLER_RPS=0", "LOG_LEVEL=info",
		"METRICS_ADDR=", "WEBHOOK_DISPATCHER=lambda", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local", "AWS_REGION=us-east-1")
	p.cmd.Env = append(p.cmd.Env, env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.waitErr = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("server stdout (tail):\n%s\nstderr:\n%s", tail(p.stdout.String(), 20), p.stderr.String())
		}
	})
	probe := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	deadline := time.Now().Add(2 * time.Minute) // a bound for a hang, not a speed: a busy machine is slow
	for {
		resp, err := probe.Get(p.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-p.exited:
			t.Fatalf("the server exited before it was ready: %v\n%s", p.waitErr, p.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server was not ready within 2m: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// mintToken mints a bearer token for sub.
func mintToken(t *testing.T, sub string) string {
	t.Helper()
	now := time.Now()
	tok, err := httpapi.MintHS256(testSecret, httpapi.Claims{Email: sub + "@example.com", Name: sub, RegisteredClaims: jwt.RegisteredClaims{
		Subject: sub, IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))}})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// callAPI sends one request on a fresh connection and returns its status and body.
func callAPI(t *testing.T, method, url, token, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp.StatusCode, b
}

// bigTicketsOrg creates an org with n tickets whose descriptions are 20,000
// characters (the limit), so a page of them is large.
func bigTicketsOrg(t *testing.T, base, token string, n int) string {
	t.Helper()
	status, b := callAPI(t, http.MethodPost, base+"/v1/orgs", token, `{"name":"Hostile"}`)
	if status != http.StatusCreated {
		t.Fatalf("create org: %d %s", status, b)
	}
	var org struct{ ID string }
	if err := json.Unmarshal(b, &org); err != nil {
		t.Fatal(err)
	}
	desc := strings.Repeat("d", 20000)
	for i := range n {
		status, b := callAPI(t, http.MethodPost, base+"/v1/orgs/"+org.ID+"/tickets", token, fmt.Sprintf(`{"title":"big %d","description":"%s"}`, i, desc))
		if status != http.StatusCreated {
			t.Fatalf("create ticket: %d %s", status, b)
		}
	}
	return org.ID
}

// rawConn is a raw client connection.
type rawConn struct {
	net.Conn
	r *bufio.Reader
}

// dial connects to addr. With smallWindow the socket's receive buffer is
// made tiny before connecting, so a server writing to a client that does
// not read blocks at once instead of filling megabytes of buffers.
func dial(t *testing.T, addr string, smallWindow bool) *rawConn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second}
	if smallWindow {
		d.Control = func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
			return errors.Join(err, serr)
		}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &rawConn{Conn: c, r: bufio.NewReader(c)}
}

// roundTrip writes a complete request and reads its response within bound.
func (c *rawConn) roundTrip(raw string, bound time.Duration) (*http.Response, []byte, error) {
	_ = c.SetDeadline(time.Now().Add(bound))
	defer func() { _ = c.SetDeadline(time.Time{}) }()
	if _, err := io.WriteString(c, raw); err != nil {
		return nil, nil, err
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// closedWithin reads (and keeps) what the server sends until it ends the
// connection or bound passes. closed is false when bound passed first.
func (c *rawConn) closedWithin(bound time.Duration) (got []byte, closed bool, err error) {
	_ = c.SetReadDeadline(time.Now().Add(bound))
	got, err = io.ReadAll(c.r)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return got, false, err
	}
	return got, true, err // io.ReadAll: nil at EOF, or a reset
}

func getRequest(path, token string) string {
	s := "GET " + path + " HTTP/1.1\r\nHost: tenantd\r\n"
	if token != "" {
		s += "Authorization: Bearer " + token + "\r\n"
	}
	return s + "\r\n"
}

// slowBody is the head of a POST whose body of 200 bytes has only begun.
func slowBody(path, token string) string {
	s := "POST " + path + " HTTP/1.1\r\nHost: tenantd\r\nContent-Type: application/json\r\nContent-Length: 200\r\n"
	if token != "" {
		s += "Authorization: Bearer " + token + "\r\n"
	}
	return s + "\r\n" + `{"title":"`
}

// trickle writes one byte every interval until the connection fails or
// stop is closed: a body that never quite arrives.
func trickle(c net.Conn, interval time.Duration, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(interval):
		}
		_ = c.SetWriteDeadline(time.Now().Add(time.Second))
		if _, err := c.Write([]byte("x")); err != nil {
			return
		}
	}
}

// TestHardeningTimeouts: against the binary with READ_TIMEOUT=2s,
// WRITE_TIMEOUT=3s, IDLE_TIMEOUT=2s: a slow body, with or without a token,
// and a client that never reads a large page each lose their connection
// within a bound (the timeout plus slack); an idle keep-alive connection is
// closed. And the metrics are served on METRICS_ADDR, not on the API.
func TestHardeningTimeouts(t *testing.T) {
	const readTimeout, writeTimeout, idleTimeout = 2 * time.Second, 3 * time.Second, 2 * time.Second
	const slack = 8 * time.Second // the bound is the timeout plus this
	bin, table := testkit.APIBinary(t), newTable(t)
	// The setup, through a server with the normal deadlines: a busy
	// machine must not make it miss the short ones tested below.
	setup := startAPI(t, bin, table)
	token := mintToken(t, "hostile")
	org := bigTicketsOrg(t, setup.base, token, 25)
	_ = setup.cmd.Process.Kill()
	<-setup.exited
	metricsAddr := testkit.FreeAddr(t)
	p := startAPI(t, bin, table, "READ_TIMEOUT="+readTimeout.String(), "WRITE_TIMEOUT="+writeTimeout.String(),
		"IDLE_TIMEOUT="+idleTimeout.String(), "REQUEST_TIMEOUT=2s", "METRICS_ADDR="+metricsAddr)

	t.Run("metrics on their own listener", func(t *testing.T) {
		status, b := callAPI(t, http.MethodGet, "http://"+metricsAddr+"/metrics", "", "")
		if status != http.StatusOK || !strings.Contains(string(b), "tenantd_requests_total{") {
			t.Errorf("GET /metrics on METRICS_ADDR: %d, want 200 with tenantd_requests_total: %.300s", status, b)
		}
		if status, b := callAPI(t, http.MethodGet, p.base+"/metrics", "", ""); status != http.StatusNotFound {
			t.Errorf("GET /metrics on ADDR: %d, want 404: %.300s", status, b)
		}
	})
	for _, withToken := range []bool{true, false} {
		t.Run(fmt.Sprintf("slow body, token %v", withToken), func(t *testing.T) {
			tok := ""
			if withToken {
				tok = token
			}
			c := dial(t, p.addr, false)
			if _, err := io.WriteString(c, slowBody("/v1/orgs/"+org+"/tickets", tok)); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			defer close(stop)
			go trickle(c, 250*time.Millisecond, stop)
			began := time.Now()
			got, closed, err := c.closedWithin(readTimeout + slack)
			if !closed {
				t.Fatalf("the server still held the connection of a slow body after %v (READ_TIMEOUT %v): %v; got %q",
					time.Since(began).Round(time.Millisecond), readTimeout, err, got)
			}
			if strings.HasPrefix(string(got), "HTTP/1.1 201") {
				t.Errorf("a body that never arrived created something: %q", got)
			}
			t.Logf("closed after %v with %q", time.Since(began).Round(time.Millisecond), firstLine(got))
		})
	}
	t.Run("a client that never reads", func(t *testing.T) {
		// 60 pages of ~500 KB each, pipelined, and not one byte read.
		c := dial(t, p.addr, true)
		const n = 60
		var reqs strings.Builder
		for range n {
			reqs.WriteString(getRequest("/v1/orgs/"+org+"/tickets?limit=100", token))
		}
		go func() { _, _ = io.WriteString(c, reqs.String()) }()
		time.Sleep(writeTimeout + 2*time.Second) // never reading, past the write timeout
		began := time.Now()
		got, closed, err := c.closedWithin(slack + 12*time.Second)
		responses := strings.Count(string(got), "HTTP/1.1 200 OK\r\n")
		if !closed || responses >= n {
			t.Fatalf("a client that never read kept its connection past WRITE_TIMEOUT %v: closed %v (%v), %d of %d responses delivered (%d bytes)",
				writeTimeout, closed, err, responses, n, len(got))
		}
		t.Logf("the connection ended (%v) after %d of %d responses (%d bytes), %v after reading began",
			err, responses, n, len(got), time.Since(began).Round(time.Millisecond))
	})
	t.Run("idle keep-alive connection", func(t *testing.T) {
		c := dial(t, p.addr, false)
		resp, _, err := c.roundTrip(getRequest("/healthz", ""), 10*time.Second)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("healthz: %v %v", resp, err)
		}
		began := time.Now()
		if _, closed, err := c.closedWithin(idleTimeout + slack); !closed {
			t.Errorf("an idle connection was still open after %v (IDLE_TIMEOUT %v): %v", time.Since(began).Round(time.Millisecond), idleTimeout, err)
		}
	})
}

// TestHardeningConnectionLimitAndDrain: against the binary with
// MAX_CONNECTIONS=8 and long timeouts (60 s: they cannot save the drain).
// Eight hostile connections (slow bodies with and without a token, headers
// that never end, a client that never reads a pipeline of large pages, an
// idle one) hold every slot: a ninth client is not served while they do,
// and is as soon as one goes. Then SIGTERM with them all attached: the
// process exits 0 within SHUTDOWN_TIMEOUT.
func TestHardeningConnectionLimitAndDrain(t *testing.T) {
	const maxConns, shutdownTimeout = 8, 3 * time.Second
	bin, table := testkit.APIBinary(t), newTable(t)
	p := startAPI(t, bin, table, "MAX_CONNECTIONS=8", "READ_TIMEOUT=60s", "WRITE_TIMEOUT=60s", "IDLE_TIMEOUT=60s",
		"REQUEST_TIMEOUT=10s", "SHUTDOWN_TIMEOUT="+shutdownTimeout.String(), "DRAIN_DELAY=100ms")
	token := mintToken(t, "hostile")
	org := bigTicketsOrg(t, p.base, token, 10)

	// Each connection is first served one request (so it surely holds a
	// slot), then turns hostile.
	hostile := []func(c *rawConn){
		func(c *rawConn) { _, _ = io.WriteString(c, slowBody("/v1/orgs/"+org+"/tickets", token)) },
		func(c *rawConn) { _, _ = io.WriteString(c, slowBody("/v1/orgs/"+org+"/tickets", token)) },
		func(c *rawConn) { _, _ = io.WriteString(c, slowBody("/v1/orgs/"+org+"/tickets", "")) },
		func(c *rawConn) { _, _ = io.WriteString(c, slowBody("/v1/orgs/"+org+"/tickets", token)) },
		func(c *rawConn) { // never reads: 100 pages of ~200 KB
			var reqs strings.Builder
			for range 100 {
				reqs.WriteString(getRequest("/v1/orgs/"+org+"/tickets?limit=100", token))
			}
			go func() { _, _ = io.WriteString(c, reqs.String()) }()
		},
		func(c *rawConn) { _, _ = io.WriteString(c, slowBody("/v1/orgs/"+org+"/tickets", "")) }, // (an idle one would be reaped: TestIdleConnectionsAreReaped)
		func(c *rawConn) { _, _ = io.WriteString(c, slowBody("/v1/orgs/"+org+"/tickets", token)) },
	}
	open := func(turn func(*rawConn), smallWindow bool) *rawConn {
		c := dial(t, p.addr, smallWindow)
		resp, _, err := c.roundTrip(getRequest("/healthz", ""), 10*time.Second)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("first request of a connection: %v %v", resp, err)
		}
		turn(c)
		return c
	}
	var conns []*rawConn
	for i, h := range hostile {
		conns = append(conns, open(h, i == 4))
	}
	// (Headers that never end hold no slot under pressure: the guard
	// reaps them, TestIdleConnectionsAreReaped. Bodies and unread answers
	// are bounded by READ_TIMEOUT and WRITE_TIMEOUT instead.)
	last := open(func(c *rawConn) { _, _ = io.WriteString(c, slowBody("/v1/orgs/"+org+"/tickets", token)) }, false)
	time.Sleep(200 * time.Millisecond) // the hostile halves have arrived

	// A ninth client: not served while eight connections are held...
	ninth := dial(t, p.addr, false)
	if _, err := io.WriteString(ninth, "GET /healthz HTTP/1.1\r\nHost: tenantd\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = ninth.SetReadDeadline(time.Now().Add(time.Second))
	if resp, err := http.ReadResponse(ninth.r, nil); err == nil {
		t.Errorf("a ninth connection was served (%s) while %d were held: MAX_CONNECTIONS=%d bounds nothing", resp.Status, len(conns)+1, maxConns)
	}
	// ...and served once one of them goes.
	_ = last.Close()
	_ = ninth.SetReadDeadline(time.Now().Add(10 * time.Second))
	ninth.r.Reset(ninth.Conn)
	if resp, err := http.ReadResponse(ninth.r, nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("the ninth connection once a slot was free: %v %v", resp, err)
	}
	_ = ninth.Close()
	conns = append(conns, open(func(c *rawConn) { _, _ = io.WriteString(c, slowBody("/v1/orgs/"+org+"/tickets", token)) }, false))

	// SIGTERM with all eight attached.
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	termAt := time.Now()
	select {
	case <-p.exited:
	case <-time.After(shutdownTimeout + 15*time.Second):
		t.Fatalf("the process did not exit within %v of SIGTERM", shutdownTimeout+15*time.Second)
	}
	took := time.Since(termAt)
	if p.waitErr != nil {
		t.Errorf("exit after SIGTERM with hostile connections: %v, want status 0\nstderr: %s", p.waitErr, p.stderr.String())
	}
	if took > shutdownTimeout+5*time.Second { // slack for a busy machine; a drain that waited for the hostile clients would take 60 s
		t.Errorf("exited %v after SIGTERM; SHUTDOWN_TIMEOUT is %v", took.Round(time.Millisecond), shutdownTimeout)
	}
	t.Logf("exited (%v) %v after SIGTERM with %d hostile connections", p.waitErr, took.Round(time.Millisecond), len(conns))
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\r\n")
	return s
}

// TestReadyzIsNotAnAmplifier: /readyz needs no token, so it must not turn
// each probe into a DynamoDB call (DescribeTable is on the control plane,
// throttled per account: a flood would fail readiness on every replica).
// 500 probes from 20 connections ask DynamoDB at most once a second.
func TestReadyzIsNotAnAmplifier(t *testing.T) {
	maddr := testkit.FreeAddr(t)
	api := startAPI(t, testkit.APIBinary(t), newTable(t), "METRICS_ADDR="+maddr)
	began := time.Now()
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Timeout: 10 * time.Second}
			for range 25 {
				resp, err := c.Get(api.base + "/readyz")
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("/readyz: %d", resp.StatusCode)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(began)
	resp, err := http.Get("http://" + maddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var calls float64
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, `tenantd_dynamodb_call_duration_seconds_count{operation="DescribeTable"}`) {
			fmt.Sscan(strings.Fields(line)[1], &calls)
		}
	}
	// The start's own readiness probes count too: one more second.
	if limit := elapsed.Seconds() + 2; calls < 1 || calls > limit {
		t.Errorf("500 probes in %v made %v DescribeTable calls, want 1 to %.0f", elapsed.Round(time.Millisecond), calls, limit)
	}
	t.Logf("500 probes in %v: %v DescribeTable calls", elapsed.Round(time.Millisecond), calls)
}

// TestReadyzSurvivesHangups: probers that send GET /readyz and reset the
// connection at once (an unauthenticated caller, 20 a second) never make
// the check fail for a health checker probing meanwhile: the DynamoDB
// call behind it runs on a context of its own, not the hung-up prober's.
func TestReadyzSurvivesHangups(t *testing.T) {
	api := startAPI(t, testkit.APIBinary(t), newTable(t))
	addr := strings.TrimPrefix(api.base, "http://")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			c, err := net.Dial("tcp", addr)
			if err != nil {
				continue
			}
			_, _ = c.Write([]byte("GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n"))
			_ = c.(*net.TCPConn).SetLinger(0) // close = RST: the server sees the client gone
			_ = c.Close()
		}
	}()
	client := &http.Client{Timeout: 5 * time.Second}
	var failed, probes int
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		probes++
		resp, err := client.Get(api.base + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			failed++
		}
	}
	close(stop)
	wg.Wait()
	if failed > 0 {
		t.Errorf("%d of %d readiness probes failed while others hung up on /readyz", failed, probes)
	}
}

// TestIdleConnectionsAreReaped: connections that hold a slot without using
// it do not lock other clients out. MAX_CONNECTIONS sockets that each send
// one unauthenticated request and then idle (IDLE_TIMEOUT is a minute) or
// begin headers that never end, and more that connect and say nothing (a
// slowloris): a new client is still served
// within seconds, because under pressure the guard closes idle and silent
// connections (conns.go).
func TestIdleConnectionsAreReaped(t *testing.T) {
	const maxConns = 16
	p := startAPI(t, testkit.APIBinary(t), newTable(t), fmt.Sprintf("MAX_CONNECTIONS=%d", maxConns), "IDLE_TIMEOUT=60s", "READ_TIMEOUT=60s", "WRITE_TIMEOUT=60s")
	for i := range maxConns {
		c := dial(t, p.addr, false)
		if i%2 == 0 { // served once, then idle
			resp, _, err := c.roundTrip(getRequest("/healthz", ""), 10*time.Second)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("first request of idle connection %d: %v %v", i, resp, err)
			}
			if i%4 == 0 { // then the headers of a request that never end
				_, _ = io.WriteString(c, "GET /v1/me HTTP/1.1\r\nHost: tenantd\r\n")
			}
		} // else: connected, silent
	}
	began := time.Now()
	probe := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := probe.Get(p.base + "/healthz")
	if err != nil {
		t.Fatalf("a new client while %d connections idle: %v", maxConns, err)
	}
	resp.Body.Close()
	// 10 s: slack for a busy machine; without the reaping it would wait
	// for the 60 s timeouts.
	if waited := time.Since(began); resp.StatusCode != http.StatusOK || waited > 10*time.Second {
		t.Errorf("a new client while %d connections idle: %d after %v", maxConns, resp.StatusCode, waited)
	}
}

// TestStalledClientsAreReaped: clients that hold a connection by stalling
// the server on themselves (a body trickling in a byte every half second,
// or answers never read, with READ_TIMEOUT and WRITE_TIMEOUT at a minute)
// do not lock other clients out: under pressure the guard closes the
// connections stalled on their client for 2 s.
func TestStalledClientsAreReaped(t *testing.T) {
	const maxConns = 16
	p := startAPI(t, testkit.APIBinary(t), newTable(t), fmt.Sprintf("MAX_CONNECTIONS=%d", maxConns), "IDLE_TIMEOUT=60s", "READ_TIMEOUT=60s", "WRITE_TIMEOUT=60s")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { close(stop); wg.Wait() }()
	for i := range maxConns {
		if i%2 == 0 { // a body of 60,000 bytes, a byte every half second
			c := dial(t, p.addr, false)
			if _, err := io.WriteString(c, "POST /v1/orgs HTTP/1.1\r\nHost: tenantd\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n{"); err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					case <-time.After(500 * time.Millisecond):
					}
					if _, err := io.WriteString(c, " "); err != nil {
						return // reaped
					}
				}
			})
			continue
		}
		// Answers never read: 200 pipelined GETs of the spec into a tiny
		// receive window.
		c := dial(t, p.addr, true)
		wg.Go(func() {
			for range 200 {
				if _, err := io.WriteString(c, getRequest("/openapi.yaml", "")); err != nil {
					return
				}
			}
		})
	}
	time.Sleep(time.Second) // every slot taken, every stall begun
	began := time.Now()
	probe := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 20 * time.Second}
	resp, err := probe.Get(p.base + "/healthz")
	if err != nil {
		t.Fatalf("a new client while %d connections stall: %v", maxConns, err)
	}
	resp.Body.Close()
	// 10 s: slack for a busy machine; without the reaping it would wait
	// for the 60 s timeouts.
	if waited := time.Since(began); resp.StatusCode != http.StatusOK || waited > 10*time.Second {
		t.Errorf("a new client while %d connections stall: %d after %v", maxConns, resp.StatusCode, waited)
	} else {
		t.Logf("served after %v", waited.Round(time.Millisecond))
	}
}

// TestLogIsJSON: everything `api serve` logs is a JSON line on stdout,
// what logs through slog's default logger included: here the JWKS fetch
// that fails (AUTH_JWKS_URL names a closed port), before the server is up.
func TestLogIsJSON(t *testing.T) {
	api := startAPI(t, testkit.APIBinary(t), newTable(t), "AUTH_HS256_SECRET=", "AUTH_JWKS_URL=http://"+testkit.FreeAddr(t)+"/jwks.json")
	if s := api.stderr.String(); s != "" {
		t.Errorf("stderr: %s", s)
	}
	found := false
	for _, line := range strings.Split(strings.TrimSpace(api.stdout.String()), "\n") {
		var rec struct{ Msg string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("not a JSON line: %q", line)
			continue
		}
		found = found || strings.HasPrefix(rec.Msg, "jwks: fetch failed")
	}
	if !found {
		t.Errorf("no JSON line for the failed JWKS fetch in:\n%s", api.stdout.String())
	}
}
