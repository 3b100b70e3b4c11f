package webhook

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/clock"
	"github.com/tenantd/tenantd/internal/deletion"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/page"
)

// Delivery is one event on its way to one endpoint. Its key is the
// event's ID and the endpoint's: a stream record seen twice makes it once.
type Delivery struct {
	OrgID, WebhookID string
	EventID          string // the webhook-id header, the same on every attempt
	Type             string // the audit action
	Body             []byte // the JSON payload, fixed when the delivery is made
	State            State
	Attempts         int
	LastStatus       int // the endpoint's last HTTP status (0: none)
	LastError        string
	LatencyMs        int64
	// NextAttempt is when the delivery is due (zero once it is settled).
	// While a worker holds it, it is the end of that worker's lease: a
	// worker that dies leaves it due again then.
	NextAttempt time.Time
	LeaseOwner  string
	CreatedAt   time.Time
}

// State is where a delivery stands.
type State string

// The states of a delivery.
const (
	Pending   State = "pending"
	Delivered State = "delivered"
	Failed    State = "failed" // given up: out of retries, refused (4xx), or its endpoint gone
)

// Shards is the number of partitions the due deliveries are spread over
// (by endpoint), so that no one partition carries every tenant's.
const Shards = 8

// Shard is the due-queue partition of an endpoint's deliveries.
func Shard(orgID, webhookID string) int {
	h := fnv.New32a()
	h.Write([]byte(orgID + "/" + webhookID))
	return int(h.Sum32() % Shards)
}

// DeliveryStorer is what the dispatcher and the workers need from
// persistence.
type DeliveryStorer interface {
	// Subscribers lists every subscription of the org (at most
	// MaxPerOrg), secrets included.
	Subscribers(ctx context.Context, orgID string) ([]Subscription, error)
	// GetWebhook reads one subscription consistently. Returns NotFound.
	GetWebhook(ctx context.Context, orgID, webhookID string) (Subscription, error)
	// EnqueueDeliveries writes one event's deliveries (one per endpoint)
	// in one batch, but those of the same event to the same endpoint that
	// exist already; it returns how many it wrote.
	EnqueueDeliveries(ctx context.Context, ds []Delivery) (int, error)
	// DueDeliveries lists the pending deliveries of shard due at now: of
	// up to endpoints endpoints, up to room(orgID, webhookID) each (none
	// read for an endpoint with no room), so that one endpoint's backlog
	// delays no other endpoint; from the head of each endpoint's queue,
	// where a retry not due yet holds up the deliveries queued after it.
	DueDeliveries(ctx context.Context, shard int, now time.Time, endpoints int, room func(orgID, webhookID string) int) ([]Delivery, error)
	// EndpointDue lists up to n due deliveries from the head of one
	// endpoint's queue, as DueDeliveries does.
	EndpointDue(ctx context.Context, orgID, webhookID string, now time.Time, n int) ([]Delivery, error)
	// ClaimDelivery takes d, as listed, for owner until until (its next
	// attempt then). ok is false when another worker took it first.
	ClaimDelivery(ctx context.Context, d Delivery, owner string, until time.Time) (ok bool, err error)
	// SettleAttempt records the outcome of owner's attempt (d's State,
	// Attempts, LastStatus, LastError, LatencyMs and NextAttempt) if owner
	// still holds d; expires is when a settled delivery leaves the log.
	SettleAttempt(ctx context.Context, d Delivery, owner string, claimedUntil time.Time, expires time.Time) error
	// SetEndpointHealth records s.FailingSince and s.Active, as the
	// workers saw the endpoint; ev, when set, is the audit event of its
	// disabling.
	SetEndpointHealth(ctx context.Context, s Subscription, ev *audit.Event) error
	// ListDeliveries pages through an endpoint's deliveries, newest first.
	ListDeliveries(ctx context.Context, orgID, webhookID string, p page.Request) (page.Result[Delivery], error)
	// Redeliver makes a delivery due again at now with its attempts kept.
	// Returns NotFound.
	Redeliver(ctx context.Context, orgID, webhookID, eventID string, now time.Time) (Delivery, error)
}

// Policy is the retry schedule and the timing of the workers.
type Policy struct {
	// FirstRetry is the delay before the first retry (default 10 s); each
	// next one doubles, up to MaxDelay (default 1 h), jittered down by up
	// to half.
	FirstRetry, MaxDelay time.Duration
	// RetryFor is how long a delivery is retried from its creation
	// (default 25 h).
	RetryFor time.Duration
	// DisableAfter is how long an endpoint fails without a success before
	// it is disabled (default 72 h).
	DisableAfter time.Duration
	// Retention is how long a settled delivery stays in the log (TTL,
	// default 7 days).
	Retention time.Duration
	// Timeout bounds one attempt, the endpoint's answer included
	// (default 15 s).
	Timeout time.Duration
	// Lease is how long a worker holds a delivery it attempts (default
	// 4 times Timeout: a minute with the default Timeout).
	Lease time.Duration
	// Poll is how often a worker looks for due deliveries (default 1 s).
	Poll time.Duration
	// Concurrency bounds a worker's attempts in flight (default 32),
	// PerEndpoint those to one endpoint (default 2) and PerOrg those of
	// one org's endpoints (default 4): a slow endpoint holds at most
	// PerEndpoint of them, and an org with many slow endpoints at most
	// PerOrg, so it cannot take the slots of every other org.
	Concurrency, PerEndpoint, PerOrg int
	// Preempt is how long an attempt has been sending before it may be
	// cut, when every slot is taken, for a due delivery of an org with no
	// attempt in flight (default 2 s): the oldest attempt of the org with
	// the most in flight is cut and retried later, so orgs whose endpoints
	// hang, however many, hold a waiting org's delivery back by about
	// Preempt, not by Timeout.
	Preempt time.Duration
	// Dispatch bounds the events a dispatcher turns into deliveries at
	// once (default 2, each of another org): a burst of events waits in
	// its org's line, and the transactions it costs queue at DynamoDB no
	// deeper than this behind another org's.
	Dispatch int
}

func (p Policy) withDefaults() Policy {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&p.FirstRetry, 10*time.Second)
	def(&p.MaxDelay, time.Hour)
	def(&p.RetryFor, 25*time.Hour)
	def(&p.DisableAfter, 72*time.Hour)
	def(&p.Retention, 7*24*time.Hour)
	def(&p.Timeout, 15*time.Second)
	def(&p.Lease, 4*p.Timeout)
	def(&p.Poll, time.Second)
	def(&p.Preempt, 2*time.Second)
	if p.Concurrency <= 0 {
		p.Concurrency = 32
	}
	if p.PerEndpoint <= 0 {
		p.PerEndpoint = 2
	}
	if p.PerOrg <= 0 {
		p.PerOrg = 2 * p.PerEndpoint
	}
	if p.Dispatch <= 0 {
		p.Dispatch = 2
	}
	return p
}

// Backoff is the delay after the attempt-th failed attempt: FirstRetry,
// doubling, at most MaxDelay, each jittered into [d/2, d]; a Retry-After
// the endpoint asked for is honoured up to MaxDelay.
func (p Policy) Backoff(attempt int, retryAfter time.Duration) time.Duration {
	d := p.FirstRetry
	for i := 1; i < attempt && d < p.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, p.MaxDelay)
	d = d/2 + rand.N(d/2+1)
	return max(d, min(retryAfter, p.MaxDelay))
}

// payload is the body of a delivery, as the Standard Webhooks spec shapes it.
type payload struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      eventData `json:"data"`
}

type eventData struct {
	ID              string         `json:"id"`
	OrgID           string         `json:"orgId"`
	ActorID         string         `json:"actorId"`
	Action          string         `json:"action"`
	TargetType      string         `json:"targetType"`
	TargetID        string         `json:"targetId"`
	RequestID       string         `json:"requestId,omitempty"`
	ClientRequestID string         `json:"clientRequestId,omitempty"`
	At              time.Time      `json:"at"`
	Changes         []audit.Change `json:"changes"`
	// Object is the changed resource's fields as the change left them
	// (absent for a deletion).
	Object map[string]any `json:"object,omitempty"`
}

// Body renders ev as a delivery's payload.
func Body(ev audit.Event) []byte {
	d := eventData{ID: ev.ID, OrgID: ev.OrgID, ActorID: ev.ActorID, Action: ev.Action, TargetType: ev.TargetType,
		TargetID: ev.TargetID, RequestID: ev.RequestID, ClientRequestID: ev.ClientRequestID, At: ev.At, Changes: []audit.Change{}}
	for _, c := range ev.Changes {
		if ev.TargetType == "webhook" && c.Field == "url" {
			continue // another endpoint's URL, which may carry its token: for the audit log (admins) only
		}
		d.Changes = append(d.Changes, c)
		if c.After != nil {
			if d.Object == nil {
				d.Object = map[string]any{"id": ev.TargetID}
			}
			d.Object[c.Field] = c.After
		}
	}
	b, _ := json.Marshal(payload{Type: ev.Action, Timestamp: ev.At, Data: d})
	return b
}

// Sign is the webhook-signature header of body sent as msgID at ts under
// each secret (whsec_<base64>): "v1,<base64 HMAC-SHA256 of id.ts.body>",
// space-separated.
func Sign(msgID string, ts time.Time, body []byte, secrets ...string) (string, error) {
	var sigs []string
	for _, s := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, secretPrefix))
		if err != nil {
			return "", fmt.Errorf("webhook: malformed secret")
		}
		m := hmac.New(sha256.New, key)
		fmt.Fprintf(m, "%s.%d.", msgID, ts.Unix())
		m.Write(body)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
	}
	return strings.Join(sigs, " "), nil
}

// Dispatcher turns audit events into deliveries, one per subscribed
// endpoint. The change stream feeds it (locally cmd/api's stream reader,
// in production the Lambda function).
//
// Events queued (Queue) are dispatched by at most Policy.Dispatch
// goroutines, one org's one at a time, the orgs in turn: each takes one
// event of the org first in line, which then goes to the back of the line
// if it has more. An org that had nothing queued joins the line ahead of
// the orgs with a backlog (behind the others that joined so): its event
// waits for the dispatches in flight, not for a turn of every busy org.
// An org with a burst of events (or whose writes are slow) so delays no
// other org's by more than a turn.
type Dispatcher struct {
	store DeliveryStorer
	pol   Policy
	now   clock.Clock
	// Kick, when set, is told of the deliveries it made, due now (the
	// local worker, so it need not wait for its next poll).
	Kick func([]Delivery)
	// Lag, when set, hears how long after its change each event was
	// dispatched.
	Lag func(time.Duration)

	mu      sync.Mutex
	queued  map[string][]queuedEvent // by org: its events not dispatched yet, the one in hand first
	line    []string                 // orgs with events queued and none in hand, in turn
	fresh   int                      // the first fresh of line had nothing queued when they joined
	working int                      // goroutines dispatching
}

type queuedEvent struct {
	ctx  context.Context
	ev   audit.Event
	done func(error)
}

// NewDispatcher returns a Dispatcher over s; now may be nil for the
// system clock (deliveries are timed by real time: leases, and the
// receivers' tolerance of webhook-timestamp).
func NewDispatcher(s DeliveryStorer, pol Policy, now clock.Clock) *Dispatcher {
	return &Dispatcher{store: s, pol: pol.withDefaults(), now: clock.Or(now), queued: map[string][]queuedEvent{}}
}

// Queue has ev dispatched, in its org's turn, and calls done with the
// outcome. It does not wait.
func (d *Dispatcher) Queue(ctx context.Context, ev audit.Event, done func(error)) {
	d.mu.Lock()
	if _, ok := d.queued[ev.OrgID]; !ok {
		d.line = slices.Insert(d.line, d.fresh, ev.OrgID)
		d.fresh++
	}
	d.queued[ev.OrgID] = append(d.queued[ev.OrgID], queuedEvent{ctx, ev, done})
	start := d.working < d.pol.Dispatch
	if start {
		d.working++
	}
	d.mu.Unlock()
	if start {
		go d.work()
	}
}

// work dispatches the events of the orgs in line, one event per turn,
// until the line is empty.
func (d *Dispatcher) work() {
	d.mu.Lock()
	for len(d.line) > 0 {
		org := d.line[0]
		d.line, d.fresh = d.line[1:], max(d.fresh-1, 0)
		q := d.queued[org][0]
		d.mu.Unlock()
		_, err := d.Dispatch(q.ctx, q.ev)
		q.done(err)
		d.mu.Lock()
		if rest := d.queued[org][1:]; len(rest) > 0 {
			d.queued[org] = rest
			d.line = append(d.line, org)
		} else {
			delete(d.queued, org)
		}
	}
	d.working--
	d.mu.Unlock()
}

// DispatchAll queues a batch of events and waits for them. It returns the
// position of the first whose dispatch failed, with its error, or
// len(evs).
func (d *Dispatcher) DispatchAll(ctx context.Context, evs []audit.Event) (int, error) {
	failed := make([]error, len(evs))
	var wg sync.WaitGroup
	for i, ev := range evs {
		wg.Add(1)
		d.Queue(ctx, ev, func(err error) { failed[i] = err; wg.Done() })
	}
	wg.Wait()
	for i, err := range failed {
		if err != nil {
			return i, fmt.Errorf("dispatch %s: %w", evs[i].ID, err)
		}
	}
	return len(evs), nil
}

// Dispatch makes ev's deliveries in one batch: idempotent, so an event
// seen twice makes each delivery once. It returns how many it made.
func (d *Dispatcher) Dispatch(ctx context.Context, ev audit.Event) (int, error) {
	if !ids.ValidResource(ev.OrgID) || !ids.ValidResource(ev.ID) {
		return 0, nil // nothing that could reach a key
	}
	subs, err := d.store.Subscribers(ctx, ev.OrgID)
	if err != nil {
		return 0, err
	}
	// A delivery is due, and queued, from its change on (never later
	// than now): an endpoint's queue keeps its events' order, whatever
	// order they were dispatched in. Its retries count from now.
	var ds []Delivery
	now, at := d.now(), ev.At
	if at.After(now) || at.IsZero() {
		at = now
	}
	for _, s := range subs {
		if s.Wants(ev.Action) {
			ds = append(ds, Delivery{OrgID: ev.OrgID, WebhookID: s.ID, EventID: ev.ID, Type: ev.Action,
				State: Pending, NextAttempt: at, CreatedAt: now})
		}
	}
	made := 0
	if len(ds) > 0 {
		body := Body(ev)
		for i := range ds {
			ds[i].Body = body
		}
		if made, err = d.store.EnqueueDeliveries(ctx, ds); err != nil {
			return 0, err
		}
	}
	if d.Lag != nil {
		d.Lag(now.Sub(at)) // an event without a time (or one ahead of this clock) is not a lag of years
	}
	if made > 0 && d.Kick != nil {
		d.Kick(ds)
	}
	return made, nil
}

// Worker attempts due deliveries: those of every replica's dispatcher,
// and those a dead worker left (its lease ran out).
type Worker struct {
	store  DeliveryStorer
	client *http.Client
	pol    Policy
	now    clock.Clock
	log    *slog.Logger
	kick   chan struct{}
	ids    *ids.Generator
	tracer attemptTracer // trace.go
	// OldestDue, when set, hears after each look for due deliveries how
	// long the oldest of them has been due (0: none was).
	OldestDue func(time.Duration)

	mu      sync.Mutex
	flights map[*flight]bool   // the attempts holding a slot
	kicked  map[[2]string]bool // endpoints (org, webhook) for the kick loop to read: deliveries made here, or a freed slot's
	waiting map[[2]string]bool // endpoints found due (by a look's due mark or a kick) with no slot (at most maxWaiting): a freed slot's candidates
	used    map[string]usage   // each org's slot-time of late (forgotten at 4,096 orgs): fair order's tie-break
	wg      sync.WaitGroup
}

// usage is an org's slot-time of late: the seconds its attempts held a
// slot, halved every 10 s.
type usage struct {
	secs float64
	at   time.Time
}

// of is the usage's seconds at now.
func (u usage) of(now time.Time) float64 { return u.secs * math.Exp2(-now.Sub(u.at).Seconds()/10) }

// slotTime is each org's slot-time of late, its attempts in flight
// counted up to now. w.mu is held.
func (w *Worker) slotTime() map[string]float64 {
	now, t := time.Now(), map[string]float64{}
	for org, u := range w.used {
		t[org] = u.of(now)
	}
	for f := range w.flights {
		t[f.org] += now.Sub(f.taken).Seconds()
	}
	return t
}

// NewWorker returns a Worker over s; now may be nil for the system clock.
// It sends through the client NewClient makes (allowPrivate: development
// and tests only).
func NewWorker(s DeliveryStorer, allowPrivate bool, pol Policy, now clock.Clock, log *slog.Logger) *Worker {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	now, pol = clock.Or(now), pol.withDefaults()
	return &Worker{store: s, client: NewClient(allowPrivate, pol.Timeout), pol: pol, now: now, log: log,
		kick: make(chan struct{}, 1), ids: ids.NewGenerator(now), flights: map[*flight]bool{}, kicked: map[[2]string]bool{},
		waiting: map[[2]string]bool{}, used: map[string]usage{}}
}

// flight is an attempt holding a slot.
type flight struct {
	org, webhook string
	taken        time.Time               // when it took its slot
	sending      time.Time               // zero until its request is sent
	cut          context.CancelCauseFunc // cuts the request, set with sending
}

// errPreempted is the cause of an attempt cut for a waiting org.
var errPreempted = errors.New("preempted: every delivery slot was taken and another org's delivery was waiting (retried later)")

// Kick makes the worker attempt ds, made due now, without waiting for its
// next poll: it reads only their endpoints' queues.
func (w *Worker) Kick(ds []Delivery) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range ds {
		w.kickLocked([2]string{d.OrgID, d.WebhookID})
	}
}

// kickLocked has the kick loop read the endpoint's queue. w.mu is held.
func (w *Worker) kickLocked(ep [2]string) {
	w.kicked[ep] = true
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Run polls for due deliveries until ctx is done, then waits for the
// attempts in flight. Kicks are served by a loop of their own, which
// reads only the kicked endpoints' queues: a fresh delivery waits for no
// poll's reads of every other org's queues.
func (w *Worker) Run(ctx context.Context) {
	defer w.wg.Wait()
	w.wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-w.kick:
				due, err := w.kickedDue(ctx)
				w.start(ctx, due)
				if err == nil { // a failing store gets no read per waiting endpoint
					w.mu.Lock()
					w.handOff()
					w.mu.Unlock()
				}
			}
		}
	})
	for {
		w.RunOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(w.pol.Poll/2 + rand.N(w.pol.Poll/2+1)):
		}
	}
}

// kickedDue reads the due deliveries of the endpoints kicked since it
// last did (as many as look says), and forgets them. It returns the last
// read's error, if any failed.
func (w *Worker) kickedDue(ctx context.Context) (due []Delivery, failed error) {
	w.mu.Lock()
	kicked := w.kicked
	w.kicked = map[[2]string]bool{}
	w.mu.Unlock()
	for ep := range kicked {
		if n := w.look(ep[0], ep[1]); n > 0 {
			ds, err := w.store.EndpointDue(ctx, ep[0], ep[1], w.now(), n)
			if err != nil {
				w.log.Warn("webhook worker: list due deliveries", "orgId", ep[0], "webhookId", ep[1], "err", err)
				failed = err
			}
			due = append(due, ds...)
		}
	}
	return due, failed
}

// RunOnce starts an attempt (its claim first) of each due delivery it has
// room for; it does not wait for them. It returns how many it started.
// The due deliveries of every shard are tried in fair order (fairOrder).
func (w *Worker) RunOnce(ctx context.Context) int {
	var due []Delivery
	now, oldest := w.now(), time.Duration(0)
	for shard := range Shards {
		ds, err := w.store.DueDeliveries(ctx, shard, now, w.pol.Concurrency, w.look)
		if err != nil {
			w.log.Warn("webhook worker: list due deliveries", "shard", shard, "err", err)
			continue
		}
		for _, d := range ds {
			oldest = max(oldest, now.Sub(d.NextAttempt))
		}
		due = append(due, ds...)
	}
	if w.OldestDue != nil {
		w.OldestDue(oldest)
	}
	return w.start(ctx, due)
}

// start starts an attempt (its claim first) of each of due it has a slot
// for, in fair order, and returns how many. An endpoint left with due
// deliveries and no slot (a look lists one more of an endpoint than it
// has room for) waits for a freed one (handOff).
func (w *Worker) start(ctx context.Context, due []Delivery) int {
	type slot struct {
		d Delivery
		f *flight
	}
	var slots []slot
	var left [][2]string
	for _, d := range w.fairOrder(due) {
		if f := w.take(d.OrgID, d.WebhookID); f != nil {
			slots = append(slots, slot{d, f})
		} else {
			left = append(left, [2]string{d.OrgID, d.WebhookID})
		}
	}
	w.mu.Lock()
	for _, ep := range left {
		w.wait(ep)
	}
	w.mu.Unlock()
	for _, s := range slots {
		w.wg.Go(func() { // the claim is the attempt's first write: a slow one holds up no other delivery
			owner, until := deletion.NewOwner(), w.now().Add(w.pol.Lease)
			ok, err := w.store.ClaimDelivery(ctx, s.d, owner, until)
			w.release(s.f, err == nil && ok && w.attempt(context.WithoutCancel(ctx), s.d, s.f, owner, until))
		})
	}
	return len(slots)
}

// fairOrder orders due round-robin across orgs, starting from those with
// the fewest attempts in flight (ties: the least slot-time of late first,
// then in random order): an org's n-th due delivery comes after every
// org's (n-1)-th, counting its attempts in flight. However many orgs'
// endpoints hang, each slot that frees goes to an org with fewer attempts
// in flight, and an org with none in flight takes one by a cut (take), so
// another org's delivery waits neither for the backlog of slow ones nor
// for their timeouts; and among orgs as busy, an org whose endpoint
// answers at once goes before those whose attempts held slots for long.
func (w *Worker) fairOrder(due []Delivery) []Delivery {
	type entry struct {
		d         Delivery
		turn, tie uint64
		used      float64
	}
	w.mu.Lock()
	inOrg, used := w.inOrg(), w.slotTime()
	w.mu.Unlock()
	turn, tie := map[string]uint64{}, map[string]uint64{}
	es := make([]entry, len(due))
	for i, d := range due {
		if _, ok := tie[d.OrgID]; !ok {
			turn[d.OrgID], tie[d.OrgID] = uint64(inOrg[d.OrgID]), rand.Uint64()
		}
		es[i] = entry{d: d, turn: turn[d.OrgID], tie: tie[d.OrgID], used: used[d.OrgID]}
		turn[d.OrgID]++
	}
	slices.SortStableFunc(es, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.turn, b.turn), cmp.Compare(a.used, b.used), cmp.Compare(a.tie, b.tie))
	})
	out := make([]Delivery, len(es))
	for i, e := range es {
		out[i] = e.d
	}
	return out
}

// Wait waits for the attempts in flight.
func (w *Worker) Wait() { w.wg.Wait() }

// room is how many more attempts to the org's endpoint the worker has
// slots for: an endpoint whose attempts (or whose org's) fill their slots
// costs no read of its queue. With every slot taken, an org with none in
// flight has room for one if an attempt could be cut for it (victim).
// w.mu is held.
func (w *Worker) room(orgID, webhookID string) int {
	inOrg, inEndpoint := w.inOrg(), 0
	for f := range w.flights {
		if f.webhook == webhookID {
			inEndpoint++
		}
	}
	free := w.pol.Concurrency - len(w.flights)
	if free <= 0 && inOrg[orgID] == 0 && w.victim(inOrg) != nil {
		free = 1
	}
	return min(free, w.pol.PerEndpoint-inEndpoint, w.pol.PerOrg-inOrg[orgID])
}

// look is how many due deliveries of the org's endpoint a look lists:
// one more than room, start's leftover (none without room: the endpoint
// waits for a freed slot).
func (w *Worker) look(orgID, webhookID string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := w.room(orgID, webhookID); n > 0 {
		return n + 1
	}
	w.wait([2]string{orgID, webhookID})
	return 0
}

// maxWaiting bounds the endpoints a worker remembers waiting for a slot:
// more than the due endpoints of every shard one look reads (1,000 each),
// so that busy orgs' endpoints do not fill it.
const maxWaiting = Shards * 1024

// wait records that the endpoint has deliveries due and no slot, unless
// maxWaiting endpoints wait already (the next look finds it). w.mu is
// held.
func (w *Worker) wait(ep [2]string) {
	if len(w.waiting) < maxWaiting {
		w.waiting[ep] = true
	}
}

// take reserves a slot for an attempt to the org's endpoint if room has
// one, cutting victim's attempt when every slot is taken; the endpoint
// waits no more. It returns the slot's flight, or nil.
func (w *Worker) take(orgID, webhookID string) *flight {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.room(orgID, webhookID) <= 0 {
		return nil
	}
	if len(w.flights) >= w.pol.Concurrency {
		v := w.victim(w.inOrg())
		if v == nil {
			return nil
		}
		v.cut(errPreempted)
		delete(w.flights, v) // its slot is this org's now
	}
	f := &flight{org: orgID, webhook: webhookID, taken: time.Now()}
	w.flights[f] = true
	delete(w.waiting, [2]string{orgID, webhookID})
	return f
}

// inOrg counts the attempts in flight by org. w.mu is held.
func (w *Worker) inOrg() map[string]int {
	n := map[string]int{}
	for f := range w.flights {
		n[f.org]++
	}
	return n
}

// victim is the attempt to cut for an org waiting with none in flight:
// of the org with the most attempts in flight, the one sending longest,
// if for Preempt or more. w.mu is held.
func (w *Worker) victim(inOrg map[string]int) *flight {
	var v *flight
	now := time.Now()
	for f := range w.flights {
		if f.sending.IsZero() || now.Sub(f.sending) < w.pol.Preempt {
			continue
		}
		if v == nil || inOrg[f.org] > inOrg[v.org] || inOrg[f.org] == inOrg[v.org] && f.sending.Before(v.sending) {
			v = f
		}
	}
	return v
}

// release gives back the slot take reserved, unless a cut gave it to
// another org already, counting its time to its org's slot-time, and
// hands it off (handOff). An endpoint whose attempt did not settle its
// delivery (a retry holds its queue, or another worker has it) waits no
// more: the next look finds it if it has more due.
func (w *Worker) release(f *flight, settled bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ep := [2]string{f.org, f.webhook}
	if !settled {
		delete(w.waiting, ep)
	}
	now := time.Now()
	if len(w.used) >= 4096 { // the orgs quiet for a minute or more first
		maps.DeleteFunc(w.used, func(_ string, u usage) bool { return u.of(now) < 0.01 })
	}
	if len(w.used) >= 4096 {
		clear(w.used)
	}
	w.used[f.org] = usage{w.used[f.org].of(now) + now.Sub(f.taken).Seconds(), now}
	if w.flights[f] {
		delete(w.flights, f)
		w.handOff()
	}
}

// handOff has the kick loop read the waiting endpoint first in fair order
// that has room (fewest attempts of its org in flight or handed a slot,
// then least slot-time of late), if a slot is free and one has room: a
// freed slot does not idle until the next look, and goes back to the org
// that held it only when no org with as few in flight and less slot-time
// waits. The kick loop hands on a slot its reads left free (another
// replica took those deliveries). w.mu is held.
func (w *Worker) handOff() {
	if len(w.flights)+len(w.kicked) >= w.pol.Concurrency {
		return
	}
	inOrg, inEndpoint := w.inOrg(), map[string]int{}
	for f := range w.flights {
		inEndpoint[f.webhook]++
	}
	for e := range w.kicked { // handed a slot, not read yet
		inOrg[e[0]]++
		inEndpoint[e[1]]++
	}
	used, best, found := w.slotTime(), [2]string{}, false
	for e := range w.waiting {
		if inEndpoint[e[1]] < w.pol.PerEndpoint && inOrg[e[0]] < w.pol.PerOrg && (!found ||
			cmp.Or(cmp.Compare(inOrg[e[0]], inOrg[best[0]]), cmp.Compare(used[e[0]], used[best[0]])) < 0) {
			best, found = e, true
		}
	}
	if found {
		delete(w.waiting, best)
		w.kickLocked(best)
	}
}

// attempt sends d once and records the outcome. It reports whether it
// settled d (delivered or given up): its endpoint's queue moved on.
func (w *Worker) attempt(ctx context.Context, d Delivery, f *flight, owner string, claimedUntil time.Time) bool {
	ctx, end := w.traceAttempt(ctx, &d)
	defer end()
	sub, err := w.store.GetWebhook(ctx, d.OrgID, d.WebhookID)
	sent := false
	switch {
	case errs.Is(err, errs.NotFound):
		d.State, d.LastError, d.NextAttempt = Failed, "the webhook was deleted", time.Time{}
	case err != nil:
		w.log.Warn("webhook worker: read webhook", "orgId", d.OrgID, "webhookId", d.WebhookID, "err", err)
		return false // the lease runs out and the delivery is due again
	case !sub.Active:
		d.State, d.LastError, d.NextAttempt = Failed, "the webhook is disabled", time.Time{}
	default:
		sent = w.send(ctx, sub, &d, f) // a cut attempt says nothing of the endpoint's health
	}
	now := w.now()
	if err := w.store.SettleAttempt(ctx, d, owner, claimedUntil, now.Add(w.pol.Retention)); err != nil {
		w.log.Warn("webhook worker: record attempt", "orgId", d.OrgID, "webhookId", d.WebhookID, "eventId", d.EventID, "err", err)
		return false
	}
	if sent {
		w.health(ctx, sub, d.State == Delivered, now)
	}
	return d.State != Pending
}

// send makes one attempt of d to sub and sets d's outcome. It returns
// false if the attempt was cut for another org (d is then due again after
// the attempt's backoff).
func (w *Worker) send(ctx context.Context, sub Subscription, d *Delivery, f *flight) bool {
	now := w.now()
	secrets := []string{sub.Secret}
	if sub.OldSecret != "" && now.Before(sub.OldSecretUntil) {
		secrets = append(secrets, sub.OldSecret)
	}
	d.Attempts++
	sig, err := Sign(d.EventID, now, d.Body, secrets...)
	if err != nil {
		d.State, d.LastError, d.NextAttempt = Failed, err.Error(), time.Time{}
		return true
	}
	ctx, cut := context.WithCancelCause(ctx) // from now on, a preemption may cut it (victim)
	defer cut(nil)
	w.mu.Lock()
	f.sending, f.cut = time.Now(), cut
	w.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sub.URL, bytes.NewReader(d.Body))
	if err != nil {
		d.State, d.LastError, d.NextAttempt = Failed, "invalid URL", time.Time{}
		return true
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "tenantd-webhooks/1")
	req.Header.Set("webhook-id", d.EventID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("webhook-signature", sig)
	start := time.Now()
	resp, err := w.client.Do(req)
	d.LatencyMs = time.Since(start).Milliseconds()
	retry, retryAfter, preempted := false, time.Duration(0), err != nil && errors.Is(context.Cause(ctx), errPreempted)
	switch {
	case preempted:
		d.LastStatus, d.LastError, retry = 0, errPreempted.Error(), true
	case err != nil:
		d.LastStatus, d.LastError, retry = 0, describe(err), true
	default:
		drain(resp.Body)
		_ = resp.Body.Close()
		d.LastStatus, d.LastError = resp.StatusCode, ""
		switch {
		case resp.StatusCode >= 200 && resp.StatusCode < 300:
			d.State, d.NextAttempt = Delivered, time.Time{}
			return true
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
			retry, retryAfter = true, parseRetryAfter(resp.Header.Get("Retry-After"), now)
			d.LastError = resp.Status
		default:
			d.LastError = resp.Status + " (not retried: only timeouts, connection errors, 429 and 5xx are)"
		}
	}
	next := w.now().Add(w.pol.Backoff(d.Attempts, retryAfter))
	if !retry || next.Sub(d.CreatedAt) > w.pol.RetryFor {
		d.State, d.NextAttempt = Failed, time.Time{}
		return !preempted
	}
	d.State, d.NextAttempt = Pending, next
	return !preempted
}

// describe is what the delivery log says of a failed connection: never
// the URL (it may carry a token in its query).
func describe(err error) string {
	switch {
	case isTimeout(err):
		return "timeout"
	case strings.Contains(err.Error(), errPrivate.Error()):
		return "refused: " + errPrivate.Error()
	default:
		return "connection failed"
	}
}

func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return t.Sub(now)
	}
	return 0
}

// health records an endpoint's answer: a success ends its run of
// failures; DisableAfter of failures disables it, and the audit log says
// so.
func (w *Worker) health(ctx context.Context, sub Subscription, ok bool, now time.Time) {
	next := sub
	var ev *audit.Event
	switch {
	case ok && sub.FailingSince.IsZero(), !ok && !sub.FailingSince.IsZero() && now.Sub(sub.FailingSince) < w.pol.DisableAfter:
		return // nothing new
	case ok:
		next.FailingSince = time.Time{}
	case sub.FailingSince.IsZero():
		next.FailingSince = now
	default:
		next.Active = false
		e := audit.NewEvent(ctx, w.ids, audit.Actor{OrgID: sub.OrgID, UserID: SystemActor},
			"webhook.disable", "webhook", sub.ID, now, audit.Diff(audit.F("active", true, false),
				audit.F("reason", nil, fmt.Sprintf("every delivery failed for %s", w.pol.DisableAfter))))
		ev = &e
	}
	if err := w.store.SetEndpointHealth(ctx, next, ev); err != nil && !errs.Is(err, errs.PreconditionFailed) {
		w.log.Warn("webhook worker: record endpoint health", "orgId", sub.OrgID, "webhookId", sub.ID, "err", err)
	}
}

// SystemActor is the actor of the changes the service makes by itself
// (disabling a failing endpoint).
const SystemActor = "tenantd"

// Deliveries serves the delivery log to an org's admins.
type Deliveries struct {
	store DeliveryStorer
	now   clock.Clock
}

// NewDeliveries returns the delivery log's service.
func NewDeliveries(s DeliveryStorer, now clock.Clock) *Deliveries {
	return &Deliveries{store: s, now: clock.Or(now)}
}

// ListWebhookDeliveries pages through an endpoint's deliveries, newest
// first (admin+).
func (s *Deliveries) ListWebhookDeliveries(ctx context.Context, p authz.Principal, webhookID string, pr page.Request) (page.Result[Delivery], error) {
	if err := authz.Authorize(p, authz.WebhookManage, authz.Facts{}); err != nil {
		return page.Result[Delivery]{}, err
	}
	if _, err := s.store.GetWebhook(ctx, p.OrgID, webhookID); err != nil {
		return page.Result[Delivery]{}, err
	}
	return s.store.ListDeliveries(ctx, p.OrgID, webhookID, pr)
}

// RedeliverWebhook makes a delivery due again now (admin+), whatever its
// state.
func (s *Deliveries) RedeliverWebhook(ctx context.Context, p authz.Principal, webhookID, deliveryID string) (Delivery, error) {
	if err := authz.Authorize(p, authz.WebhookManage, authz.Facts{}); err != nil {
		return Delivery{}, err
	}
	if _, err := s.store.GetWebhook(ctx, p.OrgID, webhookID); err != nil {
		return Delivery{}, err
	}
	return s.store.Redeliver(ctx, p.OrgID, webhookID, deliveryID, s.now())
}
