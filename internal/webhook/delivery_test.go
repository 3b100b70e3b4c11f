package webhook

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/page"
)

// fakeStore holds one subscription and hands the worker the deliveries a
// test queues.
type fakeStore struct {
	mu      sync.Mutex
	sub     Subscription
	due     []Delivery
	settled []Delivery
	events  []audit.Event
}

func (f *fakeStore) Subscribers(context.Context, string) ([]Subscription, error) {
	return []Subscription{f.sub}, nil
}
func (f *fakeStore) GetWebhook(context.Context, string, string) (Subscription, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sub, nil
}
func (f *fakeStore) EnqueueDeliveries(_ context.Context, ds []Delivery) (int, error) {
	return len(ds), nil
}
func (f *fakeStore) DueDeliveries(_ context.Context, shard int, _ time.Time, _ int, _ func(string, string) int) ([]Delivery, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if shard != Shard(f.sub.OrgID, f.sub.ID) {
		return nil, nil
	}
	d := f.due
	f.due = nil
	return d, nil
}
func (f *fakeStore) EndpointDue(context.Context, string, string, time.Time, int) ([]Delivery, error) {
	return nil, nil
}
func (f *fakeStore) ClaimDelivery(context.Context, Delivery, string, time.Time) (bool, error) {
	return true, nil
}
func (f *fakeStore) SettleAttempt(_ context.Context, d Delivery, _ string, _, _ time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.settled = append(f.settled, d)
	return nil
}
func (f *fakeStore) SetEndpointHealth(_ context.Context, s Subscription, ev *audit.Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sub.Active, f.sub.FailingSince = s.Active, s.FailingSince
	if ev != nil {
		f.events = append(f.events, *ev)
	}
	return nil
}
func (f *fakeStore) ListDeliveries(context.Context, string, string, page.Request) (page.Result[Delivery], error) {
	return page.Result[Delivery]{}, nil
}
func (f *fakeStore) Redeliver(context.Context, string, string, string, time.Time) (Delivery, error) {
	return Delivery{}, nil
}

// TestWorkerEndpointHealth: a failing endpoint is disabled once it has
// failed every attempt for DisableAfter, and the audit log says so (as the
// service, never an admin); one success ends the run of failures; a
// delivery is retried until RetryFor from its creation, then given up.
func TestWorkerEndpointHealth(t *testing.T) {
	status := http.StatusInternalServerError
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.WriteHeader(status)
	}))
	defer srv.Close()
	secret, _ := NewSecret()
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	f := &fakeStore{sub: Subscription{OrgID: "01KJPWD6MCH66BQCJZTYJEZQ3D", ID: "01KJPWD6MCH66BQCJZTYJEZQ3E", URL: srv.URL,
		Events: []string{"*"}, Active: true, Secret: secret, Version: 1}}
	w := NewWorker(f, true, Policy{}, clock, nil)
	attempt := func(created time.Time) Delivery {
		t.Helper()
		f.mu.Lock()
		f.due = []Delivery{{OrgID: f.sub.OrgID, WebhookID: f.sub.ID, EventID: "01KJPWD6MCH66BQCJZTYJEZQ3F", Type: "ticket.create",
			Body: []byte(`{}`), State: Pending, NextAttempt: clock(), CreatedAt: created}}
		f.mu.Unlock()
		if n := w.RunOnce(context.Background()); n != 1 {
			t.Fatalf("RunOnce started %d attempts, want 1", n)
		}
		w.Wait()
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.settled[len(f.settled)-1]
	}

	d := attempt(clock())
	if d.State != Pending || d.Attempts != 1 || d.LastStatus != 500 || !d.NextAttempt.After(clock()) || d.NextAttempt.After(clock().Add(30*time.Second)) {
		t.Errorf("after a 500: %+v, want pending, its first retry within 30 s", d)
	}
	if !f.sub.FailingSince.Equal(t0) || !f.sub.Active {
		t.Errorf("after the first failure: failingSince %v active %v", f.sub.FailingSince, f.sub.Active)
	}
	advance(71 * time.Hour)
	attempt(clock())
	if !f.sub.Active || len(f.events) != 0 {
		t.Fatalf("disabled after 71 h of failures")
	}
	advance(2 * time.Hour)
	attempt(clock())
	if f.sub.Active || len(f.events) != 1 {
		t.Fatalf("after 73 h of failures: active %v, %d events", f.sub.Active, len(f.events))
	}
	if ev := f.events[0]; ev.Action != "webhook.disable" || ev.ActorID != SystemActor || ev.TargetID != f.sub.ID || ev.Check() != nil {
		t.Errorf("audit event: %+v", ev)
	}
	// A disabled endpoint's deliveries are given up without a request.
	if d := attempt(clock()); d.State != Failed || d.Attempts != 0 {
		t.Errorf("delivery to a disabled endpoint: %+v", d)
	}

	// Enabled again, failing since a while: one success ends the run.
	f.sub.Active, f.sub.FailingSince = true, clock().Add(-time.Hour)
	mu.Lock()
	status = http.StatusNoContent
	mu.Unlock()
	if d := attempt(clock()); d.State != Delivered || !f.sub.FailingSince.IsZero() {
		t.Errorf("after a success: %+v, failingSince %v", d, f.sub.FailingSince)
	}
	// Out of retries: a delivery 25 h old fails for good.
	mu.Lock()
	status = http.StatusServiceUnavailable
	mu.Unlock()
	if d := attempt(clock().Add(-25 * time.Hour)); d.State != Failed || !d.NextAttempt.IsZero() {
		t.Errorf("a delivery past RetryFor: %+v, want failed", d)
	}
}

// TestWorkerSlots: an org with many slow endpoints holds at most PerOrg
// of a worker's attempts, each endpoint at most PerEndpoint, so another
// org's delivery always finds a slot; a released slot is taken again.
func TestWorkerSlots(t *testing.T) {
	w := NewWorker(&fakeStore{}, true, Policy{Concurrency: 32, PerEndpoint: 2, PerOrg: 4}, nil, nil)
	var taken []*flight
	for e := range 20 { // 20 endpoints of one org, 2 attempts each wanted
		for range 2 {
			if f := w.take("org_slow", fmt.Sprintf("hook%d", e)); f != nil {
				taken = append(taken, f)
			}
		}
	}
	if len(taken) != 4 {
		t.Errorf("one org's 20 endpoints took %d slots, want PerOrg = 4", len(taken))
	}
	if w.take("org_fast", "hook_fast") == nil {
		t.Error("another org found no slot")
	}
	second, third := w.take("org_fast", "hook_fast") != nil, w.take("org_fast", "hook_fast") != nil
	if !second || third {
		t.Errorf("one endpoint's second and third slots: %v, %v, want true, false (PerEndpoint = 2)", second, third)
	}
	w.release(taken[0], true)
	if w.take("org_slow", "hook7") == nil {
		t.Error("a released slot of the org was not taken again")
	}
}

// dueStore hands the worker a fixed list of due deliveries (shard 0),
// records which it claims, and holds every attempt (as a hanging endpoint
// would) until hold is closed.
type dueStore struct {
	fakeStore
	list    []Delivery
	claimed []Delivery
	hold    chan struct{}
}

func (s *dueStore) GetWebhook(ctx context.Context, orgID, webhookID string) (Subscription, error) {
	<-s.hold
	return s.fakeStore.GetWebhook(ctx, orgID, webhookID)
}

func (s *dueStore) DueDeliveries(_ context.Context, shard int, _ time.Time, _ int, _ func(string, string) int) ([]Delivery, error) {
	if shard != 0 {
		return nil, nil
	}
	return s.list, nil
}

func (s *dueStore) ClaimDelivery(_ context.Context, d Delivery, _ string, _ time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.claimed = append(s.claimed, d)
	return true, nil
}

// TestWorkerFairness: however many orgs hold the worker's slots with
// hanging endpoints, and however long their backlogs (listed first: they
// are older), the slot that frees goes to the org with no attempt in
// flight; then round-robin across orgs by their attempts in flight.
func TestWorkerFairness(t *testing.T) {
	s := &dueStore{hold: make(chan struct{})}
	w := NewWorker(s, true, Policy{Concurrency: 10, PerEndpoint: 2, PerOrg: 4}, nil, nil)
	for i := range 9 { // 9 slow orgs hold 9 of the 10 slots
		org := fmt.Sprintf("org_slow%d", i)
		if w.take(org, "hook_"+org) == nil {
			t.Fatal("no slot for the setup")
		}
		for j := range 3 { // and have older deliveries due
			s.list = append(s.list, Delivery{OrgID: org, WebhookID: "hook_" + org, EventID: fmt.Sprintf("%s-%d", org, j)})
		}
	}
	s.list = append(s.list, Delivery{OrgID: "org_fast", WebhookID: "hook_fast", EventID: "fast-0"},
		Delivery{OrgID: "org_fast", WebhookID: "hook_fast", EventID: "fast-1"})
	if n := w.RunOnce(context.Background()); n != 1 {
		t.Fatalf("started %d attempts, want the 1 free slot", n)
	}
	close(s.hold)
	w.Wait()
	if got := s.claimed[0].EventID; got != "fast-0" {
		t.Errorf("the free slot went to %s, want the org with nothing in flight (fast-0)", got)
	}

	// With every slot free: each org's first delivery before any org's
	// second, counting the attempts an org has in flight.
	w = NewWorker(s, true, Policy{Concurrency: 100, PerEndpoint: 10, PerOrg: 10}, nil, nil)
	w.take("org_a", "hook_a")
	var got []string
	for _, d := range w.fairOrder([]Delivery{{OrgID: "org_a", WebhookID: "hook_a", EventID: "a-0"}, {OrgID: "org_a", WebhookID: "hook_a", EventID: "a-1"},
		{OrgID: "org_b", WebhookID: "hook_b", EventID: "b-0"}, {OrgID: "org_b", WebhookID: "hook_b", EventID: "b-1"}, {OrgID: "org_b", WebhookID: "hook_b", EventID: "b-2"}}) {
		got = append(got, d.EventID)
	}
	if want := []string{"b-0", "a-0", "b-1", "a-1", "b-2"}; !slices.Equal(got, want) && !slices.Equal(got, []string{"b-0", "b-1", "a-0", "b-2", "a-1"}) {
		t.Errorf("attempts in order %v, want %v or with the ties the other way (org_a has one attempt in flight)", got, want)
	}

	// As many in flight: the org whose attempts held slots the least of
	// late first.
	w = NewWorker(s, true, Policy{Concurrency: 100, PerEndpoint: 10, PerOrg: 10}, nil, nil)
	w.used["org_slow"] = usage{secs: 30, at: time.Now()}
	w.used["org_fast"] = usage{secs: 0.05, at: time.Now()}
	for range 10 {
		got := w.fairOrder([]Delivery{{OrgID: "org_slow", EventID: "slow-0"}, {OrgID: "org_new", EventID: "new-0"}, {OrgID: "org_fast", EventID: "fast-0"}})
		if ids := []string{got[0].EventID, got[1].EventID, got[2].EventID}; !slices.Equal(ids, []string{"new-0", "fast-0", "slow-0"}) {
			t.Fatalf("attempts in order %v, want the least slot-time first", ids)
		}
	}
}

// TestWorkerHandOff: a freed slot goes to the waiting endpoint of the org
// with the fewest attempts in flight, then the least slot-time of late,
// however many busier orgs' endpoints wait before it.
func TestWorkerHandOff(t *testing.T) {
	w := NewWorker(&fakeStore{}, true, Policy{Concurrency: 1, PerEndpoint: 2, PerOrg: 4}, nil, nil)
	f := w.take("org_busy", "hook_busy")
	for i := range 500 { // more than a worker's slots many times over
		org := fmt.Sprintf("org_%d", i)
		w.used[org] = usage{secs: 1, at: time.Now()}
		if w.look(org, "hook_"+org) != 0 {
			t.Fatal("room with every slot taken")
		}
	}
	w.look("org_quiet", "hook_quiet")
	w.release(f, true)
	if want := ([2]string{"org_quiet", "hook_quiet"}); !maps.Equal(w.kicked, map[[2]string]bool{want: true}) {
		t.Errorf("the freed slot went to %v, want %v (it used no slot-time)", w.kicked, want)
	}

	// An attempt in flight counts its seconds so far: the org hanging for
	// 14 s has used more than the one that used 3 s before.
	w = NewWorker(&fakeStore{}, true, Policy{Concurrency: 3, PerEndpoint: 2, PerOrg: 4}, nil, nil)
	w.take("org_hang", "hook_hang").taken = time.Now().Add(-14 * time.Second)
	w.take("org_fast", "hook_fast")
	w.used["org_fast"] = usage{secs: 3, at: time.Now()}
	f = w.take("org_other", "hook_other")
	w.look("org_hang", "hook_hang2")
	w.look("org_fast", "hook_fast2")
	w.release(f, true)
	if want := ([2]string{"org_fast", "hook_fast2"}); !maps.Equal(w.kicked, map[[2]string]bool{want: true}) {
		t.Errorf("the freed slot went to %v, want %v (less slot-time, its attempt in flight counted)", w.kicked, want)
	}
}

// queueStore lists each queued delivery whose endpoint the worker has
// room for, as DynamoDB's due queue does, until it is claimed; every
// endpoint is an active subscription to urls[its ID].
type queueStore struct {
	fakeStore
	secret string
	urls   map[string]string
	queued []Delivery
}

func (s *queueStore) GetWebhook(_ context.Context, orgID, webhookID string) (Subscription, error) {
	return Subscription{OrgID: orgID, ID: webhookID, URL: s.urls[webhookID], Events: []string{"*"}, Active: true, Secret: s.secret}, nil
}

func (s *queueStore) DueDeliveries(_ context.Context, shard int, _ time.Time, _ int, room func(string, string) int) ([]Delivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var due []Delivery
	for _, d := range s.queued {
		if shard == 0 && room(d.OrgID, d.WebhookID) > 0 {
			due = append(due, d)
		}
	}
	return due, nil
}

func (s *queueStore) ClaimDelivery(_ context.Context, d Delivery, _ string, _ time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queued = slices.DeleteFunc(s.queued, func(q Delivery) bool { return q.EventID == d.EventID })
	return true, nil
}

func (s *queueStore) queue(org, hook string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queued = append(s.queued, Delivery{OrgID: org, WebhookID: hook, EventID: "ev_" + hook, Type: "ticket.create", State: Pending, CreatedAt: time.Now()})
}

// TestWorkerPreempt: when endpoints that hang hold every slot, an org
// with no attempt in flight does not wait for their timeout: the attempt
// sending longest, of an org with the most in flight, is cut for it once
// it has been sending for Preempt, and is due again later, saying why;
// an org that has an attempt in flight cuts none.
func TestWorkerPreempt(t *testing.T) {
	reached := make(chan string, 16)
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached <- r.Header.Get("webhook-id")
		<-r.Context().Done() // until the attempt is cut or the test ends
	}))
	okSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached <- r.Header.Get("webhook-id")
	}))
	defer okSrv.Close()
	secret, _ := NewSecret()
	s := &queueStore{secret: secret, urls: map[string]string{"hook_c": okSrv.URL}}
	for _, h := range []string{"hook_a0", "hook_a1", "hook_a2", "hook_b0", "hook_b1"} {
		s.urls[h] = hang.URL
	}
	pol := Policy{Concurrency: 4, PerEndpoint: 1, PerOrg: 3, Timeout: 10 * time.Minute, Preempt: 50 * time.Millisecond}
	w := NewWorker(s, true, pol, nil, nil)
	defer w.Wait()
	defer hang.Close()
	defer hang.CloseClientConnections()
	receive := func(n int) (ids []string) {
		t.Helper()
		for range n {
			select {
			case id := <-reached:
				ids = append(ids, id)
			case <-time.After(time.Minute):
				t.Fatalf("%d attempts reached their endpoints, want %d", len(ids), n)
			}
		}
		return ids
	}

	for _, h := range []string{"hook_a0", "hook_a1", "hook_b0", "hook_b1"} {
		s.queue(strings.Split(h, "_")[1][:1], h)
	}
	if n := w.RunOnce(context.Background()); n != 4 {
		t.Fatalf("started %d attempts, want all 4 slots", n)
	}
	receive(4)

	s.queue("a", "hook_a2")
	time.Sleep(2 * pol.Preempt) // every attempt now cuttable
	if n := w.RunOnce(context.Background()); n != 0 {
		t.Errorf("org a, with attempts in flight, started %d by cutting another's", n)
	}

	s.queue("c", "hook_c")
	if n := w.RunOnce(context.Background()); n != 1 {
		t.Fatalf("org c, with none in flight, started %d attempts, want 1", n)
	}
	if got := receive(1); got[0] != "ev_hook_c" {
		t.Errorf("the slot went to %s, want org c's delivery", got[0])
	}
	var cut, delivered []Delivery
	for deadline := time.Now().Add(time.Minute); len(cut)+len(delivered) < 2 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		s.mu.Lock()
		cut, delivered = nil, nil
		for _, d := range s.settled {
			if d.LastError == errPreempted.Error() && d.State == Pending && !d.NextAttempt.IsZero() {
				cut = append(cut, d)
			} else if d.OrgID == "c" && d.State == Delivered {
				delivered = append(delivered, d)
			}
		}
		s.mu.Unlock()
	}
	if len(cut) != 1 || len(delivered) != 1 {
		t.Fatalf("settled %+v, want one attempt cut (pending, saying why) and org c's delivered", s.settled)
	}
	if w.mu.Lock(); len(w.flights) != 3 || w.inOrg()[cut[0].OrgID] != 1 { // org c's attempt is over
		t.Errorf("after the cut: %d slots taken, %d of the cut org's, want the 3 left hanging and 1", len(w.flights), w.inOrg()[cut[0].OrgID])
	}
	w.mu.Unlock()
}

// slowOrgStore makes the deliveries of every org at once, but those of
// slowOrg, which wait until hold is closed; and fails the event failID.
type slowOrgStore struct {
	fakeStore
	hold chan struct{}
	made chan string // event IDs, as their deliveries are made
}

const (
	slowOrg = "01KJPWD6MCH66BQCJZTYJEZQ3G"
	fastOrg = "01KJPWD6MCH66BQCJZTYJEZQ3H"
	failID  = "01KJPWD6MCH66BQCJZTYJEZQ3J"
)

func (s *slowOrgStore) Subscribers(_ context.Context, orgID string) ([]Subscription, error) {
	return []Subscription{{OrgID: orgID, ID: "01KJPWD6MCH66BQCJZTYJEZQ3K", Events: []string{"*"}, Active: true}}, nil
}

func (s *slowOrgStore) EnqueueDeliveries(_ context.Context, ds []Delivery) (int, error) {
	if ds[0].OrgID == slowOrg {
		<-s.hold
	}
	if ds[0].EventID == failID {
		return 0, fmt.Errorf("DynamoDB is busy")
	}
	s.made <- ds[0].EventID
	return len(ds), nil
}

// TestDispatchAll: a batch's events are dispatched one org's at a time,
// in order, and the orgs at once: an org whose dispatch hangs (a burst of
// events, a slow write) delays no other org's; the first failure, in the
// batch's order, is where the caller retries from.
func TestDispatchAll(t *testing.T) {
	s := &slowOrgStore{hold: make(chan struct{}), made: make(chan string, 10)}
	d := NewDispatcher(s, Policy{}, nil)
	ev := func(org, id string) audit.Event {
		return audit.Event{OrgID: org, ID: id, Action: "ticket.create", At: time.Now()}
	}
	ids := []string{"01KJPWD6MCH66BQCJZTYJEZQ31", "01KJPWD6MCH66BQCJZTYJEZQ32", "01KJPWD6MCH66BQCJZTYJEZQ33", "01KJPWD6MCH66BQCJZTYJEZQ34"}
	evs := []audit.Event{ev(slowOrg, ids[0]), ev(slowOrg, ids[1]), ev(fastOrg, ids[2]), ev(fastOrg, ids[3])}
	type result struct {
		i   int
		err error
	}
	done := make(chan result, 1)
	go func() { i, err := d.DispatchAll(context.Background(), evs); done <- result{i, err} }()
	for _, want := range ids[2:] { // the fast org's, in order, while the slow org's first hangs
		select {
		case got := <-s.made:
			if got != want {
				t.Errorf("made %s, want %s", got, want)
			}
		case <-time.After(30 * time.Second): // a bound for a hang, not a speed
			t.Fatal("another org's event waits for the slow org's")
		}
	}
	close(s.hold)
	if r := <-done; r.i != len(evs) || r.err != nil {
		t.Errorf("DispatchAll: %d, %v; want %d, nil", r.i, r.err, len(evs))
	}
	if got := []string{<-s.made, <-s.made}; !slices.Equal(got, ids[:2]) {
		t.Errorf("the slow org's events made in order %q, want %q", got, ids[:2])
	}

	evs = []audit.Event{ev(fastOrg, ids[0]), ev(slowOrg, failID), ev(slowOrg, ids[1]), ev(fastOrg, ids[2])}
	if i, err := d.DispatchAll(context.Background(), evs); i != 1 || err == nil {
		t.Errorf("DispatchAll with the second event failing: %d, %v; want 1 and its error", i, err)
	}
}

// orderStore makes deliveries one at a time, each when the test lets it
// (go), and says which event's it made.
type orderStore struct {
	fakeStore
	go_  chan struct{}
	made chan string
}

func (s *orderStore) Subscribers(_ context.Context, orgID string) ([]Subscription, error) {
	return []Subscription{{OrgID: orgID, ID: "01KJPWD6MCH66BQCJZTYJEZQ3K", Events: []string{"*"}, Active: true}}, nil
}

func (s *orderStore) EnqueueDeliveries(_ context.Context, ds []Delivery) (int, error) {
	<-s.go_
	s.made <- ds[0].EventID
	return len(ds), nil
}

// TestDispatchOrder: orgs with a backlog take turns, and an org that had
// nothing queued goes ahead of them (once, then it takes its turn): its
// event waits for the dispatch in flight, not for a turn of each busy org.
func TestDispatchOrder(t *testing.T) {
	s := &orderStore{go_: make(chan struct{}), made: make(chan string, 16)}
	d := NewDispatcher(s, Policy{Dispatch: 1}, nil)
	orgs := []string{"01KJPWD6MCH66BQCJZTYJEZQ3A", "01KJPWD6MCH66BQCJZTYJEZQ3B", "01KJPWD6MCH66BQCJZTYJEZQ3C", "01KJPWD6MCH66BQCJZTYJEZQ3D"}
	var wg sync.WaitGroup
	queue := func(org int, id string) {
		wg.Add(1)
		d.Queue(context.Background(), audit.Event{OrgID: orgs[org], ID: "01KJPWD6MCH66BQCJZTYJEZQ" + id, Action: "ticket.create", At: time.Now()}, func(error) { wg.Done() })
	}
	for _, e := range []struct {
		org int
		id  string
	}{{0, "A1"}, {0, "A2"}, {0, "A3"}, {1, "B1"}, {1, "B2"}, {2, "C1"}, {2, "C2"}} {
		queue(e.org, e.id)
	}
	var got []string
	next := func() { s.go_ <- struct{}{}; got = append(got, (<-s.made)[24:]) }
	next() // A1 was in hand when the others came: they joined the line fresh, in order
	next()
	queue(3, "D1") // D had nothing queued; the others have had their first turn
	for range 6 {
		next()
	}
	wg.Wait()
	if want := []string{"A1", "B1", "C1", "D1", "A2", "B2", "C2", "A3"}; !slices.Equal(got, want) {
		t.Errorf("dispatched %v, want %v", got, want)
	}
}

// kickStore's looks at a shard wait until released, and it has one
// delivery due at the head of each endpoint's queue.
type kickStore struct {
	fakeStore
	release chan struct{}
	read    []string
}

func (s *kickStore) DueDeliveries(ctx context.Context, _ int, _ time.Time, _ int, _ func(string, string) int) ([]Delivery, error) {
	select {
	case <-s.release:
	case <-ctx.Done():
	}
	return nil, nil
}

func (s *kickStore) EndpointDue(_ context.Context, orgID, webhookID string, _ time.Time, _ int) ([]Delivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.read = append(s.read, webhookID)
	return []Delivery{{OrgID: orgID, WebhookID: webhookID, EventID: "ev_" + webhookID}}, nil
}

// TestWorkerKickDuringLook: a kicked endpoint's queue is read while a
// look at every shard still waits on the store: a fresh delivery waits
// for no poll's reads of other orgs' queues.
func TestWorkerKickDuringLook(t *testing.T) {
	s := &kickStore{release: make(chan struct{})}
	w := NewWorker(s, true, Policy{}, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	defer func() { close(s.release); cancel(); <-done }()
	w.Kick([]Delivery{{OrgID: "org_a", WebhookID: "hook_a"}})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) { // a bound for a stall, not a speed
		s.mu.Lock()
		read := slices.Clone(s.read)
		s.mu.Unlock()
		if slices.Equal(read, []string{"hook_a"}) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("endpoints read while a look waited: %v, want [hook_a]", read)
		}
	}
}
