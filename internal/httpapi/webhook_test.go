package httpapi_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/tenantd/tenantd/client"
	"github.com/tenantd/tenantd/internal/apitest"
	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/store"
	"github.com/tenantd/tenantd/internal/webhook"
)

// fastRetries is a retry schedule in milliseconds, so the retry tests
// take a moment rather than minutes; the schedule itself (first retry
// within 30 s, doubling) is pinned by TestBackoff.
var fastRetries = webhook.Policy{FirstRetry: 100 * time.Millisecond, MaxDelay: 300 * time.Millisecond, Poll: 50 * time.Millisecond,
	Timeout: 700 * time.Millisecond, Lease: 3 * time.Second, DisableAfter: time.Hour}

// receiver is an integrator's endpoint: it verifies every delivery with
// the Standard Webhooks reference library, under each of its secrets,
// and answers what the test scripts (200 by default).
type receiver struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	secrets  []string
	got      []delivered    // verified deliveries
	attempts map[string]int // requests by webhook-id
	bad      []string
	// script, when set, says how to answer the attempt-th delivery of
	// msgID: a status, or 0 to hang past the client's timeout, or -1 to
	// close the connection.
	script func(msgID string, attempt int) int
}

type delivered struct {
	ID, Signature string
	Body          struct {
		Type      string          `json:"type"`
		Timestamp time.Time       `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}
	Data struct {
		ID         string         `json:"id"`
		OrgID      string         `json:"orgId"`
		Action     string         `json:"action"`
		TargetID   string         `json:"targetId"`
		Object     map[string]any `json:"object"`
		Changes    []audit.Change `json:"changes"`
		TargetType string         `json:"targetType"`
	}
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{t: t, attempts: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) setSecrets(s ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secrets = s
}

func (r *receiver) setScript(f func(string, int) int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.script = f
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	id := req.Header.Get("webhook-id")
	r.mu.Lock()
	secrets, script := r.secrets, r.script
	r.attempts[id]++
	attempt := r.attempts[id]
	r.mu.Unlock()
	if script != nil {
		switch s := script(id, attempt); {
		case s == 0:
			time.Sleep(2 * time.Second) // past fastRetries.Timeout
			return
		case s == -1:
			if hj, ok := w.(http.Hijacker); ok {
				c, _, _ := hj.Hijack()
				_ = c.Close()
			}
			return
		case s != 200:
			w.WriteHeader(s)
			return
		}
	}
	d := delivered{ID: id, Signature: req.Header.Get("webhook-signature")}
	verified := false
	for _, s := range secrets {
		wh, err := standardwebhooks.NewWebhook(s)
		if err == nil && wh.Verify(body, req.Header) == nil {
			verified = true
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !verified {
		r.bad = append(r.bad, id+": "+string(body))
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if err := json.Unmarshal(body, &d.Body); err != nil || json.Unmarshal(d.Body.Data, &d.Data) != nil {
		r.bad = append(r.bad, id+": not JSON: "+string(body))
	}
	r.got = append(r.got, d)
	w.WriteHeader(http.StatusNoContent)
}

// verified returns the verified deliveries, one per webhook-id (the
// receiver's de-duplication), and how many attempts each id had.
func (r *receiver) verified() (map[string]delivered, map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.bad) > 0 {
		r.t.Errorf("deliveries that failed verification: %q", r.bad)
		r.bad = nil
	}
	out := map[string]delivered{}
	for _, d := range r.got {
		out[d.ID] = d
	}
	return out, maps.Clone(r.attempts)
}

// await waits until the receiver holds a verified delivery of each id
// (a generous deadline, for a busy machine: never a speed assertion).
func (r *receiver) await(t *testing.T, ids ...string) map[string]delivered {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		got, _ := r.verified()
		missing := slices.DeleteFunc(slices.Clone(ids), func(id string) bool { _, ok := got[id]; return ok })
		if len(missing) == 0 {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("events never delivered: %q (got %d deliveries)", missing, len(got))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// eventsOf is the org's audit events of the given actions, oldest first.
func eventsOf(t *testing.T, c *client.ClientWithResponses, orgID string, actions ...string) []client.AuditEvent {
	t.Helper()
	var out []client.AuditEvent
	for _, e := range allEvents(t, c, orgID, 100, nil, nil) {
		if slices.Contains(actions, e.Action) {
			out = append(out, e)
		}
	}
	slices.Reverse(out)
	return out
}

func idsOfEvents(evs []client.AuditEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Id)
	}
	return out
}

// TestWebhook is the behaviour of webhooks: subscriptions, and the
// deliveries the table's change stream makes of the org's changes.
func TestWebhook(t *testing.T) {
	ts := MustServer(t, apitest.WithWebhooks(fastRetries))
	w := MustWorld(t, ts, "Hooks")
	org := w.Org.Id
	recv := newReceiver(t)
	subscribed := []string{"ticket.create", "ticket.update", "comment.create"}
	var hook client.WebhookCreated
	spec(t, "201/createWebhook", func(t *testing.T) {
		desc := "the integration"
		r, err := w.Admin.C.CreateWebhookWithResponse(bg, org, nil, client.WebhookCreate{Url: recv.srv.URL + "/hook", Events: subscribed, Description: &desc})
		mustStatus(t, r, err, http.StatusCreated)
		hook = *r.JSON201
		if !strings.HasPrefix(hook.Secret, "whsec_") || len(hook.Secret) < 40 || !hook.Active || hook.Url != recv.srv.URL+"/hook" ||
			!slices.Equal(hook.Events, subscribed) || hook.Version != 1 {
			t.Errorf("webhook: got %+v", hook)
		}
		recv.setSecrets(hook.Secret)
	})
	if hook.Id == "" {
		t.FailNow()
	}
	// Another tenant with an endpoint of its own, subscribed to everything.
	bee := ts.Actor(t, "bee")
	bOrg := MustOrg(t, bee.C, "Bee")
	recvB := newReceiver(t)
	rb, err := bee.C.CreateWebhookWithResponse(bg, bOrg.Id, nil, client.WebhookCreate{Url: recvB.srv.URL, Events: []string{"*"}})
	mustStatus(t, rb, err, http.StatusCreated)
	recvB.setSecrets(rb.JSON201.Secret)

	t.Run("each subscribed change arrives once, signed, and nothing of another org", func(t *testing.T) {
		start := time.Now()
		tk := MustTicket(t, w.Requester.C, org, client.TicketCreate{Title: "Hook me"})
		first := eventsOf(t, w.Owner.C, org, "ticket.create")
		recv.await(t, first[len(first)-1].Id)
		t.Logf("end-to-end delay (commit to the receiver, stream poll %v, worker kicked): %v", 50*time.Millisecond, time.Since(start))
		title := "Hooked"
		u, err := w.Requester.C.UpdateTicketWithResponse(bg, org, tk.Id, nil, client.TicketUpdate{Title: &title})
		mustStatus(t, u, err, http.StatusOK)
		MustComment(t, w.Requester.C, org, tk.Id, "a comment")
		MustTeam(t, w.Owner.C, org, "Not subscribed")
		MustTicket(t, bee.C, bOrg.Id, client.TicketCreate{Title: "Bee's"})

		var want []client.AuditEvent
		for _, e := range eventsOf(t, w.Owner.C, org, subscribed...) {
			if e.At.After(hook.CreatedAt) { // the world's first ticket came before the webhook
				want = append(want, e)
			}
		}
		got := recv.await(t, idsOfEvents(want)...)
		for _, e := range want {
			d := got[e.Id]
			if d.Body.Type != e.Action || d.Data.OrgID != org || d.Data.TargetID != e.TargetId || !d.Body.Timestamp.Equal(e.At) {
				t.Errorf("delivery of %s %s: got type %q org %q target %q at %v", e.Action, e.Id, d.Body.Type, d.Data.OrgID, d.Data.TargetID, d.Body.Timestamp)
			}
		}
		if d := got[want[len(want)-1].Id]; d.Data.Object["body"] != "a comment" {
			t.Errorf("comment.create's data.object: got %v, want the comment's body", d.Data.Object)
		}
		recvB.await(t, idsOfEvents(eventsOf(t, bee.C, bOrg.Id, "ticket.create"))...)
		// Nothing else reaches either endpoint: no other type, no other org.
		time.Sleep(300 * time.Millisecond)
		gotA, _ := recv.verified()
		for id, d := range gotA {
			if d.Data.OrgID != org || !slices.Contains(subscribed, d.Body.Type) {
				t.Errorf("endpoint A got %s: %s of org %s", id, d.Body.Type, d.Data.OrgID)
			}
		}
		gotB, _ := recvB.verified()
		for id, d := range gotB {
			if d.Data.OrgID != bOrg.Id {
				t.Errorf("endpoint B got %s of org %s", id, d.Data.OrgID)
			}
		}
	})

	t.Run("500, a hang and a closed connection are retried until delivered", func(t *testing.T) {
		for _, c := range []struct {
			name   string
			answer int
		}{{"500", 500}, {"hang", 0}, {"closed connection", -1}, {"429", 429}} {
			t.Run(c.name, func(t *testing.T) {
				recv.setScript(func(_ string, attempt int) int {
					if attempt <= 2 {
						return c.answer
					}
					return 200
				})
				defer recv.setScript(nil)
				tk := MustTicket(t, w.Member.C, org, client.TicketCreate{Title: "Retry " + c.name})
				evs := eventsOf(t, w.Owner.C, org, "ticket.create")
				ev := evs[len(evs)-1]
				if ev.TargetId != tk.Id {
					t.Fatalf("last ticket.create is %s, want %s", ev.TargetId, tk.Id)
				}
				recv.await(t, ev.Id)
				if _, attempts := recv.verified(); attempts[ev.Id] != 3 {
					t.Errorf("attempts the receiver saw: got %d, want 3", attempts[ev.Id])
				}
				d := settledAfter(t, w.Admin.C, org, hook.Id, ev.Id, 3)
				if d.State != client.WebhookDeliveryStateDelivered || d.Attempts != 3 || d.LastStatus == nil || *d.LastStatus != 204 || d.LastError != nil {
					t.Errorf("delivery log: got %+v", d)
				}
			})
		}
	})

	t.Run("a 4xx other than 429 is not retried", func(t *testing.T) {
		recv.setScript(func(string, int) int { return http.StatusGone })
		defer recv.setScript(nil)
		MustTicket(t, w.Member.C, org, client.TicketCreate{Title: "Gone"})
		evs := eventsOf(t, w.Owner.C, org, "ticket.create")
		ev := evs[len(evs)-1]
		var d client.WebhookDelivery
		waitFor(t, func() bool {
			var ok bool
			d, ok = findDelivery(t, w.Admin.C, org, hook.Id, ev.Id)
			return ok && d.State != client.WebhookDeliveryStatePending
		})
		if d.State != client.WebhookDeliveryStateFailed || d.Attempts != 1 || d.LastStatus == nil || *d.LastStatus != 410 {
			t.Errorf("delivery log: got %+v", d)
		}
		spec(t, "202/redeliverWebhook/then delivered", func(t *testing.T) {
			recv.setScript(nil)
			r, err := w.Admin.C.RedeliverWebhookWithResponse(bg, org, hook.Id, ev.Id)
			mustStatus(t, r, err, http.StatusAccepted)
			if r.JSON202.State != client.WebhookDeliveryStatePending || r.JSON202.Id != ev.Id {
				t.Errorf("redelivered: got %+v", r.JSON202)
			}
			recv.await(t, ev.Id)
		})
	})

	spec(t, "200/listWebhookDeliveries", func(t *testing.T) {
		r, err := w.Admin.C.ListWebhookDeliveriesWithResponse(bg, org, hook.Id, &client.ListWebhookDeliveriesParams{Limit: ptr(2)})
		mustStatus(t, r, err, http.StatusOK)
		if len(r.JSON200.Items) != 2 || r.JSON200.NextCursor == nil || r.JSON200.Items[0].Id < r.JSON200.Items[1].Id {
			t.Errorf("first page, newest first, with a next: %s", r.Body)
		}
	})

	t.Run("GraphQL lists the deliveries REST lists, and never the secret", func(t *testing.T) {
		r, err := w.Admin.C.ListWebhookDeliveriesWithResponse(bg, org, hook.Id, &client.ListWebhookDeliveriesParams{Limit: ptr(100)})
		mustStatus(t, r, err, http.StatusOK)
		var rest []string
		for _, d := range r.JSON200.Items {
			rest = append(rest, d.Id)
		}
		g := apitest.GQL(t, ts, w.Admin.Token, `query($o: ID!) { org(id: $o) { webhooks(first: 5) { nodes { id url deliveries(first: 100) { nodes { id type state attempts } } } } } }`,
			map[string]any{"o": org})
		var data struct {
			Org struct {
				Webhooks struct {
					Nodes []struct {
						ID         string
						Deliveries struct{ Nodes []struct{ ID, State string } }
					}
				}
			}
		}
		apitest.MustData(t, g, &data)
		if strings.Contains(string(g.Raw), "whsec_") {
			t.Errorf("the answer shows a secret: %s", g.Raw)
		}
		var got []string
		for _, n := range data.Org.Webhooks.Nodes {
			if n.ID == hook.Id {
				for _, d := range n.Deliveries.Nodes {
					got = append(got, d.ID)
				}
			}
		}
		if len(rest) == 0 || !slices.Equal(got, rest) {
			t.Errorf("GraphQL's deliveries %v, REST's %v", got, rest)
		}
	})

	spec(t, "200/rotateWebhookSecret/both signatures for a day", func(t *testing.T) {
		r, err := w.Owner.C.RotateWebhookSecretWithResponse(bg, org, hook.Id)
		mustStatus(t, r, err, http.StatusOK)
		fresh := r.JSON200.Secret
		if fresh == hook.Secret || !strings.HasPrefix(fresh, "whsec_") || r.JSON200.Version != hook.Version+1 {
			t.Fatalf("rotated: got %+v", r.JSON200)
		}
		for _, s := range []string{hook.Secret, fresh} {
			recv.setSecrets(s) // each alone must verify the delivery
			MustTicket(t, w.Member.C, org, client.TicketCreate{Title: "Rotated"})
			evs := eventsOf(t, w.Owner.C, org, "ticket.create")
			got := recv.await(t, evs[len(evs)-1].Id)
			if sig := got[evs[len(evs)-1].Id].Signature; strings.Count(sig, "v1,") != 2 {
				t.Errorf("webhook-signature: got %q, want two v1 signatures", sig)
			}
		}
		recv.setSecrets(fresh)
		hook.Secret, hook.Version = fresh, r.JSON200.Version
	})

	t.Run("a record seen twice makes one delivery per endpoint", func(t *testing.T) {
		wh := &store.Webhooks{DB: store.Open(ts.Raw, ts.Table)}
		d := webhook.NewDispatcher(wh, fastRetries, nil)
		evs := eventsOf(t, w.Owner.C, org, "comment.create")
		ev := audit.Event{OrgID: org, ID: evs[0].Id, Action: "comment.create", TargetType: "comment", TargetID: evs[0].TargetId, At: evs[0].At}
		if n, err := d.Dispatch(context.Background(), ev); err != nil || n != 0 {
			t.Errorf("the stream's event dispatched again: made %d (%v), want 0", n, err)
		}
	})

	t.Run("a delivery whose worker died is taken over when its lease ends", func(t *testing.T) {
		wh := &store.Webhooks{DB: store.Open(ts.Raw, ts.Table)}
		now := time.Now().UTC()
		id := ulidAt(now)
		body := webhook.Body(audit.Event{OrgID: org, ID: id, Action: "ticket.create", TargetType: "ticket", TargetID: id, At: now})
		// Due soon (not now: the server's worker would take it first), as a
		// look that lands before the claim finds it: its endpoint's mark
		// then moves to that time, not past the lease. (Due in an hour,
		// such a look moved the mark an hour ahead: no worker claims a
		// delivery not due, so only this test could leave one so.)
		d := webhook.Delivery{OrgID: org, WebhookID: hook.Id, EventID: id, Type: "ticket.create", Body: body,
			NextAttempt: now.Add(5 * time.Second), CreatedAt: now}
		if n, err := wh.EnqueueDeliveries(bg, []webhook.Delivery{d}); n != 1 || err != nil {
			t.Fatalf("enqueue: %d %v", n, err)
		}
		// A worker that claims it and dies: nobody settles it.
		if ok, err := wh.ClaimDelivery(bg, d, "dead-worker", now.Add(6*time.Second)); !ok || err != nil {
			t.Fatalf("claim: %v %v", ok, err)
		}
		recv.await(t, id)
		got := settledAfter(t, w.Admin.C, org, hook.Id, id, 1)
		if got.State != client.WebhookDeliveryStateDelivered || got.Attempts != 1 {
			t.Errorf("delivery log: got %+v", got)
		}
	})

	crud(t, w, recv, hook)
	t.Run("offboarding deletes the org's webhooks and deliveries", func(t *testing.T) {
		if len(apitest.ItemsOf(t, ts, "Webhook", bOrg.Id)) == 0 || len(apitest.ItemsOf(t, ts, "WebhookDelivery", bOrg.Id)) == 0 {
			t.Fatal("org B has no webhook or no delivery to delete")
		}
		r, err := bee.C.DeleteOrgWithResponse(bg, bOrg.Id, nil)
		if err != nil || r.StatusCode() != http.StatusNoContent && r.StatusCode() != http.StatusAccepted {
			t.Fatalf("delete org: %v %s", err, r.Body)
		}
		// 202 on a busy machine: the offboarding goes on in the background.
		waitFor(t, func() bool {
			g, err := bee.C.GetOffboardingWithResponse(bg, bOrg.Id)
			return err == nil && g.StatusCode() == http.StatusNotFound
		})
		for _, typ := range []string{"Webhook", "WebhookDelivery"} {
			if n := len(apitest.ItemsOf(t, ts, typ, bOrg.Id)); n != 0 {
				t.Errorf("%d %s items of the offboarded org are left", n, typ)
			}
		}
	})
	// Subscriptions and deliveries keep the data model's rules (their keys,
	// their index entries, a pending delivery in its due shard).
	mustHealthy(t, ts)
}

// crud is the subscriptions' own behaviour.
func crud(t *testing.T, w *apitest.World, recv *receiver, hook client.WebhookCreated) {
	org := w.Org.Id
	spec(t, "200/getWebhook", func(t *testing.T) {
		r, err := w.Admin.C.GetWebhookWithResponse(bg, org, hook.Id)
		mustStatus(t, r, err, http.StatusOK)
		if strings.Contains(string(r.Body), "whsec_") || r.JSON200.Id != hook.Id {
			t.Errorf("get: %s", r.Body)
		}
	})
	spec(t, "200/listWebhooks", func(t *testing.T) {
		r, err := w.Owner.C.ListWebhooksWithResponse(bg, org, nil)
		mustStatus(t, r, err, http.StatusOK)
		if len(r.JSON200.Items) != 1 || r.JSON200.Items[0].Id != hook.Id || strings.Contains(string(r.Body), "whsec_") {
			t.Errorf("list: %s", r.Body)
		}
	})
	spec(t, "200/updateWebhook", func(t *testing.T) {
		off := false
		r, err := w.Admin.C.UpdateWebhookWithResponse(bg, org, hook.Id, &client.UpdateWebhookParams{IfMatch: ptr(etagOf(hook.Version))},
			client.WebhookUpdate{Active: &off, Events: &[]string{"*"}})
		mustStatus(t, r, err, http.StatusOK)
		if r.JSON200.Active || !slices.Equal(r.JSON200.Events, []string{"*"}) || r.JSON200.Version != hook.Version+1 {
			t.Errorf("updated: %s", r.Body)
		}
		// Paused: a change makes no delivery.
		_, before := recv.verified()
		MustTicket(t, w.Member.C, org, client.TicketCreate{Title: "While paused"})
		time.Sleep(500 * time.Millisecond)
		if _, after := recv.verified(); len(after) != len(before) {
			t.Errorf("a paused endpoint got %d new deliveries", len(after)-len(before))
		}
	})
	spec(t, "412/updateWebhook", func(t *testing.T) {
		on := true
		r, err := w.Admin.C.UpdateWebhookWithResponse(bg, org, hook.Id, &client.UpdateWebhookParams{IfMatch: ptr(etagOf(hook.Version))},
			client.WebhookUpdate{Active: &on})
		wantProblem(t, r, err, http.StatusPreconditionFailed, "")
	})
	spec(t, "412/deleteWebhook", func(t *testing.T) {
		r, err := w.Admin.C.DeleteWebhookWithResponse(bg, org, hook.Id, &client.DeleteWebhookParams{IfMatch: ptr(etagOf(hook.Version))})
		wantProblem(t, r, err, http.StatusPreconditionFailed, "")
	})
	for _, c := range []struct {
		name string
		do   func(c *client.ClientWithResponses) (apitest.StatusCoder, error)
	}{
		{"createWebhook", func(c *client.ClientWithResponses) (apitest.StatusCoder, error) {
			return c.CreateWebhookWithResponse(bg, org, nil, client.WebhookCreate{Url: "https://example.com/x", Events: []string{"*"}})
		}},
		{"listWebhooks", func(c *client.ClientWithResponses) (apitest.StatusCoder, error) {
			return c.ListWebhooksWithResponse(bg, org, nil)
		}},
		{"getWebhook", func(c *client.ClientWithResponses) (apitest.StatusCoder, error) {
			return c.GetWebhookWithResponse(bg, org, hook.Id)
		}},
		{"updateWebhook", func(c *client.ClientWithResponses) (apitest.StatusCoder, error) {
			return c.UpdateWebhookWithResponse(bg, org, hook.Id, nil, client.WebhookUpdate{Description: ptr("x")})
		}},
		{"deleteWebhook", func(c *client.ClientWithResponses) (apitest.StatusCoder, error) {
			return c.DeleteWebhookWithResponse(bg, org, hook.Id, nil)
		}},
		{"rotateWebhookSecret", func(c *client.ClientWithResponses) (apitest.StatusCoder, error) {
			return c.RotateWebhookSecretWithResponse(bg, org, hook.Id)
		}},
		{"listWebhookDeliveries", func(c *client.ClientWithResponses) (apitest.StatusCoder, error) {
			return c.ListWebhookDeliveriesWithResponse(bg, org, hook.Id, nil)
		}},
		{"redeliverWebhook", func(c *client.ClientWithResponses) (apitest.StatusCoder, error) {
			return c.RedeliverWebhookWithResponse(bg, org, hook.Id, hook.Id)
		}},
	} {
		spec(t, "403/"+c.name+"/org member", func(t *testing.T) {
			r, err := c.do(w.Member.C)
			wantProblem(t, r, err, http.StatusForbidden, "forbidden")
		})
	}
	spec(t, "404/getWebhook/no such webhook", func(t *testing.T) {
		r, err := w.Admin.C.GetWebhookWithResponse(bg, org, w.Ticket.Id)
		wantProblem(t, r, err, http.StatusNotFound, "webhook_not_found")
	})
	spec(t, "409/createWebhook/the org has 20 already", func(t *testing.T) {
		l, err := w.Owner.C.ListWebhooksWithResponse(bg, org, &client.ListWebhooksParams{Limit: ptr(100)})
		mustStatus(t, l, err, http.StatusOK)
		for i := len(l.JSON200.Items); i < webhook.MaxPerOrg; i++ {
			r, err := w.Owner.C.CreateWebhookWithResponse(bg, org, nil, client.WebhookCreate{Url: fmt.Sprintf("http://127.0.0.1:1/%d", i), Events: []string{"nothing.happens"}})
			mustStatus(t, r, err, http.StatusCreated)
		}
		r, err := w.Owner.C.CreateWebhookWithResponse(bg, org, nil, client.WebhookCreate{Url: "http://127.0.0.1:1/one-too-many", Events: []string{"*"}})
		wantProblem(t, r, err, http.StatusConflict, "webhook_limit")
	})
	spec(t, "204/deleteWebhook", func(t *testing.T) {
		r, err := w.Admin.C.DeleteWebhookWithResponse(bg, org, hook.Id, nil)
		mustStatus(t, r, err, http.StatusNoContent)
		g, err := w.Admin.C.GetWebhookWithResponse(bg, org, hook.Id)
		wantProblem(t, g, err, http.StatusNotFound, "webhook_not_found")
	})
	audit := eventsOf(t, w.Owner.C, org, "webhook.create", "webhook.update", "webhook.rotate_secret", "webhook.delete")
	var actions []string
	for _, e := range audit {
		if e.TargetId != hook.Id {
			continue
		}
		actions = append(actions, e.Action)
		for _, c := range e.Changes {
			if b, _ := json.Marshal(c); strings.Contains(string(b), "whsec_") {
				t.Errorf("the audit log shows a secret: %s %s", e.Action, b)
			}
		}
	}
	if want := []string{"webhook.create", "webhook.rotate_secret", "webhook.update", "webhook.delete"}; !slices.Equal(actions, want) {
		t.Errorf("audit log: got %q, want %q", actions, want)
	}
}

// deliveryOf finds one delivery in the webhook's log.
func deliveryOf(t *testing.T, c *client.ClientWithResponses, orgID, webhookID, eventID string) client.WebhookDelivery {
	t.Helper()
	d, ok := findDelivery(t, c, orgID, webhookID, eventID)
	if !ok {
		t.Fatalf("delivery %s is not in the log", eventID)
	}
	return d
}

// settledAfter is the delivery's log entry once it records attempts
// attempts: the receiver sees an attempt before the worker writes its
// outcome, so a test that reads the log after the receiver waits for that
// write (a bound for a hang, not a speed).
func settledAfter(t *testing.T, c *client.ClientWithResponses, orgID, webhookID, eventID string, attempts int) client.WebhookDelivery {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if d := deliveryOf(t, c, orgID, webhookID, eventID); d.Attempts >= attempts && d.State != client.WebhookDeliveryStatePending || time.Now().After(deadline) {
			return d
		}
	}
}

func findDelivery(t *testing.T, c *client.ClientWithResponses, orgID, webhookID, eventID string) (client.WebhookDelivery, bool) {
	t.Helper()
	var cursor *string
	for range 100 {
		r, err := c.ListWebhookDeliveriesWithResponse(bg, orgID, webhookID, &client.ListWebhookDeliveriesParams{Limit: ptr(100), Cursor: cursor})
		mustStatus(t, r, err, http.StatusOK)
		for _, d := range r.JSON200.Items {
			if d.Id == eventID {
				return d, true
			}
		}
		if cursor = r.JSON200.NextCursor; cursor == nil {
			break
		}
	}
	return client.WebhookDelivery{}, false
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ulidAt is a fresh event ID of time t.
func ulidAt(t time.Time) string {
	return ulid.MustNew(ulid.Timestamp(t), rand.Reader).String()
}

// mustWebhook subscribes url to every event of w's org, as its owner, and
// gives the subscription one pending delivery (made in the table, as the
// dispatcher would: the server runs none unless WithWebhooks), for the
// request builders' {webhookId} and {deliveryId}.
func mustWebhook(t *testing.T, ts *testServer, w *world, url string) (client.WebhookCreated, string) {
	t.Helper()
	r, err := w.Owner.C.CreateWebhookWithResponse(bg, w.Org.Id, nil, client.WebhookCreate{Url: url, Events: []string{"*"}})
	mustStatus(t, r, err, http.StatusCreated)
	return *r.JSON201, enqueueDelivery(t, ts, w.Org.Id, r.JSON201.Id)
}

// enqueueDelivery gives the webhook a pending delivery of a new event, due
// in an hour, and returns its ID.
func enqueueDelivery(t *testing.T, ts *testServer, orgID, webhookID string) string {
	t.Helper()
	now := time.Now().UTC()
	id := ulidAt(now)
	wh := &store.Webhooks{DB: store.Open(ts.Raw, ts.Table)}
	n, err := wh.EnqueueDeliveries(bg, []webhook.Delivery{{OrgID: orgID, WebhookID: webhookID, EventID: id, Type: "ticket.create",
		Body: []byte(`{}`), NextAttempt: now.Add(time.Hour), CreatedAt: now}})
	if n != 1 || err != nil {
		t.Fatalf("enqueue a delivery: %d %v", n, err)
	}
	return id
}

// sharedWebhook is the one webhook of w's org that the role matrix's
// rows share (an org holds at most webhook.MaxPerOrg).
func sharedWebhook(t *testing.T, ts *testServer, w *world) string {
	t.Helper()
	r, err := w.Owner.C.ListWebhooksWithResponse(bg, w.Org.Id, &client.ListWebhooksParams{Limit: ptr(100)})
	mustStatus(t, r, err, http.StatusOK)
	for _, h := range r.JSON200.Items {
		if h.Description != nil && *h.Description == "shared" {
			return h.Id
		}
	}
	c, err := w.Owner.C.CreateWebhookWithResponse(bg, w.Org.Id, nil, client.WebhookCreate{Url: "https://hooks.example.com/shared",
		Events: []string{"*"}, Description: ptr("shared")})
	mustStatus(t, c, err, http.StatusCreated)
	return c.JSON201.Id
}
