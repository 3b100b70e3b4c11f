package store_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/dynamotest"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/store"
	"github.com/tenantd/tenantd/internal/webhook"
)

// TestDeliveryFairness: an endpoint with a backlog of due deliveries far
// longer than a worker takes at once, answering slowly, delays no other
// org's endpoint hashed into the same due shard: one pass of a worker
// starts the other endpoint's delivery, and it is delivered while the
// flooded endpoint still hangs.
func TestDeliveryFairness(t *testing.T) {
	f := MustFixture(t)
	ctx := context.Background()
	hooks := &store.Webhooks{DB: f.DB}
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
	}))
	defer slow.Close()
	delivered := make(chan string, 1)
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		delivered <- r.Header.Get("webhook-id")
	}))
	defer fast.Close()

	flooded := f.mustWebhook(t, hooks, f.newOrg(t, "Flooded", "u_flooded").ID, slow.URL, -1)
	shard := webhook.Shard(flooded.OrgID, flooded.ID)
	other := f.mustWebhook(t, hooks, f.newOrg(t, "Other", "u_other").ID, fast.URL, shard)

	now := time.Now()
	const backlog = 100 // more than a worker's 32 attempts at once
	for i := range backlog {
		f.mustDelivery(t, hooks, flooded, now.Add(time.Duration(i-2*backlog)*time.Millisecond))
	}
	want := f.mustDelivery(t, hooks, other, now.Add(-time.Millisecond))

	w := webhook.NewWorker(hooks, true, webhook.Policy{Timeout: time.Minute}, nil, nil)
	defer func() { close(release); w.Wait() }()
	if got := w.RunOnce(ctx); got != 3 {
		t.Errorf("attempts started: got %d, want 3 (2 to the flooded endpoint, 1 to the other)", got)
	}
	select {
	case got := <-delivered:
		if got != want {
			t.Errorf("delivered %q, want %q", got, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the other endpoint's delivery was not sent while the flooded endpoint hangs")
	}
}

// TestDeliveryDrains: an org waiting beside hanging endpoints that fill
// every slot drains its backlog as fast as its endpoint answers, not one
// delivery per look: it takes a slot by a cut, and each of its attempts
// that settles hands its slot on to its next due delivery (the org with
// none in flight first). The worker here polls once an hour, so only that
// can send the backlog.
func TestDeliveryDrains(t *testing.T) {
	f := MustFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	hooks := &store.Webhooks{DB: f.DB}
	release, hanging := make(chan struct{}), make(chan struct{}, 2)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hanging <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	var mu sync.Mutex
	got := map[string]bool{}
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[r.Header.Get("webhook-id")] = true
		mu.Unlock()
	}))
	defer fast.Close()

	now := time.Now()
	hang := f.newOrg(t, "Hangs", "u_hangs").ID
	for range 2 {
		f.mustDelivery(t, hooks, f.mustWebhook(t, hooks, hang, slow.URL, -1), now.Add(-time.Second))
	}
	w := webhook.NewWorker(hooks, true, webhook.Policy{Concurrency: 2, Preempt: 10 * time.Millisecond, Timeout: time.Minute, Poll: time.Hour}, nil, nil)
	done := make(chan struct{})
	defer func() { cancel(); close(release); <-done }()
	if n := w.RunOnce(ctx); n != 2 {
		t.Fatalf("attempts to the hanging endpoints: %d, want 2 (every slot)", n)
	}
	<-hanging
	<-hanging
	time.Sleep(50 * time.Millisecond) // both sending for longer than Preempt

	waiting := f.mustWebhook(t, hooks, f.newOrg(t, "Waits", "u_waits").ID, fast.URL, -1)
	const backlog = 6
	for i := range backlog {
		f.mustDelivery(t, hooks, waiting, now.Add(time.Duration(i)*time.Millisecond))
	}
	go func() { w.Run(ctx); close(done) }()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) { // a bound for a stall, not a speed
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == backlog {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d deliveries of the waiting org sent in a minute, the next poll an hour away", n, backlog)
		}
	}
}

// TestDeliveryHandOff: a slot freed while every slot is taken by
// endpoints that answer (nothing to cut) goes at once to the endpoint
// waiting first in fair order, not to the next look: here the org that
// used no slot-time of late, before the next delivery of the org whose
// attempt freed it. The worker here polls once an hour.
func TestDeliveryHandOff(t *testing.T) {
	f := MustFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	hooks := &store.Webhooks{DB: f.DB}
	var mu sync.Mutex
	var order []string
	answer := make(chan struct{})
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		first := len(order) == 0
		order = append(order, "busy")
		mu.Unlock()
		if first {
			<-answer
		}
	}))
	defer busy.Close()
	waits := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		order = append(order, "waits")
		mu.Unlock()
	}))
	defer waits.Close()

	now := time.Now()
	busyHook := f.mustWebhook(t, hooks, f.newOrg(t, "Busy", "u_busy").ID, busy.URL, -1)
	for i := range 3 {
		f.mustDelivery(t, hooks, busyHook, now.Add(time.Duration(i-10)*time.Millisecond))
	}
	w := webhook.NewWorker(hooks, true, webhook.Policy{Concurrency: 1, Preempt: time.Hour, Timeout: time.Minute, Poll: time.Hour}, nil, nil)
	done := make(chan struct{})
	defer func() { cancel(); <-done }()
	if n := w.RunOnce(ctx); n != 1 {
		t.Fatalf("attempts started: %d, want 1 (the only slot, to the busy org)", n)
	}
	f.mustDelivery(t, hooks, f.mustWebhook(t, hooks, f.newOrg(t, "Waits", "u_waits").ID, waits.URL, -1), now)
	if n := w.RunOnce(ctx); n != 0 { // the look finds it waiting, every slot taken
		t.Fatalf("attempts started with every slot taken: %d", n)
	}
	go func() { w.Run(ctx); close(done) }()
	close(answer)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) { // a bound for a stall, not a speed
		mu.Lock()
		got := slices.Clone(order)
		mu.Unlock()
		if len(got) >= 3 {
			if want := []string{"busy", "waits", "busy"}; !slices.Equal(got[:3], want) {
				t.Errorf("attempts in order %v, want %v: the freed slot to the org that used none", got, want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("attempts in a minute: %v, the next poll an hour away", got)
		}
	}
}

// TestDeliveryBound: an endpoint holds at most MaxPending undelivered
// events; one past the bound is made failed at once, its log saying why,
// and a delivery fits again once a pending one settles.
func TestDeliveryBound(t *testing.T) {
	f := MustFixture(t)
	ctx := context.Background()
	hooks := &store.Webhooks{DB: f.DB, MaxPending: 3}
	org := f.newOrg(t, "Bound", "u_bound")
	sub := f.mustWebhook(t, hooks, org.ID, "https://example.com/hook", -1)
	now := time.Now()
	var made []string
	for range 5 {
		made = append(made, f.mustDelivery(t, hooks, sub, now))
	}
	// The same event dispatched again makes nothing and counts nothing.
	n, err := hooks.EnqueueDeliveries(ctx, []webhook.Delivery{{OrgID: org.ID, WebhookID: sub.ID, EventID: made[0], Type: "ticket.create",
		Body: []byte(`{}`), State: webhook.Pending, NextAttempt: now, CreatedAt: now}})
	must(t, err)
	if n != 0 {
		t.Error("a delivery dispatched twice was made twice")
	}
	r, err := hooks.ListDeliveries(ctx, org.ID, sub.ID, page.Request{Limit: 10})
	must(t, err)
	states := map[webhook.State]int{}
	for _, d := range r.Items {
		states[d.State]++
		if d.State == webhook.Failed && !strings.Contains(d.LastError, "3 undelivered events") {
			t.Errorf("failed delivery's lastError: got %q", d.LastError)
		}
	}
	if states[webhook.Pending] != 3 || states[webhook.Failed] != 2 {
		t.Errorf("states: got %v, want 3 pending, 2 failed", states)
	}

	// One settles: one more fits, and an admin's redelivery is made past the bound.
	due, err := hooks.DueDeliveries(ctx, webhook.Shard(org.ID, sub.ID), now, 32, room(1))
	must(t, err)
	if len(due) != 1 {
		t.Fatalf("due: got %d, want 1", len(due))
	}
	until := now.Add(time.Minute)
	claimed, err := hooks.ClaimDelivery(ctx, due[0], "worker", until)
	must(t, err)
	if !claimed {
		t.Fatal("claim failed")
	}
	d := due[0]
	d.State, d.Attempts, d.LastStatus = webhook.Delivered, 1, 204
	must(t, hooks.SettleAttempt(ctx, d, "worker", until, now.Add(time.Hour)))
	if n, err := hooks.EnqueueDeliveries(ctx, []webhook.Delivery{{OrgID: org.ID, WebhookID: sub.ID, EventID: f.ids.New(), Type: "ticket.create",
		Body: []byte(`{}`), State: webhook.Pending, NextAttempt: now, CreatedAt: now}}); n != 1 || err != nil {
		t.Fatalf("enqueue after one settled: %d %v", n, err)
	}
	r, err = hooks.ListDeliveries(ctx, org.ID, sub.ID, page.Request{Limit: 10})
	must(t, err)
	if r.Items[0].State != webhook.Pending {
		t.Errorf("the delivery made after one settled: got %s, want pending", r.Items[0].State)
	}
	if got, err := hooks.Redeliver(ctx, org.ID, sub.ID, made[4], now); err != nil || got.State != webhook.Pending {
		t.Errorf("redeliver past the bound: %+v, %v", got, err)
	}

	// Redelivering what does not exist, or what is pending already,
	// counts nothing: the count stays the number of pending deliveries.
	pendingCount := func() string {
		out, err := f.raw.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(f.DB.TableName()), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "ORG#" + org.ID + "#WEBHOOK#" + sub.ID},
				"sk": &types.AttributeValueMemberS{Value: "#DUE"}}})
		must(t, err)
		n, _ := out.Item["pending"].(*types.AttributeValueMemberN)
		if n == nil {
			return ""
		}
		return n.Value
	}
	before := pendingCount()
	for range 5 {
		if _, err := hooks.Redeliver(ctx, org.ID, sub.ID, f.ids.New(), now); !errs.Is(err, errs.NotFound) {
			t.Errorf("redeliver an unknown delivery: %v, want not found", err)
		}
	}
	for range 2 {
		if got, err := hooks.Redeliver(ctx, org.ID, sub.ID, made[1], now); err != nil || got.State != webhook.Pending {
			t.Errorf("redeliver a pending delivery: %+v, %v", got, err)
		}
	}
	if after := pendingCount(); before != "4" || after != before {
		t.Errorf("the endpoint's pending count: %s before (want 4), %s after 5 unknown and 2 pending redeliveries", before, after)
	}
}

// TestDeliveryDynamoDBPaused: DynamoDB paused while a worker's attempts
// are in flight (the endpoint got them; their outcome cannot be recorded)
// loses no delivery: once it answers again, the leases run out and every
// delivery is sent again (the same webhook-id) and recorded as delivered.
// The setup, before the pause, has normal deadlines.
func TestDeliveryDynamoDBPaused(t *testing.T) {
	local := dynamotest.StartLocal(t)
	ctx := context.Background()
	setup := store.NewClient(local.Config(), store.Options{Endpoint: local.Endpoint()})
	name := dynamotest.TableName(t)
	must(t, store.Migrate(ctx, setup, name))
	now := time.Now()
	f := &fixture{DB: store.Open(setup, name), ids: ids.NewGenerator(time.Now), now: now}
	f.Orgs = &store.Orgs{DB: f.DB}
	org := f.newOrg(t, "Paused", "u_paused")

	var mu sync.Mutex
	got := map[string]int{}
	pid, paused := local.PID(), false
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		got[r.Header.Get("webhook-id")]++
		if !paused { // the first attempt pauses DynamoDB before its outcome is recorded
			paused = true
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				t.Error(err)
			}
		}
	}))
	defer recv.Close()
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) }) // before the process is stopped
	hooks := &store.Webhooks{DB: f.DB}
	sub := f.mustWebhook(t, hooks, org.ID, recv.URL, -1)
	var want []string
	for range 4 {
		want = append(want, f.mustDelivery(t, hooks, sub, now))
	}

	// The worker's DynamoDB client gives up on a call after 1 s, so the
	// pause makes its writes fail rather than wait.
	short := store.NewClient(local.Config(), store.Options{Endpoint: local.Endpoint()})
	short = dynamodb.New(short.Options(), func(o *dynamodb.Options) {
		o.HTTPClient = awshttp.NewBuildableClient().WithTimeout(time.Second)
	})
	w := webhook.NewWorker(&store.Webhooks{DB: store.Open(short, name)}, true,
		webhook.Policy{Lease: 2 * time.Second, Timeout: time.Second, Poll: 100 * time.Millisecond, PerEndpoint: 4}, nil, nil)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); w.Run(runCtx) }()
	defer func() { stop(); <-done }()

	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s never happened", what)
			}
		}
	}
	waitUntil("the pause", func() bool { mu.Lock(); defer mu.Unlock(); return paused })
	time.Sleep(3 * time.Second) // past the leases, DynamoDB still paused
	must(t, syscall.Kill(pid, syscall.SIGCONT))

	waitUntil("every delivery recorded as delivered", func() bool {
		r, err := hooks.ListDeliveries(ctx, org.ID, sub.ID, page.Request{Limit: 10})
		if err != nil || len(r.Items) != len(want) {
			return false
		}
		for _, d := range r.Items {
			if d.State != webhook.Delivered {
				return false
			}
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	for _, id := range want {
		if got[id] == 0 {
			t.Errorf("delivery %s never reached the endpoint", id)
		}
	}
}

// TestDueEndpointsPastBusyOnes: a look at a due shard reads past the
// endpoints it has no room for (their orgs' slots taken), so that more
// busy orgs' endpoints due earlier than a look lists hide no other org's
// delivery.
func TestDueEndpointsPastBusyOnes(t *testing.T) {
	f := MustFixture(t)
	hooks := &store.Webhooks{DB: f.DB}
	now := time.Now()
	busy := map[string]bool{}
	for o := range 3 { // 36 endpoints due a minute ago, more than the look's 32
		org := f.newOrg(t, fmt.Sprintf("Busy %d", o), fmt.Sprintf("u_busy%d", o))
		busy[org.ID] = true
		for range 12 {
			f.mustDelivery(t, hooks, f.mustWebhook(t, hooks, org.ID, "https://example.com/hook", 0), now.Add(-time.Minute))
		}
	}
	victim := f.newOrg(t, "Victim", "u_victim")
	want := f.mustDelivery(t, hooks, f.mustWebhook(t, hooks, victim.ID, "https://example.com/hook", 0), now.Add(-time.Second))
	due, err := hooks.DueDeliveries(context.Background(), 0, now, 32, func(orgID, _ string) int {
		if busy[orgID] {
			return 0
		}
		return 1
	})
	must(t, err)
	if len(due) != 1 || due[0].EventID != want {
		t.Errorf("due: %+v, want the victim's delivery alone (the busy orgs have no room)", due)
	}
}

// TestDueEndpointsFairChoice: when more due endpoints of a shard have room
// than a look lists (many orgs waiting, each for its first slot), a look
// lists a random choice of them, so an endpoint due later is not kept out
// of every look by those due before it.
func TestDueEndpointsFairChoice(t *testing.T) {
	f := MustFixture(t)
	hooks := &store.Webhooks{DB: f.DB}
	now := time.Now()
	for o := range 3 { // 36 endpoints due a minute ago, each with room
		org := f.newOrg(t, fmt.Sprintf("Waiting %d", o), fmt.Sprintf("u_waiting%d", o))
		for range 12 {
			f.mustDelivery(t, hooks, f.mustWebhook(t, hooks, org.ID, "https://example.com/hook", 0), now.Add(-time.Minute))
		}
	}
	victim := f.newOrg(t, "Victim", "u_victim")
	want := f.mustDelivery(t, hooks, f.mustWebhook(t, hooks, victim.ID, "https://example.com/hook", 0), now.Add(-time.Second))
	for look := range 80 { // listed with a chance of 8 in 37 each look: missed by all 80 about once in 10^8
		due, err := hooks.DueDeliveries(context.Background(), 0, now, 8, room(1))
		must(t, err)
		if len(due) != 8 {
			t.Fatalf("look %d listed %d deliveries, want 8", look, len(due))
		}
		if slices.ContainsFunc(due, func(d webhook.Delivery) bool { return d.EventID == want }) {
			return
		}
	}
	t.Error("80 looks of 8 endpoints never listed the one due last")
}

// mustWebhook subscribes url to every event of orgID through hooks; in
// due shard shard unless it is -1.
func (f *fixture) mustWebhook(t *testing.T, hooks *store.Webhooks, orgID, url string, shard int) webhook.Subscription {
	t.Helper()
	secret, err := webhook.NewSecret()
	must(t, err)
	for {
		sub := webhook.Subscription{OrgID: orgID, ID: f.ids.New(), URL: url, Events: []string{"*"}, Active: true,
			Secret: secret, Version: 1, CreatedAt: f.now, UpdatedAt: f.now}
		if shard >= 0 && webhook.Shard(orgID, sub.ID) != shard {
			continue
		}
		must(t, hooks.CreateWebhook(context.Background(), sub, evOrg(orgID)))
		return sub
	}
}

// mustDelivery makes a pending delivery to sub, due at at, and returns
// its event ID.
func (f *fixture) mustDelivery(t *testing.T, hooks *store.Webhooks, sub webhook.Subscription, at time.Time) string {
	t.Helper()
	id := f.ids.New()
	n, err := hooks.EnqueueDeliveries(context.Background(), []webhook.Delivery{{OrgID: sub.OrgID, WebhookID: sub.ID, EventID: id,
		Type: "ticket.create", Body: []byte(`{}`), State: webhook.Pending, NextAttempt: at, CreatedAt: at}})
	must(t, err)
	if n != 1 {
		t.Fatalf("delivery %s not made", id)
	}
	return id
}

// TestDeliveryFanOut: one event's deliveries, to every endpoint of its org
// that wants it, are made in one transaction after one read of the
// subscriptions; the same event dispatched again makes none.
func TestDeliveryFanOut(t *testing.T) {
	f := MustFixture(t)
	ctx := context.Background()
	hooks := &store.Webhooks{DB: f.DB}
	org := f.newOrg(t, "Fan", "u_fan")
	for range 4 {
		f.mustWebhook(t, hooks, org.ID, "https://example.com/hook", -1)
	}
	now := time.Now().UTC()
	ev := audit.Event{OrgID: org.ID, ID: f.ids.New(), ActorID: "u_fan", Action: "ticket.create", TargetType: "ticket", TargetID: f.ids.New(), At: now}
	d := webhook.NewDispatcher(hooks, webhook.Policy{}, nil)
	f.Rec.Reset()
	if n, err := d.Dispatch(ctx, ev); err != nil || n != 4 {
		t.Fatalf("dispatch: made %d, %v; want 4", n, err)
	}
	if got := f.Rec.Names(); got != "Query(GSI1), TransactWriteItems" {
		t.Errorf("DynamoDB calls of one event to 4 endpoints: %s, want one read of the subscriptions and one transaction", got)
	}
	if n, err := d.Dispatch(ctx, ev); err != nil || n != 0 {
		t.Errorf("the event dispatched again: made %d, %v; want 0", n, err)
	}
}

// TestDeliveryBackoff: an endpoint whose delivery failed waits, as a
// whole, for that delivery's retry: the deliveries queued after it are
// not due before it, and the endpoint's due item moves to the retry; at
// the retry, the failed delivery and those after it are due again, in
// the order they were queued.
func TestDeliveryBackoff(t *testing.T) {
	f := MustFixture(t)
	ctx := context.Background()
	hooks := &store.Webhooks{DB: f.DB}
	org := f.newOrg(t, "Backoff", "u_backoff")
	sub := f.mustWebhook(t, hooks, org.ID, "https://example.com/hook", -1)
	shard := webhook.Shard(org.ID, sub.ID)
	now := time.Now()
	var queued []string
	for i := range 4 {
		queued = append(queued, f.mustDelivery(t, hooks, sub, now.Add(time.Duration(i-10)*time.Millisecond)))
	}
	due, err := hooks.DueDeliveries(ctx, shard, now, 32, room(1))
	must(t, err)
	if len(due) != 1 || due[0].EventID != queued[0] {
		t.Fatalf("due: %+v, want the first queued", due)
	}
	until := now.Add(time.Minute)
	claimed, err := hooks.ClaimDelivery(ctx, due[0], "worker", until)
	if err != nil || !claimed {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	d := due[0]
	retry := now.Add(10 * time.Second)
	d.State, d.Attempts, d.LastStatus, d.NextAttempt = webhook.Pending, 1, 503, retry
	must(t, hooks.SettleAttempt(ctx, d, "worker", until, now.Add(time.Hour)))

	for _, at := range []time.Time{now, now.Add(5 * time.Second), retry.Add(-time.Millisecond)} {
		if due, err := hooks.DueDeliveries(ctx, shard, at, 32, room(4)); err != nil || len(due) != 0 {
			t.Errorf("%v before the retry: due %d (%v): the endpoint's backlog must wait for its retry", retry.Sub(at), len(due), err)
		}
	}
	out, err := f.raw.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(f.DB.TableName()), IndexName: aws.String("GSI3"),
		KeyConditionExpression:    aws.String("gsi3pk = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: fmt.Sprintf("WEBHOOKDUE#%d", shard)}}})
	must(t, err)
	var marks []string
	for _, it := range out.Items {
		sk, _ := it["gsi3sk"].(*types.AttributeValueMemberS)
		marks = append(marks, sk.Value)
	}
	if len(marks) != 1 || !strings.HasPrefix(marks[0], fmt.Sprintf("%013d#", retry.UnixMilli())) {
		t.Errorf("the endpoint's due items: %q, want one, at the retry %d", marks, retry.UnixMilli())
	}
	due, err = hooks.DueDeliveries(ctx, shard, retry, 32, room(4))
	must(t, err)
	var got []string
	for _, d := range due {
		got = append(got, d.EventID)
	}
	if !slices.Equal(got, queued) {
		t.Errorf("due at the retry: %q, want every delivery, in the order queued: %q", got, queued)
	}
}

// room is a worker with n slots for every endpoint.
func room(n int) func(string, string) int { return func(string, string) int { return n } }
