package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/tenantd/tenantd/client"
	"github.com/tenantd/tenantd/internal/apitest"
	"github.com/tenantd/tenantd/internal/dynamotest"
	"github.com/tenantd/tenantd/internal/testkit"
	"github.com/tenantd/tenantd/internal/webhook"
)

func TestMain(m *testing.M) { dynamotest.Main(m) }

// TestQuickstart runs the README's webhooks quickstart against a real
// server: subscribe, receive with this receiver, see the change arrive
// verified; a delivery signed with another secret is refused.
func TestQuickstart(t *testing.T) {
	ts := apitest.MustServer(t, apitest.WithWebhooks(webhook.Policy{Poll: 50 * time.Millisecond, Timeout: time.Second}))
	admin := ts.Actor(t, "admin")
	org := apitest.MustOrg(t, admin.C, "Quickstart")
	var out testkit.SyncBuffer
	var wh atomic.Pointer[standardwebhooks.Webhook] // known once subscribed
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler(wh.Load(), &out).ServeHTTP(w, r) }))
	t.Cleanup(recv.Close)

	// 1. Subscribe: the answer shows the secret, once.
	r, err := admin.C.CreateWebhookWithResponse(context.Background(), org.Id, nil,
		client.WebhookCreate{Url: recv.URL + "/hooks", Events: []string{"ticket.create", "comment.create"}})
	apitest.MustStatus(t, r, err, http.StatusCreated)
	// 2. Receive, with that secret.
	verifier, err := standardwebhooks.NewWebhook(r.JSON201.Secret)
	if err != nil {
		t.Fatal(err)
	}
	wh.Store(verifier)
	// 3. A change: it arrives, verified.
	apitest.MustTicket(t, admin.C, org.Id, client.TicketCreate{Title: "Hooked"})
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), `"title":"Hooked"`) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := out.String(); !strings.Contains(got, `"type":"ticket.create"`) || !strings.Contains(got, `"title":"Hooked"`) {
		t.Fatalf("the receiver printed %q, want the ticket.create delivery", got)
	}
	// A delivery signed with another secret is not printed.
	other, _ := standardwebhooks.NewWebhook("whsec_" + strings.Repeat("QUFB", 8))
	body := []byte(`{"type":"ticket.create","data":{"title":"Forged"}}`)
	sig, _ := other.Sign("msg_forged", time.Now(), body)
	req, _ := http.NewRequest(http.MethodPost, recv.URL+"/hooks", bytes.NewReader(body))
	req.Header.Set("webhook-id", "msg_forged")
	req.Header.Set("webhook-timestamp", strconv.FormatInt(time.Now().Unix(), 10))
	req.Header.Set("webhook-signature", sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || strings.Contains(out.String(), "Forged") {
		t.Errorf("a forged delivery: %d, printed %q; want 400 and nothing printed", resp.StatusCode, out.String())
	}
}

// TestReadmeShowsTheReceiver: the README's quickstart shows this file,
// whole, as it is.
func TestReadmeShowsTheReceiver(t *testing.T) {
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(readme, append(append([]byte("```go\n"), src...), "```"...)) {
		t.Error("README.md does not show docs/webhooks/receiver/main.go as it is, in a ```go block")
	}
}
