package store_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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

	subscribe := func(orgID, url string, shard int) webhook.Subscription {
		t.Helper()
		secret, err := webhook.NewSecret()
		must(t, err)
		for {
			sub := webhook.Subscription{OrgID: orgID, ID: f.ids.New(), URL: url, Events: []string{"*"}, Active: true,
				Secret: secret, Version: 1, CreatedAt: f.now, UpdatedAt: f.now}
			if shard >= 0 && webhook.Shard(orgID, sub.ID) != shard {
				continue
			}
			must(t, hooks.CreateWebhook(ctx, sub, evOrg(orgID)))
			return sub
		}
	}
	flooded := subscribe(f.newOrg(t, "Flooded", "u_flooded").ID, slow.URL, -1)
	shard := webhook.Shard(flooded.OrgID, flooded.ID)
	other := subscribe(f.newOrg(t, "Other", "u_other").ID, fast.URL, shard)

	now := time.Now()
	enqueue := func(sub webhook.Subscription, at time.Time) string {
		t.Helper()
		id := f.ids.New()
		ok, err := hooks.EnqueueDelivery(ctx, webhook.Delivery{OrgID: sub.OrgID, WebhookID: sub.ID, EventID: id, Type: "ticket.create",
			Body: []byte(`{}`), State: webhook.Pending, NextAttempt: at, CreatedAt: at})
		must(t, err)
		if !ok {
			t.Fatalf("delivery %s not made", id)
		}
		return id
	}
	const backlog = 100 // more than a worker's 32 attempts at once
	for i := range backlog {
		enqueue(flooded, now.Add(time.Duration(i-2*backlog)*time.Millisecond))
	}
	want := enqueue(other, now.Add(-time.Millisecond))

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

// TestDeliveryBound: an endpoint holds at most MaxPending undelivered
// events; one past the bound is made failed at once, its log saying why,
// and a delivery fits again once a pending one settles.
func TestDeliveryBound(t *testing.T) {
	f := MustFixture(t)
	ctx := context.Background()
	hooks := &store.Webhooks{DB: f.DB, MaxPending: 3}
	org := f.newOrg(t, "Bound", "u_bound")
	secret, err := webhook.NewSecret()
	must(t, err)
	sub := webhook.Subscription{OrgID: org.ID, ID: f.ids.New(), URL: "https://example.com/hook", Events: []string{"*"}, Active: true,
		Secret: secret, Version: 1, CreatedAt: f.now, UpdatedAt: f.now}
	must(t, hooks.CreateWebhook(ctx, sub, evOrg(org.ID)))
	now := time.Now()
	var made []string
	for range 5 {
		id := f.ids.New()
		ok, err := hooks.EnqueueDelivery(ctx, webhook.Delivery{OrgID: org.ID, WebhookID: sub.ID, EventID: id, Type: "ticket.create",
			Body: []byte(`{}`), State: webhook.Pending, NextAttempt: now, CreatedAt: now})
		must(t, err)
		if !ok {
			t.Fatalf("delivery %s not made", id)
		}
		made = append(made, id)
	}
	// The same event dispatched again makes nothing and counts nothing.
	ok, err := hooks.EnqueueDelivery(ctx, webhook.Delivery{OrgID: org.ID, WebhookID: sub.ID, EventID: made[0], Type: "ticket.create",
		Body: []byte(`{}`), State: webhook.Pending, NextAttempt: now, CreatedAt: now})
	must(t, err)
	if ok {
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
	due, err := hooks.DueDeliveries(ctx, webhook.Shard(org.ID, sub.ID), now, 32, 1)
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
	if ok, err := hooks.EnqueueDelivery(ctx, webhook.Delivery{OrgID: org.ID, WebhookID: sub.ID, EventID: f.ids.New(), Type: "ticket.create",
		Body: []byte(`{}`), State: webhook.Pending, NextAttempt: now, CreatedAt: now}); !ok || err != nil {
		t.Fatalf("enqueue after one settled: %v %v", ok, err)
	}
	r, err = hooks.ListDeliveries(ctx, org.ID, sub.ID, page.Request{Limit: 10})
	must(t, err)
	if r.Items[0].State != webhook.Pending {
		t.Errorf("the delivery made after one settled: got %s, want pending", r.Items[0].State)
	}
	if got, err := hooks.Redeliver(ctx, org.ID, sub.ID, made[4], now); err != nil || got.State != webhook.Pending {
		t.Errorf("redeliver past the bound: %+v, %v", got, err)
	}
}
