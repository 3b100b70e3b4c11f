package httpapi_test

// Tracing, on (apitest.WithTracing, as cmd/api with OTEL_* set): the
// spans a request, its DynamoDB calls, its GraphQL levels and a webhook
// delivery make, and what they never hold.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/tenantd/tenantd/client"
	"github.com/tenantd/tenantd/internal/apitest"
	"github.com/tenantd/tenantd/internal/obs"
)

// spanText is everything a span exports as text: its name, status,
// attributes, events, links and resource.
func spanText(s tracetest.SpanStub) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s\n", s.Name, s.Status.Code, s.Status.Description)
	for _, kv := range s.Attributes {
		fmt.Fprintf(&b, "%s=%s\n", kv.Key, kv.Value.String())
	}
	for _, e := range s.Events {
		fmt.Fprintf(&b, "event %s\n", e.Name)
		for _, kv := range e.Attributes {
			fmt.Fprintf(&b, "%s=%s\n", kv.Key, kv.Value.String())
		}
	}
	for _, l := range s.Links {
		for _, kv := range l.Attributes {
			fmt.Fprintf(&b, "link %s=%s\n", kv.Key, kv.Value.String())
		}
	}
	if s.Resource != nil {
		for _, kv := range s.Resource.Attributes() {
			fmt.Fprintf(&b, "resource %s=%s\n", kv.Key, kv.Value.String())
		}
	}
	return b.String()
}

func attr(s tracetest.SpanStub, key string) (string, bool) {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.String(), true
		}
	}
	return "", false
}

// traceparentReceiver is a webhook endpoint that keeps the traceparent of
// each delivery it gets.
type traceparentReceiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []string
}

func newTraceparentReceiver(t *testing.T) *traceparentReceiver {
	r := &traceparentReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.seen = append(r.seen, req.Header.Get("Traceparent"))
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *traceparentReceiver) traceparents() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

// TestTracing: with tracing on, each request is a server span named by
// its route template that continues its caller's traceparent; each of its
// DynamoDB calls a client span under it with the capacity consumed; each
// GraphQL nesting level a span with its level's DynamoDB calls under it;
// each webhook delivery attempt a span whose traceparent the receiver
// gets; every request's log line names its trace. And no span, whatever
// it records, holds a token, a secret, an email or a request body.
func TestTracing(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	logs := &logBuffer{}
	ts := MustServer(t, apitest.WithTracing(&obs.Tracing{Provider: tp, Propagator: propagation.TraceContext{}}),
		apitest.WithWebhooks(fastRetries), withLog(logs))
	w := MustWorld(t, ts, "Traced")
	org := w.Org.Id
	// What must never reach a span: the tokens, the emails, the
	// invitation's token, the webhook's secret and its URL's token, and
	// the bodies' text.
	secrets := []string{w.Owner.Token, w.Member.Token, w.Requester.Token, w.Owner.Email, w.Member.Email, "hook-token-3f9a", "Traced printer on fire"}
	recv := newTraceparentReceiver(t)
	hook, err := w.Admin.C.CreateWebhookWithResponse(bg, org, nil, client.WebhookCreate{Url: recv.srv.URL + "/hook?token=hook-token-3f9a", Events: []string{"comment.create"}})
	mustStatus(t, hook, err, http.StatusCreated)
	secrets = append(secrets, hook.JSON201.Secret)
	inv := MustInvitation(t, w.Admin.C, org, "traced-invitee@example.com", client.RoleMember)
	secrets = append(secrets, inv.Token, "traced-invitee@example.com")
	invitee := ts.Invitee(t, "invitee", inv.Email)
	secrets = append(secrets, invitee.Token)
	acc, err := invitee.C.AcceptInvitationWithResponse(bg, inv.Token, nil)
	mustStatus(t, acc, err, http.StatusCreated)
	exp.Reset()

	caller := trace.SpanContextConfig{TraceID: trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID: trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7}, TraceFlags: trace.FlagsSampled}
	r := doReq(t, w.Member.HTTP, http.MethodGet, ts.URL+"/v1/orgs/"+org+"/tickets/"+w.Ticket.Id, "", http.Header{"Traceparent": {callerTraceparent}}, "")
	if r.Status != http.StatusOK {
		t.Fatalf("GET ticket: %d %s", r.Status, r.Body)
	}
	t.Run("a request is a server span named by its route, continuing the caller's trace", func(t *testing.T) {
		var server *tracetest.SpanStub
		for _, s := range exp.GetSpans() {
			if s.SpanKind == trace.SpanKindServer {
				server = &s
			}
		}
		if server == nil {
			t.Fatal("no server span")
		}
		if server.Name != "GET /v1/orgs/:orgId/tickets/:ticketId" || server.SpanContext.TraceID() != caller.TraceID || server.Parent.SpanID() != caller.SpanID {
			t.Errorf("server span %q, trace %s, parent %s; want the route's name in the caller's trace %s under %s",
				server.Name, server.SpanContext.TraceID(), server.Parent.SpanID(), caller.TraceID, caller.SpanID)
		}
		if p, _ := attr(*server, "url.path"); p != "/v1/orgs/:orgId/tickets/:ticketId" {
			t.Errorf("url.path %q, want the route template", p)
		}
		var calls int
		for _, s := range exp.GetSpans() {
			if s.SpanKind != trace.SpanKindClient {
				continue
			}
			calls++
			if s.Parent.SpanID() != server.SpanContext.SpanID() || s.Name != "DynamoDB.BatchGetItem" {
				t.Errorf("DynamoDB span %q under %s, want BatchGetItem under the server span", s.Name, s.Parent.SpanID())
			}
			if c, ok := attr(s, "tenantd.dynamodb.capacity_units"); !ok || c == "0" {
				t.Errorf("DynamoDB span %q: capacity %q, want what the call consumed", s.Name, c)
			}
			if _, ok := attr(s, "aws.dynamodb.consumed_capacity"); !ok {
				t.Errorf("DynamoDB span %q lacks aws.dynamodb.consumed_capacity", s.Name)
			}
		}
		if calls != 1 {
			t.Errorf("%d DynamoDB spans, want the one authorization read", calls)
		}
		if got := logs.Lines(`"msg":"request"`); len(got) == 0 || got[len(got)-1]["traceId"] != caller.TraceID.String() {
			t.Errorf("the request's log line: %v, want traceId %s", got[len(got)-1], caller.TraceID)
		}
	})

	t.Run("a GraphQL nesting level is a span, its DynamoDB calls under it", func(t *testing.T) {
		exp.Reset()
		MustComment(t, w.Member.C, org, w.Ticket.Id, "Traced comment")
		secrets = append(secrets, "Traced comment")
		exp.Reset()
		q := `query($org: ID!) { org(id: $org) { tickets(first: 10) { nodes { title requester { name } team { name } comments(first: 3) { nodes { body author { name } } } } } } }`
		apitest.MustData(t, gql(t, ts, w.Member.Token, q, map[string]any{"org": org}), nil)
		// The request's trace only: a webhook delivery of the comment
		// above may be under way meanwhile, in a trace of its own.
		var server tracetest.SpanStub
		for _, s := range exp.GetSpans() {
			if s.SpanKind == trace.SpanKindServer {
				server = s
			}
		}
		var spans tracetest.SpanStubs
		for _, s := range exp.GetSpans() {
			if s.SpanContext.TraceID() == server.SpanContext.TraceID() {
				spans = append(spans, s)
			}
		}
		byID := map[trace.SpanID]tracetest.SpanStub{}
		levels := map[string]int{}
		for _, s := range spans {
			byID[s.SpanContext.SpanID()] = s
			if strings.HasPrefix(s.Name, "graphql level ") {
				levels[s.Name]++
			}
		}
		for n := 1; n <= 4; n++ {
			if levels[fmt.Sprintf("graphql level %d", n)] == 0 {
				t.Errorf("no span of level %d: %v", n, levels)
			}
		}
		for _, s := range spans {
			if strings.HasPrefix(s.Name, "graphql level ") && s.Parent.SpanID() != server.SpanContext.SpanID() {
				t.Errorf("%s is not under the request's span", s.Name)
			}
			if s.SpanKind == trace.SpanKindClient && !strings.HasPrefix(byID[s.Parent.SpanID()].Name, "graphql level ") {
				t.Errorf("DynamoDB span %s is under %q, not a level", s.Name, byID[s.Parent.SpanID()].Name)
			}
		}
		if op, _ := attr(server, "tenantd.graphql.operation"); op != "query:org" {
			t.Errorf("the request's span: operation %q, want query:org", op)
		}
	})

	t.Run("a webhook delivery attempt is a span, and the receiver gets its traceparent", func(t *testing.T) {
		exp.Reset()
		MustComment(t, w.Member.C, org, w.Ticket.Id, "Traced to the hook")
		secrets = append(secrets, "Traced to the hook")
		deadline := time.Now().Add(30 * time.Second)
		var attempt *tracetest.SpanStub
		for attempt == nil && time.Now().Before(deadline) {
			for _, s := range exp.GetSpans() {
				if s.Name == "webhook delivery" {
					attempt = &s
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		if attempt == nil {
			t.Fatal("no webhook delivery span")
		}
		want := fmt.Sprintf("00-%s-%s-01", attempt.SpanContext.TraceID(), attempt.SpanContext.SpanID())
		if got := recv.traceparents(); !slices.Contains(got, want) {
			t.Errorf("the receiver got traceparents %q, want %q", got, want)
		}
		if st, _ := attr(*attempt, "webhook.state"); st != "delivered" {
			t.Errorf("attempt state %q, want delivered", st)
		}
		children := 0
		for _, s := range exp.GetSpans() {
			if s.Parent.SpanID() == attempt.SpanContext.SpanID() && s.SpanKind == trace.SpanKindClient {
				children++
			}
		}
		if children == 0 {
			t.Error("the attempt's DynamoDB calls are not under its span")
		}
	})

	t.Run("no span holds a token, a secret, an email or a body", func(t *testing.T) {
		_ = tp.ForceFlush(bg)
		spans := exp.GetSpans()
		if len(spans) == 0 {
			t.Fatal("no spans to check")
		}
		for _, s := range spans {
			text := spanText(s)
			for _, secret := range secrets {
				if secret != "" && strings.Contains(text, secret) {
					t.Errorf("span %q holds %q:\n%s", s.Name, secret, text)
				}
			}
			if strings.Contains(text, "@example.com") || strings.Contains(text, "Bearer") || strings.Contains(text, "whsec_") {
				t.Errorf("span %q holds an email, a bearer token or a webhook secret:\n%s", s.Name, text)
			}
		}
	})
	// The whole flow, including the setup, checked again from the start:
	// the invitation's token was in a path, the emails in bodies.
	t.Run("nor did any span of the setup", func(t *testing.T) {
		exp.Reset()
		inv := MustInvitation(t, w.Admin.C, org, "second-invitee@example.com", client.RoleMember)
		who := ts.Invitee(t, "second", inv.Email)
		a, err := who.C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		mustStatus(t, a, err, http.StatusCreated)
		key := mustAPIKey(t, w, client.ApiKeyCreateRoleMember) // its secret, in an answer, then a header
		g, err := keyActor(t, ts, key.Secret).C.GetOrgWithResponse(bg, org, nil)
		mustStatus(t, g, err, http.StatusOK)
		found := false
		for _, s := range exp.GetSpans() {
			text := spanText(s)
			found = found || s.Name == "POST /v1/invitations/:token/accept"
			for _, secret := range []string{inv.Token, who.Token, inv.Email, w.Admin.Token, key.Secret, key.Secret[len(key.Secret)-43:]} {
				if strings.Contains(text, secret) {
					t.Errorf("span %q holds %q", s.Name, secret)
				}
			}
		}
		if !found {
			t.Error("no span of the accept, named by its route")
		}
	})
	var lines []map[string]any
	for _, l := range logs.Lines(`"msg":"request"`) {
		if l["traceId"] == nil {
			lines = append(lines, l)
		}
	}
	if len(lines) > 0 {
		b, _ := json.Marshal(lines[0])
		t.Errorf("%d request log lines without a traceId, e.g. %s", len(lines), b)
	}
}

// TestTraceIDWithTracingOff: with tracing off, a request's log line names
// the trace of its caller's traceparent, and no trace without one.
func TestTraceIDWithTracingOff(t *testing.T) {
	logs := &logBuffer{}
	ts := MustServer(t, withLog(logs))
	a := ts.Actor(t, "caller")
	for _, c := range []struct{ traceparent, want string }{
		{callerTraceparent, "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"", ""},
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", ""}, // an invalid trace ID
		{"not a traceparent", ""},
	} {
		h := http.Header{}
		if c.traceparent != "" {
			h.Set("Traceparent", c.traceparent)
		}
		doReq(t, a.HTTP, http.MethodGet, ts.URL+"/v1/me", "", h, "")
		got := logs.Lines(`"msg":"request"`)
		if id, _ := got[len(got)-1]["traceId"].(string); id != c.want {
			t.Errorf("traceparent %q: log line traceId %q, want %q", c.traceparent, id, c.want)
		}
	}
}
