//go:build unix

package main

// TestChaos is the chaos test: a seeded, bounded, randomized concurrent
// workload against the real binary, with real faults injected (throttling
// answered by a proxy in front of DynamoDB Local, DynamoDB Local paused
// with SIGSTOP, its port refused, the API killed with SIGKILL mid-request
// and restarted), in rounds. After each round, once the faults are lifted
// and every unfinished deletion has finished by itself, it runs
// storetest.CheckInvariants (a consistent Scan of the table and its
// indexes) and checks every acknowledged write against the table through
// the API: an acknowledged create is readable unless a delete of it, or of
// a parent, was attempted; an acknowledged delete (of it or of a parent)
// leaves it unreadable; a create retried with its Idempotency-Key exists
// at most once, acknowledged or not; and every committed change of org A
// of a subscribed type (its audit log) has reached each of A's webhook
// endpoints subscribed to it, signed, whatever the faults met (chaosHooks).
// No request may ever answer 500.
//
// `make test` runs it briefly with a fixed seed; `make chaos` runs it
// longer with a random seed, printed so that a failure can be replayed:
//
//	go test -race -count=1 -run '^TestChaos$' -v ./cmd/api -chaos.seed=N -chaos.rounds=R

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/tenantd/tenantd/internal/dynamotest"
	"github.com/tenantd/tenantd/internal/store"
	"github.com/tenantd/tenantd/internal/store/storetest"
	"github.com/tenantd/tenantd/internal/testkit"
	"github.com/tenantd/tenantd/internal/webhook"
)

var (
	chaosSeed   = flag.Uint64("chaos.seed", 1, "TestChaos: seed of the workload; 0 picks one at random (printed)")
	chaosRounds = flag.Int("chaos.rounds", 2, "TestChaos: rounds of workload, faults and checks")
	chaosRound  = flag.Duration("chaos.round", 5*time.Second, "TestChaos: workload time per round")
)

// Fault kinds, injected one at a time; every 2 consecutive rounds inject
// all four.
const (
	faultThrottle = iota // the proxy answers ThrottlingException to 40% of calls
	faultPause           // DynamoDB Local stopped (SIGSTOP) for 1-4 s
	faultRefuse          // the proxy's port refuses connections
	faultKill            // the API is killed (SIGKILL) mid-request and restarted
	nFaults
)

var faultNames = [nFaults]string{"throttle", "pause DynamoDB Local", "refuse the port", "kill the API"}

func TestChaos(t *testing.T) {
	seed := *chaosSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("chaos: seed %d, %d rounds of %v (replay: go test -race -count=1 -run '^TestChaos$' -v ./cmd/api -chaos.seed=%d -chaos.rounds=%d)",
		seed, *chaosRounds, *chaosRound, seed, *chaosRounds)
	rnd := rand.New(rand.NewPCG(seed, 0))

	local := dynamotest.StartLocal(t)
	t.Cleanup(func() { _ = syscall.Kill(local.PID(), syscall.SIGCONT) }) // runs before the Local stops
	proxy := startFaultProxy(t, local.Endpoint())
	raw := store.NewClient(local.Config(), store.Options{Endpoint: local.Endpoint()})
	table := dynamotest.TableName(t)
	if err := store.Migrate(context.Background(), raw, table); err != nil {
		t.Fatal(err)
	}
	bin := testkit.APIBinary(t)
	env := []string{"DYNAMODB_ENDPOINT=" + proxy.url(), "REQUEST_TIMEOUT=2s", "WRITE_TIMEOUT=4s", "SHUTDOWN_TIMEOUT=3s", "DRAIN_DELAY=0s",
		"DELETION_LEASE=2s", "DELETION_POLL=200ms", "OFFBOARD_WAIT=300ms", "OFFBOARD_GRACE=0s", "LOG_LEVEL=warn",
		"WEBHOOK_DISPATCHER=local", "WEBHOOK_ALLOW_PRIVATE_NETWORKS=true", "WEBHOOK_TIMEOUT=1s", "WEBHOOK_FIRST_RETRY=200ms"}
	addr := testkit.FreeAddr(t)
	w := &chaosWorld{t: t, base: "http://" + addr, http: &http.Client{Timeout: 10 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 64, ResponseHeaderTimeout: 8 * time.Second}}}
	api := startAPIAt(t, addr, bin, table, env...)

	// Org A lives through every round; each round also creates an org that
	// its owner offboards while the others go on working in it.
	a := w.newOrg("a", []string{"a.admin.1", "a.admin.2"}, []string{"a.member.1", "a.member.2", "a.member.3", "a.member.4"})
	hooks := newChaosHooks(t, w, a, seed)
	for r := range *chaosRounds {
		d := w.newOrg(fmt.Sprintf("d%d", r), []string{fmt.Sprintf("d%d.admin", r), "a.admin.1"}, []string{"a.member.1", fmt.Sprintf("d%d.member", r)})
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for i, c := range append(a.clients(), d.clients()...) {
			c.rnd = rand.New(rand.NewPCG(seed, uint64(r*100+i+1)))
			wg.Add(1)
			go func() { defer wg.Done(); c.work(ctx, w) }()
		}
		// The doomed org's DELETE, somewhere in the middle of the round.
		deleteAt := time.Duration(float64(*chaosRound) * (0.3 + 0.4*rnd.Float64()))
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-ctx.Done():
				return
			case <-time.After(deleteAt):
			}
			d.owner().deleteOrg(w)
		}()

		// The faults of this round, one after another, in the test's own
		// goroutine (a restart may fail the test).
		end := time.Now().Add(*chaosRound)
		for _, kind := range []int{(2 * r) % nFaults, (2*r + 1) % nFaults} {
			time.Sleep(time.Duration(rnd.Int64N(int64(*chaosRound / 4))))
			t.Logf("round %d: %s", r, faultNames[kind])
			switch kind {
			case faultThrottle:
				proxy.throttle.Store(40)
				time.Sleep(1500 * time.Millisecond)
				proxy.throttle.Store(0)
			case faultPause:
				if err := syscall.Kill(local.PID(), syscall.SIGSTOP); err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Second + time.Duration(rnd.Int64N(int64(3*time.Second))))
				if err := syscall.Kill(local.PID(), syscall.SIGCONT); err != nil {
					t.Fatal(err)
				}
			case faultRefuse:
				proxy.refuse(t)
				time.Sleep(1500 * time.Millisecond)
				proxy.accept(t)
			case faultKill:
				_ = api.cmd.Process.Signal(syscall.SIGKILL)
				<-api.exited
				time.Sleep(200 * time.Millisecond)
				api = startAPIAt(t, addr, bin, table, env...)
			}
		}
		time.Sleep(time.Until(end))
		cancel()
		wg.Wait()

		// The doomed org is deleted whatever its DELETE met; then every
		// unfinished deletion finishes by itself (the deletion worker).
		d.owner().deleteOrg(w)
		waitNoDeletions(t, raw, table, 60*time.Second)
		// Every event reached its endpoints, and the delivery workers have
		// nothing left to change, before the table is checked.
		hooks.verify(r, w, a)
		waitNoneDue(t, raw, table, 60*time.Second)
		vs, err := storetest.CheckInvariants(context.Background(), raw, table, storetest.CheckOptions{Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			t.Errorf("round %d: invariant: %s", r, v)
		}
		w.verify(r, a, d)
		t.Logf("round %d: %s; %d throttled DynamoDB calls", r, w.summary(), proxy.throttled.Load())
		if t.Failed() {
			return
		}
	}

	// No user is left unremovable: the owner removes every other user of
	// A, taking over the teams they are the last owner of; then A is
	// offboarded and nothing of any org is left.
	w.removeEveryone(a)
	a.owner().deleteOrg(w)
	waitNoDeletions(t, raw, table, 60*time.Second)
	vs, err := storetest.CheckInvariants(context.Background(), raw, table, storetest.CheckOptions{Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Errorf("after offboarding every org: invariant: %s", v)
	}
	if left := tenantItems(t, raw, table); len(left) > 0 {
		t.Errorf("after offboarding every org, %d items are left, e.g. %v", len(left), left[:min(5, len(left))])
	}
}

// ---- the model ----

// attempt is one request of a create or delete; status 0 means no answer
// (the connection failed).
type attempt struct {
	start, end time.Time
	status     int
}

func (a attempt) ok() bool { return a.status >= 200 && a.status < 300 }

// settled reports whether the attempt's outcome is known and final when
// it ended: a 4xx is final; a 2xx committed before it ended. A request
// without an answer, or a 503, may still commit later (a paused DynamoDB
// Local finishes what it had read when it resumes).
func (a attempt) settled() bool { return a.status >= 200 && a.status < 500 }

// record is what the workload did to one entity.
type record struct {
	kind, id string // "user", "team", "ticket", "comment", "member"
	seq      int64  // creation order of the record
	path     string // the entity's API path under the org
	parents  []*record
	label    string // title, name or body: unique per create
	creates  []attempt
	deletes  []attempt
	// refused: an unkeyed create, sent once, answered a final 4xx: it must
	// have written nothing.
	refused bool
}

// mustExist: a create was acknowledged after every delete attempt of the
// entity and its parents ended with a final answer.
func (r *record) mustExist() bool {
	for _, c := range r.creates {
		if c.ok() && r.deletedBefore(c.start) {
			return true
		}
	}
	return false
}

func (r *record) deletedBefore(t time.Time) bool {
	for _, d := range r.deletes {
		if !d.settled() || !d.end.Before(t) {
			return false
		}
	}
	for _, p := range r.parents {
		if !p.deletedBefore(t) {
			return false
		}
	}
	return true
}

// mustNotExist: a parent's delete was acknowledged (no child outlives its
// parent), or the entity's own delete was acknowledged after every create
// attempt ended with a final answer.
func (r *record) mustNotExist() bool {
	for _, p := range r.parents {
		if p.goneForGood() {
			return true
		}
	}
	for _, d := range r.deletes {
		if !d.ok() {
			continue
		}
		after := true
		for _, c := range r.creates {
			if !c.settled() || !c.end.Before(d.start) {
				after = false
			}
		}
		if after {
			return true
		}
	}
	return false
}

// goneForGood: a delete of r (an org, team, ticket or user, whose IDs are
// never reused) or of a parent was acknowledged.
func (r *record) goneForGood() bool {
	for _, d := range r.deletes {
		if d.ok() {
			return true
		}
	}
	for _, p := range r.parents {
		if p.goneForGood() {
			return true
		}
	}
	return false
}

type chaosWorld struct {
	t    *testing.T
	base string
	http *http.Client
	seq  atomic.Int64

	mu       sync.Mutex
	statuses map[int]int
}

type chaosOrg struct {
	id      string
	rec     *record
	members []*chaosClient // [0] is the owner

	mu       sync.Mutex
	users    map[string]*record // extra users, added by the workload
	teams    map[string]*record
	tickets  map[string]*record
	comments map[string]*record
	edges    map[string]*record // teamId/userId
	unsure   []*record          // tickets whose create got no final answer
}

type chaosClient struct {
	user, role, tok string
	org             *chaosOrg
	rnd             *rand.Rand
}

func (o *chaosOrg) owner() *chaosClient     { return o.members[0] }
func (o *chaosOrg) clients() []*chaosClient { return o.members }

// newOrg creates an org owned by <name>.owner with the given admins and
// members, a team and a ticket, with no faults on.
func (w *chaosWorld) newOrg(name string, admins, members []string) *chaosOrg {
	t := w.t
	owner := &chaosClient{user: name + ".owner", role: "owner"}
	owner.tok = mintToken(t, owner.user)
	status, b := w.setup(owner.tok, "/v1/orgs", map[string]any{"name": "chaos " + name})
	if status != http.StatusCreated {
		t.Fatalf("create org %s: %d %s", name, status, b)
	}
	o := &chaosOrg{id: jsonID(t, b), users: map[string]*record{}, teams: map[string]*record{}, tickets: map[string]*record{},
		comments: map[string]*record{}, edges: map[string]*record{}}
	o.rec = &record{kind: "org", id: o.id}
	owner.org = o
	o.members = append(o.members, owner)
	for _, u := range append(append([]string{}, admins...), members...) {
		role := "member"
		if len(o.members) <= len(admins) {
			role = "admin"
		}
		c := &chaosClient{user: u, role: role, tok: mintToken(t, u), org: o}
		if status, b := w.setup(owner.tok, "/v1/orgs/"+o.id+"/users",
			map[string]any{"userId": u, "email": u + "@example.com", "name": u, "role": role}); status != http.StatusCreated {
			t.Fatalf("add %s to %s: %d %s", u, name, status, b)
		}
		o.members = append(o.members, c)
	}
	return o
}

// setup POSTs one create of a round's setup, with an Idempotency-Key, until
// it has an answer other than 503 or 409 (in progress): the server's
// 2 s deadline is for the faults, and a busy machine can make a setup
// request miss it.
func (w *chaosWorld) setup(tok, path string, body any) (int, []byte) {
	key := fmt.Sprintf("chaos-setup-%d", w.seq.Add(1))
	for end := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		status, b := w.do(tok, http.MethodPost, path, body, key)
		if (status != 0 && status != http.StatusServiceUnavailable && status != http.StatusConflict) || time.Now().After(end) {
			return status, b
		}
	}
}

// do sends one request and returns its status (0 if no answer came) and
// body. It fails the test on any 5xx but 503 and on a 400 (the workload's
// requests are well-formed); everything else is a possible outcome of a
// race.
func (w *chaosWorld) do(tok, method, path string, body any, idemKey string) (int, []byte) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, w.base+path, rd)
	if err != nil {
		w.t.Errorf("%s %s: %v", method, path, err)
		return 0, nil
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	resp, err := w.http.Do(req)
	if err != nil {
		w.count(0)
		return 0, nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		w.count(0)
		return 0, nil
	}
	w.count(resp.StatusCode)
	switch {
	case resp.StatusCode == http.StatusServiceUnavailable:
		if resp.Header.Get("Retry-After") == "" {
			w.t.Errorf("%s %s: 503 without Retry-After", method, path)
		}
	case resp.StatusCode >= 500, resp.StatusCode == http.StatusBadRequest, resp.StatusCode == http.StatusTooManyRequests:
		w.t.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode, b
}

func (w *chaosWorld) count(status int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.statuses == nil {
		w.statuses = map[int]int{}
	}
	w.statuses[status]++
}

func (w *chaosWorld) summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var keys []int
	for k := range w.statuses {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d x%d", k, w.statuses[k]))
	}
	return "answers so far (0 = none): " + strings.Join(parts, ", ")
}

// track sends a request and appends it as an attempt to *list under the
// org's lock.
func (c *chaosClient) track(w *chaosWorld, list *[]attempt, method, path string, body any, idemKey string) (int, []byte) {
	start := time.Now()
	status, b := w.do(c.tok, method, path, body, idemKey)
	c.org.mu.Lock()
	*list = append(*list, attempt{start: start, end: time.Now(), status: status})
	c.org.mu.Unlock()
	return status, b
}

// create sends a creating POST with an Idempotency-Key, retried with the
// same key while it gets no answer or a 503 (or 409 while the first is
// still running), and records the attempts on rec; it returns the last
// answer.
//
// Every other create is sent once, without a key: the model holds its
// answers to the same rules, and a final 4xx to having written nothing
// (record.refused).
func (c *chaosClient) create(w *chaosWorld, rec *record, path string, body any) (int, []byte) {
	if c.rnd.IntN(2) == 0 {
		status, b := c.track(w, &rec.creates, http.MethodPost, path, body, "")
		rec.refused = status >= 400 && status < 500
		return status, b
	}
	key := fmt.Sprintf("chaos-%d", w.seq.Add(1))
	var status int
	var b []byte
	for try := 0; try < 4; try++ {
		status, b = c.track(w, &rec.creates, http.MethodPost, path, body, key)
		if status != 0 && status != http.StatusServiceUnavailable && !(status == http.StatusConflict && bytes.Contains(b, []byte("idempotency"))) {
			break
		}
		time.Sleep(time.Duration(100+c.rnd.IntN(300)) * time.Millisecond)
	}
	return status, b
}

// pick returns a random record of m, or nil: most of the time one of the
// three newest, so that clients race on the same few entities.
func (c *chaosClient) pick(m map[string]*record) *record {
	c.org.mu.Lock()
	defer c.org.mu.Unlock()
	if len(m) == 0 {
		return nil
	}
	recs := make([]*record, 0, len(m))
	for _, r := range m {
		recs = append(recs, r)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].seq < recs[j].seq })
	if n := len(recs); n > 3 && c.rnd.IntN(5) != 0 {
		recs = recs[n-3:]
	}
	return recs[c.rnd.IntN(len(recs))]
}

// pickUser is one of the org's users: a persona or an extra user.
func (c *chaosClient) pickUser() (string, *record) {
	if c.rnd.IntN(2) == 0 {
		if r := c.pick(c.org.users); r != nil {
			return r.id, r
		}
	}
	return c.org.members[c.rnd.IntN(len(c.org.members))].user, nil
}

var ticketStatuses = []string{"new", "open", "pending", "solved", "closed"}

// work runs random operations until ctx ends.
func (c *chaosClient) work(ctx context.Context, w *chaosWorld) {
	o := c.org
	orgPath := "/v1/orgs/" + o.id
	admin := c.role != "member"
	for ctx.Err() == nil {
		o.mu.Lock()
		gone := o.rec.goneForGood()
		o.mu.Unlock()
		if gone { // an offboarded org: keep knocking, but slowly
			time.Sleep(100 * time.Millisecond)
		}
		n := w.seq.Add(1)
		switch op := c.rnd.IntN(20); {
		case op < 3: // create a ticket, maybe routed and assigned
			body := map[string]any{"title": fmt.Sprintf("ticket %d by %s", n, c.user)}
			if team := c.pick(o.teams); team != nil && c.rnd.IntN(2) == 0 {
				body["teamId"] = team.id
			}
			if c.rnd.IntN(3) == 0 {
				body["assigneeId"], _ = c.pickUser()
			}
			rec := &record{kind: "ticket", seq: n, label: body["title"].(string), parents: []*record{o.rec}}
			if status, b := c.create(w, rec, orgPath+"/tickets", body); status == http.StatusCreated {
				rec.id = jsonID(w.t, b)
				rec.path = "/tickets/" + rec.id
				o.mu.Lock()
				o.tickets[rec.id] = rec
				o.mu.Unlock()
			} else {
				o.mu.Lock()
				o.unsure = append(o.unsure, rec) // unknown outcome: checked for duplicates only
				o.mu.Unlock()
			}
		case op < 7: // comment on a ticket
			tk := c.pick(o.tickets)
			if tk == nil || tk.id == "" {
				continue
			}
			rec := &record{kind: "comment", seq: n, label: fmt.Sprintf("comment %d by %s", n, c.user), parents: []*record{tk}}
			if status, b := c.create(w, rec, orgPath+"/tickets/"+tk.id+"/comments", map[string]any{"body": rec.label}); status == http.StatusCreated {
				rec.id = jsonID(w.t, b)
				o.mu.Lock()
				o.comments[rec.id] = rec
				o.mu.Unlock()
			}
		case op < 9: // update a ticket
			tk := c.pick(o.tickets)
			if tk == nil || tk.id == "" {
				continue
			}
			patch := map[string]any{"status": ticketStatuses[c.rnd.IntN(len(ticketStatuses))]}
			switch c.rnd.IntN(4) {
			case 0:
				patch["assigneeId"], _ = c.pickUser()
			case 1:
				if team := c.pick(o.teams); team != nil {
					patch["teamId"] = team.id
				}
			case 2:
				patch["teamId"] = nil
			}
			w.do(c.tok, http.MethodPatch, orgPath+"/tickets/"+tk.id, patch, "")
		case op < 10: // delete a ticket (the requester or an admin)
			if tk := c.pick(o.tickets); tk != nil && tk.id != "" {
				c.track(w, &tk.deletes, http.MethodDelete, orgPath+"/tickets/"+tk.id, nil, "")
			}
		case op < 11: // create a team
			if !admin {
				continue
			}
			rec := &record{kind: "team", seq: n, label: fmt.Sprintf("team %d by %s", n, c.user), parents: []*record{o.rec}}
			if status, b := c.create(w, rec, orgPath+"/teams", map[string]any{"name": rec.label}); status == http.StatusCreated {
				rec.id = jsonID(w.t, b)
				rec.path = "/teams/" + rec.id
				o.mu.Lock()
				o.teams[rec.id] = rec
				o.edges[rec.id+"/"+c.user] = &record{kind: "member", id: rec.id + "/" + c.user, path: "/teams/" + rec.id + "/members/" + c.user,
					parents: []*record{rec}, creates: []attempt{rec.creates[len(rec.creates)-1]}}
				o.mu.Unlock()
			}
		case op < 14: // put a member (admins; the team's owners and admins too, else 403)
			team := c.pick(o.teams)
			if team == nil {
				continue
			}
			user, userRec := c.pickUser()
			role := []string{"member", "member", "admin", "owner"}[c.rnd.IntN(4)]
			e := c.edge(team, user, userRec)
			c.track(w, &e.creates, http.MethodPut, orgPath+"/teams/"+team.id+"/members/"+user, map[string]any{"role": role}, "")
		case op < 15: // remove a member
			team := c.pick(o.teams)
			if team == nil {
				continue
			}
			user, userRec := c.pickUser()
			e := c.edge(team, user, userRec)
			c.track(w, &e.deletes, http.MethodDelete, orgPath+"/teams/"+team.id+"/members/"+user, nil, "")
		case op < 16: // delete a team
			if team := c.pick(o.teams); team != nil && admin {
				c.track(w, &team.deletes, http.MethodDelete, orgPath+"/teams/"+team.id, nil, "")
			}
		case op < 17: // add a user
			if !admin {
				continue
			}
			u := fmt.Sprintf("%s.x%d", o.owner().user, n)
			rec := &record{kind: "user", seq: n, id: u, path: "/users/" + u, parents: []*record{o.rec}}
			o.mu.Lock()
			o.users[u] = rec
			o.mu.Unlock()
			c.create(w, rec, orgPath+"/users", map[string]any{"userId": u, "email": u + "@example.com", "name": u, "role": "member"})
		case op < 18: // remove an extra user (or change their role)
			r := c.pick(o.users)
			if r == nil || !admin {
				continue
			}
			if c.rnd.IntN(3) == 0 {
				w.do(c.tok, http.MethodPatch, orgPath+"/users/"+r.id, map[string]any{"role": []string{"member", "admin"}[c.rnd.IntN(2)]}, "")
				continue
			}
			c.track(w, &r.deletes, http.MethodDelete, orgPath+"/users/"+r.id, nil, "")
		case op < 19: // invite a new user (to a team, maybe), who accepts
			if !admin {
				continue
			}
			u := fmt.Sprintf("%s.i%d", o.owner().user, n)
			body := map[string]any{"email": u + "@example.com", "role": "member"}
			var team *record
			if team = c.pick(o.teams); team != nil {
				body["teamIds"] = []string{team.id}
			}
			status, b := w.do(c.tok, http.MethodPost, orgPath+"/invitations", body, "")
			if status != http.StatusCreated {
				continue
			}
			var inv struct{ Token string }
			if err := json.Unmarshal(b, &inv); err != nil || inv.Token == "" {
				w.t.Errorf("invitation: %s", b)
				continue
			}
			rec := &record{kind: "user", seq: n, id: u, path: "/users/" + u, parents: []*record{o.rec}}
			o.mu.Lock()
			o.users[u] = rec
			o.mu.Unlock()
			invitee := &chaosClient{user: u, tok: mintToken(w.t, u), org: o, rnd: c.rnd}
			invitee.track(w, &rec.creates, http.MethodPost, "/v1/invitations/"+inv.Token+"/accept", nil, "")
		default: // reads
			if tk := c.pick(o.tickets); tk != nil && tk.id != "" {
				w.do(c.tok, http.MethodGet, orgPath+"/tickets/"+tk.id+"?include=comments", nil, "")
			}
			w.do(c.tok, http.MethodGet, orgPath+"/teams?limit=20", nil, "")
		}
	}
}

// edge returns the record of a team membership, made on first use.
func (c *chaosClient) edge(team *record, user string, userRec *record) *record {
	c.org.mu.Lock()
	defer c.org.mu.Unlock()
	k := team.id + "/" + user
	e := c.org.edges[k]
	if e == nil {
		e = &record{kind: "member", id: k, path: "/teams/" + team.id + "/members/" + user, parents: []*record{team}}
		if userRec != nil {
			e.parents = append(e.parents, userRec)
		}
		c.org.edges[k] = e
	}
	return e
}

// deleteOrg offboards the org, repeating the DELETE until it is
// acknowledged (202 or 204) or the org is gone (404).
func (c *chaosClient) deleteOrg(w *chaosWorld) {
	for try := 0; ; try++ {
		status, b := c.track(w, &c.org.rec.deletes, http.MethodDelete, "/v1/orgs/"+c.org.id, nil, "")
		switch status {
		case http.StatusAccepted, http.StatusNoContent, http.StatusNotFound:
			return
		}
		if try > 50 {
			w.t.Errorf("DELETE org %s: %d %s", c.org.id, status, b)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ---- checks ----

// verify reads every entity the workload touched in org a through the API
// (as its owner) and holds it to the model; the doomed org d must answer
// 404 to all its members.
func (w *chaosWorld) verify(round int, a, d *chaosOrg) {
	t := w.t
	for _, c := range d.members {
		if status, b := w.do(c.tok, http.MethodGet, "/v1/orgs/"+d.id, nil, ""); status != http.StatusNotFound {
			t.Errorf("round %d: the offboarded org answers %s with %d %s", round, c.user, status, b)
		}
	}
	owner := a.owner()
	a.mu.Lock()
	var recs []*record
	for _, m := range []map[string]*record{a.users, a.teams, a.tickets, a.edges} {
		for _, r := range m {
			if r.id != "" {
				recs = append(recs, r)
			}
		}
	}
	comments := make([]*record, 0, len(a.comments))
	for _, r := range a.comments {
		comments = append(comments, r)
	}
	tickets := append([]*record{}, a.unsure...)
	for _, r := range a.tickets {
		tickets = append(tickets, r)
	}
	a.mu.Unlock()
	checked := 0
	for _, r := range recs {
		must, mustNot := r.mustExist(), r.mustNotExist()
		if !must && !mustNot {
			continue
		}
		checked++
		status, b := w.do(owner.tok, http.MethodGet, "/v1/orgs/"+a.id+r.path, nil, "")
		switch {
		case must && mustNot:
			t.Errorf("round %d: the model says %s %s must both exist and not exist: %+v", round, r.kind, r.id, r)
		case must && status != http.StatusOK:
			t.Errorf("round %d: acknowledged %s %s is not readable: %d %s", round, r.kind, r.id, status, b)
		case must && r.label != "" && !bytes.Contains(b, []byte(r.label)):
			t.Errorf("round %d: %s %s reads %s, want %q", round, r.kind, r.id, b, r.label)
		case mustNot && status != http.StatusNotFound:
			t.Errorf("round %d: %s %s is readable after an acknowledged delete: %d %s", round, r.kind, r.id, status, b)
		}
	}
	// Comments, through their ticket's listing (404 once the ticket is gone).
	byTicket := map[string]map[string]bool{}
	for _, r := range comments {
		tk := r.parents[0]
		if _, ok := byTicket[tk.id]; !ok {
			status, b := w.do(owner.tok, http.MethodGet, "/v1/orgs/"+a.id+"/tickets/"+tk.id+"/comments?limit=100", nil, "")
			ids := map[string]bool{}
			if status == http.StatusOK {
				for _, id := range jsonItemIDs(t, b) {
					ids[id] = true
				}
			}
			byTicket[tk.id] = ids
			if tk.goneForGood() && status != http.StatusNotFound {
				t.Errorf("round %d: comments of deleted ticket %s: %d, want 404", round, tk.id, status)
			}
		}
		checked++
		switch has := byTicket[tk.id][r.id]; {
		case r.mustExist() && !has:
			t.Errorf("round %d: acknowledged comment %s of ticket %s is not listed", round, r.id, tk.id)
		case r.mustNotExist() && has:
			t.Errorf("round %d: comment %s is listed after its ticket %s was deleted", round, r.id, tk.id)
		}
	}
	// Exactly once: no create retried with its Idempotency-Key made two
	// tickets, acknowledged or not.
	titles := map[string]int{}
	for _, item := range w.listAll(owner.tok, "/v1/orgs/"+a.id+"/tickets") {
		titles[item.Title]++
	}
	for _, r := range tickets {
		if titles[r.label] > 1 {
			t.Errorf("round %d: %d tickets titled %q (one create, retried with its Idempotency-Key)", round, titles[r.label], r.label)
		}
		if r.refused && titles[r.label] > 0 {
			t.Errorf("round %d: a ticket titled %q exists, but its create was answered %d", round, r.label, r.creates[len(r.creates)-1].status)
		}
	}
	t.Logf("round %d: %d entities held to the model", round, checked)
}

type listItem struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	UserID string `json:"userId"`
}

// listAll walks a cursor-paginated listing.
func (w *chaosWorld) listAll(tok, path string) []listItem {
	var all []listItem
	cursor := ""
	for {
		p := path + "?limit=100"
		if cursor != "" {
			p += "&cursor=" + url.QueryEscape(cursor)
		}
		status, b := w.do(tok, http.MethodGet, p, nil, "")
		if status != http.StatusOK {
			w.t.Errorf("GET %s: %d %s", p, status, b)
			return all
		}
		var page struct {
			Items      []listItem `json:"items"`
			NextCursor string     `json:"nextCursor"`
		}
		if err := json.Unmarshal(b, &page); err != nil {
			w.t.Errorf("GET %s: %v", p, err)
			return all
		}
		all = append(all, page.Items...)
		if page.NextCursor == "" {
			return all
		}
		cursor = page.NextCursor
	}
}

// removeEveryone removes every user of o but its owner, who first takes
// over the teams a user is the last owner of: no user is ever unremovable.
func (w *chaosWorld) removeEveryone(o *chaosOrg) {
	t := w.t
	owner := o.owner()
	var users []string
	for _, it := range w.listAll(owner.tok, "/v1/orgs/"+o.id+"/users") {
		if it.UserID != owner.user {
			users = append(users, it.UserID)
		}
	}
	for _, u := range users {
		path := "/v1/orgs/" + o.id + "/users/" + u
		status, b := w.do(owner.tok, http.MethodDelete, path, nil, "")
		if status == http.StatusConflict && bytes.Contains(b, []byte("last_team_owner")) {
			_, tb := w.do(owner.tok, http.MethodGet, path+"/teams?limit=100", nil, "")
			for _, team := range jsonTeamIDs(t, tb) {
				w.do(owner.tok, http.MethodPut, "/v1/orgs/"+o.id+"/teams/"+team+"/members/"+owner.user, map[string]any{"role": "owner"}, "")
			}
			status, b = w.do(owner.tok, http.MethodDelete, path, nil, "")
		}
		if status != http.StatusNoContent {
			t.Errorf("user %s cannot be removed: %d %s", u, status, b)
		}
	}
	t.Logf("removed %d users of org %s", len(users), o.id)
}

// waitNoDeletions waits until GSI3's DELETING partition is empty: every
// offboarding and large delete has finished.
func waitNoDeletions(t *testing.T, db *dynamodb.Client, table string, bound time.Duration) {
	t.Helper()
	waitGSI3Empty(t, db, table, bound, "deletions still unfinished", "DELETING")
}

// waitNoneDue waits until no endpoint has a delivery due (the GSI3 due
// shards are empty): the delivery workers are idle.
func waitNoneDue(t *testing.T, db *dynamodb.Client, table string, bound time.Duration) {
	t.Helper()
	var shards []string
	for shard := range webhook.Shards {
		shards = append(shards, fmt.Sprintf("WEBHOOKDUE#%d", shard))
	}
	waitGSI3Empty(t, db, table, bound, "endpoints still have deliveries due", shards...)
}

// waitGSI3Empty waits until the GSI3 partitions pks hold nothing, and
// fails the test after bound (a bound for a hang, not a speed).
func waitGSI3Empty(t *testing.T, db *dynamodb.Client, table string, bound time.Duration, what string, pks ...string) {
	t.Helper()
	for deadline := time.Now().Add(bound); ; time.Sleep(200 * time.Millisecond) {
		var left []map[string]types.AttributeValue
		for _, pk := range pks {
			out, err := db.Query(context.Background(), &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("GSI3"),
				KeyConditionExpression:    aws.String("gsi3pk = :p"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: pk}}})
			if err != nil {
				t.Fatal(err)
			}
			left = append(left, out.Items...)
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d %s after %v, e.g. %v", len(left), what, bound, left[0]["pk"])
		}
	}
}

// tenantItems lists the keys of every item left that belongs to an org
// (a pk starting ORG#).
func tenantItems(t *testing.T, db *dynamodb.Client, table string) []string {
	t.Helper()
	var left []string
	p := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Items {
			pk := it["pk"].(*types.AttributeValueMemberS).Value
			if strings.HasPrefix(pk, "ORG#") {
				left = append(left, pk+" | "+it["sk"].(*types.AttributeValueMemberS).Value)
			}
		}
	}
	return left
}

func jsonID(t *testing.T, b []byte) string {
	var v struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &v); err != nil || v.ID == "" {
		t.Errorf("no id in %s", b)
	}
	return v.ID
}

func jsonItemIDs(t *testing.T, b []byte) []string {
	var v struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Errorf("%v in %s", err, b)
	}
	var ids []string
	for _, it := range v.Items {
		ids = append(ids, it.ID)
	}
	return ids
}

func jsonTeamIDs(t *testing.T, b []byte) []string {
	var v struct {
		Items []struct {
			TeamID string `json:"teamId"`
		} `json:"items"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Errorf("%v in %s", err, b)
	}
	var ids []string
	for _, it := range v.Items {
		ids = append(ids, it.TeamID)
	}
	return ids
}

// ---- the fault proxy ----

// faultProxy forwards HTTP to DynamoDB Local and injects faults a real
// network and a real DynamoDB produce: ThrottlingException answers, and a
// port that refuses connections.
type faultProxy struct {
	addr      string
	rp        *httputil.ReverseProxy
	throttle  atomic.Int32 // percent of calls answered with ThrottlingException
	throttled atomic.Int64

	mu  sync.Mutex
	srv *http.Server
}

func startFaultProxy(t *testing.T, target string) *faultProxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{rp: httputil.NewSingleHostReverseProxy(u)}
	p.rp.ErrorLog = nil
	p.rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		// The API gave up (its deadline) or DynamoDB Local is gone: drop
		// the connection, as a dead peer would.
		panic(http.ErrAbortHandler)
	}
	p.addr = testkit.FreeAddr(t)
	p.accept(t)
	t.Cleanup(func() { p.refuse(t) })
	return p
}

func (p *faultProxy) url() string { return "http://" + p.addr }

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if pct := p.throttle.Load(); pct > 0 && rand.IntN(100) < int(pct) {
		p.throttled.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate of requests exceeds the allowed throughput."}`)
		return
	}
	p.rp.ServeHTTP(w, r)
}

// accept listens on the proxy's address (again).
func (p *faultProxy) accept(t *testing.T) {
	var ln net.Listener
	var err error
	for try := 0; try < 50; try++ {
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: p, ErrorLog: nil}
	p.mu.Lock()
	p.srv = srv
	p.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// refuse closes the listener and every connection: calls are refused
// until accept.
func (p *faultProxy) refuse(*testing.T) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.srv != nil {
		_ = p.srv.Close()
		p.srv = nil
	}
}

// ---- webhooks ----

// chaosHooks is the integrators' side of the chaos test: two endpoints of
// org A, one subscribed to every event and one to tickets' only. They
// verify each delivery with the Standard Webhooks reference library and
// answer one attempt in ten with 500, so that retries are part of the mix.
type chaosHooks struct {
	t     *testing.T
	srv   *httptest.Server
	orgID string
	since time.Time // after both subscriptions were acknowledged

	mu      sync.Mutex
	rnd     *rand.Rand
	secrets map[string]string          // path -> secret
	events  map[string][]string        // path -> subscribed actions ("*": all)
	got     map[string]map[string]bool // path -> verified webhook-ids
	bad     []string
}

// newChaosHooks subscribes org A's two endpoints, with no faults on.
func newChaosHooks(t *testing.T, w *chaosWorld, a *chaosOrg, seed uint64) *chaosHooks {
	h := &chaosHooks{t: t, orgID: a.id, rnd: rand.New(rand.NewPCG(seed, 7)), secrets: map[string]string{},
		events: map[string][]string{"/all": {"*"}, "/tickets": {"ticket.create", "ticket.update", "ticket.delete"}},
		got:    map[string]map[string]bool{}}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	for _, path := range []string{"/all", "/tickets"} {
		status, b := w.setup(a.owner().tok, "/v1/orgs/"+a.id+"/webhooks", map[string]any{"url": h.srv.URL + path, "events": h.events[path]})
		var created struct{ Secret string }
		if status != http.StatusCreated || json.Unmarshal(b, &created) != nil || created.Secret == "" {
			t.Fatalf("subscribe %s: %d %s", path, status, b)
		}
		h.mu.Lock()
		h.secrets[path], h.got[path] = created.Secret, map[string]bool{}
		h.mu.Unlock()
	}
	h.since = time.Now()
	return h
}

func (h *chaosHooks) serve(rw http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	h.mu.Lock()
	defer h.mu.Unlock()
	secret, ok := h.secrets[req.URL.Path]
	if h.rnd.IntN(10) == 0 {
		rw.WriteHeader(http.StatusInternalServerError)
		return
	}
	var p struct {
		Type string
		Data struct{ OrgID string }
	}
	wh, err := standardwebhooks.NewWebhook(secret)
	switch {
	case !ok || err != nil:
		h.bad = append(h.bad, "a delivery to an unknown endpoint "+req.URL.Path)
	case wh.Verify(body, req.Header) != nil:
		h.bad = append(h.bad, req.URL.Path+": signature refused: "+string(body))
	case json.Unmarshal(body, &p) != nil || p.Data.OrgID != h.orgID:
		h.bad = append(h.bad, req.URL.Path+": not org A's event: "+string(body))
	case !h.subscribed(req.URL.Path, p.Type):
		h.bad = append(h.bad, req.URL.Path+": not subscribed to "+p.Type)
	default:
		h.got[req.URL.Path][req.Header.Get("webhook-id")] = true
	}
	rw.WriteHeader(http.StatusNoContent)
}

// subscribed reports whether the endpoint at path wants events of type
// action (the test's own reading of a subscription, not the product's).
func (h *chaosHooks) subscribed(path, action string) bool {
	return slices.Contains(h.events[path], "*") || slices.Contains(h.events[path], action)
}

// verify checks that every committed change of A of a subscribed type
// (its audit log since the subscriptions) has reached each endpoint
// subscribed to it: the faults lose no event. It waits for the
// deliveries still on their way (a bound for a loss, not a speed).
func (h *chaosHooks) verify(round int, w *chaosWorld, a *chaosOrg) {
	t := h.t
	want := map[string][]string{}
	first := "/v1/orgs/" + a.id + "/audit-log?limit=100&since=" + url.QueryEscape(h.since.UTC().Format(time.RFC3339Nano))
	path := first
	for pages := 0; path != ""; pages++ {
		status, b := w.do(a.owner().tok, http.MethodGet, path, nil, "")
		var page struct {
			Items []struct {
				ID, Action string
				At         time.Time
			}
			NextCursor string
		}
		if status != http.StatusOK || json.Unmarshal(b, &page) != nil || pages > 1000 {
			t.Fatalf("round %d: audit log: %d %s", round, status, b)
		}
		for _, e := range page.Items {
			for ep := range h.events {
				if h.subscribed(ep, e.Action) {
					want[ep] = append(want[ep], e.ID+" "+e.Action)
				}
			}
		}
		path = ""
		if page.NextCursor != "" {
			path = first + "&cursor=" + url.QueryEscape(page.NextCursor) // a cursor goes with its listing's filters
		}
	}
	var missing []string
	for end := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		h.mu.Lock()
		missing = missing[:0]
		for ep, evs := range want {
			for _, e := range evs {
				if id, _, _ := strings.Cut(e, " "); !h.got[ep][id] {
					missing = append(missing, ep+": "+e)
				}
			}
		}
		bad := h.bad
		h.bad = nil
		h.mu.Unlock()
		for _, b := range bad {
			t.Errorf("round %d: webhook: %s", round, b)
		}
		if len(missing) == 0 || time.Now().After(end) {
			break
		}
	}
	if len(missing) > 0 {
		t.Errorf("round %d: %d committed changes never reached their endpoint, e.g. %q", round, len(missing), missing[:min(5, len(missing))])
		return
	}
	t.Logf("round %d: webhooks: %d events to /all, %d to /tickets, all delivered and verified", round, len(want["/all"]), len(want["/tickets"]))
}
