package httpapi_test

// Faults from DynamoDB, injected at the SDK's HTTP layer, so the
// SDK's real retryer (standard, with RetryTxConflicts) runs.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tenantd/tenantd/client"
)

// faultKind is what faultTransport does with one HTTP attempt of a
// DynamoDB call.
type faultKind int

const (
	faultPass            faultKind = iota // forward to DynamoDB Local
	faultThrottle                         // 400 ProvisionedThroughputExceededException
	faultInternal                         // 500 InternalServerError (DynamoDB's own 5xx type)
	faultInternalFailure                  // 500 InternalFailure (the AWS common error)
	faultUnavailableBare                  // 503 with an empty body (a proxy or load balancer)
	faultHang                             // no answer until the request's context ends
	faultTxThrottled                      // 400 TransactionCanceledException, ThrottlingError in the middle
	faultTxConflict                       // 400 TransactionCanceledException, TransactionConflict in the middle
	faultLostResponse                     // forward (the write happens), then answer 500 InternalServerError
	faultBadCredentials                   // 400 UnrecognizedClientException (the service\'s credentials are refused)
	faultGarbage                          // 200 with a body that is not DynamoDB\'s (a proxy\'s page)
	faultCommitThenHang                   // forward (the write happens), then no answer until the request's context ends
)

// faultTransport answers the DynamoDB client's HTTP attempts as decide
// says, with responses shaped like DynamoDB's own.
type faultTransport struct {
	base http.RoundTripper
	// decide gets the operation (e.g. "TransactWriteItems") and the SDK's
	// attempt number of the call (1 for the first try, 2 for the first
	// retry...).
	decide   atomic.Pointer[func(op string, attempt int) faultKind]
	attempts atomic.Int64 // every attempt
	injected atomic.Int64 // attempts answered with a fault
	hanging  atomic.Int64 // attempts hanging right now
	// hangCap bounds a hang whose context never ends (default 3 s).
	hangCap time.Duration
}

func newFaults() *faultTransport { return &faultTransport{} }

// set changes the decision for the next attempts (nil: pass everything).
func (f *faultTransport) set(decide func(op string, attempt int) faultKind) { f.decide.Store(&decide) }

// wrap is the withTransport option.
func (f *faultTransport) wrap(base http.RoundTripper) http.RoundTripper { f.base = base; return f }

func (f *faultTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	f.attempts.Add(1)
	op := strings.TrimPrefix(req.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	attempt := 1
	if v, ok := strings.CutPrefix(req.Header.Get("Amz-Sdk-Request"), "attempt="); ok {
		n, _, _ := strings.Cut(v, ";")
		attempt, _ = strconv.Atoi(n)
	}
	fault := faultPass
	if d := f.decide.Load(); d != nil && *d != nil {
		fault = (*d)(op, attempt)
	}
	if fault == faultPass {
		return f.base.RoundTrip(req)
	}
	f.injected.Add(1)
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		_ = req.Body.Close()
	}
	switch fault {
	case faultThrottle:
		return awsError(req, 400, "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
			"The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.", nil), nil
	case faultInternal:
		return awsError(req, 500, "com.amazonaws.dynamodb.v20120810#InternalServerError", "Internal server error", nil), nil
	case faultInternalFailure:
		return awsError(req, 500, "com.amazon.coral.service#InternalFailure", "", nil), nil
	case faultUnavailableBare:
		return &http.Response{StatusCode: 503, Status: "503 Service Unavailable", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{"Content-Length": {"0"}}, Body: io.NopCloser(bytes.NewReader(nil)), Request: req}, nil
	case faultHang:
		f.hanging.Add(1)
		defer f.hanging.Add(-1)
		limit := f.hangCap
		if limit == 0 {
			limit = 3 * time.Second
		}
		select {
		case <-req.Context().Done():
			return nil, req.Context().Err()
		case <-time.After(limit):
			return nil, fmt.Errorf("faultTransport: %s hung for %v and its context never ended", op, limit)
		}
	case faultTxThrottled, faultTxConflict:
		var in struct{ TransactItems []json.RawMessage }
		_ = json.Unmarshal(body, &in)
		code, msg := "ThrottlingError", "Throughput exceeds the current capacity for one or more global secondary indexes. DynamoDB is automatically scaling your index so please try again shortly."
		if fault == faultTxConflict {
			code, msg = "TransactionConflict", "Transaction is ongoing for the item"
		}
		reasons := make([]map[string]string, max(len(in.TransactItems), 2))
		codes := make([]string, len(reasons))
		for i := range reasons {
			reasons[i], codes[i] = map[string]string{"Code": "None"}, "None"
		}
		mid := len(reasons) / 2
		reasons[mid], codes[mid] = map[string]string{"Code": code, "Message": msg}, code
		return awsError(req, 400, "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
			"Transaction cancelled, please refer cancellation reasons for specific reasons ["+strings.Join(codes, ", ")+"]",
			map[string]any{"CancellationReasons": reasons}), nil
	case faultBadCredentials:
		return awsError(req, 400, "com.amazon.coral.service#UnrecognizedClientException", "The security token included in the request is invalid.", nil), nil
	case faultGarbage:
		b := []byte("<html><body>502 Bad Gateway</body></html>")
		return &http.Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{"Content-Type": {"text/html"}, "Content-Length": {strconv.Itoa(len(b))}},
			Body:   io.NopCloser(bytes.NewReader(b)), ContentLength: int64(len(b)), Request: req}, nil
	case faultCommitThenHang:
		req2 := req.Clone(req.Context())
		req2.Body = io.NopCloser(bytes.NewReader(body))
		req2.ContentLength = int64(len(body))
		resp, err := f.base.RoundTrip(req2)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
		<-req.Context().Done()
		return nil, req.Context().Err()
	case faultLostResponse:
		req2 := req.Clone(req.Context())
		req2.Body = io.NopCloser(bytes.NewReader(body))
		req2.ContentLength = int64(len(body))
		resp, err := f.base.RoundTrip(req2)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return awsError(req, 500, "com.amazonaws.dynamodb.v20120810#InternalServerError", "Internal server error", nil), nil
	}
	return nil, fmt.Errorf("faultTransport: unknown fault %d", fault)
}

// awsError is an error response as DynamoDB sends it (awsJson1_0).
func awsError(req *http.Request, status int, typ, msg string, extra map[string]any) *http.Response {
	m := map[string]any{"__type": typ}
	if msg != "" {
		m["message"] = msg
	}
	for k, v := range extra {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	short := typ[strings.LastIndex(typ, "#")+1:]
	h := http.Header{
		"Content-Type":     {"application/x-amz-json-1.0"},
		"Content-Length":   {strconv.Itoa(len(b))},
		"X-Amzn-Requestid": {fmt.Sprintf("HFAULT%026d", time.Now().UnixNano())},
		"X-Amzn-Errortype": {short + ":"},
	}
	return &http.Response{StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), Proto: "HTTP/1.1",
		ProtoMajor: 1, ProtoMinor: 1, Header: h, Body: io.NopCloser(bytes.NewReader(b)), ContentLength: int64(len(b)), Request: req}
}

// want503 asserts the answer to a database that does not answer well.
func want503(t *testing.T, what string, r apiResp) {
	t.Helper()
	if r.Status != http.StatusServiceUnavailable {
		t.Errorf("%s: status %d, want 503: %s", what, r.Status, truncate(r.Body))
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, problemJSON) {
		t.Errorf("%s: content type %q, want %s", what, ct, problemJSON)
	}
	if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 {
		t.Errorf("%s: Retry-After %q, want a number of seconds", what, r.Header.Get("Retry-After"))
	}
	if c := problemCode(r.Body); c == "" || c == "internal" {
		t.Errorf("%s: problem code %q", what, c)
	}
}

// only returns a decision that applies fault to the operations named (all
// when none) on every attempt.
func only(fault faultKind, ops ...string) func(string, int) faultKind {
	return func(op string, _ int) faultKind {
		if len(ops) == 0 {
			return fault
		}
		for _, o := range ops {
			if o == op {
				return fault
			}
		}
		return faultPass
	}
}

// TestFaults injects DynamoDB's failures under the SDK's real
// retryer and checks what the API answers and what the table holds.
func TestFaults(t *testing.T) {
	t.Parallel() // mostly waits: see TestMain
	faults := newFaults()
	ts := MustServer(t, withTransport(faults.wrap))
	w := MustWorld(t, ts, "Faulty")
	org := w.Org.Id
	hc := validating(t, &http.Client{}) // the retries' answers too are held to the contract
	get := func() apiResp { return doReq(t, hc, http.MethodGet, ts.URL+"/v1/orgs/"+org, w.Member.Token, nil, "") }
	post := func(title string, h http.Header) apiResp {
		return doReq(t, hc, http.MethodPost, ts.URL+"/v1/orgs/"+org+"/tickets", w.Member.Token, h, `{"title":"`+title+`","teamId":"`+w.Team.Id+`"}`)
	}
	tickets := func(title string) int {
		n := 0
		for _, it := range itemsOf(t, ts, "Ticket", org) {
			if it.Str("title") == title {
				n++
			}
		}
		return n
	}
	defer faults.set(nil)

	t.Run("transient throttling is retried", func(t *testing.T) {
		faults.set(func(op string, attempt int) faultKind {
			if attempt == 1 {
				return faultThrottle
			}
			return faultPass
		})
		ts.Rec.Reset()
		before := faults.attempts.Load()
		r := get()
		if r.Status != http.StatusOK {
			t.Fatalf("GET with every first attempt throttled: %d %s", r.Status, r.Body)
		}
		calls, attempts := int64(ts.Rec.Count()), faults.attempts.Load()-before
		if calls == 0 || attempts != 2*calls {
			t.Errorf("%d DynamoDB calls made %d attempts, want %d (each retried once)", calls, attempts, 2*calls)
		}
	})
	t.Run("transient 5xx and transaction conflicts are retried", func(t *testing.T) {
		faults.set(func(op string, attempt int) faultKind {
			switch {
			case attempt == 1 && op == "TransactWriteItems":
				return faultTxConflict
			case attempt == 1:
				return faultInternal
			}
			return faultPass
		})
		ts.Rec.Reset()
		before := faults.attempts.Load()
		r := post("retried", nil)
		faults.set(nil)
		if r.Status != http.StatusCreated {
			t.Fatalf("POST with every first attempt failing: %d %s", r.Status, r.Body)
		}
		if calls, attempts := int64(ts.Rec.Count()), faults.attempts.Load()-before; attempts != 2*calls {
			t.Errorf("%d calls, %d attempts; want each retried once", calls, attempts)
		}
		if n := tickets("retried"); n != 1 {
			t.Errorf("tickets created: %d, want 1", n)
		}
	})
	t.Run("persistent throttling is a 503", func(t *testing.T) {
		faults.set(only(faultThrottle))
		ts.Rec.Reset()
		before := faults.attempts.Load()
		want503(t, "GET, always throttled", get())
		// The authorization read makes the standard retryer's 3 attempts;
		// the route's own read beside it is cancelled when that decision
		// (unavailable) arrives, so it may make fewer.
		if a, calls := faults.attempts.Load()-before, int64(ts.Rec.Count()); calls == 0 || a < 3 || a > 3*calls {
			t.Errorf("attempts: %d for %d call(s), want the standard retryer's 3 for the authorization read, at most 3 each", a, calls)
		}
		faults.set(only(faultThrottle, "TransactWriteItems"))
		want503(t, "POST, writes always throttled", post("throttled", nil))
		faults.set(only(faultTxThrottled, "TransactWriteItems"))
		want503(t, "POST, transactions always cancelled for throttling", post("throttled", nil))
		faults.set(nil)
		if n := tickets("throttled"); n != 0 {
			t.Errorf("refused creates left %d ticket(s)", n)
		}
	})
	t.Run("persistent 5xx of every shape is a 503", func(t *testing.T) {
		for name, f := range map[string]faultKind{"InternalServerError": faultInternal, "InternalFailure": faultInternalFailure, "bare 503": faultUnavailableBare} {
			faults.set(only(f))
			want503(t, name+" on the authorization read", get())
			faults.set(only(f, "TransactWriteItems"))
			want503(t, name+" on the write", post("failing "+name, nil))
			faults.set(nil)
			if n := tickets("failing " + name); n != 0 {
				t.Errorf("%s: %d ticket(s) created", name, n)
			}
		}
	})

	t.Run("a cancelled transaction writes nothing", func(t *testing.T) {
		// A ticket: item, GSI keys, the team's listing, the audit event,
		// all or nothing.
		before := tenantItems(t, ts, org)
		auditsBefore := len(itemsOf(t, ts, "AuditEvent", org))
		faults.set(only(faultTxThrottled, "TransactWriteItems"))
		want503(t, "createTicket", post("half-written", nil))
		want503(t, "createComment", doReq(t, hc, http.MethodPost, ts.URL+"/v1/orgs/"+org+"/tickets/"+w.Ticket.Id+"/comments", w.Member.Token, nil, `{"body":"half-written"}`))
		want503(t, "putTeamMember", doReq(t, hc, http.MethodPut, ts.URL+"/v1/orgs/"+org+"/teams/"+w.Team.Id+"/members/"+w.Member.ID, w.Owner.Token, nil, `{"role":"member"}`))
		want503(t, "removeOrgUser", doReq(t, hc, http.MethodDelete, ts.URL+"/v1/orgs/"+org+"/users/"+w.Assignee.ID, w.Owner.Token, nil, ""))
		faults.set(nil)
		if after := tenantItems(t, ts, org); after != before {
			t.Errorf("cancelled transactions changed the table:\n%s", diff(before, after))
		}
		if n := len(itemsOf(t, ts, "AuditEvent", org)); n != auditsBefore {
			t.Errorf("cancelled transactions wrote %d audit event(s)", n-auditsBefore)
		}
	})

	t.Run("a failed create with an Idempotency-Key leaves the key retryable", func(t *testing.T) {
		key := http.Header{"Idempotency-Key": {"fault-key-1"}}
		faults.set(only(faultTxThrottled, "TransactWriteItems"))
		want503(t, "createTicket with a key", post("keyed", key))
		faults.set(nil)
		// The record stays, released for a retry and holding no response.
		for _, rec := range itemsOf(t, ts, "IdempotencyRecord", org) {
			if rec["released"] == nil || rec["done"] == nil || rec.Str("resourceId") == "" || rec["body"] != nil {
				t.Errorf("a failed request's record is not released and empty: %s", dump([]dbItem{rec}))
			}
		}
		r := post("keyed", key)
		if r.Status != http.StatusCreated || r.Header.Get("Idempotent-Replayed") != "" {
			t.Errorf("retry after the failure: %d replayed=%q %s", r.Status, r.Header.Get("Idempotent-Replayed"), r.Body)
		}
		if r := post("keyed", key); r.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("second retry: not a replay: %d %s", r.Status, r.Body)
		}
		if n := tickets("keyed"); n != 1 {
			t.Errorf("tickets: %d, want 1", n)
		}
	})

	t.Run("a response lost after the commit", func(t *testing.T) {
		// DynamoDB committed, the answer was lost (500): the SDK retries
		// the same transaction (same ClientRequestToken). The client must
		// get the created item, and exactly one must exist.
		faults.set(func(op string, attempt int) faultKind {
			if op == "TransactWriteItems" && attempt == 1 {
				return faultLostResponse
			}
			return faultPass
		})
		auditsBefore := len(itemsOf(t, ts, "AuditEvent", org))
		r := post("committed once", nil)
		c := doReq(t, hc, http.MethodPost, ts.URL+"/v1/orgs/"+org+"/tickets/"+w.Ticket.Id+"/comments", w.Member.Token, nil, `{"body":"committed once"}`)
		faults.set(nil)
		if r.Status != http.StatusCreated {
			t.Errorf("createTicket: %d %s, want 201", r.Status, r.Body)
		}
		if c.Status != http.StatusCreated {
			t.Errorf("createComment: %d %s, want 201", c.Status, c.Body)
		}
		if n := tickets("committed once"); n != 1 {
			t.Errorf("tickets: %d, want 1", n)
		}
		if n := len(itemsOf(t, ts, "AuditEvent", org)) - auditsBefore; n != 2 {
			t.Errorf("audit events of the two creates: %d, want 2", n)
		}
		tk := getRaw(t, ts, "ORG#"+org+"#TICKET#"+w.Ticket.Id, "#METADATA")
		comments := 0
		for _, it := range itemsOf(t, ts, "Comment", org) {
			if strings.HasPrefix(it.Str("pk"), "ORG#"+org+"#TICKET#"+w.Ticket.Id) {
				comments++
			}
		}
		if got := tk.Num(t, "commentCount"); got != int64(comments) {
			t.Errorf("commentCount %d, but %d comments", got, comments)
		}
	})
	t.Run("an idempotency record whose response was lost", func(t *testing.T) {
		// The record's conditional PutItem committed, its answer was lost:
		// the SDK's retry finds the record. The request is still the first
		// one with its key and must run, not be told it is in progress.
		faults.set(func(op string, attempt int) faultKind {
			if op == "PutItem" && attempt == 1 {
				return faultLostResponse
			}
			return faultPass
		})
		r := post("lost record", http.Header{"Idempotency-Key": {"fault-key-2"}})
		faults.set(nil)
		if r.Status != http.StatusCreated {
			t.Errorf("first request with a key whose record's answer was lost: %d %s, want 201", r.Status, r.Body)
		}
		if n := tickets("lost record"); n > 1 {
			t.Errorf("tickets: %d", n)
		}
	})

	t.Run("a create whose every answer was lost, retried with its Idempotency-Key, exists once", func(t *testing.T) {
		// The ticket's transaction committed on its first attempt, and every
		// answer was lost (the SDK retried, then gave up): the API answers
		// 503 without knowing that the ticket exists, and releases the key.
		// The client's retry with the same key must meet that ticket, not
		// create a second one. (Found by TestChaos, with DynamoDB Local
		// paused past the request's deadline.)
		lostAfterFirst := func() {
			var calls atomic.Int32
			faults.set(func(op string, attempt int) faultKind {
				if op != "TransactWriteItems" {
					return faultPass
				}
				if attempt == 1 {
					calls.Add(1)
				}
				if calls.Load() >= 2 { // the idempotency record's own transaction passes
					return faultLostResponse
				}
				return faultPass
			})
		}
		auditsBefore := len(itemsOf(t, ts, "AuditEvent", org))
		key := http.Header{"Idempotency-Key": {"fault-key-lost-every-answer"}}
		lostAfterFirst()
		want503(t, "createTicket, every answer lost", post("lost every answer", key))
		faults.set(nil)
		if n := tickets("lost every answer"); n != 1 {
			t.Fatalf("tickets after the lost answers: %d, want 1 (the write committed)", n)
		}
		r := post("lost every answer", key)
		if r.Status != http.StatusCreated {
			t.Fatalf("retry with the key: %d %s, want 201", r.Status, r.Body)
		}
		if n := tickets("lost every answer"); n != 1 {
			t.Errorf("tickets after the retry: %d, want 1", n)
		}
		var tk client.Ticket
		if err := json.Unmarshal(r.Body, &tk); err != nil {
			t.Fatal(err)
		}
		if got := getRaw(t, ts, "ORG#"+org+"#TICKET#"+tk.Id, "#METADATA"); got.Str("title") != "lost every answer" {
			t.Errorf("the retry answered ticket %s, which is not the one the lost attempt made", tk.Id)
		}
		if r := post("lost every answer", key); r.Header.Get("Idempotent-Replayed") != "true" || !bytes.Contains(r.Body, []byte(tk.Id)) {
			t.Errorf("second retry: not a replay of %s: %d %s", tk.Id, r.Status, r.Body)
		}

		// A comment, the same way: one comment, commentCount one higher.
		before := getRaw(t, ts, "ORG#"+org+"#TICKET#"+tk.Id, "#METADATA").Num(t, "commentCount")
		comment := func() apiResp {
			return doReq(t, hc, http.MethodPost, ts.URL+"/v1/orgs/"+org+"/tickets/"+tk.Id+"/comments", w.Member.Token,
				http.Header{"Idempotency-Key": {"fault-key-lost-comment"}}, `{"body":"lost comment"}`)
		}
		lostAfterFirst()
		want503(t, "createComment, every answer lost", comment())
		faults.set(nil)
		if c := comment(); c.Status != http.StatusCreated {
			t.Errorf("comment retry with the key: %d %s, want 201", c.Status, c.Body)
		}
		n := 0
		for _, it := range itemsOf(t, ts, "Comment", org) {
			if strings.HasPrefix(it.Str("pk"), "ORG#"+org+"#TICKET#"+tk.Id) {
				n++
			}
		}
		if after := getRaw(t, ts, "ORG#"+org+"#TICKET#"+tk.Id, "#METADATA").Num(t, "commentCount"); n != 1 || after != before+1 {
			t.Errorf("comments: %d (want 1), commentCount %d -> %d", n, before, after)
		}
		if n := len(itemsOf(t, ts, "AuditEvent", org)) - auditsBefore; n != 2 {
			t.Errorf("audit events: %d, want 2 (one per create, none for the retries)", n)
		}

		// A user added the same way: the retry answers 201 with the user
		// its lost attempt added, not 409 user_exists (found by an
		// outside attack).
		add := func() apiResp {
			return doReq(t, hc, http.MethodPost, ts.URL+"/v1/orgs/"+org+"/users", w.Owner.Token,
				http.Header{"Idempotency-Key": {"fault-key-lost-user"}}, `{"userId":"lost.user","email":"lost.user@example.com","name":"Lost","role":"member"}`)
		}
		lostAfterFirst()
		want503(t, "addOrgUser, every answer lost", add())
		faults.set(nil)
		if a := add(); a.Status != http.StatusCreated || !bytes.Contains(a.Body, []byte(`"lost.user"`)) {
			t.Errorf("addOrgUser retry with the key: %d %s, want 201 with the user", a.Status, a.Body)
		}
		// Someone else's add of an existing user is still a 409.
		other := doReq(t, hc, http.MethodPost, ts.URL+"/v1/orgs/"+org+"/users", w.Owner.Token,
			http.Header{"Idempotency-Key": {"fault-key-other"}}, `{"userId":"lost.user","email":"lost.user@example.com","name":"Lost","role":"member"}`)
		if other.Status != http.StatusConflict {
			t.Errorf("another key adding the same user: %d %s, want 409", other.Status, other.Body)
		}
	})

	t.Run("a removal in steps, failing mid-way, is consistent and resumable", func(t *testing.T) {
		// A user in 50 teams: 2 x 50 + 3 items do not fit one transaction,
		// so the memberships go first, in a transaction of their own.
		u := ts.Actor(t, "many-teams")
		MustUser(t, w.Owner.C, org, u, client.RoleMember)
		teams := make([]string, 50)
		var mu sync.Mutex
		runJobs(t, &reqRecorder{}, 8, func() []reqJob {
			var jobs []reqJob
			for i := range teams {
				jobs = append(jobs, reqJob{what: "team", method: http.MethodPost, url: ts.URL + "/v1/orgs/" + org + "/teams", token: w.Owner.Token,
					body: fmt.Sprintf(`{"name":"step team %d"}`, i), check: func(t *testing.T, r apiResp, _ []string) {
						var tm client.Team
						if r.Status != http.StatusCreated || json.Unmarshal(r.Body, &tm) != nil {
							t.Fatalf("team: %d %s", r.Status, r.Body)
						}
						mu.Lock()
						teams[i] = tm.Id
						mu.Unlock()
					}})
			}
			return jobs
		}())
		var jobs []reqJob
		for _, tm := range teams {
			jobs = append(jobs, reqJob{what: "member", method: http.MethodPut, url: ts.URL + "/v1/orgs/" + org + "/teams/" + tm + "/members/" + u.ID,
				token: w.Owner.Token, body: `{"role":"member"}`, check: func(t *testing.T, r apiResp, _ []string) {
					if r.Status != http.StatusCreated {
						t.Errorf("member: %d %s", r.Status, r.Body)
					}
				}})
		}
		runJobs(t, &reqRecorder{}, 8, jobs)
		var txs atomic.Int64
		faults.set(func(op string, attempt int) faultKind {
			if op != "TransactWriteItems" {
				return faultPass
			}
			if attempt == 1 && txs.Add(1) >= 2 { // the second transaction, and its retries
				return faultTxThrottled
			}
			if attempt > 1 && txs.Load() >= 2 {
				return faultTxThrottled
			}
			return faultPass
		})
		want503(t, "remove a user in 50 teams, second step failing", doReq(t, hc, http.MethodDelete, ts.URL+"/v1/orgs/"+org+"/users/"+u.ID, w.Owner.Token, nil, ""))
		faults.set(nil)
		if getRaw(t, ts, "ORG#"+org, "USER#"+u.ID) == nil {
			t.Error("the user is gone although the removal failed")
		}
		wantTeamsCounts(t, scanAll(t, ts), org, teams, nil)
		d := doReq(t, hc, http.MethodDelete, ts.URL+"/v1/orgs/"+org+"/users/"+u.ID, w.Owner.Token, nil, "")
		if d.Status != http.StatusNoContent {
			t.Fatalf("retried removal: %d %s", d.Status, d.Body)
		}
		wantTeamsCounts(t, scanAll(t, ts), org, teams, map[string]int{w.Owner.ID: 1})
	})
}

// TestHungDynamoDB: DynamoDB stops answering. Each request ends at
// its deadline (RequestTimeout) with a 503, whatever it was doing, and
// leaves no goroutine behind.
func TestHungDynamoDB(t *testing.T) {
	const deadline = time.Second
	faults := newFaults()
	faults.hangCap = deadline + deadline/2 // a hang that outlives its request's deadline
	// The setup has the service's normal deadline; the requests the hang
	// must end go to a twin server with a short one.
	setup := MustServer(t, withTransport(faults.wrap))
	owner := setup.Actor(t, "hung-owner")
	org := MustOrg(t, owner.C, "Hung").Id
	w := struct{ Member actor }{owner}
	ts := setup.Twin(t, deadline)
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	// Warm up what starts lazily, then take the goroutines as they are.
	doReq(t, hc, http.MethodGet, ts.URL+"/v1/orgs/"+org, w.Member.Token, nil, "")
	// Idle keep-alive connections (to DynamoDB Local, opened by calls the
	// faults let through) are no leak; a hung call would be.
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"), goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"))

	cases := []struct {
		name, method, path, body string
		header                   http.Header
		hang                     func(string, int) faultKind
	}{
		{"every call hangs: GET", http.MethodGet, "/v1/orgs/" + org, "", nil, only(faultHang)},
		{"every call hangs: POST", http.MethodPost, "/v1/orgs/" + org + "/tickets", `{"title":"hung"}`, nil, only(faultHang)},
		{"the write hangs", http.MethodPost, "/v1/orgs/" + org + "/tickets", `{"title":"hung write"}`, nil, only(faultHang, "TransactWriteItems")},
		{"a listing hangs", http.MethodGet, "/v1/orgs/" + org + "/tickets", "", nil, only(faultHang, "Query")},
		// With an Idempotency-Key: the record is written, then DynamoDB
		// hangs; the request must still end at its deadline.
		{"the write hangs, with an Idempotency-Key", http.MethodPost, "/v1/orgs/" + org + "/tickets", `{"title":"hung keyed"}`,
			http.Header{"Idempotency-Key": {"hung-key"}}, func(op string, _ int) faultKind {
				if op == "GetItem" || op == "PutItem" {
					return faultPass
				}
				return faultHang
			}},
	}
	// A stranger's DELETE of an org: the route's own deadline is long (an
	// offboarding), but the authorization read that turns the stranger
	// away has the usual one (found by an outside attack: it was
	// held for 2 minutes while DynamoDB was paused).
	cases = append(cases, struct {
		name, method, path, body string
		header                   http.Header
		hang                     func(string, int) faultKind
	}{"a stranger's DELETE of an org", http.MethodDelete, "/v1/orgs/01ARZ3NDEKTSV4RRFFQ69G5FAV", "", nil, only(faultHang)})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			faults.set(c.hang)
			defer faults.set(nil)
			if c.method == http.MethodDelete {
				faults.hangCap = 20 * time.Second // only the request's deadline ends the hang
				defer func() { faults.hangCap = deadline + deadline/2 }()
			}
			const n = 5
			var wg sync.WaitGroup
			for range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					began := time.Now()
					h := http.Header{}
					for k, v := range c.header {
						h[k] = []string{v[0] + "-" + newRequestID()} // one key per request
					}
					r := doReqE(hc, c.method, ts.URL+c.path, w.Member.Token, h, c.body)
					took := time.Since(began)
					if r.Err != nil {
						t.Errorf("%v", r.Err)
						return
					}
					want503(t, c.name, r.Response)
					// Slack for a busy machine, well under the 20 s hang
					// of the DELETE case that only the deadline ends.
					if took > deadline+8*time.Second {
						t.Errorf("answered after %v, the deadline is %v", took.Round(time.Millisecond), deadline)
					}
				}()
			}
			wg.Wait()
		})
	}
	// Nothing hangs on: every hung call saw its context end.
	settled := time.Now().Add(5 * time.Second)
	for faults.hanging.Load() > 0 && time.Now().Before(settled) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := faults.hanging.Load(); n > 0 {
		t.Errorf("%d DynamoDB call(s) still hanging after every request ended", n)
	}
	// And the server is fine once DynamoDB answers again.
	if r := doReq(t, hc, http.MethodGet, ts.URL+"/v1/orgs/"+org, w.Member.Token, nil, ""); r.Status != http.StatusOK {
		t.Errorf("after the hang: %d %s", r.Status, r.Body)
	}
}

// TestRetryQuota: when DynamoDB keeps failing, the SDK's retry
// quota (500 tokens per client) runs out and calls fail at once, with the
// quota error joined to DynamoDB's. Every answer stays a 503, never a 500,
// whatever the 5xx looked like.
func TestRetryQuota(t *testing.T) {
	t.Parallel() // mostly waits: see TestMain
	// (Throttling retries cost 5 tokens and back off for a second or more:
	// exhausting the quota with them would take minutes. The quota's error
	// is the same whatever spent it; the 5xx shapes spend it fast.)
	for name, f := range map[string]faultKind{"InternalServerError": faultInternal, "InternalFailure": faultInternalFailure, "bare 503": faultUnavailableBare} {
		t.Run(name, func(t *testing.T) {
			faults := newFaults()
			ts := MustServer(t, withTransport(faults.wrap))
			a := ts.Actor(t, "quota")
			o := MustOrg(t, a.C, "Quota")
			faults.set(only(f))
			hc := &http.Client{}
			var counts statusCounts
			exhausted := false
			for i := range 40 {
				ts.Rec.Reset()
				before := faults.attempts.Load()
				r := doReq(t, hc, http.MethodGet, ts.URL+"/v1/orgs/"+o.Id, a.Token, nil, "")
				counts.add(r.Status)
				if calls := int64(ts.Rec.Count()); calls > 0 && faults.attempts.Load()-before == calls {
					exhausted = true // no retry: the quota is spent
				}
				if r.Status != http.StatusServiceUnavailable && counts.get(r.Status) == 1 {
					t.Errorf("request %d (quota spent: %v): %d %s", i, exhausted, r.Status, truncate(r.Body))
				}
			}
			if counts.get(http.StatusServiceUnavailable) != 40 {
				t.Errorf("statuses: %s; want 40 x 503", &counts)
			}
			if !exhausted {
				t.Errorf("the retry quota was never exhausted (statuses %s): the test proves nothing", &counts)
			}
		})
	}
}
