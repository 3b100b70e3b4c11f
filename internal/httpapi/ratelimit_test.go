package httpapi_test

// Per-tenant rate limiting.

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantd/tenantd/internal/ratelimit"
)

// TestRateLimit: with 5 requests per second (burst 5) per org,
// org A hammered from many goroutines gets 429 problem+json with
// Retry-After and RateLimit-* headers, while org B's requests, sent at the
// same time, all succeed; strangers hammering A's org ID spend nothing of
// A's quota (they are refused before the limiter); and each 429 costs no
// more than the authorization read.
func TestRateLimit(t *testing.T) {
	const rps, burst = 5, 5
	rr := &reqRecorder{}
	ts := MustServer(t, withRateLimit(ratelimit.Options{PerSecond: rps, Burst: burst}), withAPIOptions(rr.Middleware))
	// Set up through the limiter: slowly enough (one org each, 3 requests
	// each) to stay within the burst.
	a, b := ts.Actor(t, "noisy"), ts.Actor(t, "quiet")
	orgA, orgB := MustOrg(t, a.C, "Noisy").Id, MustOrg(t, b.C, "Quiet").Id
	stranger := ts.Actor(t, "stranger")
	hc := raceClient(t, 32)

	// Strangers first: 30 requests on A's org ID, all 404, none limited
	// (so A's bucket is still full afterwards).
	var sc statusCounts
	parallel(30, func(int) {
		r := doReqE(hc, http.MethodGet, ts.URL+"/v1/orgs/"+orgA, stranger.Token, nil, "")
		if r.Err == nil {
			sc.add(r.Status)
		}
	})
	if sc.get(http.StatusNotFound) != 30 {
		t.Errorf("strangers on A's org: %s; want 30 x 404", &sc)
	}

	var mu sync.Mutex
	var aCounts, bCounts statusCounts
	var limited []apiResp
	var wg sync.WaitGroup
	stormStart := time.Now()
	wg.Add(2)
	go func() { // A: 60 requests from 12 goroutines
		defer wg.Done()
		parallel(12, func(int) {
			for range 5 {
				id := newRequestID()
				r := doReqE(hc, http.MethodGet, ts.URL+"/v1/orgs/"+orgA+"/tickets", a.Token, http.Header{"X-Request-Id": {id}}, "")
				if r.Err != nil {
					t.Errorf("A: %v", r.Err)
					continue
				}
				aCounts.add(r.Status)
				if r.Status == http.StatusTooManyRequests {
					if ops := rr.Of(id); len(ops) != 1 || ops[0] != "BatchGetItem" {
						t.Errorf("a 429 made DynamoDB calls %v, want only the authorization read", ops)
					}
					mu.Lock()
					limited = append(limited, r.Response)
					mu.Unlock()
				}
			}
		})
	}()
	go func() { // B, meanwhile: within its own burst
		defer wg.Done()
		parallel(burst-1, func(i int) {
			r := doReqE(hc, http.MethodGet, ts.URL+"/v1/orgs/"+orgB+"/tickets", b.Token, nil, "")
			if r.Err != nil {
				t.Errorf("B: %v", r.Err)
				return
			}
			bCounts.add(r.Status)
		})
	}()
	wg.Wait()
	storm := time.Since(stormStart)
	if bCounts.get(http.StatusOK) != burst-1 {
		t.Errorf("org B while A was hammered: %s; want %d x 200", &bCounts, burst-1)
	}
	// A got its burst (and what refilled meanwhile), no more, and 429s.
	ok := aCounts.get(http.StatusOK)
	if refill := int(storm.Seconds()*rps) + 1; ok < burst || ok > burst+refill || aCounts.get(http.StatusTooManyRequests) == 0 || ok+aCounts.get(http.StatusTooManyRequests) != 60 {
		t.Errorf("org A: %s; want about %d x 200 and the rest 429", &aCounts, burst)
	}
	for _, r := range limited[:min(len(limited), 5)] {
		if c := problemCode(r.Body); c != "rate_limited" {
			t.Errorf("429 code %q", c)
		}
		if ct := r.Header.Get("Content-Type"); ct != problemJSON {
			t.Errorf("429 content type %q", ct)
		}
		if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 {
			t.Errorf("429 Retry-After %q", r.Header.Get("Retry-After"))
		}
		if rl := rateLimitOf(t, r.Header, "org"); rl.r != 0 || strconv.Itoa(rl.t) != r.Header.Get("Retry-After") {
			t.Errorf("429: RateLimit %q beside Retry-After %q, want r=0 and t = Retry-After", r.Header.Values("RateLimit"), r.Header.Get("Retry-After"))
		}
	}
	// B still has room after the storm, and successes carry the headers too.
	r := doReq(t, hc, http.MethodGet, ts.URL+"/v1/orgs/"+orgB, b.Token, nil, "")
	if r.Status != http.StatusOK {
		t.Errorf("B after the storm: %d %s", r.Status, r.Body)
	}
	if got := r.Header.Values("RateLimit-Policy"); !slices.Contains(got, fmt.Sprintf(`"org";q=%d;w=%d`, burst, int(math.Ceil(float64(burst)/rps)))) {
		t.Errorf("a 200 carries RateLimit-Policy %q", got)
	}
}

type rateLimitItem struct{ r, t int }

// rateLimitOf parses the RateLimit item of policy in h.
func rateLimitOf(t *testing.T, h http.Header, policy string) rateLimitItem {
	t.Helper()
	for _, v := range h.Values("RateLimit") {
		for _, item := range strings.Split(v, ",") {
			var it rateLimitItem
			if _, err := fmt.Sscanf(strings.TrimSpace(item), `"`+policy+`";r=%d;t=%d`, &it.r, &it.t); err == nil {
				return it
			}
		}
	}
	t.Fatalf("no RateLimit item for %s in %q", policy, h.Values("RateLimit"))
	return rateLimitItem{}
}

// TestRateLimitHeadersAgree: across a burst the RateLimit fields agree
// with each other and with what happens: r counts down by one a request
// from the policy's quota, never above it; t is within the window; the
// first refusal has r=0 and t = Retry-After. (Before, every answer said
// RateLimit-Limit: 100 beside RateLimit-Remaining: 199, and a 429
// RateLimit-Reset: 2 beside Retry-After: 1.)
func TestRateLimitHeadersAgree(t *testing.T) {
	const rps, burst = 2, 6
	ts := MustServer(t, withRateLimit(ratelimit.Options{PerSecond: rps, Burst: burst}))
	a := ts.Actor(t, "limited")
	org := MustOrg(t, a.C, "Limited").Id // a request of a's own bucket; the org's is full
	hc := &http.Client{}
	prev := burst
	for i := range burst + 2 {
		r := doReq(t, hc, http.MethodGet, ts.URL+"/v1/orgs/"+org, a.Token, nil, "")
		policy := r.Header.Values("RateLimit-Policy")
		if !slices.Contains(policy, fmt.Sprintf(`"org";q=%d;w=%d`, burst, burst/rps)) {
			t.Fatalf("request %d: RateLimit-Policy %q", i, policy)
		}
		rl := rateLimitOf(t, r.Header, "org")
		if rl.r > burst || rl.t < 1 || rl.t > burst/rps {
			t.Errorf("request %d: RateLimit r=%d t=%d outside the policy (q=%d, w=%d)", i, rl.r, rl.t, burst, burst/rps)
		}
		switch r.Status {
		case http.StatusOK:
			if rl.r > prev-1 && prev > 0 { // refills add at most a token in a few ms
				t.Errorf("request %d: r=%d after r=%d: a request must spend one", i, rl.r, prev)
			}
			prev = rl.r
		case http.StatusTooManyRequests:
			if rl.r != 0 || strconv.Itoa(rl.t) != r.Header.Get("Retry-After") {
				t.Errorf("request %d: 429 with RateLimit r=%d t=%d and Retry-After %q", i, rl.r, rl.t, r.Header.Get("Retry-After"))
			}
			return
		default:
			t.Fatalf("request %d: %d %s", i, r.Status, r.Body)
		}
	}
	t.Errorf("%d requests at once never met the limit of %d", burst+2, burst)
}

// TestCallerRateLimit: one token hammers org IDs that are not its
// own (random ones, and another tenant's), which all end in 404 after the
// authorization read. With 5 requests per second (burst 5) per caller, it
// gets 429s, and the DynamoDB reads it causes stay within what the limit
// allows; another tenant's own requests are unaffected.
func TestCallerRateLimit(t *testing.T) {
	const rps, burst = 5, 5
	ts := MustServer(t, withCallerRateLimit(ratelimit.Options{PerSecond: rps, Burst: burst}))
	owner := ts.Actor(t, "bystander")
	org := MustOrg(t, owner.C, "Bystander").Id
	prober := ts.Actor(t, "prober")
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	defer hc.CloseIdleConnections()

	ts.Rec.Reset()
	var counts statusCounts
	var mu sync.Mutex
	var limited []apiResp
	began := time.Now()
	parallel(16, func(i int) {
		for j := range 20 {
			target := randULID()
			if (i+j)%2 == 0 {
				target = org // another tenant's real org
			}
			r := doReqE(hc, http.MethodGet, ts.URL+"/v1/orgs/"+target+"/tickets", prober.Token, nil, "")
			if r.Err != nil {
				t.Errorf("GET: %v", r.Err)
				continue
			}
			counts.add(r.Status)
			if r.Status == http.StatusTooManyRequests {
				mu.Lock()
				limited = append(limited, r.Response)
				mu.Unlock()
			}
		}
	})
	elapsed := time.Since(began)
	calls := ts.Rec.Count()
	n404, n429 := counts.get(http.StatusNotFound), counts.get(http.StatusTooManyRequests)
	allowed := burst + int(elapsed.Seconds()*rps) + 1
	if n404+n429 != 320 || n429 == 0 || n404 > allowed {
		t.Errorf("320 requests on foreign orgs in %v: %s; want at most %d x 404 and the rest 429", elapsed.Round(time.Millisecond), &counts, allowed)
	}
	// One call per 404 (the authorization read), none per 429 (the
	// caller's limit is spent before it).
	if calls != n404 {
		t.Errorf("DynamoDB calls: %d (%d x 404); want one per 404", calls, n404)
	}
	for _, r := range limited[:min(len(limited), 3)] {
		if c := problemCode(r.Body); c != "rate_limited" {
			t.Errorf("429 code %q", c)
		}
		if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 {
			t.Errorf("429 Retry-After %q", r.Header.Get("Retry-After"))
		}
		if ct := r.Header.Get("Content-Type"); ct != problemJSON {
			t.Errorf("429 content type %q", ct)
		}
	}
	// The owner of the org the prober named still gets in.
	if r := doReq(t, hc, http.MethodGet, ts.URL+"/v1/orgs/"+org, owner.Token, nil, ""); r.Status != http.StatusOK {
		t.Errorf("the bystander after the storm: %d %s", r.Status, r.Body)
	}
	t.Logf("%s in %v; %d DynamoDB calls", &counts, elapsed.Round(time.Millisecond), calls)
}

// TestCallerRateLimitGraphQL: a GraphQL request spends its cost
// (ceil(complexity/100)) from the caller's bucket too, not one token, so a
// caller cannot buy with one costly document what REST limits per request;
// a document the bucket cannot pay for is a 429 before it runs.
func TestCallerRateLimitGraphQL(t *testing.T) {
	const burst = 20
	ts := MustServer(t, withCallerRateLimit(ratelimit.Options{PerSecond: 0.01, Burst: burst}))
	a := ts.Actor(t, "costly")
	org := MustOrg(t, a.C, "Costly").Id // 1 token (and the harness's reads)
	// org 50 + tickets (10 + 100 × nodes{id title} 3) = 360: 4 tokens.
	const doc = `query($o: ID!) { org(id: $o) { tickets(first: 100) { nodes { id title } } } }`
	spent := 1
	for spent+4 <= burst {
		r := gql(t, ts, a.Token, doc, map[string]any{"o": org})
		if r.Status != http.StatusOK || len(r.Errors) != 0 {
			t.Fatalf("after %d tokens: %d %s", spent, r.Status, truncate(r.Raw))
		}
		spent += 4
	}
	// 17 spent, 3 left: the middleware takes 1, the document needs 3 more.
	ts.Rec.Reset()
	r := gql(t, ts, a.Token, doc, map[string]any{"o": org})
	if r.Status != http.StatusTooManyRequests || !strings.Contains(string(r.Raw), `"rate_limited"`) {
		t.Fatalf("a document costing more than the bucket holds: %d %s", r.Status, truncate(r.Raw))
	}
	if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 {
		t.Errorf("Retry-After %q", r.Header.Get("Retry-After"))
	}
	if n := ts.Rec.Count(); n != 0 {
		t.Errorf("the refused document made %d DynamoDB calls (%s)", n, ts.Rec.Names())
	}
	// What is left (2) pays for cheap requests, then nothing does.
	codes := []int{}
	for range 3 {
		codes = append(codes, doReq(t, &http.Client{}, http.MethodGet, ts.URL+"/v1/me", a.Token, nil, "").Status)
	}
	if !slices.Equal(codes, []int{200, 200, 429}) {
		t.Errorf("GET /v1/me after the GraphQL requests: %v, want [200 200 429]", codes)
	}
}

// TestOrgRateLimitGraphQL: a GraphQL request that the org's limit refuses
// whole (no data) is a 429 problem with Retry-After, as over REST, not a
// 200 with a field error that clients would not back off from.
func TestOrgRateLimitGraphQL(t *testing.T) {
	ts := MustServer(t, withRateLimit(ratelimit.Options{PerSecond: 0.01, Burst: 5}))
	a := ts.Actor(t, "org-limited")
	org := MustOrg(t, a.C, "Org limited").Id
	// 360 complexity: 4 of the org's 5 tokens.
	const doc = `query($o: ID!) { org(id: $o) { tickets(first: 100) { nodes { id title } } } }`
	if r := gql(t, ts, a.Token, doc, map[string]any{"o": org}); r.Status != http.StatusOK || len(r.Errors) != 0 {
		t.Fatalf("the first: %d %s", r.Status, truncate(r.Raw))
	}
	r := gql(t, ts, a.Token, doc, map[string]any{"o": org})
	if r.Status != http.StatusTooManyRequests || !strings.Contains(string(r.Raw), `"rate_limited"`) {
		t.Fatalf("the second, 1 token left: %d %s", r.Status, truncate(r.Raw))
	}
	if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 {
		t.Errorf("Retry-After %q", r.Header.Get("Retry-After"))
	}
}

// TestStrangersHoldNoOrgQuota: strangers flooding an org's GET routes
// (whose reads overlap the authorization read) while a member works spend
// nothing of the org's bucket, not even for the time their read runs: the
// member's requests within the burst all pass.
func TestStrangersHoldNoOrgQuota(t *testing.T) {
	const burst = 6
	ts := MustServer(t, withRateLimit(ratelimit.Options{PerSecond: 0.01, Burst: burst}))
	owner := ts.Actor(t, "owner")
	org := MustOrg(t, owner.C, "Quota").Id // the user bucket, not the org's
	strangers := []actor{ts.Actor(t, "s1"), ts.Actor(t, "s2"), ts.Actor(t, "s3")}
	hc := raceClient(t, 64)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var strangerCodes statusCounts
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := strangers[i%len(strangers)]
			for {
				select {
				case <-stop:
					return
				default:
				}
				r := doReqE(hc, http.MethodGet, ts.URL+"/v1/orgs/"+org+"/users", s.Token, nil, "")
				if r.Err == nil {
					strangerCodes.add(r.Status)
					if r.Header.Get("RateLimit") != "" && strings.Contains(r.Header.Get("RateLimit"), `"org"`) {
						t.Errorf("a stranger's answer carries the org's RateLimit fields: %q", r.Header.Get("RateLimit"))
					}
				}
			}
		}()
	}
	var memberCodes []int
	for range burst {
		memberCodes = append(memberCodes, doReq(t, hc, http.MethodGet, ts.URL+"/v1/orgs/"+org, owner.Token, nil, "").Status)
	}
	close(stop)
	wg.Wait()
	if strangerCodes.get(http.StatusNotFound) == 0 || strangerCodes.get(http.StatusTooManyRequests) > 0 && strangerCodes.get(http.StatusNotFound) == 0 {
		t.Fatalf("strangers: %s; want 404s", &strangerCodes)
	}
	for i, c := range memberCodes {
		if c != http.StatusOK {
			t.Errorf("the member's request %d of a burst of %d: %d while strangers flooded (%s)", i+1, burst, c, &strangerCodes)
		}
	}
}

// TestRateLimitCreates: a create spends the org's token after the
// decision and before its write, so every 201 is a ticket in the table,
// every 429 wrote nothing, and a burst of creates gets exactly what the
// bucket holds.
func TestRateLimitCreates(t *testing.T) {
	const burst = 5
	rr := &reqRecorder{}
	ts := MustServer(t, withRateLimit(ratelimit.Options{PerSecond: 0.01, Burst: burst}), withAPIOptions(rr.Middleware))
	owner := ts.Actor(t, "owner")
	org := MustOrg(t, owner.C, "Creates").Id // the owner's own bucket, not the org's
	hc := raceClient(t, 32)
	// One read first: one token of the burst spent.
	if r := doReq(t, hc, http.MethodGet, ts.URL+"/v1/orgs/"+org, owner.Token, nil, ""); r.Status != http.StatusOK {
		t.Fatalf("GET org: %d %s", r.Status, r.Body)
	}
	var codes statusCounts
	parallel(24, func(i int) {
		r := doReqE(hc, http.MethodPost, ts.URL+"/v1/orgs/"+org+"/tickets", owner.Token, nil, jsonOf(map[string]any{"title": fmt.Sprintf("storm %d", i)}))
		if r.Err != nil {
			t.Errorf("create: %v", r.Err)
			return
		}
		codes.add(r.Status)
		if r.Status == http.StatusTooManyRequests && r.Header.Get("Retry-After") == "" {
			t.Errorf("a 429 without Retry-After")
		}
	})
	// The bucket's rate is 0.01/s: no token comes back during the test.
	created := codes.get(http.StatusCreated)
	if created != burst-1 || created+codes.get(http.StatusTooManyRequests) != 24 {
		t.Errorf("creates: %s; want %d x 201 and the rest 429", &codes, burst-1)
	}
	if n := len(itemsOf(t, ts, "Ticket", org)); n != created {
		t.Errorf("%d tickets in the table for %d answers 201: a refused create wrote, or a write was lost", n, created)
	}
	id := newRequestID()
	r := doReq(t, hc, http.MethodPost, ts.URL+"/v1/orgs/"+org+"/tickets", owner.Token, http.Header{"X-Request-Id": {id}}, jsonOf(map[string]any{"title": "after the storm"}))
	if r.Status != http.StatusTooManyRequests {
		t.Fatalf("a create on an empty bucket: %d %s", r.Status, r.Body)
	}
	if ops := rr.Of(id); len(ops) != 1 || ops[0] != "BatchGetItem" {
		t.Errorf("a 429 on an empty bucket made DynamoDB calls %v, want only the authorization read", ops)
	}
}

// TestRateLimitEveryOperation, generated from the spec: every operation
// that documents 429 answers it once the caller's budget is spent, with
// the code rate_limited, a Retry-After and the RateLimit fields, before any
// DynamoDB call. The budget is one request an hour: the first request of
// each caller (GET /v1/me) spends it, whatever the machine's speed.
func TestRateLimitEveryOperation(t *testing.T) {
	ts := MustServer(t, withCallerRateLimit(ratelimit.Options{PerSecond: 1.0 / 3600, Burst: 1}))
	// The caller's limit is spent before validation and the authorization
	// read: any IDs will do.
	ids := opIDs{OrgID: randULID(), TeamID: randULID(), TicketID: randULID(), UserID: "someone", InvitationID: randULID(),
		WebhookID: randULID(), DeliveryID: randULID(), KeyID: randULID(),
		Token: randULID() + "." + randULID() + "." + strings.Repeat("x", 43)}
	for _, op := range opsDocumenting(t, http.StatusTooManyRequests) {
		spec(t, "429/"+op.ID+"/the caller's budget spent", func(t *testing.T) {
			a := ts.Actor(t, "hasty")
			me, err := a.C.GetMeWithResponse(bg, nil)
			mustStatus(t, me, err, http.StatusOK)
			ts.Rec.Reset()
			r := doOp(t, a.HTTP, ts.URL, op, ids, bodyOfOp(op, ids), nil)
			if r.Status != http.StatusTooManyRequests || problemCode(r.Body) != "rate_limited" {
				t.Fatalf("status %d (%s), want 429 rate_limited", r.Status, truncate(r.Body))
			}
			if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 {
				t.Errorf("Retry-After %q, want a number of seconds", r.Header.Get("Retry-After"))
			}
			if rl := rateLimitOf(t, r.Header, "caller"); rl.r != 0 || strconv.Itoa(rl.t) != r.Header.Get("Retry-After") {
				t.Errorf("RateLimit %q beside Retry-After %q, want r=0 and t = Retry-After", r.Header.Values("RateLimit"), r.Header.Get("Retry-After"))
			}
			if got := ts.Rec.Count(); got != 0 {
				t.Errorf("DynamoDB calls: got %d (%s), want 0", got, ts.Rec.Names())
			}
		})
	}
}
