//go:build unix

package main

// The noisy-neighbour harness: a victim tenant's figures (REST latency,
// webhook lag) alone and beside each hostile pattern, on two replicas of
// the binary, as ratios of its own baseline in the same run.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

var (
	neighboursWindow  = flag.Duration("neighbours.window", 2*time.Second, "TestNoisyNeighbours: how long the victim is measured, alone and beside each hostile pattern")
	neighboursOrgs    = flag.Int("neighbours.orgs", 2, "TestNoisyNeighbours: hostile orgs with 4 hanging webhook endpoints each")
	neighboursTickets = flag.Int("neighbours.tickets", 10, "TestNoisyNeighbours: tickets each hostile org creates at once, each a delivery to its 4 endpoints")
	neighboursIdle    = flag.Duration("neighbours.idle", time.Second, "TestNoisyNeighbours: the idle time whose DynamoDB writes are counted (none allowed)")
)

// The replicas' limits: the victim stays under them, the hostile org
// sends 10 times its own.
const (
	neighbourRate  = 20
	neighbourBurst = 40
	neighbourConns = 32 // MAX_CONNECTIONS: fewer than the flood's clients
)

// neighbours is the harness: two replicas on one table whose stream they
// read, B's way to DynamoDB through a proxy that can slow its rate-limit
// leases, an identity provider's JWKS, and the victim's webhook receiver.
type neighbours struct {
	t        *testing.T
	replicas []*apiProc
	metrics  []string
	key      *rsa.PrivateKey
	ledger   *ledgerProxy
	victim   string // token
	org      string // the victim's org
	ticket   string // the ticket the victim reads
	// subscribe subscribes the victim's endpoint to its tickets'
	// creation (after the idle check: a delivery leaves work behind).
	subscribe func()

	mu      sync.Mutex
	arrived map[string]time.Time // ticket ID -> when its ticket.create reached the victim's endpoint
}

// figures are what the victim saw in one window.
type figures struct {
	name    string
	latency []time.Duration // GET ticket
	lag     []time.Duration // commit to the receiver, per ticket created
	bad     []string        // answers other than 2xx
	dynamo  time.Duration   // the mean DynamoDB point read of the replicas in the window (readMean)
	// dispatch is the mean dispatch lag (a change to its deliveries made)
	// of every org's events dispatched in the window.
	dispatch time.Duration
}

// and is f and g pooled (and g's bad answers: f's were reported).
func (f figures) and(g figures) figures {
	return figures{name: f.name + " (twice)", latency: append(f.latency, g.latency...), lag: append(f.lag, g.lag...), bad: g.bad,
		dynamo: (f.dynamo + g.dynamo) / 2, dispatch: (f.dispatch + g.dispatch) / 2}
}

func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p/100))]
}

// TestNoisyNeighbours: a victim tenant (reads two at a time and a ticket
// created every half second, at half its limit; a webhook endpoint) is
// measured alone, then beside each hostile pattern: another org at 10x
// its limit, a slow ledger on one replica, a flood of tokens with unknown
// kids, and hanging webhook endpoints of other orgs with a backlog of
// deliveries. Its REST latency and webhook lag stay within generous
// ratios of its own baseline, and it is never refused. Before any of it,
// an idle service makes no DynamoDB writes. make test runs it short;
// make chaos at length (-neighbours.window, -neighbours.orgs,
// -neighbours.tickets, -neighbours.idle).
func TestNoisyNeighbours(t *testing.T) {
	h := startNeighbours(t)

	t.Run("OK an idle service makes no writes", func(t *testing.T) {
		// Once the setup's writes are over (its events dispatched, its
		// leases landed): a reader that writes whenever it reads never
		// gets there, and its writes are counted after the bound.
		before := h.writes()
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); {
			time.Sleep(time.Second)
			now := h.writes()
			if maps.Equal(now, before) {
				break
			}
			before = now
		}
		cpu := h.cpu()
		time.Sleep(*neighboursIdle)
		after, used := h.writes(), h.cpu()-cpu
		writes := 0
		for op, n := range after {
			writes += n - before[op]
		}
		t.Logf("idle %v: %d DynamoDB writes (%.1f a minute), %v CPU of the two replicas", *neighboursIdle, writes,
			float64(writes)/neighboursIdle.Minutes(), used)
		if writes != 0 {
			t.Errorf("the idle replicas made %d DynamoDB writes in %v (%v, before %v), want none", writes, *neighboursIdle, after, before)
		}
	})

	h.subscribe()
	hostile := h.hostileOrgs()
	var kid401 []time.Duration
	for _, p := range []struct {
		name  string
		start func() func()
	}{
		{"another org at 10x its limit", h.flood10x(hostile[0])},
		{"a slow ledger on replica B", func() func() {
			h.ledger.slow.Store(true)
			return func() { h.ledger.slow.Store(false) }
		}},
		{"a flood of unknown kids", h.kidFlood(&kid401)},
		{fmt.Sprintf("hanging endpoints of other orgs, %d deliveries queued at once", len(hostile)*4**neighboursTickets), h.backlog(hostile)},
	} {
		// The victim alone, then beside the pattern; when it misses its
		// ratios, once more, judged on both runs pooled (a busy box's
		// hiccup in one run is diluted; the failures these patterns
		// caused, at 10x to 100x, were not).
		base, f := h.measure("alone", nil), h.measure(p.name, p.start)
		if !h.judge(base, f, false) {
			base2, f2 := h.measure("alone", nil), h.measure(p.name, p.start)
			h.judge(base.and(base2), f.and(f2), true)
		}
	}
	if len(kid401) > 0 {
		t.Logf("unknown-kid 401: median %v, p99 %v (%d answers)", pct(kid401, 50), pct(kid401, 99), len(kid401))
	}
}

// judge logs the victim's figures beside a pattern against its baseline
// and reports whether they are within the ratios; when final, a miss
// fails the test, as a refused or failed request of the victim does.
func (h *neighbours) judge(base, f figures, final bool) bool {
	for _, b := range append(base.bad, f.bad...) {
		h.t.Errorf("%s: the victim got %s", f.name, b)
	}
	ratio := func(a, b time.Duration) float64 { return float64(a) / float64(max(b, time.Millisecond)) }
	r50, r90, r99 := ratio(pct(f.latency, 50), pct(base.latency, 50)), ratio(pct(f.latency, 90), pct(base.latency, 90)),
		ratio(pct(f.latency, 99), pct(base.latency, 99))
	lag := ratio(pct(f.lag, 50), pct(base.lag, 50))
	h.t.Logf("victim alone: REST p50 %v p90 %v p99 %v; webhook lag median %v max %v; DynamoDB point reads' mean %v; every org's dispatch lag mean %v", pct(base.latency, 50), pct(base.latency, 90),
		pct(base.latency, 99), pct(base.lag, 50), pct(base.lag, 100), base.dynamo, base.dispatch)
	h.t.Logf("victim beside %s: REST p50 %v (%.2fx) p90 %v (%.2fx) p99 %v (%.2fx); webhook lag median %v (%.2fx) max %v (%+v); DynamoDB point reads' mean %v (%.2fx); every org's dispatch lag mean %v",
		f.name, pct(f.latency, 50), r50, pct(f.latency, 90), r90, pct(f.latency, 99), r99, pct(f.lag, 50), lag, pct(f.lag, 100),
		pct(f.lag, 100)-pct(base.lag, 100), f.dynamo, float64(f.dynamo)/float64(max(base.dynamo, time.Microsecond)), f.dispatch)
	// Ratios with room for a busy 2-core box, where the patterns' own
	// load costs the victim some CPU and DynamoDB Local's time (the
	// failures these patterns caused were 10x to 100x).
	ok := r50 <= 6 && r90 <= 10 && lag <= 8
	if !ok && final {
		h.t.Errorf("victim beside %s: REST p50 %.2fx, p90 %.2fx, webhook lag %.2fx its baseline; want at most 6x, 10x, 8x", f.name, r50, r90, lag)
	}
	return ok
}

// measure runs the victim's workload for the window, beside the hostile
// pattern start starts (and whose stop func it calls after), when set:
// every 250 ms, to each replica in turn, 2 reads of a ticket at once and,
// every other time, a ticket created (10 requests a second, half its
// limit); each request on a new connection, sent whatever the earlier
// ones' answers (open loop).
func (h *neighbours) measure(name string, start func() func()) figures {
	if start != nil {
		stop := start()
		defer stop()
	}
	f := figures{name: name}
	calls := h.calls()
	var mu sync.Mutex
	var wg sync.WaitGroup
	posted := map[string]time.Time{}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	end := time.Now().Add(*neighboursWindow)
	for tick := 0; time.Now().Before(end); tick++ {
		replica := h.replicas[tick%len(h.replicas)]
		for range 2 {
			wg.Go(func() {
				status, b, took := h.call(hc, replica, http.MethodGet, "/v1/orgs/"+h.org+"/tickets/"+h.ticket, h.victim, "")
				mu.Lock()
				defer mu.Unlock()
				if status != http.StatusOK {
					f.bad = append(f.bad, fmt.Sprintf("GET ticket: %d %s", status, b))
					return
				}
				f.latency = append(f.latency, took)
			})
		}
		if tick%2 == 0 {
			wg.Go(func() {
				status, b, _ := h.call(hc, replica, http.MethodPost, "/v1/orgs/"+h.org+"/tickets", h.victim, `{"title":"victim"}`)
				var tk struct{ ID string }
				mu.Lock()
				defer mu.Unlock()
				if status != http.StatusCreated || json.Unmarshal(b, &tk) != nil {
					f.bad = append(f.bad, fmt.Sprintf("POST ticket: %d %s", status, b))
					return
				}
				posted[tk.ID] = time.Now()
			})
		}
		time.Sleep(250 * time.Millisecond)
	}
	wg.Wait()
	now := h.calls()
	f.dynamo = readMean(calls, now)
	f.dispatch = time.Duration((now["dispatch"][1] - calls["dispatch"][1]) / max(now["dispatch"][0]-calls["dispatch"][0], 1) * float64(time.Second))
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) { // a bound for a loss, not a speed
		h.mu.Lock()
		missing := 0
		for id := range posted {
			if _, ok := h.arrived[id]; !ok {
				missing++
			}
		}
		h.mu.Unlock()
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: %d of the victim's tickets never reached its endpoint", name, missing)
		}
	}
	h.mu.Lock()
	for id, at := range posted {
		f.lag = append(f.lag, h.arrived[id].Sub(at))
	}
	h.mu.Unlock()
	return f
}

// call sends one request to replica p and times it.
func (h *neighbours) call(hc *http.Client, p *apiProc, method, path, token, body string) (int, []byte, time.Duration) {
	req, err := http.NewRequest(method, p.base+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return 0, []byte(err.Error()), time.Since(start)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, time.Since(start)
}

// mustCall is call for the setup, which must succeed with want.
func (h *neighbours) mustCall(method, path, token, body string, want int) []byte {
	h.t.Helper()
	status, b, _ := h.call(http.DefaultClient, h.replicas[0], method, path, token, body)
	if status != want {
		h.t.Fatalf("%s %s: %d %s, want %d", method, path, status, b, want)
	}
	return b
}

// token mints an RS256 token of the identity provider for sub.
func (h *neighbours) token(sub, kid string, key *rsa.PrivateKey) string {
	now := time.Now()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, httpapi.Claims{Email: sub + "@example.com", Name: sub,
		RegisteredClaims: jwt.RegisteredClaims{Subject: sub, IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour)),
			ID: strconv.FormatInt(now.UnixNano(), 36)}})
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

func startNeighbours(t *testing.T) *neighbours {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	set, _ := json.Marshal(map[string]any{"keys": []map[string]string{{"kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256",
		"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes())}}})
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(set)
	}))
	t.Cleanup(idp.Close)

	db := store.NewClient(dynamotest.Config(t), store.Options{Endpoint: dynamotest.Endpoint()})
	table := dynamotest.TableName(t)
	if err := store.Migrate(context.Background(), db, table); err != nil { // its stream on: the replicas read it
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	h := &neighbours{t: t, key: key, ledger: startLedgerProxy(t, dynamotest.Endpoint()), arrived: map[string]time.Time{}}
	bin := testkit.APIBinary(t)
	env := []string{"AUTH_HS256_SECRET=", "AUTH_JWKS_URL=" + idp.URL, "WEBHOOK_DISPATCHER=local", "WEBHOOK_ALLOW_PRIVATE_NETWORKS=true",
		"RATE_LIMIT_RPS=" + strconv.Itoa(neighbourRate), "RATE_LIMIT_BURST=" + strconv.Itoa(neighbourBurst),
		"RATE_LIMIT_CALLER_RPS=" + strconv.Itoa(neighbourRate), "RATE_LIMIT_CALLER_BURST=" + strconv.Itoa(neighbourBurst),
		"MAX_CONNECTIONS=" + strconv.Itoa(neighbourConns), "LOG_LEVEL=warn"}
	for i, endpoint := range []string{dynamotest.Endpoint(), h.ledger.url} {
		h.metrics = append(h.metrics, testkit.FreeAddr(t))
		dispatcher := "WEBHOOK_DISPATCHER=local"
		if i == 1 {
			dispatcher = "WEBHOOK_DISPATCHER=lambda"
		}
		h.replicas = append(h.replicas, startAPI(t, bin, table, append(env, "METRICS_ADDR="+h.metrics[i], "DYNAMODB_ENDPOINT="+endpoint, dispatcher)...))
	}

	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p struct{ Data struct{ TargetID string } }
		if json.NewDecoder(r.Body).Decode(&p) == nil {
			h.mu.Lock()
			if _, ok := h.arrived[p.Data.TargetID]; !ok {
				h.arrived[p.Data.TargetID] = time.Now()
			}
			h.mu.Unlock()
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(recv.Close)
	h.victim = h.token("victim", "k1", key)
	h.org = jsonID(t, h.mustCall(http.MethodPost, "/v1/orgs", h.victim, `{"name":"Victim"}`, http.StatusCreated))
	h.ticket = jsonID(t, h.mustCall(http.MethodPost, "/v1/orgs/"+h.org+"/tickets", h.victim, `{"title":"read me"}`, http.StatusCreated))
	h.subscribe = func() {
		h.mustCall(http.MethodPost, "/v1/orgs/"+h.org+"/webhooks", h.victim, fmt.Sprintf(`{"url":%q,"events":["ticket.create"]}`, recv.URL), http.StatusCreated)
	}
	return h
}

// hostileOrgs creates the hostile orgs, each with 4 endpoints that hang
// until the test ends, subscribed to its tickets' creation. It returns
// each org's ID and owner's token.
func (h *neighbours) hostileOrgs() [][2]string {
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	h.t.Cleanup(func() { close(hang); srv.Close() })
	var out [][2]string
	for i := range max(1, *neighboursOrgs) {
		tok := h.token(fmt.Sprintf("hostile%d", i), "k1", h.key)
		org := jsonID(h.t, h.mustCall(http.MethodPost, "/v1/orgs", tok, fmt.Sprintf(`{"name":"Hostile %d"}`, i), http.StatusCreated))
		for e := range 4 {
			h.mustCall(http.MethodPost, "/v1/orgs/"+org+"/webhooks", tok, fmt.Sprintf(`{"url":"%s/%d","events":["ticket.create"]}`, srv.URL, e), http.StatusCreated)
		}
		out = append(out, [2]string{org, tok})
	}
	return out
}

// flood10x sends another org's requests at 10 times its limit.
func (h *neighbours) flood10x(org [2]string) func() func() {
	return func() func() {
		return h.loop(10, time.Second/neighbourRate, func(hc *http.Client, i int) {
			h.call(hc, h.replicas[i%2], http.MethodGet, "/v1/orgs/"+org[0], org[1], "")
		})
	}
}

// kidFlood sends, from 80 clients at once (more than MAX_CONNECTIONS), a
// new connection each time, once a second each, tokens whose kid the
// identity provider never published, recording how long their 401s took.
func (h *neighbours) kidFlood(took *[]time.Duration) func() func() {
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		h.t.Fatal(err)
	}
	toks := make([]string, 200) // minted before: signing is the flood's cost, not the server's
	for i := range toks {
		toks[i] = h.token("flood", fmt.Sprintf("unknown-%d", i), other)
	}
	var mu sync.Mutex
	return func() func() {
		return h.loop(80, time.Second, func(_ *http.Client, i int) {
			hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			status, _, d := h.call(hc, h.replicas[i%2], http.MethodGet, "/v1/me", toks[i%len(toks)], "")
			if status == http.StatusUnauthorized {
				mu.Lock()
				*took = append(*took, d)
				mu.Unlock()
			}
		})
	}
}

// backlog makes each hostile org create its tickets at once: a backlog of
// deliveries to endpoints that hang.
func (h *neighbours) backlog(orgs [][2]string) func() func() {
	return func() func() {
		var wg sync.WaitGroup
		for _, org := range orgs {
			for i := range *neighboursTickets {
				wg.Go(func() {
					h.call(http.DefaultClient, h.replicas[i%2], http.MethodPost, "/v1/orgs/"+org[0]+"/tickets", org[1], `{"title":"backlog"}`)
				})
			}
		}
		wg.Wait()
		return func() {}
	}
}

// loop runs n clients, each calling do every pause, until its stop func
// is called.
func (h *neighbours) loop(n int, pause time.Duration, do func(*http.Client, int)) func() {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := range n {
		wg.Go(func() {
			hc := &http.Client{Timeout: 30 * time.Second}
			for i := c; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(pause):
				}
				do(hc, i)
			}
		})
	}
	return func() { close(stop); wg.Wait() }
}

var (
	dynamoCalls = regexp.MustCompile(`(?m)^tenantd_dynamodb_call_duration_seconds_(count|sum)\{operation="(\w+)"\} (\S+)$`)
	dispatchLag = regexp.MustCompile(`(?m)^tenantd_webhook_dispatch_lag_seconds_(count|sum)(?:\{\})? (\S+)$`)
)

// calls is, by operation, how many DynamoDB calls the replicas made so
// far and how long they took in all, by their metrics; under "dispatch",
// how many events they dispatched and their dispatch lags in all.
func (h *neighbours) calls() map[string][2]float64 {
	total := map[string][2]float64{}
	for _, m := range h.metrics {
		resp, err := http.Get("http://" + m + "/metrics")
		if err != nil {
			h.t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		found := dynamoCalls.FindAllSubmatch(b, -1)
		for _, c := range dispatchLag.FindAllSubmatch(b, -1) {
			found = append(found, [][]byte{c[0], c[1], []byte("dispatch"), c[2]})
		}
		for _, c := range found {
			v, _ := strconv.ParseFloat(string(c[3]), 64)
			t := total[string(c[2])]
			if string(c[1]) == "count" {
				t[0] += v
			} else {
				t[1] += v
			}
			total[string(c[2])] = t
		}
	}
	return total
}

// writes is how many DynamoDB writes the replicas made so far, by
// operation.
func (h *neighbours) writes() map[string]int {
	total := map[string]int{}
	for op, c := range h.calls() {
		switch op {
		case "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems":
			total[op] = int(c[0])
		}
	}
	return total
}

// readMean is the mean of the replicas' DynamoDB point reads (GetItem,
// BatchGetItem: the victim's and everyone's, of a few items each) between
// two calls(): DynamoDB Local's own latency, one engine shared by every
// tenant, where the victim's REST latency beside a pattern may come from.
func readMean(before, after map[string][2]float64) time.Duration {
	var n, sum float64
	for _, op := range []string{"GetItem", "BatchGetItem"} {
		n += after[op][0] - before[op][0]
		sum += after[op][1] - before[op][1]
	}
	return time.Duration(sum / max(n, 1) * float64(time.Second))
}

// cpu is the CPU time the replicas used so far.
func (h *neighbours) cpu() time.Duration {
	var total time.Duration
	for _, p := range h.replicas {
		if st := p.cmd.ProcessState; st == nil {
			total += testkit.PidCPU(p.cmd.Process.Pid)
		}
	}
	return total
}

// ledgerProxy forwards replica B's DynamoDB calls, and, while slow, holds
// each rate-limit lease (an UpdateItem of a LIMIT# item) 600 ms first.
type ledgerProxy struct {
	url  string
	slow atomic.Bool
}

func startLedgerProxy(t *testing.T, target string) *ledgerProxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &ledgerProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorHandler = func(http.ResponseWriter, *http.Request, error) { panic(http.ErrAbortHandler) }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if p.slow.Load() && strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".UpdateItem") && bytes.Contains(body, []byte(`"LIMIT#`)) {
			select {
			case <-time.After(600 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}
