package httpapi_test

// Finding 5 of the outside attack: a DynamoDB that cannot be reached
// (refused, hung, throttling) is a 503 with Retry-After, always, also once
// the SDK's retry quota is spent; a client that goes away is not a server
// error.

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/tenantd/tenantd/client"
	"github.com/tenantd/tenantd/internal/dynamotest"
)

// countingTransport counts the HTTP attempts of the DynamoDB client.
type countingTransport struct {
	base     http.RoundTripper
	attempts atomic.Int64
}

func (c *countingTransport) wrap(base http.RoundTripper) http.RoundTripper { c.base = base; return c }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.attempts.Add(1)
	return c.base.RoundTrip(r)
}

// TestDynamoDBRefused points the server at a closed local port:
// every call is refused. Sixty requests at once spend the SDK's retry
// quota, after which calls fail at their first attempt with the quota
// error joined to the connection's: every answer, before and after, is a
// 503 problem with Retry-After, reads and writes alike.
func TestDynamoDBRefused(t *testing.T) {
	count := &countingTransport{}
	var logs logBuffer
	ts := MustServer(t, withEndpoints(closedPort(t), ""), withTransport(count.wrap), withLog(&logs))
	a := ts.Actor(t, "refused") // a token: no DynamoDB call
	hc := &http.Client{Timeout: 30 * time.Second}

	var counts statusCounts
	parallel(60, func(int) {
		r := doReqE(hc, http.MethodGet, ts.URL+"/v1/orgs/"+randULID(), a.Token, nil, "")
		if r.Err != nil {
			t.Errorf("GET: %v", r.Err)
			return
		}
		counts.add(r.Status)
		want503(t, "GET with DynamoDB refusing connections", r.Response)
	})
	exhausted := false
	for i := range 10 {
		ts.Rec.Reset()
		before := count.attempts.Load()
		r := doReq(t, hc, http.MethodGet, ts.URL+"/v1/orgs/"+randULID(), a.Token, nil, "")
		if calls := int64(ts.Rec.Count()); calls > 0 && count.attempts.Load()-before == calls {
			exhausted = true // no retry of any call: the quota is spent
		}
		counts.add(r.Status)
		want503(t, "GET with DynamoDB refusing connections, quota spent", r)
		if i == 0 {
			t.Logf("after the storm: %d %s", r.Status, r.Body)
		}
	}
	if !exhausted {
		t.Errorf("the retry quota was never exhausted (statuses %s): the test proves nothing", &counts)
	}
	want503(t, "POST /v1/orgs", doReq(t, hc, http.MethodPost, ts.URL+"/v1/orgs", a.Token, nil, `{"name":"Refused"}`))
	want503(t, "GET /v1/me", doReq(t, hc, http.MethodGet, ts.URL+"/v1/me", a.Token, nil, ""))
	if r := doReq(t, hc, http.MethodGet, ts.URL+"/readyz", "", nil, ""); r.Status != http.StatusServiceUnavailable {
		t.Errorf("/readyz: %d, want 503", r.Status)
	}
	no500(t, ts)
	if n := len(logs.Lines(`"status":500`)); n > 0 {
		t.Errorf("%d log line(s) report a 500, e.g. %v", n, logs.Lines(`"status":500`)[0])
	}
}

// TestDynamoDBPaused runs its own DynamoDB Local and stops it
// (SIGSTOP): connections are accepted, nothing answers. Each request ends
// at its deadline with a 503. A client that gives up and goes away first is
// logged as 499 (client closed request) at info level, never as a 500 or
// at error level, and never counted as a 5xx. The setup, before the pause,
// has the service's normal deadline; the requests the pause must end go to
// a twin server with a short one.
func TestDynamoDBPaused(t *testing.T) {
	t.Parallel() // mostly waits: see TestMain
	const deadline = 2 * time.Second
	local := dynamotest.StartLocal(t)
	var logs logBuffer
	setup := MustServer(t, withEndpoints(local.Endpoint(), local.Endpoint()), withLog(&logs))
	a := setup.Actor(t, "paused")
	org := MustOrg(t, a.C, "Paused").Id
	hc := &http.Client{Timeout: 30 * time.Second}
	ts := setup.Twin(t, deadline)
	if r := doReq(t, hc, http.MethodGet, ts.URL+"/v1/orgs/"+org, a.Token, nil, ""); r.Status != http.StatusOK {
		t.Fatalf("before the pause: %d %s", r.Status, r.Body)
	}

	pid := local.PID()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) }) // before the table is dropped and the process stopped

	t.Run("requests end at their deadline with 503", func(t *testing.T) {
		for _, c := range []struct{ method, path, body string }{
			{http.MethodGet, "/v1/orgs/" + org, ""},
			{http.MethodPost, "/v1/orgs/" + org + "/tickets", `{"title":"paused"}`},
			{http.MethodGet, "/v1/orgs/" + org + "/tickets", ""},
			{http.MethodPost, "/v1/orgs", `{"name":"Paused too"}`},
		} {
			began := time.Now()
			r := doReq(t, hc, c.method, ts.URL+c.path, a.Token, nil, c.body)
			want503(t, c.method+" "+c.path, r)
			// Slack for a busy machine; a request the deadline did not end
			// would wait for the client's 30 s.
			if took := time.Since(began); took > deadline+10*time.Second {
				t.Errorf("%s %s: answered after %v, the deadline is %v", c.method, c.path, took.Round(time.Millisecond), deadline)
			}
		}
	})

	t.Run("a client that goes away", func(t *testing.T) {
		id := "gone." + randHex(8)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/v1/orgs/"+org+"/teams", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+a.Token)
		req.Header.Set("X-Request-Id", id)
		if resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req); err == nil {
			resp.Body.Close()
			t.Fatalf("the request was answered (%d) although DynamoDB is stopped", resp.StatusCode)
		}
		var line map[string]any
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			for _, l := range logs.Lines(id) {
				if l["msg"] == "request" {
					line = l
				}
			}
			if line != nil {
				break
			}
		}
		if line == nil {
			t.Fatalf("no request log line for %s within 10s", id)
		}
		if line["status"] != float64(499) || line["level"] != "INFO" {
			t.Errorf("request log line of a client that went away: status %v at %v, want 499 at INFO: %v", line["status"], line["level"], line)
		}
		for _, l := range logs.Lines(id) {
			if lvl := l["level"]; lvl == "ERROR" || lvl == "WARN" || l["status"] == float64(500) {
				t.Errorf("a client that went away was logged as a server error: %v", l)
			}
		}
		got := requestsByCode(t, ts.Registry, map[string]string{"method": "GET", "route": "/v1/orgs/:orgId/teams"})
		for code, n := range got {
			if strings.HasPrefix(code, "5") {
				t.Errorf("a client that went away counted as %s (%v)", code, n)
			}
		}
		if got["499"] != 1 {
			t.Errorf("tenantd_requests_total{route=/v1/orgs/:orgId/teams} by code: %v, want 499: 1", got)
		}
	})
	no500(t, ts)
}

// TestWriteOutcomeUnknown: DynamoDB Local is stopped (SIGSTOP) the moment
// a PATCH's transaction goes out to it, so the request reaches its
// deadline with the write sent and unanswered. The 503 says the write may
// still be applied (write_outcome_unknown), not merely "retry later": an
// outside attack saw such a write applied once DynamoDB resumed.
func TestWriteOutcomeUnknown(t *testing.T) {
	t.Parallel() // mostly waits: see TestMain
	const deadline = 2 * time.Second
	local := dynamotest.StartLocal(t)
	pid := local.PID()
	var armed, paused atomic.Bool
	pause := func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if armed.Load() && strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".TransactWriteItems") && paused.CompareAndSwap(false, true) {
				if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
					return nil, err
				}
			}
			return rt.RoundTrip(r)
		})
	}
	setup := MustServer(t, withEndpoints(local.Endpoint(), local.Endpoint()), withTransport(pause))
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	a := setup.Actor(t, "outcome")
	org := MustOrg(t, a.C, "Outcome").Id
	tk := MustTicket(t, a.C, org, client.TicketCreate{Title: "Before"})
	ts := setup.Twin(t, deadline) // the setup above had the normal deadline
	armed.Store(true)
	r := doReq(t, &http.Client{Timeout: 30 * time.Second}, http.MethodPatch, ts.URL+"/v1/orgs/"+org+"/tickets/"+tk.Id, a.Token, nil, `{"title":"After"}`)
	_ = syscall.Kill(pid, syscall.SIGCONT)
	if !paused.Load() {
		t.Fatal("the PATCH sent no transaction")
	}
	want503(t, "PATCH with its transaction unanswered", r)
	if c := problemCode(r.Body); c != "write_outcome_unknown" {
		t.Errorf("problem code %q, want write_outcome_unknown: %s", c, truncate(r.Body))
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestThrottledAfterRetries: DynamoDB throttles every call. Sixty
// requests at once spend the retry quota (throttling retries cost 5 tokens
// of 500); before and after, every answer is a 503 with Retry-After.
func TestThrottledAfterRetries(t *testing.T) {
	t.Parallel() // mostly waits: see TestMain
	faults := newFaults()
	ts := MustServer(t, withTransport(faults.wrap))
	a := ts.Actor(t, "throttled")
	org := MustOrg(t, a.C, "Throttled").Id
	faults.set(only(faultThrottle))
	defer faults.set(nil)
	hc := &http.Client{Timeout: 30 * time.Second}
	parallel(60, func(int) {
		r := doReqE(hc, http.MethodGet, ts.URL+"/v1/orgs/"+org, a.Token, nil, "")
		if r.Err != nil {
			t.Errorf("GET: %v", r.Err)
			return
		}
		want503(t, "GET, always throttled", r.Response)
	})
	exhausted := false
	for range 10 {
		ts.Rec.Reset()
		before := faults.attempts.Load()
		want503(t, "GET, always throttled, quota spent", doReq(t, hc, http.MethodGet, ts.URL+"/v1/orgs/"+org, a.Token, nil, ""))
		if calls := int64(ts.Rec.Count()); calls > 0 && faults.attempts.Load()-before == calls {
			exhausted = true
		}
	}
	if !exhausted {
		t.Error("the retry quota was never exhausted: the test proves nothing")
	}
	faults.set(only(faultThrottle, "TransactWriteItems"))
	want503(t, "POST, writes always throttled, quota spent", doReq(t, hc, http.MethodPost, ts.URL+"/v1/orgs/"+org+"/tickets", a.Token, nil, `{"title":"throttled"}`))
	no500(t, ts)
}

// TestDeploymentFaults: faults of the deployment rather than of the
// moment (the table is missing, the service's credentials are refused, an
// answer that is not DynamoDB's) are 503 with Retry-After too, never a 500.
// (Found by an outside attack.)
func TestDeploymentFaults(t *testing.T) {
	faults := newFaults()
	ts := MustServer(t, withTransport(faults.wrap))
	w := MustWorld(t, ts, "Misconfigured")
	org := w.Org.Id
	requests := func(what string) {
		t.Helper()
		for _, r := range []struct{ method, path, body string }{
			{http.MethodGet, "/v1/orgs/" + org + "/tickets", ""},
			{http.MethodPost, "/v1/orgs/" + org + "/tickets", `{"title":"t"}`},
			{http.MethodGet, "/v1/me", ""},
		} {
			want503(t, what+": "+r.method+" "+r.path, doReq(t, ts.HTTP, r.method, ts.URL+r.path, w.Member.Token, nil, r.body))
		}
	}
	for _, f := range []struct {
		name  string
		fault faultKind
	}{{"credentials refused", faultBadCredentials}, {"not DynamoDB's answer", faultGarbage}} {
		faults.set(only(f.fault))
		requests(f.name)
		faults.set(nil)
	}
	// The table itself gone (a real ResourceNotFoundException).
	if _, err := ts.Raw.DeleteTable(bg, &dynamodb.DeleteTableInput{TableName: aws.String(ts.Table)}); err != nil {
		t.Fatal(err)
	}
	requests("no table")
}

// TestUnavailableEveryOperation, generated from the spec: every operation
// that documents 503 answers it, with Retry-After, when DynamoDB refuses
// the service (here: its credentials), never a 500.
func TestUnavailableEveryOperation(t *testing.T) {
	faults := newFaults()
	ts := MustServer(t, withTransport(faults.wrap))
	w := MustWorld(t, ts, "Unreachable")
	ids := worldIDs(t, w)
	faults.set(only(faultBadCredentials))
	defer faults.set(nil)
	for _, op := range opsDocumenting(t, http.StatusServiceUnavailable) {
		spec(t, "503/"+op.ID+"/DynamoDB refuses the service", func(t *testing.T) {
			body := bodyOfOp(op, ids)
			if op.ID == "graphql" {
				// A document all of whose fields need DynamoDB (me answers
				// from the token).
				body = strings.NewReader(`{"query":"query($o: ID!) { org(id: $o) { name } }","variables":{"o":"` + ids.OrgID + `"}}`)
			}
			want503(t, op.Method+" "+op.Path, doOp(t, w.Owner.HTTP, ts.URL, op, ids, body, nil))
		})
	}
	no500(t, ts)
}
