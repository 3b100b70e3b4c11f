package store_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

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
