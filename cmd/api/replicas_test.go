//go:build unix

package main

// Three replicas of the real binary on one DynamoDB Local table: the rate
// limits are global (one tenant's load, round-robin across them, gets the
// limit once, not three times), and reads and conditional writes are
// linearizable across them while DynamoDB Local is paused and a replica
// is killed (checked by porcupine, as Jepsen's Knossos would).

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantd/tenantd/internal/dynamotest"
	"github.com/tenantd/tenantd/internal/store"
	"github.com/tenantd/tenantd/internal/testkit"
)

var (
	replicasWindow = flag.Duration("replicas.window", 2*time.Second, "TestReplicas: how long each rate-limit load runs")
	linearOps      = flag.Int("replicas.ops", 200, "TestReplicas: operations in the linearizability history")
)

// The limit the replicas run with: small, so a short load crosses it many
// times.
const (
	limitRate  = 20
	limitBurst = 40
	limitBlock = 10
	nReplicas  = 3
)

// cluster is three `api serve` on one table.
type cluster struct {
	t       *testing.T
	bin     string
	table   string
	env     []string
	mu      sync.Mutex // guards procs: a killed replica restarts
	procs   []*apiProc
	metrics []string
	clients []*http.Client
	dead    []atomic.Bool
}

func startCluster(t *testing.T, local *dynamotest.Local, table string) *cluster {
	c := &cluster{t: t, bin: testkit.APIBinary(t), table: table, dead: make([]atomic.Bool, nReplicas)}
	// The lease timeout is long for a test box where DynamoDB Local may
	// take a second under load; TestGlobalFallback covers the fallback.
	// The request deadline is the default: only the faults of
	// checkLinearizable need a short one, and it restarts the replicas
	// with it.
	c.env = []string{"DYNAMODB_ENDPOINT=" + local.Endpoint(), "LOG_LEVEL=warn", "RATE_LIMIT_LEASE_TIMEOUT=1500ms",
		"RATE_LIMIT_RPS=" + strconv.Itoa(limitRate), "RATE_LIMIT_BURST=" + strconv.Itoa(limitBurst), "RATE_LIMIT_CALLER_RPS=0",
		"RATE_LIMIT_BLOCK=" + strconv.Itoa(limitBlock), "RATE_LIMIT_REPLICAS=" + strconv.Itoa(nReplicas)}
	for range nReplicas {
		m := testkit.FreeAddr(t)
		c.metrics = append(c.metrics, m)
		c.procs = append(c.procs, startAPI(t, c.bin, table, append(c.env, "METRICS_ADDR="+m)...))
		c.clients = append(c.clients, &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}})
	}
	return c
}

// proc is replica i.
func (c *cluster) proc(i int) *apiProc {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.procs[i]
}

// kill SIGKILLs replica i.
func (c *cluster) kill(i int) {
	c.dead[i].Store(true)
	p := c.proc(i)
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// restartAll restarts every replica with env added to the cluster's.
func (c *cluster) restartAll(env ...string) {
	c.env = append(c.env, env...)
	for i := range nReplicas {
		c.kill(i)
		c.restart(i)
	}
}

// restart starts killed replica i again, on its address.
func (c *cluster) restart(i int) {
	p := startAPIAt(c.t, c.proc(i).addr, c.bin, c.table, append(c.env, "METRICS_ADDR="+c.metrics[i])...)
	c.mu.Lock()
	c.procs[i] = p
	c.mu.Unlock()
	c.dead[i].Store(false)
}

// op is one request as a client saw it.
type op struct {
	inv, comp time.Time
	status    int // 0: no answer
	code      string
	header    http.Header
	body      []byte
}

// do sends one request to replica i.
func (c *cluster) do(i int, method, path, token, body string, hdr ...string) op {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.proc(i).base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for j := 0; j+1 < len(hdr); j += 2 {
		req.Header.Set(hdr[j], hdr[j+1])
	}
	o := op{inv: time.Now()}
	resp, err := c.clients[i].Do(req)
	if err == nil {
		o.body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil {
			o.status, o.header = resp.StatusCode, resp.Header
			var p struct{ Code string }
			_ = json.Unmarshal(o.body, &p)
			o.code = p.Code
		}
	}
	o.comp = time.Now()
	return o
}

// mustDo is do on a live replica that must answer want: the setup of a
// test, not what it measures. Under checkLinearizable the replicas run
// with the short deadline its faults need, which a busy machine can miss,
// so a POST carries an Idempotency-Key and every request is retried, for
// up to a minute, while it gets no answer, a 503 or a 429; a retried PUT
// may find its first attempt applied (200 for 201).
func (c *cluster) mustDo(want int, method, path, token, body string) op {
	c.t.Helper()
	var hdr []string
	if method == http.MethodPost {
		hdr = []string{"Idempotency-Key", fmt.Sprintf("setup-%d", time.Now().UnixNano())}
	}
	deadline := time.Now().Add(time.Minute)
	for try := 0; ; try++ {
		o := c.do(0, method, path, token, body, hdr...)
		retry := o.status == 0 || o.status == http.StatusServiceUnavailable || o.status == http.StatusTooManyRequests
		switch {
		case o.status == want, try > 0 && method == http.MethodPut && want == http.StatusCreated && o.status == http.StatusOK:
			return o
		case !retry || time.Now().After(deadline):
			c.t.Fatalf("%s %s: %d %s, want %d", method, path, o.status, o.body, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// metric sums the samples of name{policy="org"} that replica i serves.
func (c *cluster) metric(i int, name string) float64 {
	resp, err := http.Get("http://" + c.metrics[i] + "/metrics")
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + name + `\{policy="org"\} (\S+)$`).FindSubmatch(b)
	if m == nil {
		c.t.Fatalf("replica %d serves no %s", i, name)
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// hammer sends GET path as fast as 6 clients can, round-robin over the
// live replicas, for d and until one was refused (a slow box sends fewer);
// at half time it calls mid (when set).
func (c *cluster) hammer(path, token string, d time.Duration, mid func()) []op {
	var (
		mu      sync.Mutex
		out     []op
		n       atomic.Int64
		wg      sync.WaitGroup
		refused atomic.Bool
	)
	end, limit := time.Now().Add(d), time.Now().Add(d+30*time.Second)
	for range 6 {
		wg.Go(func() {
			for now := time.Now(); now.Before(end) || !refused.Load() && now.Before(limit); now = time.Now() {
				i := int(n.Add(1)) % nReplicas
				if c.dead[i].Load() {
					continue
				}
				o := c.do(i, http.MethodGet, path, token, "")
				if o.status == http.StatusTooManyRequests {
					refused.Store(true)
				}
				mu.Lock()
				out = append(out, o)
				mu.Unlock()
			}
		})
	}
	if mid != nil {
		time.Sleep(d / 2)
		mid()
	}
	wg.Wait()
	return out
}

// checkBound asserts that the requests admitted (200) within any window
// [t1, t2] of the load (those invoked at or after t1 and answered by t2)
// are at most burst + rate·(t2−t1) + one block per replica, and returns
// how many were admitted.
func checkBound(t *testing.T, ops []op) int {
	t.Helper()
	var ok []op
	for _, o := range ops {
		switch o.status {
		case http.StatusOK:
			ok = append(ok, o)
		case http.StatusTooManyRequests:
		default:
			if o.status != 0 {
				t.Errorf("status %d %s under load, want 200 or 429", o.status, o.body)
			}
		}
	}
	worst, at := math.Inf(-1), ""
	for _, a := range ok {
		for _, b := range ok {
			if b.comp.Before(a.inv) {
				continue
			}
			n := 0
			for _, o := range ok {
				if !o.inv.Before(a.inv) && !o.comp.After(b.comp) {
					n++
				}
			}
			bound := limitBurst + limitRate*b.comp.Sub(a.inv).Seconds() + nReplicas*limitBlock
			if slack := float64(n) - bound; slack > worst {
				worst, at = slack, fmt.Sprintf("%d admitted in %v, bound %.1f", n, b.comp.Sub(a.inv), bound)
			}
		}
	}
	if worst > 0 {
		t.Errorf("over the global bound: %s", at)
	}
	t.Logf("%d of %d requests admitted; tightest window: %s", len(ok), len(ops), at)
	return len(ok)
}

// statuses counts the requests answered 200 or 429.
func statuses(ops []op) int {
	n := 0
	for _, o := range ops {
		if o.status == http.StatusOK || o.status == http.StatusTooManyRequests {
			n++
		}
	}
	return n
}

// tat reads the TAT of key's global bucket (0 without one).
func tat(t *testing.T, db *dynamodb.Client, table, key string) int64 {
	t.Helper()
	out, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: key}, "sk": &types.AttributeValueMemberS{Value: "#LIMIT"}}})
	if err != nil {
		t.Fatal(err)
	}
	v, ok := out.Item["tat"].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	n, _ := strconv.ParseInt(v.Value, 10, 64)
	return n
}

// TestReplicas: three replicas on one table.
func TestReplicas(t *testing.T) {
	local := dynamotest.StartLocal(t)
	t.Cleanup(func() { _ = syscall.Kill(local.PID(), syscall.SIGCONT) }) // runs before the Local stops
	raw := store.NewClient(local.Config(), store.Options{Endpoint: local.Endpoint()})
	table := dynamotest.TableName(t)
	if err := store.Migrate(context.Background(), raw, table); err != nil {
		t.Fatal(err)
	}
	dynamotest.StreamOff(t, raw, table) // the replicas read none
	c := startCluster(t, local, table)
	alice, bob, mallory := mintToken(t, "alice"), mintToken(t, "bob"), mintToken(t, "mallory")
	orgA := jsonID(t, c.mustDo(http.StatusCreated, http.MethodPost, "/v1/orgs", alice, `{"name":"Loud"}`).body)
	orgB := jsonID(t, c.mustDo(http.StatusCreated, http.MethodPost, "/v1/orgs", bob, `{"name":"Quiet"}`).body)

	t.Run("429/one tenant round-robin over 3 replicas gets the limit once", func(t *testing.T) {
		var quiet []op
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { // the other tenant, at half its limit, all along
			defer close(done)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(time.Second / (limitRate / 2)):
				}
				quiet = append(quiet, c.do(i%nReplicas, http.MethodGet, "/v1/orgs/"+orgB, bob, ""))
			}
		}()
		ops := c.hammer("/v1/orgs/"+orgA, alice, *replicasWindow, nil)
		close(stop)
		<-done
		if admitted, answered := checkBound(t, ops), statuses(ops); admitted < min(limitBurst, answered) {
			t.Errorf("admitted %d of %d, less than the burst %d", admitted, answered, limitBurst)
		}
		for _, o := range quiet {
			if o.status != http.StatusOK {
				t.Errorf("the other tenant got %d %s while the first was limited", o.status, o.body)
			}
		}
		var refused *op // by the global bucket (a lease that timed out on a busy box is the fallback's)
		for i := range ops {
			if ops[i].status == http.StatusTooManyRequests && strings.Contains(ops[i].header.Get("RateLimit-Policy"), fmt.Sprintf("q=%d;", limitBurst)) {
				refused = &ops[i]
				break
			}
		}
		if refused == nil {
			t.Fatal("no request refused")
		}
		h := refused.header
		if ra, err := strconv.Atoi(h.Get("Retry-After")); err != nil || ra < 1 || ra > 2 {
			t.Errorf("Retry-After %q, want 1 or 2 s (a block at %d/s)", h.Get("Retry-After"), limitRate)
		}
		if got, want := h.Get("RateLimit-Policy"), fmt.Sprintf(`"org";q=%d;w=%d`, limitBurst, limitBurst/limitRate); got != want {
			t.Errorf("RateLimit-Policy %q, want %q", got, want)
		}
		if got := h.Get("RateLimit"); !strings.HasPrefix(got, `"org";r=0;t=`) {
			t.Errorf("RateLimit %q, want none remaining", got)
		}
		var writes, refusals, failures, counted float64
		for i := range nReplicas {
			writes += c.metric(i, "tenantd_ratelimit_lease_writes_total")
			refusals += c.metric(i, "tenantd_ratelimit_lease_refusals_total")
			failures += c.metric(i, "tenantd_ratelimit_lease_failures_total")
			counted += c.metric(i, "tenantd_ratelimit_admitted_total")
		}
		// A lease takes what its key spends in a few seconds (within half
		// a block, 5 here), or, over the limit, what the bucket refilled:
		// the granted ones stay under one per two admitted, plus each
		// replica's first for each key (orgs A and B, alice's and bob's
		// outside an org); a lease per request would be twice that.
		if granted, most := writes-refusals-failures, counted/2+4*nReplicas; granted > most {
			t.Errorf("%v granted leases (%v failed) for %v admitted, want at most %v", granted, failures, counted, most)
		}
		t.Logf("limiter: %v writes (%v refused, %v failed) for %v admitted (both tenants and the org creations)", writes, refusals, failures, counted)
	})

	t.Run("404/a stranger spends nothing of the org's budget", func(t *testing.T) {
		before := tat(t, raw, table, "LIMIT#org#"+orgB)
		for i := range 30 {
			if o := c.do(i%nReplicas, http.MethodGet, "/v1/orgs/"+orgB, mallory, ""); o.status != http.StatusNotFound {
				t.Fatalf("a stranger's GET: %d %s, want 404", o.status, o.body)
			}
		}
		if after := tat(t, raw, table, "LIMIT#org#"+orgB); after != before {
			t.Errorf("the org's bucket moved from %d to %d under a stranger's requests", before, after)
		}
	})

	t.Run("OK a replica killed mid-window loses at most its block", func(t *testing.T) {
		orgC := jsonID(t, c.mustDo(http.StatusCreated, http.MethodPost, "/v1/orgs", alice, `{"name":"Killed"}`).body)
		ops := c.hammer("/v1/orgs/"+orgC, alice, *replicasWindow, func() { c.kill(nReplicas - 1) })
		admitted := checkBound(t, ops)
		first := ops[0].inv
		for _, o := range ops {
			if o.inv.Before(first) {
				first = o.inv
			}
		}
		// The load kept the bucket empty: every token it refilled since
		// the first lease was leased, so the TAT moved by them all.
		leased := float64(tat(t, raw, table, "LIMIT#org#"+orgC)-first.UnixMicro()) / 1e6 * limitRate
		if lost := leased - float64(admitted); lost > nReplicas*limitBlock {
			t.Errorf("%.1f tokens leased, %d admitted: %.1f lost, more than a block per replica (%d)", leased, admitted, lost, nReplicas*limitBlock)
		} else {
			t.Logf("%.1f tokens leased, %d admitted: %.1f held or lost by the replicas (below zero: spent on credit, not charged yet)", leased, admitted, lost)
		}
		c.restart(nReplicas - 1)
	})

	t.Run("OK reads and conditional writes are linearizable across replicas under faults", func(t *testing.T) {
		// A pause of DynamoDB Local shorter than the request deadline,
		// then one longer: the writes it holds end in 503
		// write_outcome_unknown.
		c.restartAll("REQUEST_TIMEOUT=2s", "WRITE_TIMEOUT=4s")
		checkLinearizable(t, c, local, alice, *linearOps)
	})
}

// ---- linearizability ----

// regInput is one operation on a register (a ticket's title, a team
// member's role): a read, or a write of value if the version is ifMatch.
type regInput struct {
	item    string
	write   bool
	ifMatch int64
	value   string
}

// regOutput is what the operation answered.
type regOutput struct {
	version int64
	value   string
	outcome string // "ok", "rejected" (412), "unknown" (5xx, timeout, no answer: maybe applied)
}

// regState is a register: its version and value.
type regState struct {
	version int64
	value   string
}

// registerModel is a compare-and-set register per item; a write whose
// outcome is unknown may or may not have taken effect.
func registerModel(initial map[string]regState) porcupine.Model {
	resolve := func(s any, item string) regState {
		if st := s.(regState); st.version != 0 {
			return st
		}
		return initial[item]
	}
	return (&porcupine.NondeterministicModel{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			by := map[string][]porcupine.Operation{}
			var items []string
			for _, o := range h {
				it := o.Input.(regInput).item
				if by[it] == nil {
					items = append(items, it)
				}
				by[it] = append(by[it], o)
			}
			var out [][]porcupine.Operation
			for _, it := range items {
				out = append(out, by[it])
			}
			return out
		},
		Init: func() []any { return []any{regState{}} },
		Step: func(state, input, output any) []any {
			in, out := input.(regInput), output.(regOutput)
			s := resolve(state, in.item)
			if !in.write {
				if out.version == s.version && out.value == s.value {
					return []any{s}
				}
				return nil
			}
			next := regState{s.version + 1, in.value}
			if in.value == s.value {
				next = s // a write of the value it holds changes nothing (a PUT of the same role)
			}
			switch {
			case out.outcome == "unknown" && s.version == in.ifMatch:
				return []any{s, next}
			case out.outcome == "unknown", out.outcome == "rejected" && s.version != in.ifMatch:
				return []any{s}
			case out.outcome == "ok" && s.version == in.ifMatch && out.version == next.version:
				return []any{next}
			}
			return nil
		},
		Equal: func(a, b any) bool { return a.(regState) == b.(regState) },
		DescribeOperation: func(input, output any) string {
			in, out := input.(regInput), output.(regOutput)
			if in.write {
				return fmt.Sprintf("%s: if v%d write %q -> %s v%d", in.item, in.ifMatch, in.value, out.outcome, out.version)
			}
			return fmt.Sprintf("%s: read -> v%d %q", in.item, out.version, out.value)
		},
	}).ToModel()
}

// etagVersion is the version an ETag `"<version>-<digest>"` names.
func etagVersion(tag string) (int64, bool) {
	v, _, ok := strings.Cut(strings.Trim(tag, `"`), "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

// register is one item of the history and how to read and write it.
type register struct {
	name, path, field string
	values            []string // a write sets one of these (a role), or, when nil, a fresh title
}

// checkLinearizable records a history of n operations by 4 clients on two
// tickets and a team member's role, through the replicas round-robin,
// while, again and again, DynamoDB Local is paused (1.5 or 2.5 s) and a
// replica is killed, and checks it with porcupine.
func checkLinearizable(t *testing.T, c *cluster, local *dynamotest.Local, token string, n int) {
	org := jsonID(t, c.mustDo(http.StatusCreated, http.MethodPost, "/v1/orgs", token, `{"name":"Registers"}`).body)
	base := "/v1/orgs/" + org
	c.mustDo(http.StatusCreated, http.MethodPost, base+"/users", token, `{"userId":"dave","email":"dave@example.com","name":"Dave","role":"member"}`)
	team := jsonID(t, c.mustDo(http.StatusCreated, http.MethodPost, base+"/teams", token, `{"name":"Core"}`).body)
	c.mustDo(http.StatusCreated, http.MethodPut, base+"/teams/"+team+"/members/dave", token, `{"role":"member"}`)
	regs := []register{{name: "member", path: base + "/teams/" + team + "/members/dave", field: "role", values: []string{"member", "admin"}}}
	for i := range 2 + n/400 { // a partition of the history per item: a long one spreads over more
		// Each ticket in an org of its own: its rate limit is the org's.
		tbase := "/v1/orgs/" + jsonID(t, c.mustDo(http.StatusCreated, http.MethodPost, "/v1/orgs", token, fmt.Sprintf(`{"name":"Tickets %d"}`, i)).body)
		id := jsonID(t, c.mustDo(http.StatusCreated, http.MethodPost, tbase+"/tickets", token, fmt.Sprintf(`{"title":"t%d"}`, i)).body)
		regs = append(regs, register{name: "ticket" + strconv.Itoa(i), path: tbase + "/tickets/" + id, field: "title"})
	}
	initial := map[string]regState{}
	for _, r := range regs {
		o := c.mustDo(http.StatusOK, http.MethodGet, r.path, token, "")
		v, _ := etagVersion(o.header.Get("ETag"))
		var body map[string]any
		_ = json.Unmarshal(o.body, &body)
		initial[r.name] = regState{v, fmt.Sprint(body[r.field])}
	}

	var (
		mu      sync.Mutex
		history []porcupine.Operation
		count   atomic.Int64
		rr      atomic.Int64
		seq     atomic.Int64
		wg      sync.WaitGroup
		unknown atomic.Int64
		faults  atomic.Int64
	)
	finished := make(chan struct{})
	epoch := time.Now()
	for client := range 4 {
		rnd := rand.New(rand.NewPCG(uint64(client), 7))
		wg.Go(func() {
			seen := map[string]int64{}
			for count.Load() < int64(n) {
				r := regs[rnd.IntN(len(regs))]
				i := int(rr.Add(1)) % nReplicas
				if c.dead[i].Load() {
					i = (i + 1) % nReplicas
				}
				in := regInput{item: r.name, write: rnd.IntN(2) == 0 && seen[r.name] > 0}
				var o op
				if in.write {
					in.ifMatch = seen[r.name]
					if rnd.IntN(4) == 0 && in.ifMatch > 1 {
						in.ifMatch-- // a stale version now and then: a 412
					}
					in.value = fmt.Sprintf("c%d-%d", client, seq.Add(1))
					method := http.MethodPatch
					if r.values != nil {
						in.value, method = r.values[rnd.IntN(len(r.values))], http.MethodPut
					}
					o = c.do(i, method, r.path, token, fmt.Sprintf(`{%q:%q}`, r.field, in.value), "If-Match", fmt.Sprintf(`"%d-x"`, in.ifMatch))
				} else {
					o = c.do(i, http.MethodGet, r.path, token, "")
				}
				out := regOutput{outcome: "ok"}
				switch {
				case o.status == http.StatusOK:
					out.version, _ = etagVersion(o.header.Get("ETag"))
					var body map[string]any
					_ = json.Unmarshal(o.body, &body)
					out.value = fmt.Sprint(body[r.field])
					seen[r.name] = out.version
				case o.status == http.StatusPreconditionFailed && in.write:
					out.outcome = "rejected"
					delete(seen, r.name) // read again before the next write
				case o.status == http.StatusTooManyRequests:
					time.Sleep(20 * time.Millisecond)
					continue // refused before anything ran
				case (o.status == 0 || o.status >= 500) && in.write:
					out.outcome = "unknown"
					unknown.Add(1)
				case o.status == 0 || o.status >= 500:
					continue // a read that saw nothing tells nothing
				default:
					t.Errorf("%s %s: %d %s", map[bool]string{true: "write", false: "read"}[in.write], r.path, o.status, o.body)
					continue
				}
				ret := o.comp.Sub(epoch).Nanoseconds()
				if out.outcome == "unknown" {
					ret = math.MaxInt64 // it may take effect any time after it was sent
				}
				count.Add(1)
				mu.Lock()
				history = append(history, porcupine.Operation{ClientId: client, Input: in, Call: o.inv.Sub(epoch).Nanoseconds(), Output: out, Return: ret})
				mu.Unlock()
			}
		})
	}
	// The faults, while the clients run, in cycles: DynamoDB Local
	// paused for 1.5 or 2.5 s, then a replica killed, restarted a second
	// later.
	go func() { wg.Wait(); close(finished) }()
	for cycle := 0; ; cycle++ {
		select {
		case <-finished:
		case <-time.After(500 * time.Millisecond):
			if err := syscall.Kill(local.PID(), syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			// Shorter than REQUEST_TIMEOUT (2 s), then longer: requests
			// wait, then writes end in 503 write_outcome_unknown.
			time.Sleep(time.Duration(1500+1000*(cycle%2)) * time.Millisecond)
			if err := syscall.Kill(local.PID(), syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond)
			victim := 1 + cycle%2
			c.kill(victim)
			time.Sleep(time.Second)
			c.restart(victim)
			faults.Add(1)
			continue
		}
		break
	}

	writes := 0
	for _, o := range history {
		if o.Input.(regInput).write {
			writes++
		}
	}
	res := porcupine.CheckOperationsTimeout(registerModel(initial), history, time.Minute)
	switch res {
	case porcupine.Ok:
		t.Logf("linearizable: %d operations checked (%d writes, %d of them maybe applied), over %d items and 3 replicas, through %d cycles of a pause and a kill",
			len(history), writes, unknown.Load(), len(regs), faults.Load())
	case porcupine.Illegal:
		ops := slices.Clone(history)
		slices.SortFunc(ops, func(a, b porcupine.Operation) int { return int(a.Call - b.Call) })
		for _, o := range ops {
			t.Logf("%d..%d client %d %s", o.Call/1e6, min(o.Return, 1<<62)/1e6, o.ClientId, registerModel(initial).DescribeOperation(o.Input, o.Output))
		}
		t.Errorf("not linearizable: %d operations", len(history))
	default:
		t.Errorf("the check did not finish within a minute (%d operations)", len(history))
	}
}
