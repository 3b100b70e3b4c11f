package httpapi_test

// Idempotency-Key on every creating POST, and cursors: tampering and
// iteration under concurrent inserts.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantd/tenantd/client"
)

// createOp is one creating POST as the idempotency tests drive it.
type createOp struct {
	id string
	// send builds the request of variant v (the same v, the same request)
	// as actor a in the org (orgless operations ignore it).
	send func(org string, a actor, v int) (path, body string)
	// count returns how many items the requests of variant v created.
	count func(t *testing.T, ts *testServer, org string, a actor, v int) int
	// orgScoped: the key is scoped to the org (else to the caller).
	orgScoped bool
}

// idemWorld is an org where every creating POST can be sent.
type idemWorld struct {
	*world
	tokens map[string]string // invitation tokens by email
}

func createOps(ts *testServer, w *idemWorld) []createOp {
	n := func(t *testing.T, ts *testServer, typ, org string, match func(dbItem) bool) int {
		c := 0
		for _, it := range itemsOf(t, ts, typ, org) {
			if match(it) {
				c++
			}
		}
		return c
	}
	return []createOp{
		{id: "createOrg", send: func(_ string, a actor, v int) (string, string) {
			return "/v1/orgs", fmt.Sprintf(`{"name":"Idem org %s %d"}`, a.ID, v)
		}, count: func(t *testing.T, ts *testServer, _ string, a actor, v int) int {
			return n(t, ts, "Org", "", func(it dbItem) bool { return it.Str("name") == fmt.Sprintf("Idem org %s %d", a.ID, v) })
		}},
		{id: "addOrgUser", orgScoped: true, send: func(org string, a actor, v int) (string, string) {
			return "/v1/orgs/" + org + "/users", fmt.Sprintf(`{"userId":"idem.user.%d","email":"idem-%d@example.com","name":"Idem","role":"member"}`, v, v)
		}, count: func(t *testing.T, ts *testServer, org string, _ actor, v int) int {
			return n(t, ts, "OrgUser", org, func(it dbItem) bool { return it.Str("userId") == fmt.Sprintf("idem.user.%d", v) })
		}},
		{id: "createTeam", orgScoped: true, send: func(org string, a actor, v int) (string, string) {
			return "/v1/orgs/" + org + "/teams", fmt.Sprintf(`{"name":"Idem team %d"}`, v)
		}, count: func(t *testing.T, ts *testServer, org string, _ actor, v int) int {
			return n(t, ts, "Team", org, func(it dbItem) bool { return it.Str("name") == fmt.Sprintf("Idem team %d", v) })
		}},
		{id: "createTicket", orgScoped: true, send: func(org string, a actor, v int) (string, string) {
			return "/v1/orgs/" + org + "/tickets", fmt.Sprintf(`{"title":"Idem ticket %d"}`, v)
		}, count: func(t *testing.T, ts *testServer, org string, _ actor, v int) int {
			return n(t, ts, "Ticket", org, func(it dbItem) bool { return it.Str("title") == fmt.Sprintf("Idem ticket %d", v) })
		}},
		{id: "createComment", orgScoped: true, send: func(org string, a actor, v int) (string, string) {
			return "/v1/orgs/" + org + "/tickets/" + w.Ticket.Id + "/comments", fmt.Sprintf(`{"body":"Idem comment %d"}`, v)
		}, count: func(t *testing.T, ts *testServer, org string, _ actor, v int) int {
			return n(t, ts, "Comment", org, func(it dbItem) bool { return it.Str("body") == fmt.Sprintf("Idem comment %d", v) })
		}},
		{id: "createInvitation", orgScoped: true, send: func(org string, a actor, v int) (string, string) {
			return "/v1/orgs/" + org + "/invitations", fmt.Sprintf(`{"email":"idem-invitee-%d@example.com","role":"member"}`, v)
		}, count: func(t *testing.T, ts *testServer, org string, _ actor, v int) int {
			// A new invitation for an email replaces the pending one, so
			// count every invitation ever made: the audit events.
			return n(t, ts, "AuditEvent", org, func(it dbItem) bool {
				return it.Str("action") == "invitation.create" && strings.Contains(dump([]dbItem{it}), fmt.Sprintf("idem-invitee-%d@example.com", v))
			})
		}},
		{id: "createWebhook", orgScoped: true, send: func(org string, a actor, v int) (string, string) {
			return "/v1/orgs/" + org + "/webhooks", fmt.Sprintf(`{"url":"https://hooks.example.com/idem-%d","events":["*"]}`, v)
		}, count: func(t *testing.T, ts *testServer, org string, _ actor, v int) int {
			return n(t, ts, "Webhook", org, func(it dbItem) bool { return it.Str("url") == fmt.Sprintf("https://hooks.example.com/idem-%d", v) })
		}},
		{id: "acceptInvitation", send: func(_ string, a actor, v int) (string, string) {
			return "/v1/invitations/" + w.tokens[fmt.Sprintf("accept-%d@example.com", v)] + "/accept", ""
		}, count: func(t *testing.T, ts *testServer, _ string, a actor, v int) int {
			// The user joined with the invitation's email.
			return n(t, ts, "OrgUser", w.Org.Id, func(it dbItem) bool {
				return it.Str("userId") == a.ID && it.Str("email") == fmt.Sprintf("accept-%d@example.com", v)
			})
		}},
	}
}

// TestIdempotency drives every creating POST with an
// Idempotency-Key: a replay gets the same status, body and ETag with
// Idempotent-Replayed: true and creates nothing more (the table says so);
// the same key with another body is a 422 idempotency_key_reused;
// concurrent duplicates create one item; another tenant's or caller's
// identical key never sees the first response; a 4xx is kept and replayed;
// and invalid keys are a 400.
func TestIdempotency(t *testing.T) {
	ts := MustServer(t)
	w := &idemWorld{world: MustWorld(t, ts, "Idempotent"), tokens: map[string]string{}}
	org := w.Org.Id
	// Invitations to accept: the variants the subtests use.
	for _, v := range []int{1, 2, 3, 5, 6} {
		email := fmt.Sprintf("accept-%d@example.com", v)
		w.tokens[email] = MustInvitation(t, w.Owner.C, org, email, client.RoleMember).Token
	}
	// Org B, owned by the same owner, and another admin of org A.
	orgB := MustOrg(t, w.Owner.C, "Idempotent B")
	MustTicket(t, w.Owner.C, orgB.Id, client.TicketCreate{Title: "B's ticket"})
	hc := validating(t, raceClient(t, 20)) // every first answer, replay and refusal held to the contract
	var keySeq int
	newKey := func() string { keySeq++; return fmt.Sprintf("idem-%d-%d", time.Now().UnixNano(), keySeq) }
	send := func(op createOp, a actor, org string, v int, key string) apiResp {
		path, body := op.send(org, a, v)
		h := http.Header{}
		if key != "" {
			h.Set("Idempotency-Key", key)
		}
		return doReq(t, hc, http.MethodPost, ts.URL+path, a.Token, h, body)
	}
	auditCount := func() int { return len(itemsOf(t, ts, "AuditEvent", "")) }

	for _, op := range createOps(ts, w) {
		// Who sends variant v: the owner, except accepting (a newcomer
		// with the invited email).
		caller := func(t *testing.T, v int) actor {
			if op.id == "acceptInvitation" {
				return ts.Invitee(t, "joiner", fmt.Sprintf("accept-%d@example.com", v))
			}
			return w.Owner
		}
		v := 1
		var a actor // the caller of the replayed request, and its key
		var key string
		spec(t, "201/"+op.id+"/replayed", func(t *testing.T) {
			a, key = caller(t, v), newKey()
			first := send(op, a, org, v, key)
			if first.Status != http.StatusCreated {
				t.Fatalf("first: %d %s", first.Status, first.Body)
			}
			if first.Header.Get("Idempotent-Replayed") != "" {
				t.Errorf("first response says Idempotent-Replayed: %q", first.Header.Get("Idempotent-Replayed"))
			}
			audits := auditCount()
			for range 2 {
				again := send(op, a, org, v, key)
				if again.Status != first.Status || !bytes.Equal(again.Body, first.Body) {
					t.Errorf("replay: %d %s\nwant %d %s", again.Status, again.Body, first.Status, first.Body)
				}
				if got := again.Header.Get("Idempotent-Replayed"); got != "true" {
					t.Errorf("replay: Idempotent-Replayed %q, want true", got)
				}
				if got, want := again.Header.Get("ETag"), first.Header.Get("ETag"); got != want {
					t.Errorf("replay: ETag %q, want %q", got, want)
				}
			}
			if got := op.count(t, ts, org, a, v); got != 1 {
				t.Errorf("items created: %d, want 1", got)
			}
			if got := auditCount(); got != audits {
				t.Errorf("a replay wrote %d audit event(s)", got-audits)
			}
		})
		spec(t, "422/"+op.id+"/the key again with another request", func(t *testing.T) {
			if key == "" {
				t.Fatal("no key: the replay subtest did not run")
			}
			other := send(op, a, org, v+1, key) // (for acceptInvitation: another token)
			if other.Status != http.StatusUnprocessableEntity || problemCode(other.Body) != "idempotency_key_reused" {
				t.Errorf("same key, other body: %d %s, want 422 idempotency_key_reused", other.Status, other.Body)
			}
			if got := op.count(t, ts, org, a, v+1); got != 0 {
				t.Errorf("the refused request created %d item(s)", got)
			}
		})
		t.Run(op.id+"/concurrent duplicates", func(t *testing.T) {
			a, key := caller(t, 3), newKey()
			const n = 10
			var mu sync.Mutex
			var fresh, replays, inProgress int
			var bodies [][]byte
			parallel(n, func(int) {
				path, body := op.send(org, a, 3)
				r := doReqE(hc, http.MethodPost, ts.URL+path, a.Token, http.Header{"Idempotency-Key": {key}}, body)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case r.Err != nil:
					t.Errorf("duplicate: %v", r.Err)
				case r.Status == http.StatusCreated && r.Header.Get("Idempotent-Replayed") == "true":
					replays++
					bodies = append(bodies, r.Body)
				case r.Status == http.StatusCreated:
					fresh++
					bodies = append(bodies, r.Body)
				case r.Status == http.StatusConflict && problemCode(r.Body) == "idempotency_in_progress":
					inProgress++
				default:
					t.Errorf("duplicate: %d %s", r.Status, r.Body)
				}
			})
			if fresh != 1 || fresh+replays+inProgress != n {
				t.Errorf("%d fresh 201, %d replays, %d idempotency_in_progress; want one fresh 201", fresh, replays, inProgress)
			}
			for _, b := range bodies[1:] {
				if !bytes.Equal(b, bodies[0]) {
					t.Errorf("different bodies for one key:\n%s\n%s", b, bodies[0])
				}
			}
			if got := op.count(t, ts, org, a, 3); got != 1 {
				t.Errorf("items created: %d, want 1", got)
			}
		})
		t.Run(op.id+"/other scopes never see it", func(t *testing.T) {
			a, key := caller(t, 5), newKey()
			first := send(op, a, org, 5, key)
			if first.Status != http.StatusCreated {
				t.Fatalf("first: %d %s", first.Status, first.Body)
			}
			// Another caller with the same key and request.
			b := w.Admin
			switch op.id {
			case "acceptInvitation":
				b = caller(t, 6)
			case "createOrg":
				b = ts.Actor(t, "other-caller")
			}
			if op.id == "acceptInvitation" {
				r := send(op, b, org, 6, key)
				if r.Status != http.StatusCreated || r.Header.Get("Idempotent-Replayed") != "" {
					t.Errorf("another caller, same key: %d %q %s", r.Status, r.Header.Get("Idempotent-Replayed"), r.Body)
				}
				return
			}
			r := send(op, b, org, 6, key)
			if r.Status != http.StatusCreated || r.Header.Get("Idempotent-Replayed") != "" || bytes.Equal(r.Body, first.Body) {
				t.Errorf("another caller, same key: %d replayed=%q %s", r.Status, r.Header.Get("Idempotent-Replayed"), r.Body)
			}
			if !op.orgScoped {
				return
			}
			// The same caller, key and body in another org (another
			// tenant): a request of its own. createComment needs a
			// ticket of org B: skip the comment there.
			if op.id == "createComment" {
				return
			}
			r = send(op, a, orgB.Id, 5, key)
			if r.Status != http.StatusCreated || r.Header.Get("Idempotent-Replayed") != "" || bytes.Equal(r.Body, first.Body) {
				t.Errorf("another org, same key and body: %d replayed=%q %s", r.Status, r.Header.Get("Idempotent-Replayed"), r.Body)
			}
			if got := op.count(t, ts, orgB.Id, a, 5); got != 1 {
				t.Errorf("org B got %d item(s), want 1", got)
			}
			if got := op.count(t, ts, org, a, 5); got != 1 {
				t.Errorf("org A has %d item(s) of the request, want 1", got)
			}
		})
	}

	t.Run("a 4xx is kept and replayed", func(t *testing.T) {
		// An email taken: 409. Freed afterwards, the key still answers 409.
		taker := ts.Actor(t, "taker")
		taker.Email = "kept-conflict@example.com"
		MustUser(t, w.Owner.C, org, taker, client.RoleMember)
		key := newKey()
		body := `{"userId":"second.taker","email":"kept-conflict@example.com","name":"Second","role":"member"}`
		first := doReq(t, hc, http.MethodPost, ts.URL+"/v1/orgs/"+org+"/users", w.Owner.Token, http.Header{"Idempotency-Key": {key}}, body)
		if first.Status != http.StatusConflict {
			t.Fatalf("first: %d %s", first.Status, first.Body)
		}
		d, err := w.Owner.C.RemoveOrgUserWithResponse(bg, org, taker.ID, nil)
		mustStatus(t, d, err, http.StatusNoContent)
		again := doReq(t, hc, http.MethodPost, ts.URL+"/v1/orgs/"+org+"/users", w.Owner.Token, http.Header{"Idempotency-Key": {key}}, body)
		if again.Status != http.StatusConflict || !bytes.Equal(again.Body, first.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("replay of a 409: %d replayed=%q %s", again.Status, again.Header.Get("Idempotent-Replayed"), again.Body)
		}
		if getRaw(t, ts, "ORG#"+org, "USER#second.taker") != nil {
			t.Error("the replayed 409 created the user")
		}
		// A 403 and a 404 likewise.
		for _, c := range []struct {
			name, path, token, body string
			status                  int
		}{
			{"403", "/v1/orgs/" + org + "/teams", w.Member.Token, `{"name":"not allowed"}`, http.StatusForbidden},
			{"404", "/v1/orgs/" + org + "/tickets/01ARZ3NDEKTSV4RRFFQ69G5FAV/comments", w.Member.Token, `{"body":"lost"}`, http.StatusNotFound},
			{"404 accept", "/v1/invitations/" + org + ".01ARZ3NDEKTSV4RRFFQ69G5FAV." + strings.Repeat("x", 43) + "/accept", w.Member.Token, "", http.StatusNotFound},
		} {
			key := newKey()
			h := http.Header{"Idempotency-Key": {key}}
			first := doReq(t, hc, http.MethodPost, ts.URL+c.path, c.token, h, c.body)
			again := doReq(t, hc, http.MethodPost, ts.URL+c.path, c.token, h, c.body)
			if first.Status != c.status || again.Status != c.status || !bytes.Equal(again.Body, first.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("%s: first %d, replay %d replayed=%q, want %d replayed", c.name, first.Status, again.Status, again.Header.Get("Idempotent-Replayed"), c.status)
			}
		}
	})

	t.Run("revoked callers get no replay", func(t *testing.T) {
		u := ts.Actor(t, "replayer")
		MustUser(t, w.Owner.C, org, u, client.RoleMember)
		key := newKey()
		h := http.Header{"Idempotency-Key": {key}}
		first := doReq(t, hc, http.MethodPost, ts.URL+"/v1/orgs/"+org+"/tickets", u.Token, h, `{"title":"before removal"}`)
		if first.Status != http.StatusCreated {
			t.Fatalf("first: %d %s", first.Status, first.Body)
		}
		d, err := w.Owner.C.RemoveOrgUserWithResponse(bg, org, u.ID, nil)
		mustStatus(t, d, err, http.StatusNoContent)
		again := doReq(t, hc, http.MethodPost, ts.URL+"/v1/orgs/"+org+"/tickets", u.Token, h, `{"title":"before removal"}`)
		if again.Status != http.StatusNotFound || bytes.Contains(again.Body, []byte("before removal")) {
			t.Errorf("replay after removal: %d %s, want 404 without the response", again.Status, again.Body)
		}
	})

	t.Run("invalid keys", func(t *testing.T) {
		for name, key := range map[string]string{
			"256 characters": strings.Repeat("k", 256),
			"empty":          "",
			"inner space":    "a b",
			"inner tab":      "a\tb",
			"non-ASCII":      "clé",
		} {
			ts.Rec.Reset()
			r := doReq(t, hc, http.MethodPost, ts.URL+"/v1/orgs/"+org+"/teams", w.Owner.Token, http.Header{"Idempotency-Key": {key}}, `{"name":"bad key `+name+`"}`)
			if r.Status != http.StatusBadRequest {
				t.Errorf("%s: status %d, want 400: %s", name, r.Status, r.Body)
			}
			if n := len(itemsOf(t, ts, "Team", org)); ts.Rec.Count() > 1 {
				t.Errorf("%s: DynamoDB calls %s (teams %d), want at most the authorization read", name, ts.Rec.Names(), n)
			}
		}
		r := doReq(t, hc, http.MethodPost, ts.URL+"/v1/orgs/"+org+"/teams", w.Owner.Token, http.Header{"Idempotency-Key": {"one", "two"}}, `{"name":"two keys"}`)
		if r.Status != http.StatusBadRequest {
			t.Errorf("two Idempotency-Key headers: %d, want 400: %s", r.Status, r.Body)
		}
		// Control characters cannot be sent by Go's client: write them.
		raw, err := rawRequest(ts.URL, "POST /v1/orgs/"+org+"/teams HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+w.Owner.Token+
			"\r\nContent-Type: application/json\r\nIdempotency-Key: a\x01b\r\nContent-Length: 14\r\nConnection: close\r\n\r\n{\"name\":\"ctl\"}")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(raw, "HTTP/1.1 400 ") {
			t.Errorf("control character in the key: %q", strings.SplitN(raw, "\r\n", 2)[0])
		}
		for _, it := range itemsOf(t, ts, "Team", org) {
			if n := it.Str("name"); strings.HasPrefix(n, "bad key") || n == "two keys" || n == "ctl" {
				t.Errorf("a request with an invalid key created team %q", n)
			}
		}
	})

	// Records are in the table, scoped and expiring in 24 hours.
	t.Run("records", func(t *testing.T) {
		recs := itemsOf(t, ts, "IdempotencyRecord", "")
		if len(recs) == 0 {
			t.Fatal("no idempotency record in the table")
		}
		for _, it := range recs {
			exp, created := it.Num(t, "expiresAt"), it.Str("createdAt")
			c, err := time.Parse(time.RFC3339Nano, created)
			if err != nil {
				t.Fatalf("createdAt %q: %v", created, err)
			}
			if d := time.Unix(exp, 0).Sub(c); d < 24*time.Hour-time.Second || d > 24*time.Hour+time.Second {
				t.Errorf("record %s expires %v after its creation, want 24h", it.Str("pk"), d)
			}
			if org := it.Str("orgId"); org != "" && !strings.HasPrefix(it.Str("pk"), "ORG#"+org+"#") {
				t.Errorf("record of org %s outside its partition: %s", org, it.Str("pk"))
			}
			if strings.Contains(it.Str("pk"), "idem-") {
				t.Errorf("the client's key reached a key string: %s", it.Str("pk"))
			}
		}
	})
}

// ---------------------------------------------------------------------------
// Cursors.

// TestCursors: a cursor with any single bit flipped, another org's
// cursor, another listing's, an expired one: 400 invalid_cursor before any
// other read than the authorization's; and walking a listing while items
// are added returns each item that existed before exactly once.
func TestCursors(t *testing.T) {
	rr := &reqRecorder{}
	ts := MustServer(t, withAPIOptions(rr.Middleware))
	w := MustWorld(t, ts, "Cursors")
	org := w.Org.Id
	for i := range 6 {
		MustTicket(t, w.Member.C, org, client.TicketCreate{Title: fmt.Sprintf("paged %d", i)})
	}
	first, err := w.Owner.C.ListTicketsWithResponse(bg, org, &client.ListTicketsParams{Limit: ptr(2)})
	mustStatus(t, first, err, http.StatusOK)
	cursor := *first.JSON200.NextCursor

	t.Run("every bit flipped", func(t *testing.T) {
		var jobs []reqJob
		// One bit at every position (cycling through the 7 low bits, so the
		// cursor stays ASCII), every bit at the positions that matter
		// most: the payload's first and last byte, the separator, the
		// signature's first and last byte.
		dot := strings.IndexByte(cursor, '.')
		all := map[int]bool{0: true, dot - 1: true, dot: true, dot + 1: true, len(cursor) - 1: true}
		for i := range len(cursor) {
			for bit := range 7 {
				if !all[i] && bit != i%7 {
					continue
				}
				b := []byte(cursor)
				b[i] ^= 1 << bit
				flipped := string(b)
				what := fmt.Sprintf("byte %d bit %d (%q)", i, bit, b[i])
				jobs = append(jobs, reqJob{what: what, method: http.MethodGet, token: w.Owner.Token,
					url: ts.URL + "/v1/orgs/" + org + "/tickets?limit=2&cursor=" + url.QueryEscape(flipped),
					check: func(t *testing.T, r apiResp, ops []string) {
						if r.Status != http.StatusBadRequest {
							t.Errorf("%s: status %d, want 400: %s", what, r.Status, truncate(r.Body))
							return
						}
						if c := problemCode(r.Body); c != "invalid_cursor" && c != "invalid_request" {
							t.Errorf("%s: code %q", what, c)
						}
						if len(ops) > 1 {
							t.Errorf("%s: DynamoDB calls %v, want the authorization read at most", what, ops)
						}
					}})
			}
		}
		runJobs(t, rr, 8, jobs)
	})

	// A valid cursor from every other listing, replayed on listTickets,
	// and a valid listTickets cursor on every other listing.
	other := MustOrg(t, w.Owner.C, "Cursors B")
	for i := range 3 {
		MustTicket(t, w.Owner.C, other.Id, client.TicketCreate{Title: fmt.Sprintf("B %d", i)})
		MustTeam(t, w.Owner.C, org, fmt.Sprintf("cursor team %d", i))
	}
	for range 3 {
		MustComment(t, w.Member.C, org, w.Ticket.Id, "paged comment")
	}
	tm := w.Team.Id
	u := w.Requester.ID
	listings := map[string]string{ // listing -> path (limit=1 is appended)
		"listTickets":         "/v1/orgs/" + org + "/tickets",
		"listTickets status":  "/v1/orgs/" + org + "/tickets?status=new",
		"listTickets of B":    "/v1/orgs/" + other.Id + "/tickets",
		"listOrgUsers":        "/v1/orgs/" + org + "/users",
		"listTeams":           "/v1/orgs/" + org + "/teams",
		"listTeamMembers":     "/v1/orgs/" + org + "/teams/" + tm + "/members",
		"listTeamTickets":     "/v1/orgs/" + org + "/teams/" + tm + "/tickets",
		"listComments":        "/v1/orgs/" + org + "/tickets/" + w.Ticket.Id + "/comments",
		"listUserTickets":     "/v1/orgs/" + org + "/users/" + u + "/tickets",
		"listInvitations":     "/v1/orgs/" + org + "/invitations",
		"listAuditEvents":     "/v1/orgs/" + org + "/audit-log",
		"listOrgs":            "/v1/orgs",
		"listUserTeams":       "/v1/orgs/" + org + "/users/" + w.Owner.ID + "/teams",
		"listAssignedTickets": "/v1/orgs/" + org + "/users/" + w.Assignee.ID + "/assigned-tickets",
	}
	for i := range 3 {
		MustInvitation(t, w.Owner.C, org, fmt.Sprintf("cursor-%d@example.com", i), client.RoleMember)
	}
	cursors := map[string]string{}
	for name, path := range listings {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		r := doReq(t, &http.Client{}, http.MethodGet, ts.URL+path+sep+"limit=1", w.Owner.Token, nil, "")
		if r.Status != http.StatusOK {
			t.Fatalf("%s: %d %s", name, r.Status, r.Body)
		}
		var page struct {
			NextCursor string `json:"nextCursor"`
		}
		if err := json.Unmarshal(r.Body, &page); err != nil || page.NextCursor == "" {
			t.Logf("%s: no second page (%v)", name, err)
			continue
		}
		cursors[name] = page.NextCursor
	}
	if len(cursors) < 10 {
		t.Fatalf("only %d listings gave a cursor: %v", len(cursors), slices.Sorted(mapKeys(cursors)))
	}
	t.Run("cursor of another listing", func(t *testing.T) {
		var jobs []reqJob
		for from, c := range cursors {
			for to, path := range listings {
				if from == to {
					continue
				}
				sep := "?"
				if strings.Contains(path, "?") {
					sep = "&"
				}
				what := fmt.Sprintf("%s's cursor on %s", from, to)
				jobs = append(jobs, reqJob{what: what, method: http.MethodGet, token: w.Owner.Token,
					url: ts.URL + path + sep + "cursor=" + url.QueryEscape(c),
					check: func(t *testing.T, r apiResp, ops []string) {
						if r.Status != http.StatusBadRequest || problemCode(r.Body) != "invalid_cursor" {
							t.Errorf("%s: %d %s, want 400 invalid_cursor", what, r.Status, truncate(r.Body))
						}
					}})
			}
		}
		runJobs(t, rr, 8, jobs)
	})
	t.Run("cursor of another caller", func(t *testing.T) {
		// listOrgs is the caller's own listing.
		r := doReq(t, &http.Client{}, http.MethodGet, ts.URL+"/v1/orgs?cursor="+url.QueryEscape(cursors["listOrgs"]), w.Admin.Token, nil, "")
		if r.Status != http.StatusBadRequest || problemCode(r.Body) != "invalid_cursor" {
			t.Errorf("another user's listOrgs cursor: %d %s", r.Status, r.Body)
		}
	})
	t.Run("payload re-signed with another key", func(t *testing.T) {
		payload, _, _ := strings.Cut(cursor, ".")
		forged := payload + "." + base64.RawURLEncoding.EncodeToString(hmacSHA256([]byte("guessed-key-guessed-key-guessed-key"), payload))
		r := doReq(t, &http.Client{}, http.MethodGet, ts.URL+"/v1/orgs/"+org+"/tickets?cursor="+url.QueryEscape(forged), w.Owner.Token, nil, "")
		if r.Status != http.StatusBadRequest || problemCode(r.Body) != "invalid_cursor" {
			t.Errorf("forged signature: %d %s", r.Status, r.Body)
		}
	})
	t.Run("walk while items are added", func(t *testing.T) {
		// Org users sort by user ID, so new ones land before and after
		// the cursor; tickets sort by ULID. After every page, items are
		// added (synchronously, so that some surely land on both sides
		// of the cursor), and a goroutine adds more all along.
		o := MustOrg(t, w.Owner.C, "Walked")
		for i := range 30 {
			MustUser(t, w.Owner.C, o.Id, ts.ActorWithID(t, fmt.Sprintf("walk.%02d", i*3)), client.RoleMember)
			MustTicket(t, w.Owner.C, o.Id, client.TicketCreate{Title: fmt.Sprintf("walked %02d", i)})
		}
		hcw := &http.Client{}
		var added sync.Map
		add := func(users bool, i int) {
			var r apiRespE
			if users {
				id := fmt.Sprintf("walk.%02d.%d", (i*37)%90, i)
				r = doReqE(hcw, http.MethodPost, ts.URL+"/v1/orgs/"+o.Id+"/users", w.Owner.Token, nil,
					fmt.Sprintf(`{"userId":%q,"email":"%s@example.com","name":"N","role":"member"}`, id, id))
			} else {
				r = doReqE(hcw, http.MethodPost, ts.URL+"/v1/orgs/"+o.Id+"/tickets", w.Owner.Token, nil, fmt.Sprintf(`{"title":"added %d"}`, i))
			}
			if r.Err != nil || r.Status != http.StatusCreated {
				t.Errorf("add during the walk: %v %d %s", r.Err, r.Status, r.Body)
			}
			added.Store(i, true)
		}
		walk := func(path, field string, between func(page int)) []string {
			var out []string
			next := ""
			for pages := 0; pages < 100; pages++ {
				q := "?limit=4"
				if next != "" {
					q += "&cursor=" + url.QueryEscape(next)
				}
				r := doReq(t, &http.Client{}, http.MethodGet, ts.URL+path+q, w.Owner.Token, nil, "")
				if r.Status != http.StatusOK {
					t.Fatalf("%s: %d %s", path, r.Status, r.Body)
				}
				var page struct {
					Items      []map[string]any `json:"items"`
					NextCursor string           `json:"nextCursor"`
				}
				if err := json.Unmarshal(r.Body, &page); err != nil {
					t.Fatal(err)
				}
				for _, it := range page.Items {
					out = append(out, fmt.Sprint(it[field]))
				}
				if page.NextCursor == "" {
					return out
				}
				next = page.NextCursor
				if between != nil {
					between(pages)
				}
			}
			t.Fatalf("%s: more than 100 pages", path)
			return nil
		}
		for _, c := range []struct {
			users       bool
			path, field string
		}{{true, "/v1/orgs/" + o.Id + "/users", "userId"}, {false, "/v1/orgs/" + o.Id + "/tickets", "id"}} {
			before := walk(c.path, c.field, nil)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 1000; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					add(c.users, i)
				}
			}()
			n := 0
			during := walk(c.path, c.field, func(int) {
				for range 3 {
					n++
					add(c.users, n)
				}
			})
			close(stop)
			wg.Wait()
			seen := map[string]int{}
			for _, id := range during {
				seen[id]++
			}
			for id, k := range seen {
				if k > 1 {
					t.Errorf("%s: %s listed %d times", c.path, id, k)
				}
			}
			for _, id := range before {
				if seen[id] != 1 {
					t.Errorf("%s: %s, which existed before the walk, listed %d times", c.path, id, seen[id])
				}
			}
			if n == 0 || len(during) == len(before) && c.users {
				t.Errorf("%s: the walk saw none of the %d users added during it: the test proves nothing", c.path, n)
			}
		}
	})
	// Last: it moves the clock past every token.
	t.Run("expired", func(t *testing.T) {
		fresh, err := w.Owner.C.ListTicketsWithResponse(bg, org, &client.ListTicketsParams{Limit: ptr(2)})
		mustStatus(t, fresh, err, http.StatusOK)
		c := *fresh.JSON200.NextCursor
		ts.Clock.Advance(24*time.Hour + time.Minute)
		tok := ts.Token(t, w.Owner.ID, w.Owner.Email, w.Owner.Name)
		r := doReq(t, &http.Client{}, http.MethodGet, ts.URL+"/v1/orgs/"+org+"/tickets?limit=2&cursor="+url.QueryEscape(c), tok, nil, "")
		if r.Status != http.StatusBadRequest || problemCode(r.Body) != "invalid_cursor" {
			t.Errorf("expired cursor: %d %s", r.Status, r.Body)
		}
	})

}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestIdempotencyKeepsNoSecret: an invitation created with an
// Idempotency-Key is kept for replay without its one-time token in clear,
// and the replay is authorized like a new request: the caller demoted to
// member since gets 403, not the token.
func TestIdempotencyKeepsNoSecret(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Secret keeper")
	org := w.Org.Id
	admin := ts.Actor(t, "inviter")
	MustUser(t, w.Owner.C, org, admin, client.RoleAdmin)
	key := "invite-once-0123456789"
	h := http.Header{"Idempotency-Key": {key}}
	body := `{"email":"secret@example.com","role":"member"}`
	first := doReq(t, admin.HTTP, http.MethodPost, ts.URL+"/v1/orgs/"+org+"/invitations", admin.Token, h, body)
	if first.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", first.Status, first.Body)
	}
	var inv client.InvitationCreated
	decodeJSON(t, first.Body, &inv)
	secret := inv.Token[strings.LastIndex(inv.Token, ".")+1:]
	for _, it := range scanAll(t, ts) {
		if d := dump([]dbItem{it}); strings.Contains(d, secret) {
			t.Errorf("the token's secret is stored in clear: %s", truncate([]byte(d)))
		}
	}
	again := doReq(t, admin.HTTP, http.MethodPost, ts.URL+"/v1/orgs/"+org+"/invitations", admin.Token, h, body)
	if again.Status != http.StatusCreated || again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(first.Body) {
		t.Errorf("replay to the admin: %d replayed=%q", again.Status, again.Header.Get("Idempotent-Replayed"))
	}
	p, err := w.Owner.C.UpdateOrgUserWithResponse(bg, org, admin.ID, nil, client.OrgUserUpdate{Role: ptr(client.RoleMember)})
	mustStatus(t, p, err, http.StatusOK)
	demoted := doReq(t, admin.HTTP, http.MethodPost, ts.URL+"/v1/orgs/"+org+"/invitations", admin.Token, h, body)
	if demoted.Status != http.StatusForbidden || strings.Contains(string(demoted.Body), secret) {
		t.Errorf("replay to the demoted caller: %d %s, want 403 without the token", demoted.Status, demoted.Body)
	}
}

// TestIdempotencyAfterClientHangsUp: a keyed create whose client goes away
// before the answer (the write hung, or committed and then its answer was
// lost) is answered 499 to nobody; the key is released like after a 5xx,
// so the retry with the same key answers 201 with the same ID, and exactly
// one ticket exists. A kept 499 would be replayed to every retry, and a
// client that then took a new key would make a second ticket.
func TestIdempotencyAfterClientHangsUp(t *testing.T) {
	faults := newFaults()
	var logs logBuffer
	ts := MustServer(t, withTransport(faults.wrap), withLog(&logs))
	w := MustWorld(t, ts, "Hang-up")
	defer func() {
		if t.Failed() {
			for _, l := range logs.Lines("request") {
				t.Logf("log: %v", l)
			}
		}
	}()
	for _, c := range []struct {
		name  string
		call  int // which TransactWriteItems of the request: 1 the key's record, 2 the ticket
		fault faultKind
	}{
		{"the key's record committed, its answer was lost", 1, faultCommitThenHang},
		{"the ticket's write hung", 2, faultHang},
		{"the ticket's write committed, its answer was lost", 2, faultCommitThenHang},
	} {
		t.Run(c.name, func(t *testing.T) {
			title, key := ts.UniqueID("hang-up"), ts.UniqueID("hang-up-key")
			body := fmt.Sprintf(`{"title":%q}`, title)
			h := http.Header{"Idempotency-Key": {key}}
			var calls atomic.Int64
			faults.set(func(op string, attempt int) faultKind {
				if op == "TransactWriteItems" && attempt == 1 && calls.Add(1) == int64(c.call) {
					return c.fault
				}
				return faultPass
			})
			impatient := &http.Client{Timeout: 300 * time.Millisecond}
			if r := doReqE(impatient, http.MethodPost, ts.URL+"/v1/orgs/"+w.Org.Id+"/tickets", w.Member.Token, h, body); r.Err == nil {
				t.Fatalf("the impatient client got an answer: %d", r.Status)
			}
			faults.set(nil)
			var first string
			// The server may still be finishing the abandoned attempt: a
			// retry meanwhile is 409 (in progress), then 201.
			deadline := time.Now().Add(30 * time.Second) // a bound for a hang: a busy machine finishes late
			for {
				r := doReq(t, validating(t, ts.HTTP), http.MethodPost, ts.URL+"/v1/orgs/"+w.Org.Id+"/tickets", w.Member.Token, h, body)
				if r.Status == http.StatusConflict && time.Now().Before(deadline) {
					time.Sleep(50 * time.Millisecond)
					continue
				}
				if r.Status != http.StatusCreated {
					t.Fatalf("retry with the same key: %d %s", r.Status, r.Body)
				}
				first = jsonField(t, r.Body, "id")
				break
			}
			again := doReq(t, validating(t, ts.HTTP), http.MethodPost, ts.URL+"/v1/orgs/"+w.Org.Id+"/tickets", w.Member.Token, h, body)
			if again.Status != http.StatusCreated || jsonField(t, again.Body, "id") != first || again.Header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("second retry: %d replayed=%q %s, want the first retry's ticket %s", again.Status, again.Header.Get("Idempotent-Replayed"), again.Body, first)
			}
			n := 0
			for _, it := range itemsOf(t, ts, "Ticket", w.Org.Id) {
				if it.Str("title") == title {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d tickets titled %q, want exactly 1", n, title)
			}
		})
	}
}

// jsonField is a top-level string field of a JSON object.
func jsonField(tb testing.TB, body []byte, name string) string {
	tb.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		tb.Fatalf("decode %s: %v", body, err)
	}
	s, _ := m[name].(string)
	return s
}

// TestIdempotencyKeyFreedAfterDeadline: an attempt that could neither
// finish nor release its key (DynamoDB answered neither) holds the key
// only as long as a request can run (REQUEST_TIMEOUT and 5 s), not a
// minute: then the retry takes it over and creates the ticket once.
func TestIdempotencyKeyFreedAfterDeadline(t *testing.T) {
	t.Parallel() // mostly waits: see TestMain
	faults := newFaults()
	ts := MustServer(t, withTransport(faults.wrap))
	w := MustWorld(t, ts, "Deadline")
	title, key := ts.UniqueID("deadline"), ts.UniqueID("deadline-key")
	body, h := fmt.Sprintf(`{"title":%q}`, title), http.Header{"Idempotency-Key": {key}}
	var calls, releases atomic.Int64
	faults.set(func(op string, attempt int) faultKind {
		switch {
		case op == "TransactWriteItems" && attempt == 1 && calls.Add(1) == 1:
			return faultCommitThenHang // the record lands, its answer is lost
		case op == "UpdateItem":
			releases.Add(1)
			return faultThrottle // and its release cannot be written
		}
		return faultPass
	})
	impatient := &http.Client{Timeout: 300 * time.Millisecond}
	url := ts.URL + "/v1/orgs/" + w.Org.Id + "/tickets"
	if r := doReqE(impatient, http.MethodPost, url, w.Member.Token, h, body); r.Err == nil {
		t.Fatalf("the impatient client got an answer: %d", r.Status)
	}
	// The background release has begun (however late a busy machine
	// starts it), then given up: its deadline is 2 s from its start.
	for end := time.Now().Add(time.Minute); releases.Load() == 0 && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	if releases.Load() == 0 {
		t.Fatal("no release of the key was attempted within a minute")
	}
	time.Sleep(3 * time.Second)
	faults.set(nil)
	if r := doReq(t, validating(t, ts.HTTP), http.MethodPost, url, w.Member.Token, h, body); r.Status != http.StatusConflict {
		t.Fatalf("retry while the attempt may still run: %d %s, want 409", r.Status, r.Body)
	}
	ts.Clock.Advance(15*time.Second + time.Millisecond)
	r := doReq(t, validating(t, ts.HTTP), http.MethodPost, url, w.Member.Token, h, body)
	if r.Status != http.StatusCreated {
		t.Fatalf("retry once no attempt can still run: %d %s, want 201", r.Status, r.Body)
	}
	n := 0
	for _, it := range itemsOf(t, ts, "Ticket", w.Org.Id) {
		if it.Str("title") == title {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d tickets titled %q, want 1", n, title)
	}
}
