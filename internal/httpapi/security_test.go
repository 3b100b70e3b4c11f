package httpapi_test

// Hardening tests: what must still hold when the API is attacked, raced,
// or its database misbehaves. This file holds the helpers the
// hardening_*_test.go files share, and the smaller rules: key injection,
// mass assignment, immediate revocation and limits.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/labstack/echo/v4"

	"github.com/tenantd/tenantd/client"
	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/httpapi"
)

// ---------------------------------------------------------------------------
// Reading the table back (ts.Raw: not recorded, never faulty).

// getRaw reads one item by key with a consistent GetItem; nil when absent.
func getRaw(tb testing.TB, ts *testServer, pk, sk string) dbItem {
	tb.Helper()
	out, err := ts.Raw.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(ts.Table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}}})
	if err != nil {
		tb.Fatalf("get %s/%s: %v", pk, sk, err)
	}
	if out.Item == nil {
		return nil
	}
	return dbItem(out.Item)
}

// dump renders items without their volatile timestamps, sorted, so that
// two dumps compare equal when nothing but time changed.
func dump(items []dbItem) string {
	lines := make([]string, 0, len(items))
	for _, it := range items {
		keys := make([]string, 0, len(it))
		for k := range it {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&b, "%s=%s;", k, renderAV(it[k]))
		}
		lines = append(lines, b.String())
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func renderAV(v types.AttributeValue) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return strconv.Quote(v.Value)
	case *types.AttributeValueMemberN:
		return v.Value
	case *types.AttributeValueMemberBOOL:
		return strconv.FormatBool(v.Value)
	case *types.AttributeValueMemberB:
		return fmt.Sprintf("%x", v.Value)
	case *types.AttributeValueMemberSS:
		s := slices.Clone(v.Value)
		sort.Strings(s)
		return "SS" + strings.Join(s, ",")
	case *types.AttributeValueMemberL:
		parts := make([]string, len(v.Value))
		for i, e := range v.Value {
			parts[i] = renderAV(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case *types.AttributeValueMemberM:
		keys := make([]string, 0, len(v.Value))
		for k := range v.Value {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ":" + renderAV(v.Value[k])
		}
		return "{" + strings.Join(parts, ",") + "}"
	case *types.AttributeValueMemberNULL:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// tenantItems is every item of org in the table except its audit events
// and idempotency records (which refused requests may legitimately leave).
func tenantItems(tb testing.TB, ts *testServer, org string) string {
	tb.Helper()
	var keep []dbItem
	for _, it := range scanAll(tb, ts) {
		if !strings.HasPrefix(it.Str("pk"), "ORG#"+org) && it.Str("orgId") != org {
			continue
		}
		switch it.Str("type") {
		case "AuditEvent", "IdempotencyRecord":
			continue
		}
		keep = append(keep, it)
	}
	return dump(keep)
}

// ---------------------------------------------------------------------------
// Raw HTTP.

// problemCode returns the code of a problem+json body, "" if it is none.
func problemCode(b []byte) string {
	var p struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(b, &p)
	return p.Code
}

// reqRecorder records the DynamoDB operations of each HTTP request, by the
// X-Request-Id the client sent (the server keeps a well-formed one as the
// client request id, beside its own), so that concurrent requests can each
// be checked; attach with withAPIOptions(rr.Middleware).
type reqRecorder struct {
	mu  sync.Mutex
	ops map[string][]string
}

func (rr *reqRecorder) Middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("hardening.reqRecorder",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			rr.mu.Lock()
			if rr.ops == nil {
				rr.ops = map[string][]string{}
			}
			id := audit.ClientRequestID(ctx)
			rr.ops[id] = append(rr.ops[id], middleware.GetOperationName(ctx))
			rr.mu.Unlock()
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
}

// Of returns the operations the request with X-Request-Id id made.
func (rr *reqRecorder) Of(id string) []string {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return slices.Clone(rr.ops[id])
}

var reqSeq atomic.Int64

// newRequestID returns a fresh X-Request-Id.
func newRequestID() string {
	return fmt.Sprintf("hardening-%d-%d", time.Now().UnixNano(), reqSeq.Add(1))
}

// reqJob is one request of a batch run by runJobs.
type reqJob struct {
	what, method, url, token, body string
	header                         http.Header
	check                          func(t *testing.T, r apiResp, ops []string)
}

// runJobs sends jobs from workers goroutines, each with its own
// X-Request-Id, and checks each response with the DynamoDB operations its
// request made.
func runJobs(t *testing.T, rr *reqRecorder, workers int, jobs []reqJob) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	defer hc.CloseIdleConnections()
	ch := make(chan reqJob)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				id := newRequestID()
				h := http.Header{}
				for k, v := range j.header {
					h[k] = v
				}
				h.Set(echo.HeaderXRequestID, id)
				r := doReqE(hc, j.method, j.url, j.token, h, j.body)
				if r.Err != nil {
					t.Errorf("%s: %v", j.what, r.Err)
					continue
				}
				j.check(t, r.Response, rr.Of(id))
			}
		}()
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
}

// ---------------------------------------------------------------------------
// Key injection in every ID position, mass assignment read back
// from the table.

// evilIDs are IDs that must never reach a key. None contains a '/', so each
// still routes to its operation.
var evilIDs = map[string]string{
	"hash":                "01ARZ3NDEKTSV4RRFFQ69G5FAV#USER#x",
	"hash alone":          "#",
	"encoded hash":        "%23",
	"double-encoded hash": "%2523",
	"delimiter prefix":    "ORG#01ARZ3NDEKTSV4RRFFQ69G5FAV",
	"NUL":                 "ab\x00cd",
	"newline":             "ab\ncd",
	"tab":                 "ab\tcd",
	"DEL":                 "ab\x7fcd",
	"129 chars":           strings.Repeat("A", 129),
	"4096 chars":          strings.Repeat("7", 4096),
	"fullwidth hash":      "ab\uff03cd",
	"cyrillic A in ULID":  "01ARZ3NDEKTSV4RRFFQ69G5F\u0410V",
	"zero-width space":    "01ARZ3NDEKTSV4RRFFQ69G5FA\u200b",
	"RTL override":        "ab\u202ecd",
	"combining accent":    "01ARZ3NDEKTSV4RRFFQ69G5FAV\u0301",
	"dot dot":             "..",
	"space":               "a b",
	"invalid UTF-8":       "ab\xff\xfe",
	"lower-case ULID":     "01arz3ndektsv4rrffq69g5fav", // not for user IDs (below)
}

// coreEvil are the evilIDs tried at every position.
var coreEvil = map[string]bool{"hash": true, "encoded hash": true, "NUL": true, "129 chars": true,
	"fullwidth hash": true, "cyrillic A in ULID": true}

// validUserIDs are in evilIDs but fine as user IDs: their alphabet has
// lower case letters. (".." is not: an ID of dots only is a dot segment.)
var validUserIDs = map[string]bool{"lower-case ULID": true}

// isUserField reports whether a path parameter or body field holds a user ID.
func isUserField(name string) bool { return name == "userId" || name == "assigneeId" }

// pathParam matches a path template's parameters.
var pathParam = regexp.MustCompile(`\{([A-Za-z]+)\}`)

// TestKeyInjection puts every hostile ID into every path parameter
// of every operation of openapi.yaml (the others valid), and into every ID
// a request body carries: each is a 400 before any DynamoDB call.
func TestKeyInjection(t *testing.T) {
	rr := &reqRecorder{}
	ts := MustServer(t, withAPIOptions(rr.Middleware))
	w := MustWorld(t, ts, "Injected")
	inv := MustInvitation(t, w.Owner.C, w.Org.Id, "injected-invitee@example.com", client.RoleMember)
	valid := map[string]string{"orgId": w.Org.Id, "teamId": w.Team.Id, "ticketId": w.Ticket.Id, "userId": w.TeamMember.ID,
		"invitationId": inv.Id, "token": inv.Token, "webhookId": randULID(), "deliveryId": randULID(), "keyId": randULID()}
	before := tenantItems(t, ts, w.Org.Id)
	tokenAlphabet := regexp.MustCompile(`^[A-Za-z0-9._-]{20,200}$`)
	doc, _ := loadSpec(t)
	var jobs []reqJob
	positions := 0
	tried := map[string]bool{}
	for _, op := range specOperations(doc) {
		params := pathParam.FindAllStringSubmatch(op.Path, -1)
		for _, p := range params {
			param := p[1]
			if _, ok := valid[param]; !ok {
				t.Fatalf("%s: path parameter %s has no valid value in this test: add it", op.ID, param)
			}
			positions++
			// Every hostile ID at the first position of each parameter,
			// the core ones at every other position.
			full := !tried[param]
			tried[param] = true
			for name, evil := range evilIDs {
				if isUserField(param) && validUserIDs[name] || !full && !coreEvil[name] {
					continue
				}
				path := op.Path
				for _, q := range params {
					v := valid[q[1]]
					if q[1] == param {
						v = evil
					}
					path = strings.ReplaceAll(path, q[0], url.PathEscape(v))
				}
				what := fmt.Sprintf("%s with %s=%s (%q)", op.ID, param, name, truncate([]byte(evil)))
				// A token in the token alphabet that is no token is the
				// documented, indistinguishable 404 (still without a call).
				tokenShaped := param == "token" && tokenAlphabet.MatchString(evil)
				jobs = append(jobs, reqJob{what: what, method: op.Method, url: ts.URL + path, token: w.Owner.Token,
					body: requests[op.ID](opIDs{OrgID: w.Org.Id, TeamID: w.Team.Id, TicketID: w.Ticket.Id, UserID: w.TeamMember.ID}),
					check: func(t *testing.T, r apiResp, ops []string) {
						if r.Status != http.StatusBadRequest && !(tokenShaped && r.Status == http.StatusNotFound) {
							t.Errorf("%s: status %d, want 400: %s", what, r.Status, truncate(r.Body))
						}
						if len(ops) != 0 {
							t.Errorf("%s: DynamoDB calls %v, want none", what, ops)
						}
					}})
			}
		}
	}
	if positions < 10 {
		t.Fatalf("only %d ID positions found in openapi.yaml paths", positions)
	}

	// IDs inside bodies: assigneeId/teamId of tickets, teamIds of
	// invitations, userId of a new org user.
	org, tk := w.Org.Id, w.Ticket.Id
	bodies := []struct {
		name, field, method, path string
		body                      func(evil string) string
	}{
		{"createTicket", "teamId", http.MethodPost, "/v1/orgs/" + org + "/tickets", func(e string) string { return jsonOf(map[string]any{"title": "x", "teamId": e}) }},
		{"createTicket", "assigneeId", http.MethodPost, "/v1/orgs/" + org + "/tickets", func(e string) string { return jsonOf(map[string]any{"title": "x", "assigneeId": e}) }},
		{"updateTicket", "teamId", http.MethodPatch, "/v1/orgs/" + org + "/tickets/" + tk, func(e string) string { return jsonOf(map[string]any{"teamId": e}) }},
		{"updateTicket", "assigneeId", http.MethodPatch, "/v1/orgs/" + org + "/tickets/" + tk, func(e string) string { return jsonOf(map[string]any{"assigneeId": e}) }},
		{"createInvitation", "teamIds", http.MethodPost, "/v1/orgs/" + org + "/invitations", func(e string) string {
			return jsonOf(map[string]any{"email": "evil@example.com", "role": "member", "teamIds": []string{e}})
		}},
		{"addOrgUser", "userId", http.MethodPost, "/v1/orgs/" + org + "/users", func(e string) string {
			return jsonOf(map[string]any{"userId": e, "email": "evil@example.com", "name": "Evil", "role": "member"})
		}},
	}
	for _, b := range bodies {
		for name, evil := range evilIDs {
			if isUserField(b.field) && validUserIDs[name] {
				continue
			}
			what := fmt.Sprintf("%s with %s=%s in the body", b.name, b.field, name)
			jobs = append(jobs, reqJob{what: what, method: b.method, url: ts.URL + b.path, token: w.Owner.Token, body: b.body(evil),
				check: func(t *testing.T, r apiResp, ops []string) {
					if r.Status != http.StatusBadRequest {
						t.Errorf("%s: status %d, want 400: %s", what, r.Status, truncate(r.Body))
					}
					if len(ops) != 0 {
						t.Errorf("%s: DynamoDB calls %v, want none", what, ops)
					}
				}})
		}
	}
	// An email is no ID, but one with the key delimiter never reaches a
	// key either: it is refused after the authorization read, before any
	// write.
	jobs = append(jobs, reqJob{what: "addOrgUser with a '#' in the email", method: http.MethodPost, url: ts.URL + "/v1/orgs/" + org + "/users",
		token: w.Owner.Token, body: jsonOf(map[string]any{"userId": "evil.user", "email": "a#b@example.com", "name": "Evil", "role": "member"}),
		check: func(t *testing.T, r apiResp, ops []string) {
			if r.Status != http.StatusBadRequest || !slices.Equal(ops, []string{"BatchGetItem"}) {
				t.Errorf("email with '#': status %d, DynamoDB calls %v; want 400 after the authorization read only: %s", r.Status, ops, truncate(r.Body))
			}
		}})
	began := time.Now()
	runJobs(t, rr, 16, jobs)
	t.Logf("%d requests in %v", len(jobs), time.Since(began))
	if after := tenantItems(t, ts, w.Org.Id); after != before {
		t.Errorf("refused requests changed the tenant's items:\n%s", diff(before, after))
	}
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestMassAssignment sends every read-only or foreign field
// (orgId, OrgID, id, version, requesterId, memberCount, role
// where a role is not the caller's to choose, and more) in every body it
// could sneak into, in several spellings: each is a 400, and every item of
// the tenant in the TABLE is unchanged.
func TestMassAssignment(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Assigned")
	org := w.Org.Id
	inv := MustInvitation(t, w.Owner.C, org, "mass-invitee@example.com", client.RoleMember)
	other := MustOrg(t, w.Owner.C, "Other org")
	forged := map[string]any{
		"orgId": other.Id, "OrgID": other.Id, "orgID": other.Id, "ORGID": other.Id, "org_id": other.Id,
		"id": "01ARZ3NDEKTSV4RRFFQ69G5FAV", "ID": "01ARZ3NDEKTSV4RRFFQ69G5FAV", "Id": "01ARZ3NDEKTSV4RRFFQ69G5FAV",
		"version": 99, "Version": 99, "requesterId": w.Owner.ID, "RequesterID": w.Owner.ID,
		"memberCount": 1000, "MemberCount": 1000, "commentCount": 1000, "ownerCount": 1000,
		"role": "owner", "Role": "owner", "userId": w.Owner.ID, "UserID": w.Owner.ID, "authorId": w.Owner.ID,
		"teamId": w.Team.Id, "createdAt": "2000-01-01T00:00:00Z", "updatedAt": "2000-01-01T00:00:00Z",
		"joinedAt": "2000-01-01T00:00:00Z", "status": "closed", "pk": "ORG#" + other.Id, "sk": "#METADATA",
		"type": "Org", "deleting": true, "tokenHash": "x", "invitedBy": w.Owner.ID, "token": "chosen-by-the-client-0123456789",
		"__proto__": map[string]any{"role": "owner"}, "NAME": "Shouting", "Name": "Capitalised",
	}
	// The valid base body of each operation, and the fields its schema
	// legitimately has (those are not injected into it).
	ops := []struct {
		id, method, path string
		base             map[string]any
	}{
		{"createOrg", http.MethodPost, "/v1/orgs", map[string]any{"name": "Mass"}},
		{"updateOrg", http.MethodPatch, "/v1/orgs/" + org, map[string]any{"name": "Mass"}},
		{"addOrgUser", http.MethodPost, "/v1/orgs/" + org + "/users", map[string]any{"userId": "mass.user", "email": "mass@example.com", "name": "Mass", "role": "member"}},
		{"updateOrgUser", http.MethodPatch, "/v1/orgs/" + org + "/users/" + w.Member.ID, map[string]any{"name": "Mass"}},
		{"createTeam", http.MethodPost, "/v1/orgs/" + org + "/teams", map[string]any{"name": "Mass"}},
		{"updateTeam", http.MethodPatch, "/v1/orgs/" + org + "/teams/" + w.Team.Id, map[string]any{"name": "Mass"}},
		{"putTeamMember", http.MethodPut, "/v1/orgs/" + org + "/teams/" + w.Team.Id + "/members/" + w.TeamMember.ID, map[string]any{"role": "member"}},
		{"createTicket", http.MethodPost, "/v1/orgs/" + org + "/tickets", map[string]any{"title": "Mass"}},
		{"updateTicket", http.MethodPatch, "/v1/orgs/" + org + "/tickets/" + w.Ticket.Id, map[string]any{"title": "Mass"}},
		{"createComment", http.MethodPost, "/v1/orgs/" + org + "/tickets/" + w.Ticket.Id + "/comments", map[string]any{"body": "Mass"}},
		{"createInvitation", http.MethodPost, "/v1/orgs/" + org + "/invitations", map[string]any{"email": "mass2@example.com", "role": "member"}},
	}
	allowed := map[string][]string{ // the schema's own fields (exact spelling)
		"addOrgUser": {"userId", "role"}, "updateOrgUser": {"role"}, "putTeamMember": {"role"},
		"createTicket": {"teamId"}, "updateTicket": {"teamId", "status"}, "createInvitation": {"role"},
	}
	before := tenantItems(t, ts, org)
	beforeOther := tenantItems(t, ts, other.Id)
	myOrgs := func() int {
		l, err := w.Owner.C.ListOrgsWithResponse(bg, nil)
		mustStatus(t, l, err, http.StatusOK)
		return len(l.JSON200.Items)
	}
	orgsBefore := myOrgs()
	hc := &http.Client{}
	for _, op := range ops {
		for field, v := range forged {
			if slices.Contains(allowed[op.id], field) {
				continue
			}
			if _, own := op.base[field]; own {
				continue
			}
			body := map[string]any{}
			for k, bv := range op.base {
				body[k] = bv
			}
			body[field] = v
			ts.Rec.Reset()
			r := doReq(t, hc, op.method, ts.URL+op.path, w.Owner.Token, nil, jsonOf(body))
			if r.Status != http.StatusBadRequest {
				t.Errorf("%s with %q: status %d, want 400: %s", op.id, field, r.Status, truncate(r.Body))
			}
			if n := ts.Rec.Count(); n != 0 {
				t.Errorf("%s with %q: %d DynamoDB call(s) (%s), want 0: refused by the schema", op.id, field, n, ts.Rec.Names())
			}
		}
	}
	if after := tenantItems(t, ts, org); after != before {
		t.Errorf("refused requests changed org items in the table:\n%s", diff(before, after))
	}
	if after := tenantItems(t, ts, other.Id); after != beforeOther {
		t.Errorf("refused requests changed the other org's items:\n%s", diff(beforeOther, after))
	}
	if n := myOrgs(); n != orgsBefore {
		t.Errorf("orgs of the owner: %d, want %d", n, orgsBefore)
	}
	// Duplicate keys: the value the schema and the policy check is the
	// value applied. An admin may not grant owner, however it is spelt.
	dup := ts.Actor(t, "dup")
	MustUser(t, w.Owner.C, org, dup, client.RoleMember)
	for _, c := range []struct {
		body string
		ok   bool
	}{
		{`{"role":"member","role":"owner"}`, false},
		{`{"role":"owner","role":"admin"}`, true},
	} {
		r := doReq(t, hc, http.MethodPatch, ts.URL+"/v1/orgs/"+org+"/users/"+dup.ID, w.Admin.Token, nil, c.body)
		role := getRaw(t, ts, "ORG#"+org, "USER#"+dup.ID).Str("role")
		switch {
		case r.Status == http.StatusBadRequest:
		case !c.ok && (r.Status != http.StatusForbidden || role != "member"):
			t.Errorf("admin sends %s: %d, role now %s; want 403 (or 400) and member", c.body, r.Status, role)
		case c.ok && (r.Status != http.StatusOK || role != "admin"):
			t.Errorf("admin sends %s: %d, role now %s; want 200 and admin (the last value)", c.body, r.Status, role)
		}
		if role == "owner" {
			t.Errorf("admin made %s an owner with %s", dup.ID, c.body)
		}
	}
	// acceptInvitation has no body: one sent anyway changes nothing of the
	// invitation's role.
	joiner := ts.Invitee(t, "joiner", "mass-invitee@example.com")
	a := doReq(t, hc, http.MethodPost, ts.URL+"/v1/invitations/"+inv.Token+"/accept", joiner.Token, nil, `{"role":"owner","orgId":"`+other.Id+`"}`)
	switch a.Status {
	case http.StatusBadRequest:
	case http.StatusCreated:
		var got client.InvitationAccepted
		if err := json.Unmarshal(a.Body, &got); err != nil {
			t.Fatal(err)
		}
		if got.OrgId != org || got.User.Role != client.RoleMember {
			t.Errorf("accept with a forged body: joined %s as %s, want %s as member", got.OrgId, got.User.Role, org)
		}
		it := getRaw(t, ts, "ORG#"+org, "USER#"+joiner.ID)
		if it == nil || it.Str("role") != "member" {
			t.Errorf("accepted user's item: %v", it)
		}
		if getRaw(t, ts, "ORG#"+other.Id, "USER#"+joiner.ID) != nil {
			t.Errorf("the forged orgId let the joiner into %s", other.Id)
		}
	default:
		t.Errorf("accept with a body: status %d: %s", a.Status, a.Body)
	}
}

// ---------------------------------------------------------------------------
// Revocation is immediate.

// TestRevocation removes users from orgs and teams, and demotes
// them, and sends their very next request at once with their still valid
// token: it is refused as the README's matrix says, after ONE consistent
// authorization read (no cache, no eventually consistent index).
func TestRevocation(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Revoked")
	org := w.Org.Id
	wantOps := func(t *testing.T, want ...string) {
		t.Helper()
		ops := ts.Rec.Ops()
		if len(ops) < len(want) {
			t.Fatalf("DynamoDB calls: %s, want at least %v", ts.Rec.Names(), want)
		}
		for i, w := range want {
			if got := ops[i].String(); got != w {
				t.Errorf("DynamoDB call %d: %s, want %s (all: %s)", i, got, w, ts.Rec.Names())
			}
		}
	}
	t.Run("org user removed", func(t *testing.T) {
		for i := range 10 { // several rounds: no cache may answer for the edge
			u := ts.Actor(t, "leaver")
			MustUser(t, w.Owner.C, org, u, client.RoleAdmin)
			g, err := u.C.GetOrgWithResponse(bg, org, nil)
			mustStatus(t, g, err, http.StatusOK)
			d, err := w.Owner.C.RemoveOrgUserWithResponse(bg, org, u.ID, nil)
			mustStatus(t, d, err, http.StatusNoContent)
			ts.Rec.Reset()
			r, err := u.C.CreateTeamWithResponse(bg, org, nil, client.TeamCreate{Name: fmt.Sprintf("after removal %d", i)})
			wantProblem(t, r, err, http.StatusNotFound, "org_not_found")
			if got := ts.Rec.Names(); got != "BatchGetItem+consistent" {
				t.Errorf("DynamoDB calls: %s, want exactly the consistent authorization read", got)
			}
			ts.Rec.Reset()
			l, err := u.C.ListTicketsWithResponse(bg, org, nil)
			wantProblem(t, l, err, http.StatusNotFound, "org_not_found")
			if got := ts.Rec.Names(); got != "BatchGetItem+consistent" {
				t.Errorf("DynamoDB calls: %s, want exactly the consistent authorization read", got)
			}
		}
	})
	t.Run("user removes themself", func(t *testing.T) {
		u := ts.Actor(t, "quitter")
		MustUser(t, w.Owner.C, org, u, client.RoleMember)
		d, err := u.C.RemoveOrgUserWithResponse(bg, org, u.ID, nil)
		mustStatus(t, d, err, http.StatusNoContent)
		r, err := u.C.GetOrgWithResponse(bg, org, nil)
		wantProblem(t, r, err, http.StatusNotFound, "org_not_found")
	})
	t.Run("admin demoted", func(t *testing.T) {
		u := ts.Actor(t, "demoted")
		MustUser(t, w.Owner.C, org, u, client.RoleAdmin)
		MustTeam(t, u.C, org, "made while admin")
		p, err := w.Owner.C.UpdateOrgUserWithResponse(bg, org, u.ID, nil, client.OrgUserUpdate{Role: ptr(client.RoleMember)})
		mustStatus(t, p, err, http.StatusOK)
		ts.Rec.Reset()
		r, err := u.C.CreateTeamWithResponse(bg, org, nil, client.TeamCreate{Name: "made after demotion"})
		wantProblem(t, r, err, http.StatusForbidden, "forbidden")
		wantOps(t, "BatchGetItem+consistent")
		// Still a member: reads go on.
		g, err := u.C.GetOrgWithResponse(bg, org, nil)
		mustStatus(t, g, err, http.StatusOK)
	})
	t.Run("team admin removed from team", func(t *testing.T) {
		u := ts.Actor(t, "ex-team-admin")
		MustUser(t, w.Owner.C, org, u, client.RoleMember)
		MustMember(t, w.Owner.C, org, w.Team.Id, u.ID, client.RoleAdmin)
		ok, err := u.C.UpdateTeamWithResponse(bg, org, w.Team.Id, nil, client.TeamUpdate{Description: ptr("while team admin")})
		mustStatus(t, ok, err, http.StatusOK)
		d, err := w.Owner.C.RemoveTeamMemberWithResponse(bg, org, w.Team.Id, u.ID, nil)
		mustStatus(t, d, err, http.StatusNoContent)
		ts.Rec.Reset()
		r, err := u.C.PutTeamMemberWithResponse(bg, org, w.Team.Id, w.Member.ID, nil, client.TeamMemberPut{Role: client.RoleMember})
		wantProblem(t, r, err, http.StatusForbidden, "forbidden")
		// The authorization read, with the target's edge and the caller's
		// own edge of the team (gone): one consistent read, nothing written.
		if ops := ts.Rec.Ops(); len(ops) != 1 || ops[0].String() != "BatchGetItem+consistent" || ops[0].Items != 4 {
			t.Errorf("DynamoDB calls: %s, want the authorization read of org, edge, target and team edge alone", ts.Rec.Trips())
		}
		g, err := w.Owner.C.GetTeamMemberWithResponse(bg, org, w.Team.Id, w.Member.ID, nil)
		wantProblem(t, g, err, http.StatusNotFound, "")
	})
	t.Run("team owner demoted to member", func(t *testing.T) {
		u := ts.Actor(t, "ex-team-owner")
		MustUser(t, w.Owner.C, org, u, client.RoleMember)
		tm := MustTeam(t, w.Owner.C, org, "Demotion team")
		MustMember(t, w.Owner.C, org, tm.Id, u.ID, client.RoleOwner)
		MustMember(t, w.Owner.C, org, tm.Id, u.ID, client.RoleMember)
		r, err := u.C.DeleteTeamWithResponse(bg, org, tm.Id, nil)
		wantProblem(t, r, err, http.StatusForbidden, "forbidden")
	})
	t.Run("requester removed from org", func(t *testing.T) {
		u := ts.Actor(t, "ex-requester")
		MustUser(t, w.Owner.C, org, u, client.RoleMember)
		tk := MustTicket(t, u.C, org, client.TicketCreate{Title: "mine"})
		d, err := w.Owner.C.RemoveOrgUserWithResponse(bg, org, u.ID, nil)
		mustStatus(t, d, err, http.StatusNoContent)
		r, err := u.C.DeleteTicketWithResponse(bg, org, tk.Id, nil)
		wantProblem(t, r, err, http.StatusNotFound, "org_not_found")
		if getRaw(t, ts, "ORG#"+org+"#TICKET#"+tk.Id, "#METADATA") == nil {
			t.Error("the removed requester deleted their ticket")
		}
	})
}

// ---------------------------------------------------------------------------
// Limits.

// TestLimits: bodies over 64 KiB are a 413 before authentication
// (no DynamoDB call, whatever the token), and every documented bound of a
// field or parameter is a 400 before any DynamoDB call, while the bound
// itself is accepted.
func TestLimits(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Limits")
	org, tk := w.Org.Id, w.Ticket.Id
	hc := &http.Client{}
	big := `{"title":"` + strings.Repeat("x", 64<<10) + `"}`
	t.Run("413 before authentication", func(t *testing.T) {
		for _, token := range []string{w.Member.Token, "", "garbage"} {
			ts.Rec.Reset()
			r := doReq(t, hc, http.MethodPost, ts.URL+"/v1/orgs/"+org+"/tickets", token, nil, big)
			if r.Status != http.StatusRequestEntityTooLarge || problemCode(r.Body) != "body_too_large" {
				t.Errorf("token %q: status %d (%s), want 413 body_too_large", token, r.Status, truncate(r.Body))
			}
			if n := ts.Rec.Count(); n != 0 {
				t.Errorf("token %q: %d DynamoDB calls (%s), want 0", token, n, ts.Rec.Names())
			}
		}
		// The limit is 64 KiB (65,536 bytes, httpapi.MaxBodyBytes, the
		// README's "64 KiB"): a body of that size, or of 64,001 bytes, is
		// not refused for its size; one byte more is.
		for _, size := range []int{64_001, httpapi.MaxBodyBytes} {
			pad := size - len(`{"title":"x","description":""}`)
			body := `{"title":"x","description":"` + strings.Repeat("d", pad) + `"}`
			r := doReq(t, hc, http.MethodPost, ts.URL+"/v1/orgs/"+org+"/tickets", w.Member.Token, nil, body)
			if r.Status == http.StatusRequestEntityTooLarge {
				t.Errorf("a body of %d bytes (<= %d): 413", size, httpapi.MaxBodyBytes)
			}
		}
		over := `{"title":"x","description":"` + strings.Repeat("d", httpapi.MaxBodyBytes+1-len(`{"title":"x","description":""}`)) + `"}`
		if r := doReq(t, hc, http.MethodPost, ts.URL+"/v1/orgs/"+org+"/tickets", w.Member.Token, nil, over); r.Status != http.StatusRequestEntityTooLarge {
			t.Errorf("a body of %d bytes: status %d, want 413", len(over), r.Status)
		}
	})
	s := func(n int, c string) string { return strings.Repeat(c, n) }
	tags := func(n, l int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%0*d", l, i)
		}
		return out
	}
	cases := []struct {
		name, method, path string
		ok, bad            any // a body at the bound (accepted) and one beyond it (400)
	}{
		{"createTicket title", http.MethodPost, "/v1/orgs/" + org + "/tickets",
			map[string]any{"title": s(200, "t")}, map[string]any{"title": s(201, "t")}},
		{"createTicket empty title", http.MethodPost, "/v1/orgs/" + org + "/tickets",
			map[string]any{"title": "t"}, map[string]any{"title": ""}},
		{"createTicket multibyte title", http.MethodPost, "/v1/orgs/" + org + "/tickets",
			map[string]any{"title": s(200, "é")}, map[string]any{"title": s(201, "é")}},
		{"createTicket description", http.MethodPost, "/v1/orgs/" + org + "/tickets",
			map[string]any{"title": "t", "description": s(20000, "d")}, map[string]any{"title": "t", "description": s(20001, "d")}},
		{"createTicket tags count", http.MethodPost, "/v1/orgs/" + org + "/tickets",
			map[string]any{"title": "t", "tags": tags(20, 2)}, map[string]any{"title": "t", "tags": tags(21, 2)}},
		{"createTicket tag length", http.MethodPost, "/v1/orgs/" + org + "/tickets",
			map[string]any{"title": "t", "tags": tags(1, 50)}, map[string]any{"title": "t", "tags": tags(1, 51)}},
		{"createTicket empty tag", http.MethodPost, "/v1/orgs/" + org + "/tickets",
			map[string]any{"title": "t", "tags": []string{"a"}}, map[string]any{"title": "t", "tags": []string{""}}},
		{"updateTicket tags count", http.MethodPatch, "/v1/orgs/" + org + "/tickets/" + tk,
			map[string]any{"tags": tags(20, 3)}, map[string]any{"tags": tags(21, 3)}},
		{"updateTicket title", http.MethodPatch, "/v1/orgs/" + org + "/tickets/" + tk,
			map[string]any{"title": s(200, "u")}, map[string]any{"title": s(201, "u")}},
		{"createComment body", http.MethodPost, "/v1/orgs/" + org + "/tickets/" + tk + "/comments",
			map[string]any{"body": s(20000, "c")}, map[string]any{"body": s(20001, "c")}},
		{"createComment empty body", http.MethodPost, "/v1/orgs/" + org + "/tickets/" + tk + "/comments",
			map[string]any{"body": "c"}, map[string]any{"body": ""}},
		{"createOrg name", http.MethodPost, "/v1/orgs", map[string]any{"name": s(200, "o")}, map[string]any{"name": s(201, "o")}},
		{"createTeam name", http.MethodPost, "/v1/orgs/" + org + "/teams", map[string]any{"name": s(200, "n")}, map[string]any{"name": s(201, "n")}},
		{"createTeam description", http.MethodPost, "/v1/orgs/" + org + "/teams",
			map[string]any{"name": "d1", "description": s(2000, "d")}, map[string]any{"name": "d2", "description": s(2001, "d")}},
		{"addOrgUser name", http.MethodPost, "/v1/orgs/" + org + "/users",
			map[string]any{"userId": "limit.user", "email": "limit@example.com", "name": s(200, "n"), "role": "member"},
			map[string]any{"userId": "limit.user2", "email": "limit2@example.com", "name": s(201, "n"), "role": "member"}},
		{"addOrgUser email", http.MethodPost, "/v1/orgs/" + org + "/users",
			map[string]any{"userId": "limit.user3", "email": s(64, "e") + "@" + s(60, "d") + ".example.com", "name": "n", "role": "member"},
			map[string]any{"userId": "limit.user4", "email": s(64, "e") + "@" + s(180, "d") + ".example.com", "name": "n", "role": "member"}},
		{"createInvitation teamIds", http.MethodPost, "/v1/orgs/" + org + "/invitations",
			map[string]any{"email": "inv-ok@example.com", "role": "member", "teamIds": []string{w.Team.Id}},
			map[string]any{"email": "inv-bad@example.com", "role": "member", "teamIds": func() []string {
				out := make([]string, 21)
				for i := range out {
					out[i] = fmt.Sprintf("01ARZ3NDEKTSV4RRFFQ69G5F%02d", i)
				}
				return out
			}()}},
		{"createInvitation expiresInDays", http.MethodPost, "/v1/orgs/" + org + "/invitations",
			map[string]any{"email": "exp-ok@example.com", "role": "member", "expiresInDays": 30},
			map[string]any{"email": "exp-bad@example.com", "role": "member", "expiresInDays": 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts.Rec.Reset()
			r := doReq(t, hc, c.method, ts.URL+c.path, w.Owner.Token, nil, jsonOf(c.bad))
			if r.Status != http.StatusBadRequest {
				t.Errorf("beyond the bound: status %d, want 400: %s", r.Status, truncate(r.Body))
			}
			if n := ts.Rec.Count(); n != 0 {
				t.Errorf("beyond the bound: %d DynamoDB calls (%s), want 0", n, ts.Rec.Names())
			}
			r = doReq(t, hc, c.method, ts.URL+c.path, w.Owner.Token, nil, jsonOf(c.ok))
			if r.Status >= 300 {
				t.Errorf("at the bound: status %d, want success: %s", r.Status, truncate(r.Body))
			}
		})
	}
	for _, q := range []string{"limit=0", "limit=101", "limit=-1", "limit=abc", "limit=1e3", "limit=99999999999999999999", "limit=1.5",
		"limit=", "limit=1&limit=2", "cursor=" + s(2049, "c"), "status=lost", "expand=requester,everything"} {
		t.Run("query "+truncate([]byte(q))[:min(len(q), 40)], func(t *testing.T) {
			ts.Rec.Reset()
			r := doReq(t, hc, http.MethodGet, ts.URL+"/v1/orgs/"+org+"/tickets?"+q, w.Owner.Token, nil, "")
			if r.Status != http.StatusBadRequest {
				t.Errorf("%s: status %d, want 400: %s", q, r.Status, truncate(r.Body))
			}
			// A repeated parameter is refused by the handler's binding,
			// after the authorization read; everything else before it.
			if n := ts.Rec.Count(); n != 0 && !(q == "limit=1&limit=2" && ts.Rec.Names() == "BatchGetItem+consistent") {
				t.Errorf("%s: %d DynamoDB calls (%s), want 0", q, n, ts.Rec.Names())
			}
		})
	}
	for _, q := range []string{"limit=1", "limit=100"} {
		r := doReq(t, hc, http.MethodGet, ts.URL+"/v1/orgs/"+org+"/tickets?"+q, w.Owner.Token, nil, "")
		if r.Status != http.StatusOK {
			t.Errorf("%s: status %d, want 200", q, r.Status)
		}
	}
}

// ---------------------------------------------------------------------------
// Shared by the fault and race tests.

// parallel runs f(i) for i in [0, n) in n goroutines released at once, and
// waits for them.
func parallel(n int, f func(i int)) {
	var start, done sync.WaitGroup
	start.Add(1)
	done.Add(n)
	for i := range n {
		go func() {
			defer done.Done()
			start.Wait()
			f(i)
		}()
	}
	start.Done()
	done.Wait()
}

// statusCounts tallies statuses.
type statusCounts struct {
	mu sync.Mutex
	m  map[int]int
}

func (c *statusCounts) add(status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[int]int{}
	}
	c.m[status]++
}

func (c *statusCounts) get(status int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[status]
}

func (c *statusCounts) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]int, 0, len(c.m))
	for k := range c.m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var b bytes.Buffer
	for _, k := range keys {
		fmt.Fprintf(&b, "%d x%d ", k, c.m[k])
	}
	return strings.TrimSpace(b.String())
}

// diff shows the lines only in a (-) and only in b (+) of two dumpAll.
func diff(a, b string) string {
	as, bs := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for _, l := range as {
		if !slices.Contains(bs, l) {
			out = append(out, "- "+l)
		}
	}
	for _, l := range bs {
		if !slices.Contains(as, l) {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

// afterAuthorization runs a hook once, right after the next authorization
// read (a consistent BatchGetItem) has answered and before the request
// goes on: the moment between the decision and the write, where a
// revocation must still stop the write (the actor fence). Attach with
// withAPIOptions(h.middleware); arm with h.arm.
type afterAuthorization struct{ hook atomic.Pointer[func()] }

func (h *afterAuthorization) arm(f func()) { h.hook.Store(&f) }

func (h *afterAuthorization) middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("httpapi_test.afterAuthorization",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleInitialize(ctx, in)
			if middleware.GetOperationName(ctx) == "BatchGetItem" {
				if f := h.hook.Swap(nil); f != nil {
					(*f)()
				}
			}
			return out, md, err
		}), middleware.After)
}

// TestCreatesProveAccess: the decision is made before a create, and the
// create's transaction proves the caller's edge again (the actor fence), so
// a member removed or an org offboarded between the decision and the write
// writes nothing.
func TestCreatesProveAccess(t *testing.T) {
	hook := &afterAuthorization{}
	ts := MustServer(t, withAPIOptions(hook.middleware))
	w := MustWorld(t, ts, "Proven")
	org := w.Org.Id
	stranger := ts.Actor(t, "stranger")
	// written counts the items of typ whose attribute has value.
	written := func(t *testing.T, typ, attr, value string) int {
		t.Helper()
		n := 0
		for _, it := range itemsOf(t, ts, typ, "") {
			if it.Str(attr) == value {
				n++
			}
		}
		return n
	}
	// setAttr sets (or, with nil, removes) an attribute of the item at
	// pk/sk behind the server's back.
	setAttr := func(t *testing.T, pk, sk, expr string, vals map[string]types.AttributeValue) {
		t.Helper()
		if _, err := ts.Raw.UpdateItem(bg, &dynamodb.UpdateItemInput{TableName: aws.String(ts.Table),
			Key:              map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}},
			UpdateExpression: aws.String(expr), ExpressionAttributeValues: vals}); err != nil {
			t.Error(err)
		}
	}
	t.Run("404/a stranger's create sends no write", func(t *testing.T) {
		ts.Rec.Reset()
		r, err := stranger.C.CreateTicketWithResponse(bg, org, nil, client.TicketCreate{Title: "stranger's", AssigneeId: &w.Member.ID, TeamId: &w.Team.Id})
		wantProblem(t, r, err, http.StatusNotFound, "org_not_found")
		c, err := stranger.C.CreateCommentWithResponse(bg, org, w.Ticket.Id, nil, client.CommentCreate{Body: "stranger's"})
		wantProblem(t, c, err, http.StatusNotFound, "org_not_found")
		if got := ts.Rec.Names(); got != "BatchGetItem+consistent, BatchGetItem+consistent" {
			t.Errorf("DynamoDB calls %q, want the two authorization reads only: a stranger's transaction would touch the org's ticket, team and user edge", got)
		}
		// Not the 400 of a bad body: the decision's 404 comes first.
		b, err := stranger.C.CreateTicketWithResponse(bg, org, nil, client.TicketCreate{Title: "bell\u0007"})
		wantProblem(t, b, err, http.StatusNotFound, "org_not_found")
	})
	t.Run("404/removed after the decision: the fence refuses", func(t *testing.T) {
		u := ts.Actor(t, "removed")
		MustUser(t, w.Owner.C, org, u, client.RoleMember)
		for _, create := range []func() (statusCoder, error){
			func() (statusCoder, error) {
				return u.C.CreateTicketWithResponse(bg, org, nil, client.TicketCreate{Title: "after removal"})
			},
			func() (statusCoder, error) {
				return u.C.CreateCommentWithResponse(bg, org, w.Ticket.Id, nil, client.CommentCreate{Body: "after removal"})
			},
		} {
			// The edge marked as an offboarding marks it: gone for the fence.
			hook.arm(func() {
				setAttr(t, "ORG#"+org, "USER#"+u.ID, "SET deleting = :t", map[string]types.AttributeValue{":t": &types.AttributeValueMemberBOOL{Value: true}})
			})
			ts.Rec.Reset()
			r, err := create()
			wantProblem(t, r, err, http.StatusNotFound, "org_not_found")
			if !strings.Contains(ts.Rec.Names(), "TransactWriteItems") {
				t.Errorf("DynamoDB calls %q: no write went out, so the fence was not what refused", ts.Rec.Names())
			}
			setAttr(t, "ORG#"+org, "USER#"+u.ID, "REMOVE deleting", nil)
		}
		if n := written(t, "Ticket", "title", "after removal") + written(t, "Comment", "body", "after removal"); n != 0 {
			t.Errorf("%d items of a removed member's creates in the table", n)
		}
	})
	t.Run("403/demoted after the decision: the fence refuses", func(t *testing.T) {
		u := ts.Actor(t, "demoted")
		MustUser(t, w.Owner.C, org, u, client.RoleAdmin)
		// The edge's role changed to member ("role" is a reserved word).
		hook.arm(func() {
			if _, err := ts.Raw.UpdateItem(bg, &dynamodb.UpdateItemInput{TableName: aws.String(ts.Table),
				Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "ORG#" + org}, "sk": &types.AttributeValueMemberS{Value: "USER#" + u.ID}},
				UpdateExpression:          aws.String("SET #r = :m"),
				ExpressionAttributeNames:  map[string]string{"#r": "role"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":m": &types.AttributeValueMemberS{Value: "member"}}}); err != nil {
				t.Error(err)
			}
		})
		ts.Rec.Reset()
		r, err := u.C.CreateTeamWithResponse(bg, org, nil, client.TeamCreate{Name: "made while demoted"})
		wantProblem(t, r, err, http.StatusForbidden, "forbidden")
		if !strings.Contains(ts.Rec.Names(), "TransactWriteItems") {
			t.Errorf("DynamoDB calls %q: no write went out, so the fence was not what refused", ts.Rec.Names())
		}
		if n := written(t, "Team", "name", "made while demoted"); n != 0 {
			t.Errorf("%d teams of a demoted admin in the table", n)
		}
	})
	t.Run("404/the org's offboarding begun: the decision refuses", func(t *testing.T) {
		v := MustWorld(t, ts, "Being offboarded")
		setAttr(t, "ORG#"+v.Org.Id, "#METADATA", "SET deleting = :t", map[string]types.AttributeValue{":t": &types.AttributeValueMemberBOOL{Value: true}})
		ts.Rec.Reset()
		r, err := v.Member.C.CreateTicketWithResponse(bg, v.Org.Id, nil, client.TicketCreate{Title: "into a deleted org"})
		wantProblem(t, r, err, http.StatusNotFound, "org_not_found")
		if got := ts.Rec.Names(); got != "BatchGetItem+consistent" {
			t.Errorf("DynamoDB calls %q, want the authorization read only", got)
		}
	})
	t.Run("OK/offboarding racing the members' creates leaves nothing", func(t *testing.T) {
		v := MustWorld(t, ts, "Offboarded while busy")
		hc := raceClient(t, 16)
		creators := []actor{v.Member, v.Admin, v.TeamMember, v.Requester}
		for _, a := range creators {
			MustTicket(t, a.C, v.Org.Id, client.TicketCreate{Title: "let in lately"})
		}
		var answered time.Time
		var amu sync.Mutex
		parallel(len(creators)+1, func(i int) {
			if i == len(creators) {
				time.Sleep(15 * time.Millisecond)
				r := doReqE(hc, http.MethodDelete, ts.URL+"/v1/orgs/"+v.Org.Id, v.Owner.Token, nil, "")
				amu.Lock()
				answered = time.Now()
				amu.Unlock()
				if r.Err != nil || (r.Status != http.StatusNoContent && r.Status != http.StatusAccepted) {
					t.Errorf("delete org: %v %d %s", r.Err, r.Status, r.Body)
				}
				return
			}
			for j := range 20 {
				sent := time.Now()
				path, body := "/tickets", jsonOf(map[string]any{"title": fmt.Sprintf("racing %d.%d", i, j)})
				if j%2 == 1 {
					path, body = "/tickets/"+v.Ticket.Id+"/comments", jsonOf(map[string]any{"body": "racing"})
				}
				r := doReqE(hc, http.MethodPost, ts.URL+"/v1/orgs/"+v.Org.Id+path, creators[i].Token, nil, body)
				amu.Lock()
				after := !answered.IsZero() && sent.After(answered)
				amu.Unlock()
				if r.Err == nil && after && r.Status < 300 {
					t.Errorf("a create sent after the DELETE was answered succeeded: %d %s", r.Status, r.Body)
				}
			}
		})
		mustOffboarded(t, ts, v.Owner.C, v.Org.Id)
	})
}
