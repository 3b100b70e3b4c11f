package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/smithy-go/middleware"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tenantd/tenantd/client"
	"github.com/tenantd/tenantd/internal/apitest"
	"github.com/tenantd/tenantd/internal/httpapi"
	"github.com/tenantd/tenantd/internal/ratelimit"
)

// mustAPIKey mints a key of w's org with role, as its owner.
func mustAPIKey(t *testing.T, w *world, role client.ApiKeyCreateRole) client.ApiKeyCreated {
	t.Helper()
	r, err := w.Owner.C.CreateApiKeyWithResponse(bg, w.Org.Id, client.ApiKeyCreate{Name: "key of " + w.Org.Name, Role: role})
	mustStatus(t, r, err, http.StatusCreated)
	return *r.JSON201
}

// keyActor is the API's client acting with an API key's token.
func keyActor(t *testing.T, ts *testServer, token string) actor {
	return actor{ID: "apiKey", C: ts.Client(t, token), HTTP: ts.HTTPClient(t, token), Token: token}
}

// keyToken matches a key's token: its org, its id, 256 random bits.
var keyToken = regexp.MustCompile(`^tdk_([0-7][0-9A-HJKMNP-TV-Z]{25})_([0-7][0-9A-HJKMNP-TV-Z]{25})_[A-Za-z0-9_-]{43}$`)

func TestCreateApiKey(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Keys")
	org := w.Org.Id
	spec(t, "201/createApiKey/200/getApiKey/200/listApiKeys/the secret shown once", func(t *testing.T) {
		expires := ts.Clock.Now().Add(30 * 24 * time.Hour).UTC().Truncate(time.Second)
		r, err := w.Admin.C.CreateApiKeyWithResponse(bg, org, client.ApiKeyCreate{Name: "CI bot", Role: client.ApiKeyCreateRoleAdmin, ExpiresAt: &expires})
		mustStatus(t, r, err, http.StatusCreated)
		k := r.JSON201
		m := keyToken.FindStringSubmatch(k.Secret)
		if m == nil || m[1] != org || m[2] != k.Id {
			t.Fatalf("secret %q: want tdk_<orgId>_<id>_<43 characters>", k.Secret)
		}
		if k.Name != "CI bot" || k.Role != client.ApiKeyCreatedRoleAdmin || k.CreatedBy != w.Admin.ID || k.ExpiresAt == nil ||
			!k.ExpiresAt.Equal(expires) || k.LastUsedAt != nil {
			t.Errorf("key %+v", k)
		}
		g, err := w.Owner.C.GetApiKeyWithResponse(bg, org, k.Id)
		mustStatus(t, g, err, http.StatusOK)
		l, err := w.Owner.C.ListApiKeysWithResponse(bg, org, nil)
		mustStatus(t, l, err, http.StatusOK)
		secret := strings.SplitN(k.Secret, "_", 4)[3]
		for what, body := range map[string][]byte{"get": g.Body, "list": l.Body} {
			if strings.Contains(string(body), secret) {
				t.Errorf("%s shows the secret: %s", what, body)
			}
		}
		if len(l.JSON200.Items) != 1 || l.JSON200.Items[0].Id != k.Id {
			t.Errorf("list: %+v", l.JSON200.Items)
		}
		raw := tenantItems(t, ts, org)
		if strings.Contains(raw, secret) || strings.Contains(raw, k.Secret) {
			t.Errorf("the table holds the secret")
		}
	})
	bad := []struct {
		name  string
		c     client.ApiKeyCreate
		field string
	}{
		{"an owner key", client.ApiKeyCreate{Name: "root", Role: "owner"}, "role"},
		{"expired already", client.ApiKeyCreate{Name: "old", Role: client.ApiKeyCreateRoleMember, ExpiresAt: ptr(ts.Clock.Now().Add(-time.Minute))}, "expiresAt"},
		{"beyond a year", client.ApiKeyCreate{Name: "forever", Role: client.ApiKeyCreateRoleMember, ExpiresAt: ptr(ts.Clock.Now().Add(400 * 24 * time.Hour))}, "expiresAt"},
		{"no name", client.ApiKeyCreate{Name: "", Role: client.ApiKeyCreateRoleMember}, "name"},
	}
	for _, b := range bad {
		spec(t, "400/createApiKey/"+b.name, func(t *testing.T) {
			r, err := w.Owner.C.CreateApiKeyWithResponse(bg, org, b.c)
			wantProblem(t, r, err, http.StatusBadRequest, "")
			if p := problemOf(t, r.Body); p.Errors == nil || len(*p.Errors) != 1 || (*p.Errors)[0].Field != b.field {
				t.Errorf("errors %+v, want one of field %s", p.Errors, b.field)
			}
		})
	}
	spec(t, "400/createApiKey/no Idempotency-Key: its answer would keep the secret", func(t *testing.T) {
		r, err := w.Owner.C.CreateApiKeyWithResponse(bg, org, client.ApiKeyCreate{Name: "retried", Role: client.ApiKeyCreateRoleMember},
			func(_ context.Context, req *http.Request) error { req.Header.Set("Idempotency-Key", "k-1"); return nil })
		wantProblem(t, r, err, http.StatusBadRequest, "idempotency_key_unsupported")
	})
	spec(t, "403/createApiKey/a member", func(t *testing.T) {
		r, err := w.Member.C.CreateApiKeyWithResponse(bg, org, client.ApiKeyCreate{Name: "mine", Role: client.ApiKeyCreateRoleMember})
		wantProblem(t, r, err, http.StatusForbidden, "forbidden")
	})
	spec(t, "403/createApiKey/403/listApiKeys/403/getApiKey/an admin key", func(t *testing.T) {
		created := mustAPIKey(t, w, client.ApiKeyCreateRoleAdmin)
		k := keyActor(t, ts, created.Secret)
		k.ID = created.Id
		r, err := k.C.CreateApiKeyWithResponse(bg, org, client.ApiKeyCreate{Name: "child", Role: client.ApiKeyCreateRoleMember})
		wantProblem(t, r, err, http.StatusForbidden, "api_key_not_allowed")
		l, err := k.C.ListApiKeysWithResponse(bg, org, nil)
		wantProblem(t, l, err, http.StatusForbidden, "api_key_not_allowed")
		g, err := k.C.GetApiKeyWithResponse(bg, org, k.ID)
		wantProblem(t, g, err, http.StatusForbidden, "api_key_not_allowed")
	})
	spec(t, "404/createApiKey/a stranger", func(t *testing.T) {
		r, err := ts.Actor(t, "stranger").C.CreateApiKeyWithResponse(bg, org, client.ApiKeyCreate{Name: "x", Role: client.ApiKeyCreateRoleMember})
		wantProblem(t, r, err, http.StatusNotFound, "org_not_found")
	})
	spec(t, "409/createApiKey/the org's 100 keys", func(t *testing.T) {
		full := MustWorld(t, ts, "Full of keys")
		for range 100 {
			mustAPIKey(t, full, client.ApiKeyCreateRoleMember)
		}
		r, err := full.Owner.C.CreateApiKeyWithResponse(bg, full.Org.Id, client.ApiKeyCreate{Name: "one more", Role: client.ApiKeyCreateRoleMember})
		wantProblem(t, r, err, http.StatusConflict, "api_key_limit")
	})
}

// TestApiKeyUse: a key acts in its org's routes with its role, as
// apiKey:<id>, decided by the same one read as a person.
func TestApiKeyUse(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Integrations")
	org := w.Org.Id
	created := mustAPIKey(t, w, client.ApiKeyCreateRoleMember)
	bot := keyActor(t, ts, created.Secret)
	actorID := "apiKey:" + created.Id
	spec(t, "201/createTicket/201/createComment/filed by a key", func(t *testing.T) {
		tk := MustTicket(t, bot.C, org, client.TicketCreate{Title: "Build failed"})
		if tk.RequesterId != actorID {
			t.Errorf("requester %q, want %q", tk.RequesterId, actorID)
		}
		MustComment(t, bot.C, org, tk.Id, "log attached")
		a, err := w.Owner.C.ListAuditEventsWithResponse(bg, org, &client.ListAuditEventsParams{Limit: ptr(2)})
		mustStatus(t, a, err, http.StatusOK)
		for _, ev := range a.JSON200.Items {
			if ev.ActorId != actorID {
				t.Errorf("audit event %s: actor %q, want %q", ev.Action, ev.ActorId, actorID)
			}
		}
	})
	spec(t, "200/getTicket/one read, as a person's", func(t *testing.T) {
		mustUsed(t, w, created.Id)
		ts.Rec.Reset()
		r, err := bot.C.GetTicketWithResponse(bg, org, w.Ticket.Id, nil)
		mustStatus(t, r, err, http.StatusOK)
		if got := ts.Rec.Names(); got != "BatchGetItem+consistent" {
			t.Errorf("DynamoDB calls %q: want the authorization read alone", got)
		}
	})
	spec(t, "403/listAuditEvents/a member key", func(t *testing.T) {
		r, err := bot.C.ListAuditEventsWithResponse(bg, org, nil)
		wantProblem(t, r, err, http.StatusForbidden, "forbidden")
	})
	spec(t, "403/getMe/403/listOrgs/403/createOrg/403/acceptInvitation/routes about a person", func(t *testing.T) {
		me, err := bot.C.GetMeWithResponse(bg, nil)
		wantProblem(t, me, err, http.StatusForbidden, "api_key_not_allowed")
		orgs, err := bot.C.ListOrgsWithResponse(bg, nil)
		wantProblem(t, orgs, err, http.StatusForbidden, "api_key_not_allowed")
		o, err := bot.C.CreateOrgWithResponse(bg, nil, client.OrgCreate{Name: "Bot Corp"})
		wantProblem(t, o, err, http.StatusForbidden, "api_key_not_allowed")
		inv := MustInvitation(t, w.Owner.C, org, "bot@example.com", client.RoleMember)
		a, err := bot.C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		wantProblem(t, a, err, http.StatusForbidden, "api_key_not_allowed")
	})
	spec(t, "404/getOrg/404/getTicket/another org: a stranger", func(t *testing.T) {
		other := MustWorld(t, ts, "Not the key's")
		r, err := bot.C.GetOrgWithResponse(bg, other.Org.Id, nil)
		wantProblem(t, r, err, http.StatusNotFound, "org_not_found")
		tk, err := bot.C.GetTicketWithResponse(bg, other.Org.Id, other.Ticket.Id, nil)
		wantProblem(t, tk, err, http.StatusNotFound, "org_not_found")
	})
	spec(t, "200/graphql/the same decision", func(t *testing.T) {
		r := apitest.GQL(t, ts, created.Secret, `query($o: ID!) { org(id: $o) { name tickets { nodes { title } } } }`, map[string]any{"o": org})
		apitest.MustData(t, r, nil)
		me := apitest.GQL(t, ts, created.Secret, `{ me { userId } }`, nil)
		if codes := me.Codes(); len(codes) != 1 || codes[0] != "api_key_not_allowed" {
			t.Errorf("me as a key: codes %v, want api_key_not_allowed", codes)
		}
		const keys = `query($o: ID!) { org(id: $o) { apiKeys { nodes { id name role createdBy lastUsedAt } } } }`
		listed := apitest.GQL(t, ts, w.Admin.Token, keys, map[string]any{"o": org})
		apitest.MustData(t, listed, nil)
		if !strings.Contains(string(listed.Data), created.Id) || strings.Contains(string(listed.Data), created.Secret[len(created.Secret)-43:]) {
			t.Errorf("apiKeys as an admin: %s", listed.Data)
		}
		if codes := apitest.GQL(t, ts, created.Secret, keys, map[string]any{"o": org}).Codes(); len(codes) != 1 || codes[0] != "api_key_not_allowed" {
			t.Errorf("apiKeys as a key: codes %v, want api_key_not_allowed", codes)
		}
	})
	spec(t, "200/getApiKey/lastUsedAt, written once a minute", func(t *testing.T) {
		k := mustUsed(t, w, created.Id)
		ts.Rec.Reset()
		for range 20 {
			r, err := bot.C.GetOrgWithResponse(bg, org, nil)
			mustStatus(t, r, err, http.StatusOK)
		}
		if n := ts.Rec.Count(); n != 20 {
			t.Errorf("20 requests within the minute: %d DynamoDB calls (%s), want 20 reads and no write", n, ts.Rec.Names())
		}
		ts.Clock.Advance(2 * time.Minute)
		r, err := bot.C.GetOrgWithResponse(bg, org, nil)
		mustStatus(t, r, err, http.StatusOK)
		if later := mustUsedAfter(t, w, created.Id, *k.LastUsedAt); !later.LastUsedAt.After(*k.LastUsedAt) {
			t.Errorf("lastUsedAt %v after a use two minutes later, was %v", later.LastUsedAt, k.LastUsedAt)
		}
	})
}

// mustUsed waits until the key's lastUsedAt is recorded (in the
// background) and returns it.
func mustUsed(t *testing.T, w *world, keyID string) client.ApiKey {
	t.Helper()
	return mustUsedAfter(t, w, keyID, time.Time{})
}

// mustUsedAfter waits until the key's lastUsedAt is after since.
func mustUsedAfter(t *testing.T, w *world, keyID string, since time.Time) client.ApiKey {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := w.Owner.C.GetApiKeyWithResponse(bg, w.Org.Id, keyID)
		mustStatus(t, r, err, http.StatusOK)
		if u := r.JSON200.LastUsedAt; u != nil && u.After(since) {
			return *r.JSON200
		}
		if time.Now().After(deadline) {
			t.Fatalf("lastUsedAt of %s: %v, not after %v", keyID, r.JSON200.LastUsedAt, since)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestApiKeyRefused: a revoked, expired, forged or malformed key is
// refused on the next request, and a person's token may not name a key's
// actor.
func TestApiKeyRefused(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Refusals")
	org := w.Org.Id
	works := func(t *testing.T, token string) {
		t.Helper()
		r, err := keyActor(t, ts, token).C.GetOrgWithResponse(bg, org, nil)
		mustStatus(t, r, err, http.StatusOK)
	}
	refused := func(t *testing.T, token, code string) {
		t.Helper()
		r, err := keyActor(t, ts, token).C.GetOrgWithResponse(bg, org, nil)
		wantProblem(t, r, err, http.StatusUnauthorized, code)
		if got := r.HTTPResponse.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
			t.Errorf("WWW-Authenticate %q", got)
		}
	}
	spec(t, "401/getOrg/204/revokeApiKey/revoked", func(t *testing.T) {
		k := mustAPIKey(t, w, client.ApiKeyCreateRoleAdmin)
		works(t, k.Secret)
		r, err := w.Admin.C.RevokeApiKeyWithResponse(bg, org, k.Id)
		mustStatus(t, r, err, http.StatusNoContent)
		refused(t, k.Secret, "invalid_token")
		a, err := w.Owner.C.ListAuditEventsWithResponse(bg, org, &client.ListAuditEventsParams{Limit: ptr(1)})
		mustStatus(t, a, err, http.StatusOK)
		if ev := a.JSON200.Items[0]; ev.Action != "apikey.revoke" || ev.TargetId != k.Id || ev.ActorId != w.Admin.ID {
			t.Errorf("audit event %+v", ev)
		}
	})
	spec(t, "401/getOrg/expired", func(t *testing.T) {
		expires := ts.Clock.Now().Add(time.Hour)
		r, err := w.Owner.C.CreateApiKeyWithResponse(bg, org, client.ApiKeyCreate{Name: "short-lived", Role: client.ApiKeyCreateRoleMember, ExpiresAt: &expires})
		mustStatus(t, r, err, http.StatusCreated)
		works(t, r.JSON201.Secret)
		ts.Clock.Advance(time.Hour)
		refused(t, r.JSON201.Secret, "api_key_expired")
	})
	spec(t, "401/getOrg/a wrong secret", func(t *testing.T) {
		k := mustAPIKey(t, w, client.ApiKeyCreateRoleAdmin)
		forged := k.Secret[:len(k.Secret)-43] + strings.Repeat("A", 43)
		refused(t, forged, "invalid_token")
		refused(t, fmt.Sprintf("tdk_%s_%s_%s", org, randULID(), strings.Repeat("A", 43)), "invalid_token")
	})
	spec(t, "401/getOrg/malformed", func(t *testing.T) {
		for _, tok := range []string{"tdk_", "tdk_" + org, "tdk_" + org + "_" + randULID() + "_short", "tdk_x_y_" + strings.Repeat("A", 43),
			"tdk_" + strings.ToLower(org) + "_" + randULID() + "_" + strings.Repeat("A", 43)} {
			refused(t, tok, "invalid_token")
		}
	})
	spec(t, "401/getOrg/a person's token naming a key's actor", func(t *testing.T) {
		k := mustAPIKey(t, w, client.ApiKeyCreateRoleAdmin)
		now := ts.Clock.Now()
		for _, sub := range []string{"apiKey:" + k.Id, "APIKEY:" + k.Id, "apikey:someone"} {
			tok := ts.Mint(t, httpapi.Claims{RegisteredClaims: jwt.RegisteredClaims{Subject: sub,
				IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))}})
			refused(t, tok, "invalid_token")
		}
	})
	spec(t, "400/addOrgUser/a user named as a key's actor", func(t *testing.T) {
		k := mustAPIKey(t, w, client.ApiKeyCreateRoleMember)
		for _, id := range []string{"apiKey:" + k.Id, "ApiKey:" + k.Id} {
			r, err := w.Owner.C.AddOrgUserWithResponse(bg, org, nil, client.OrgUserCreate{UserId: id, Email: "ghost@example.com", Name: "Ghost", Role: client.RoleAdmin})
			wantProblem(t, r, err, http.StatusBadRequest, "invalid_id")
		}
	})
}

// TestApiKeyCallerLimit: a key's id is no secret (the audit log names
// it), so tokens that name it with a made-up secret are refused (their MAC
// fails) before they spend the caller budget of the org's keys (no refill
// during the test: its RateLimit remaining goes down by the keys' own
// requests only); a revoked key costs one read and spends that budget
// once, then is refused before either, so its bearer can throttle neither
// DynamoDB nor the org's live keys; a key in another org's routes is a
// stranger there without a read.
func TestApiKeyCallerLimit(t *testing.T) {
	// While hold is set, a BatchGetItem waits (holding says it does) for
	// its context's end or 3 s, and held says how it ended.
	var hold atomic.Bool
	holding, held := make(chan struct{}, 1), make(chan error, 1)
	holdReads := func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("apikey_test.hold",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if hold.Load() && middleware.GetOperationName(ctx) == "BatchGetItem" {
					holding <- struct{}{}
					select {
					case <-ctx.Done():
					case <-time.After(3 * time.Second):
					}
					held <- ctx.Err()
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	}
	ts := MustServer(t, withCallerRateLimit(ratelimit.Options{PerSecond: 1.0 / 3600, Burst: 100}), withAPIOptions(holdReads))
	w := MustWorld(t, ts, "Caller budget")
	k := mustAPIKey(t, w, client.ApiKeyCreateRoleMember)
	remaining := func(t *testing.T) int {
		r, err := keyActor(t, ts, k.Secret).C.GetOrgWithResponse(bg, w.Org.Id, nil)
		mustStatus(t, r, err, http.StatusOK)
		return rateLimitOf(t, r.HTTPResponse.Header, "caller").r
	}
	revoked := func(t *testing.T) string { // a new key's token, revoked
		r := mustAPIKey(t, w, client.ApiKeyCreateRoleMember)
		d, err := w.Owner.C.RevokeApiKeyWithResponse(bg, w.Org.Id, r.Id)
		mustStatus(t, d, err, http.StatusNoContent)
		return r.Secret
	}
	spec(t, "401/getOrg/forged tokens naming a key spend none of its budget", func(t *testing.T) {
		before := remaining(t)
		for i := range 5 {
			forged := k.Secret[:len(k.Secret)-43] + strings.Repeat(string(rune('A'+i)), 43)
			r, err := keyActor(t, ts, forged).C.GetOrgWithResponse(bg, w.Org.Id, nil)
			wantProblem(t, r, err, http.StatusUnauthorized, "invalid_token")
		}
		if after := remaining(t); after != before-1 {
			t.Errorf("the key's caller budget: %d remaining, then %d after 5 forged tokens and 1 request of its own; want %d", before, after, before-1)
		}
	})
	spec(t, "401/getOrg/a revoked key costs one read and one token of its org's keys' budget, once", func(t *testing.T) {
		// Each revoked key's token is one the service minted: refusing it
		// costs a read. A bearer of many spends one budget, the org's
		// keys', not a fresh one per key.
		toks := []string{revoked(t), revoked(t), revoked(t)}
		before := remaining(t)
		ts.Rec.Reset()
		for range 5 {
			for _, tok := range toks {
				r, err := keyActor(t, ts, tok).C.GetOrgWithResponse(bg, w.Org.Id, nil)
				wantProblem(t, r, err, http.StatusUnauthorized, "invalid_token")
			}
		}
		reads := ts.Rec.Count()
		if after := remaining(t); after != before-4 {
			t.Errorf("the org's keys' caller budget: %d remaining, then %d after 3 revoked keys used 5 times each and 1 request of a live key; want %d (each revoked key's first use)", before, after, before-4)
		}
		if reads != 3 {
			t.Errorf("3 revoked keys used 5 times each: %d DynamoDB calls (%s), want each key's first read only", reads, ts.Rec.Names())
		}
	})
	spec(t, "404/getOrg/403/getMe/401/graphql/a revoked key outside its org spends no budget until GraphQL reads it in its own org", func(t *testing.T) {
		// Refused in CPU over REST, it is never read, so never found
		// revoked: were it charged, its bearer could drain the budget of
		// the org's live keys from another org's routes or a person's.
		// GraphQL reads a key in its own org first, whatever its document.
		tok := revoked(t)
		other := MustWorld(t, ts, "Not the revoked key's")
		before := remaining(t)
		ts.Rec.Reset()
		for range 5 {
			g, err := keyActor(t, ts, tok).C.GetOrgWithResponse(bg, other.Org.Id, nil)
			wantProblem(t, g, err, http.StatusNotFound, "org_not_found")
			m, err := keyActor(t, ts, tok).C.GetMeWithResponse(bg, nil)
			wantProblem(t, m, err, http.StatusForbidden, "api_key_not_allowed")
		}
		if n := ts.Rec.Count(); n != 0 {
			t.Errorf("REST: %d DynamoDB calls (%s), want none", n, ts.Rec.Names())
		}
		for i := range 5 {
			query := `query($o: ID!) { org(id: $o) { name } }`
			if i == 0 {
				query = `query { org(` // refused in CPU had it not been read first
			}
			g := apitest.GQL(t, ts, tok, query, map[string]any{"o": other.Org.Id})
			if g.Status != http.StatusUnauthorized || !strings.Contains(string(g.Raw), "invalid_token") {
				t.Errorf("graphql as a revoked key: %d %s, want 401 invalid_token", g.Status, g.Raw)
			}
		}
		if n := ts.Rec.Count(); n != 1 {
			t.Errorf("%d DynamoDB calls (%s), want the key's one read", n, ts.Rec.Names())
		}
		if after := remaining(t); after != before-2 {
			t.Errorf("the org's keys' caller budget: %d remaining, then %d after a revoked key's 10 requests outside its org, 5 GraphQL requests and 1 of a live key; want %d (its first GraphQL request's only)", before, after, before-2)
		}
	})
	spec(t, "401/createTicket/a revoked key's malformed request in its own org is read before it is refused", func(t *testing.T) {
		tok := revoked(t)
		for range 3 {
			r := doReq(t, ts.HTTP, http.MethodPost, ts.URL+"/v1/orgs/"+w.Org.Id+"/tickets", tok, http.Header{"Content-Type": {"application/json"}}, `{"title":`)
			if r.Status != http.StatusUnauthorized {
				t.Errorf("a revoked key's malformed POST: %d %s, want 401", r.Status, r.Body)
			}
		}
	})
	spec(t, "401/getOrg/a revoked key's read outlives a bearer who hangs up", func(t *testing.T) {
		// Else a bearer who hangs up right after sending spends a token
		// and cancels the read that would find the key revoked, again and
		// again.
		tok := revoked(t)
		hold.Store(true)
		defer hold.Store(false)
		ctx, hangUp := context.WithCancel(bg)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/v1/orgs/"+w.Org.Id, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		go func() { <-holding; hangUp() }()
		if _, err := http.DefaultClient.Do(req); err == nil {
			t.Fatal("the request was answered while its read was held")
		}
		if err := <-held; errors.Is(err, context.Canceled) {
			t.Errorf("the key's read was cancelled when its bearer hung up (%v)", err)
		}
	})
	spec(t, "404/getOrg/a key in another org: no DynamoDB call", func(t *testing.T) {
		other := MustWorld(t, ts, "Not the key's")
		ts.Rec.Reset()
		r, err := keyActor(t, ts, k.Secret).C.GetOrgWithResponse(bg, other.Org.Id, nil)
		wantProblem(t, r, err, http.StatusNotFound, "org_not_found")
		if n := ts.Rec.Count(); n != 0 {
			t.Errorf("%d DynamoDB calls (%s), want none", n, ts.Rec.Names())
		}
	})
}

// TestApiKeyForged: a token the service did not mint (its MAC under the
// server key fails) is refused in CPU, before any DynamoDB call and any
// shared budget, so a stranger's flood slows no one; the server key is one
// item of the table, made once and shared by every replica, so a key works
// on any of them.
func TestApiKeyForged(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Forged at")
	org := w.Org.Id
	real := mustAPIKey(t, w, client.ApiKeyCreateRoleAdmin) // the server key is loaded
	forged := func(keyID string) string { return fmt.Sprintf("tdk_%s_%s_%s", org, keyID, strings.Repeat("A", 43)) }
	spec(t, "401/getOrg/a forged token: no DynamoDB call", func(t *testing.T) {
		for _, tok := range []string{forged(randULID()), forged(real.Id), real.Secret[:len(real.Secret)-1] + "B"} {
			ts.Rec.Reset()
			r, err := keyActor(t, ts, tok).C.GetOrgWithResponse(bg, org, nil)
			wantProblem(t, r, err, http.StatusUnauthorized, "invalid_token")
			if n := ts.Rec.Count(); n != 0 {
				t.Errorf("%s: %d DynamoDB calls (%s), want none", tok, n, ts.Rec.Names())
			}
		}
	})
	spec(t, "200/getOrg/a flood of forged tokens leaves another org's new keys alone", func(t *testing.T) {
		other := MustWorld(t, ts, "Not the flood's")
		var fresh []string // each used first amid the flood
		for range 5 {
			fresh = append(fresh, mustAPIKey(t, other, client.ApiKeyCreateRoleMember).Secret)
		}
		ts.Rec.Reset()
		for i := range 1000 { // ten times the burst of a replica-wide budget
			r := doReq(t, ts.HTTP, http.MethodGet, ts.URL+"/v1/orgs/"+org, forged(randULID()), nil, "")
			if r.Status != http.StatusUnauthorized {
				t.Fatalf("a forged token: %d %s", r.Status, r.Body)
			}
			if i%200 == 199 {
				r := doReq(t, ts.HTTP, http.MethodGet, ts.URL+"/v1/orgs/"+other.Org.Id, fresh[i/200], nil, "")
				if r.Status != http.StatusOK {
					t.Errorf("a new key of another org after %d forged tokens: %d %s", i+1, r.Status, r.Body)
				}
			}
		}
		reads := 0
		for _, op := range ts.Rec.Ops() {
			if op.Name != "UpdateItem" { // a new key's lastUsedAt, written in the background
				reads++
			}
		}
		if reads != 5 {
			t.Errorf("1,000 forged tokens and 5 real ones: %d DynamoDB calls but lastUsedAt's (%s), want the real ones' 5 reads", reads, ts.Rec.Names())
		}
	})
	spec(t, "200/getOrg/a fresh replica reads the server key, never makes one", func(t *testing.T) {
		replica := ts.Replica(t)
		r, err := keyActor(t, replica, real.Secret).C.GetOrgWithResponse(bg, org, nil)
		mustStatus(t, r, err, http.StatusOK)
		if n := len(itemsOf(t, ts, "ServerKey", "")); n != 1 {
			t.Errorf("%d ServerKey items, want 1", n)
		}
	})
}

// TestApiKeyServerKeyRace: replicas that mint their first keys at once,
// on a table with no server key yet, end with the same one: each key works
// on the others.
func TestApiKeyServerKeyRace(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Racing replicas")
	replicas := []*testServer{ts.Replica(t), ts.Replica(t), ts.Replica(t), ts.Replica(t)}
	keys := make([]client.ApiKeyCreated, len(replicas))
	spec(t, "201/createApiKey/200/getOrg/on every replica", func(t *testing.T) {
		var wg sync.WaitGroup
		for i, rp := range replicas {
			wg.Go(func() {
				r, err := rp.Client(t, w.Owner.Token).CreateApiKeyWithResponse(bg, w.Org.Id, client.ApiKeyCreate{Name: fmt.Sprint("racer ", i), Role: client.ApiKeyCreateRoleMember})
				mustStatus(t, r, err, http.StatusCreated)
				keys[i] = *r.JSON201
			})
		}
		wg.Wait()
		for i, k := range keys {
			rp := replicas[(i+1)%len(replicas)]
			r, err := keyActor(t, rp, k.Secret).C.GetOrgWithResponse(bg, w.Org.Id, nil)
			mustStatus(t, r, err, http.StatusOK)
		}
		if n := len(itemsOf(t, ts, "ServerKey", "")); n != 1 {
			t.Errorf("%d ServerKey items, want 1", n)
		}
	})
}
