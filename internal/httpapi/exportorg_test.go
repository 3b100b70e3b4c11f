package httpapi_test

// TestExport is the export's specification (exportOrg, export.go); the
// file is not export_test.go, Go's name for the package's test hooks.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/smithy-go/middleware"
	"github.com/oapi-codegen/nullable"

	"github.com/tenantd/tenantd/client"
	"github.com/tenantd/tenantd/internal/apitest"
	"github.com/tenantd/tenantd/internal/httpapi"
	"github.com/tenantd/tenantd/internal/invitation"
	"github.com/tenantd/tenantd/internal/ratelimit"
)

// exportLine is one line of an export, decoded.
type exportLine map[string]any

func (l exportLine) str(k string) string { s, _ := l[k].(string); return s }

// object is the line's object as the API represents it: without its type
// and cursor.
func (l exportLine) object() map[string]any {
	o := maps.Clone(map[string]any(l))
	delete(o, "type")
	delete(o, "cursor")
	return o
}

// key names the line's object: its type and ID.
func (l exportLine) key() string {
	switch t := l.str("type"); t {
	case "user":
		return t + " " + l.str("userId")
	case "teamMember":
		return t + " " + l.str("teamId") + "/" + l.str("userId")
	case "summary", "error":
		return t
	default:
		return t + " " + l.str("id")
	}
}

// exportURL is the export of org, resumed after cursor ("" : from the
// start).
func exportURL(ts *testServer, org, cursor string) string {
	u := ts.URL + "/v1/orgs/" + org + "/export"
	if cursor != "" {
		u += "?cursor=" + url.QueryEscape(cursor)
	}
	return u
}

// parseExport splits an NDJSON body into its lines.
func parseExport(t *testing.T, body []byte) []exportLine {
	t.Helper()
	var out []exportLine
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l exportLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %d is not JSON: %v: %s", len(out)+1, err, sc.Bytes())
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// mustExport exports org as c's user (validated against openapi.yaml, each
// line), from cursor, and returns its lines; the last is its summary.
func mustExport(t *testing.T, c *client.ClientWithResponses, org, cursor string) []exportLine {
	t.Helper()
	var p *client.ExportOrgParams
	if cursor != "" {
		p = &client.ExportOrgParams{Cursor: &cursor}
	}
	r, err := c.ExportOrgWithResponse(bg, org, p)
	mustStatus(t, r, err, http.StatusOK)
	lines := parseExport(t, r.Body)
	if len(lines) == 0 || lines[len(lines)-1].str("type") != "summary" {
		t.Fatalf("the export does not end with its summary: %s", truncate(r.Body))
	}
	return lines
}

func keys(lines []exportLine) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.key()
	}
	return out
}

// exportWorld is a world with a second ticket (no comments), a comment, a
// pending invitation and a webhook, whose events lie a minute before the
// export (so before its audit position).
type exportWorld struct {
	*world
	ticket2 client.Ticket
	comment client.Comment
	inv     client.InvitationCreated
	hook    client.WebhookCreated
}

func mustExportWorld(t *testing.T, ts *testServer, name string) exportWorld {
	t.Helper()
	w := exportWorld{world: MustWorld(t, ts, name)}
	w.comment = MustComment(t, w.Member.C, w.Org.Id, w.Ticket.Id, name+": have you tried turning it off and on again?")
	w.ticket2 = MustTicket(t, w.Member.C, w.Org.Id, client.TicketCreate{Title: name + " quiet ticket", Description: ptr("no comments")})
	w.inv = MustInvitation(t, w.Owner.C, w.Org.Id, strings.ToLower(strings.ReplaceAll(name, " ", "-"))+"-invitee@example.com", client.RoleMember, w.Team.Id)
	r, err := w.Owner.C.CreateWebhookWithResponse(bg, w.Org.Id, nil, client.WebhookCreate{Url: "https://hooks.example.com/" + url.PathEscape(name), Events: []string{"*"}})
	mustStatus(t, r, err, http.StatusCreated)
	w.hook = *r.JSON201
	ts.Clock.Advance(time.Minute)
	return w
}

func TestExport(t *testing.T) {
	ts := MustServer(t)
	w := mustExportWorld(t, ts, "Exported")
	org := w.Org.Id

	spec(t, "200/exportOrg", func(t *testing.T) {
		ts.Rec.Reset()
		r := doReq(t, ts.HTTP, http.MethodGet, exportURL(ts, org, ""), w.Owner.Token, http.Header{"Accept-Encoding": {"identity"}}, "")
		calls := ts.Rec.Names()
		if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "application/x-ndjson" || r.Header.Get("Vary") != "Accept-Encoding" ||
			r.Header.Get("Content-Encoding") != "" {
			t.Fatalf("%d, header %v: %s", r.Status, r.Header, truncate(r.Body))
		}
		lines := parseExport(t, r.Body)
		// In order: the org, its users, the team and its members, each
		// ticket (oldest first) and its comments, the invitation, the
		// webhook, the events before the audit position (newest first),
		// and the summary.
		events := allEvents(t, w.Owner.C, org, 100, nil, nil)
		var want []string
		want = append(want, "org "+org)
		users := []actor{w.Owner, w.Admin, w.Member, w.TeamOwner, w.TeamAdmin, w.TeamMember, w.Requester, w.Assignee}
		sort.Slice(users, func(i, j int) bool { return users[i].ID < users[j].ID })
		for _, u := range users {
			want = append(want, "user "+u.ID)
		}
		want = append(want, "team "+w.Team.Id)
		members := []string{w.Owner.ID, w.TeamOwner.ID, w.TeamAdmin.ID, w.TeamMember.ID}
		slices.Sort(members)
		for _, m := range members {
			want = append(want, "teamMember "+w.Team.Id+"/"+m)
		}
		want = append(want, "ticket "+w.Ticket.Id, "comment "+w.comment.Id, "ticket "+w.ticket2.Id, "invitation "+w.inv.Id, "webhook "+w.hook.Id)
		for _, e := range events {
			want = append(want, "auditEvent "+e.Id)
		}
		want = append(want, "summary")
		if got := keys(lines); !slices.Equal(got, want) {
			t.Fatalf("lines:\n got  %q\n want %q", got, want)
		}
		// Every object as the API represents it: the same fields, the same
		// values.
		for _, l := range lines[:len(lines)-1] {
			if l.str("cursor") == "" {
				t.Errorf("%s has no cursor", l.key())
			}
			if got, want := l.object(), apiObject(t, w, l); !reflect.DeepEqual(got, want) {
				t.Errorf("%s:\n export %v\n API    %v", l.key(), got, want)
			}
		}
		sum := lines[len(lines)-1]
		counts := map[string]any{"org": 1.0, "user": 8.0, "team": 1.0, "teamMember": 4.0, "ticket": 2.0, "comment": 1.0,
			"invitation": 1.0, "webhook": 1.0, "auditEvent": float64(len(events))}
		if !reflect.DeepEqual(sum["counts"], counts) {
			t.Errorf("summary counts %v, want %v", sum["counts"], counts)
		}
		// Every event is older than the audit position (a minute passed):
		// the log from it on holds nothing yet.
		pos, err := time.Parse(time.RFC3339Nano, sum.str("auditPosition"))
		if err != nil || !pos.After(events[0].At) {
			t.Errorf("auditPosition %q (%v), want after the newest event %v", sum.str("auditPosition"), err, events[0].At)
		}
		if since := allEvents(t, w.Owner.C, org, 100, &pos, nil); len(since) != 0 {
			t.Errorf("%d events since the position", len(since))
		}
		// The authorization read, then one paged Query of each of the
		// org's own partitions and indexes, and none for the comments of
		// a ticket without any.
		if want := "BatchGetItem+consistent, Query, Query(GSI1), Query, Query(GSI1), Query, Query(GSI1), Query(GSI1), Query+desc"; calls != want {
			t.Errorf("DynamoDB calls:\n got  %s\n want %s", calls, want)
		}
		// The client generated from openapi.yaml reads it (each line
		// validated against ExportLine).
		if got := keys(mustExport(t, w.Owner.C, org, "")); !slices.Equal(got, want) {
			t.Errorf("through the generated client: %q", got)
		}
	})

	spec(t, "200/exportOrg/no secret in any line", func(t *testing.T) {
		body := string(doReq(t, ts.HTTP, http.MethodGet, exportURL(ts, org, ""), w.Owner.Token, nil, "").Body)
		for what, secret := range map[string]string{"the webhook's secret": w.hook.Secret, "the invitation's token": w.inv.Token,
			"the token's hash": invitation.HashToken(w.inv.Token), "a secret's prefix": "whsec_", "a secret's name": `"secret"`,
			"a hash's name": "tokenHash", "a token's name": `"token"`} {
			if strings.Contains(body, secret) {
				t.Errorf("the export shows %s (%s)", what, secret)
			}
		}
	})
	spec(t, "200/exportOrg/no API key, nor its secret or hash", func(t *testing.T) {
		kw := mustExportWorld(t, ts, "Keyed")
		k := mustAPIKey(t, kw.world, client.ApiKeyCreateRoleAdmin)
		sum := sha256.Sum256([]byte(k.Secret))
		body := string(doReq(t, ts.HTTP, http.MethodGet, exportURL(ts, kw.Org.Id, ""), kw.Owner.Token, nil, "").Body)
		for what, secret := range map[string]string{"the key's secret": k.Secret, "the secret's random part": k.Secret[len(k.Secret)-43:],
			"the hash (hex)": hex.EncodeToString(sum[:]), "the hash (base64)": base64.StdEncoding.EncodeToString(sum[:]), "a key line": `"type":"apiKey"`} {
			if strings.Contains(body, secret) {
				t.Errorf("the export shows %s (%s)", what, secret)
			}
		}
	})

	spec(t, "200/exportOrg/nothing of another org", func(t *testing.T) {
		other := mustExportWorld(t, ts, "Neighbour")
		mine := doReq(t, ts.HTTP, http.MethodGet, exportURL(ts, org, ""), w.Owner.Token, nil, "").Body
		theirs := doReq(t, ts.HTTP, http.MethodGet, exportURL(ts, other.Org.Id, ""), other.Owner.Token, nil, "").Body
		for _, c := range []struct {
			body []byte
			of   exportWorld
		}{{mine, other}, {theirs, w}} {
			for _, s := range []string{c.of.Org.Id, c.of.Org.Name, c.of.Team.Id, c.of.Ticket.Id, c.of.ticket2.Id, c.of.comment.Id, c.of.comment.Body,
				c.of.inv.Id, c.of.inv.Email, c.of.hook.Id, c.of.hook.Url, c.of.Owner.ID, c.of.Member.ID, c.of.Member.Email} {
				if q, _ := json.Marshal(s); bytes.Contains(c.body, q) { // a whole value: owner.1 is in owner.17
					t.Errorf("an export shows %s of %s", q, c.of.Org.Name)
				}
			}
		}
		// The other org's cursor is no cursor of this export.
		foreign := parseExport(t, theirs)[3].str("cursor")
		r := doReq(t, ts.HTTP, http.MethodGet, exportURL(ts, org, foreign), w.Owner.Token, nil, "")
		if r.Status != http.StatusBadRequest || problemCode(r.Body) != "invalid_cursor" {
			t.Errorf("another org's cursor: %d %s, want 400 invalid_cursor", r.Status, truncate(r.Body))
		}
	})

	spec(t, "200/exportOrg/resumed right after any line", func(t *testing.T) {
		full := mustExport(t, w.Owner.C, org, "")
		for i, l := range full {
			rest := mustExport(t, w.Owner.C, org, l.str("cursor"))
			want := full[i+1:]
			if i == len(full)-1 {
				want = full[i:] // after the summary: the summary again
			}
			if got := keys(rest); !slices.Equal(got, keys(want)) {
				t.Errorf("resumed after line %d (%s):\n got  %q\n want %q", i+1, l.key(), got, keys(want))
				continue
			}
			for j := range rest {
				if !reflect.DeepEqual(rest[j].object(), want[j].object()) {
					t.Errorf("resumed after line %d: %s differs:\n got  %v\n want %v", i+1, rest[j].key(), rest[j].object(), want[j].object())
				}
			}
		}
	})

	spec(t, "200/exportOrg/gzip", func(t *testing.T) {
		plain := doReq(t, ts.HTTP, http.MethodGet, exportURL(ts, org, ""), w.Owner.Token, http.Header{"Accept-Encoding": {"identity"}}, "")
		for _, ae := range []string{"gzip", "br;q=1.0, gzip;q=0.5", "*", "x-gzip"} {
			r := rawExport(t, ts, org, w.Owner.Token, ae)
			if r.Header.Get("Content-Encoding") != "gzip" || r.Header.Get("Vary") != "Accept-Encoding" {
				t.Errorf("Accept-Encoding %q: Content-Encoding %q, Vary %q", ae, r.Header.Get("Content-Encoding"), r.Header.Get("Vary"))
				continue
			}
			zr, err := gzip.NewReader(bytes.NewReader(r.Body))
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(zr)
			if err != nil {
				t.Fatalf("Accept-Encoding %q: the gzip stream: %v", ae, err)
			}
			if len(r.Body) >= len(body) {
				t.Errorf("Accept-Encoding %q: %d bytes compressed, %d plain", ae, len(r.Body), len(body))
			}
			a, b := parseExport(t, body), parseExport(t, plain.Body)
			if !slices.Equal(keys(a), keys(b)) {
				t.Errorf("Accept-Encoding %q: lines %q, uncompressed %q", ae, keys(a), keys(b))
			}
		}
		for _, ae := range []string{"identity", "gzip;q=0", "*;q=0", "br", "gzip;q=0, *"} {
			if r := rawExport(t, ts, org, w.Owner.Token, ae); r.Header.Get("Content-Encoding") != "" || !bytes.HasPrefix(r.Body, []byte(`{"type":"org"`)) {
				t.Errorf("Accept-Encoding %q: Content-Encoding %q, body %.40s", ae, r.Header.Get("Content-Encoding"), r.Body)
			}
		}
	})

	spec(t, "200/exportOrg/HEAD reads nothing", func(t *testing.T) {
		ts.Rec.Reset()
		r := doReq(t, ts.HTTP, http.MethodHead, exportURL(ts, org, ""), w.Owner.Token, nil, "")
		if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "application/x-ndjson" || len(r.Body) != 0 {
			t.Errorf("HEAD: %d %v %q", r.Status, r.Header, r.Body)
		}
		if got := ts.Rec.Names(); got != "BatchGetItem+consistent" {
			t.Errorf("HEAD's DynamoDB calls: %s, want the authorization read alone", got)
		}
	})

	spec(t, "400/exportOrg/a cursor that is not the export's", func(t *testing.T) {
		l, err := w.Owner.C.ListTicketsWithResponse(bg, org, &client.ListTicketsParams{Limit: ptr(1)})
		mustStatus(t, l, err, http.StatusOK)
		good := mustExport(t, w.Owner.C, org, "")[2].str("cursor")
		for what, cursor := range map[string]string{"a listing's": *l.JSON200.NextCursor, "garbage": "bm90LWEtY3Vyc29y",
			"tampered": good[:len(good)-2] + "AA", "cut": good[:40]} {
			r, err := w.Owner.C.ExportOrgWithResponse(bg, org, &client.ExportOrgParams{Cursor: &cursor})
			wantProblem(t, r, err, http.StatusBadRequest, "invalid_cursor")
			_ = what
		}
	})

	for _, a := range []actor{w.Admin, w.Member, w.TeamOwner} {
		spec(t, "403/exportOrg/"+a.ID, func(t *testing.T) {
			ts.Rec.Reset()
			r, err := a.C.ExportOrgWithResponse(bg, org, nil)
			wantProblem(t, r, err, http.StatusForbidden, "forbidden")
			if got := ts.Rec.Names(); got != "BatchGetItem+consistent" {
				t.Errorf("DynamoDB calls: %s, want the authorization read alone", got)
			}
		})
	}

	spec(t, "404/exportOrg/a stranger", func(t *testing.T) {
		stranger := ts.Actor(t, "stranger")
		r, err := stranger.C.ExportOrgWithResponse(bg, org, nil)
		wantProblem(t, r, err, http.StatusNotFound, "org_not_found")
	})
}

// TestExportOffboarding: an org being offboarded exports nothing, to its
// owners either (the offboarding crashed after marking it: it stays
// marked).
func TestExportOffboarding(t *testing.T) {
	fault := &dbFault{op: "BatchWriteItem"}
	ts := MustServer(t, withAPIOptions(fault.middleware))
	w := MustWorld(t, ts, "Leaving")
	fault.arm(1)
	r, err := w.Owner.C.DeleteOrgWithResponse(bg, w.Org.Id, nil)
	fault.disarm()
	wantProblem(t, r, err, http.StatusInternalServerError, "")
	spec(t, "404/exportOrg/an org being offboarded", func(t *testing.T) {
		e, err := w.Owner.C.ExportOrgWithResponse(bg, w.Org.Id, nil)
		wantProblem(t, e, err, http.StatusNotFound, "org_not_found")
		g, err := w.Owner.C.GetOffboardingWithResponse(bg, w.Org.Id)
		mustStatus(t, g, err, http.StatusOK) // still being offboarded
	})
}

// rawExport exports org with the given Accept-Encoding, the body as sent.
func rawExport(t *testing.T, ts *testServer, org, token, acceptEncoding string) apiResp {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	return doReq(t, hc, http.MethodGet, exportURL(ts, org, ""), token, http.Header{"Accept-Encoding": {acceptEncoding}}, "")
}

// apiObject is the object a line names as the API's own reads answer it.
func apiObject(t *testing.T, w exportWorld, l exportLine) map[string]any {
	t.Helper()
	c, org := w.Owner.C, w.Org.Id
	var body []byte
	var list []map[string]any
	find := func(key, id string) map[string]any {
		for _, o := range list {
			if o[key] == id {
				return o
			}
		}
		t.Errorf("%s: not listed", l.key())
		return nil
	}
	must := func(r statusCoder, err error) []byte {
		t.Helper()
		mustStatus(t, r, err, http.StatusOK)
		return r.GetBody()
	}
	items := func(b []byte) []map[string]any {
		var page struct {
			Items []map[string]any `json:"items"`
		}
		decodeJSON(t, b, &page)
		return page.Items
	}
	switch l.str("type") {
	case "org":
		body = must(c.GetOrgWithResponse(bg, org, nil))
	case "user":
		body = must(c.GetOrgUserWithResponse(bg, org, l.str("userId"), nil))
	case "team":
		body = must(c.GetTeamWithResponse(bg, org, l.str("id"), nil))
	case "teamMember":
		body = must(c.GetTeamMemberWithResponse(bg, org, l.str("teamId"), l.str("userId"), nil))
	case "ticket":
		body = must(c.GetTicketWithResponse(bg, org, l.str("id"), nil))
	case "comment":
		list = items(must(c.ListCommentsWithResponse(bg, org, l.str("ticketId"), nil)))
		return find("id", l.str("id"))
	case "invitation":
		list = items(must(c.ListInvitationsWithResponse(bg, org, nil)))
		return find("id", l.str("id"))
	case "webhook":
		body = must(c.GetWebhookWithResponse(bg, org, l.str("id")))
	case "auditEvent":
		list = items(must(c.ListAuditEventsWithResponse(bg, org, &client.ListAuditEventsParams{Limit: ptr(100)})))
		return find("id", l.str("id"))
	default:
		t.Fatalf("a line of type %q", l.str("type"))
	}
	var o map[string]any
	decodeJSON(t, body, &o)
	return o
}

// queryHook calls fn before each Query the server sends, one at a time:
// the Queries fn's own requests make do not call it.
type queryHook struct {
	mu   sync.Mutex
	busy atomic.Bool
	fn   func(ctx context.Context) error
}

func (h *queryHook) set(fn func(ctx context.Context) error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fn = fn
}

func (h *queryHook) middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("exportorg_test.queryHook",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			h.mu.Lock()
			fn := h.fn
			h.mu.Unlock()
			if fn != nil && middleware.GetOperationName(ctx) == "Query" && h.busy.CompareAndSwap(false, true) {
				err := fn(ctx)
				h.busy.Store(false)
				if err != nil {
					return middleware.InitializeOutput{}, middleware.Metadata{}, err
				}
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
}

// requestQueries counts the Queries that requests make (those whose
// context holds an authorization decision), every one of them, and none
// of the background work's (a worker's poll of its queues).
type requestQueries struct{ n atomic.Int64 }

func (q *requestQueries) middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("exportorg_test.requestQueries",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if _, err := httpapi.Decided(ctx); err == nil && middleware.GetOperationName(ctx) == "Query" {
				q.n.Add(1)
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
}

// copyTicket is a ticket of a copy of the org: its own fields, and its
// comments (body by comment ID, with author and time).
type copyTicket struct {
	Title, Description, Status, Priority, RequesterID, AssigneeID, TeamID string
	Tags                                                                  []string
	Comments                                                              map[string]string
}

// TestExportReauthorized: an owner removed from the org while an export
// runs gets no page read a second after the change: the export decides
// its caller's access again once its decision is a second old (the test
// clock's second), and ends with the refusal's error line, not the rest
// of the org.
func TestExportReauthorized(t *testing.T) {
	hook := &queryHook{}
	ts := MustServer(t, withAPIOptions(hook.middleware))
	w := mustExportWorld(t, ts, "Reauthorized")
	org := w.Org.Id
	r, err := w.Owner.C.UpdateOrgUserWithResponse(bg, org, w.Admin.ID, nil, client.OrgUserUpdate{Role: ptr(client.RoleOwner)})
	mustStatus(t, r, err, http.StatusOK)
	spec(t, "200/exportOrg/an owner removed while it runs", func(t *testing.T) {
		var removed atomic.Bool
		hook.set(func(context.Context) error { // the first page read: the org's users
			if removed.CompareAndSwap(false, true) {
				r, err := w.Owner.C.RemoveOrgUserWithResponse(bg, org, w.Admin.ID, nil)
				mustStatus(t, r, err, http.StatusNoContent)
				ts.Clock.Advance(2 * time.Second)
			}
			return nil
		})
		defer hook.set(nil)
		res := doReq(t, ts.HTTP, http.MethodGet, ts.URL+"/v1/orgs/"+org+"/export", w.Admin.Token, nil, "")
		if res.Status != http.StatusOK {
			t.Fatalf("%d %s", res.Status, res.Body)
		}
		lines := parseExport(t, res.Body)
		last := lines[len(lines)-1]
		problem, _ := last["error"].(map[string]any)
		if last.str("type") != "error" || problem["status"] != float64(http.StatusNotFound) || problem["code"] != "org_not_found" {
			t.Fatalf("last line %v, want the error line of a 404 org_not_found", last)
		}
		for _, l := range lines {
			if typ := l.str("type"); typ != "org" && typ != "user" && typ != "error" {
				t.Errorf("a %s line after the owner was removed", typ)
			}
		}
	})
}

// TestExportConsistency exports an org while its tickets and comments are
// written: between every two pages the export reads (a hook on its
// Queries), and all along from another goroutine. The export, with the
// audit log from its position applied (oldest first, as openapi.yaml says
// a client applies it), must be the org's tickets and comments as they
// finally are.
func TestExportConsistency(t *testing.T) {
	hook := &queryHook{}
	ts := MustServer(t, withAPIOptions(hook.middleware))
	w := MustWorld(t, ts, "Busy")
	org := w.Org.Id
	c := w.Member.C
	var old []client.Ticket
	for i := range 5 {
		tk := MustTicket(t, c, org, client.TicketCreate{Title: fmt.Sprintf("old %d", i), Tags: &[]string{"old"}})
		old = append(old, tk)
		for j := range i % 3 {
			MustComment(t, w.Requester.C, org, tk.Id, fmt.Sprintf("old comment %d on %d", j, i))
		}
	}
	ts.Clock.Advance(time.Minute) // all of it before the export's position

	var created []string
	newTicket := func(title string) {
		tk := MustTicket(t, c, org, client.TicketCreate{Title: title, Description: ptr("made during the export"), Tags: &[]string{"new", title},
			TeamId: &w.Team.Id, Priority: ptr(client.TicketPriorityHigh)})
		created = append(created, tk.Id)
	}
	update := func(id string, u client.TicketUpdate) {
		r, err := w.Owner.C.UpdateTicketWithResponse(bg, org, id, nil, u)
		mustStatus(t, r, err, http.StatusOK)
	}
	remove := func(id string) {
		r, err := w.Owner.C.DeleteTicketWithResponse(bg, org, id, nil)
		mustStatus(t, r, err, http.StatusNoContent)
	}
	comment := func(id, body string) { MustComment(t, w.Assignee.C, org, id, body) }
	steps := []func(){
		func() {
			newTicket("n1")
			update(old[0].Id, client.TicketUpdate{Title: ptr("old 0, renamed"), Tags: &[]string{}})
		},
		func() {
			comment(old[2].Id, "during users")
			update(old[1].Id, client.TicketUpdate{Status: ptr(client.TicketStatusOpen)})
		},
		func() { remove(old[4].Id); comment(old[1].Id, "during teams") },
		func() {
			update(w.Ticket.Id, client.TicketUpdate{AssigneeId: nullable.NewNullNullable[string](), Priority: ptr(client.TicketPriorityLow)})
		},
		func() { comment(created[0], "on n1, listed without comments"); newTicket("n2") },
		func() { remove(old[0].Id); comment(old[3].Id, "late") },
		func() {
			update(created[0], client.TicketUpdate{Title: ptr("n1, renamed"), Description: ptr("")})
			comment(created[1], "on n2")
			newTicket("n3") // after the tickets' page: from the log alone
		},
		func() { remove(created[1]); update(old[2].Id, client.TicketUpdate{Tags: &[]string{"x", "y"}}) },
	}
	var fired atomic.Int64
	next := 0
	hook.set(func(context.Context) error {
		fired.Add(1)
		if next < len(steps) {
			steps[next]()
			next++
		}
		return nil
	})
	// And from another goroutine, all along.
	stop := make(chan struct{})
	var bgWrites sync.WaitGroup
	var bgDone atomic.Int64
	bgWrites.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			body := fmt.Sprintf("background %d", i)
			if r, err := w.Requester.C.CreateCommentWithResponse(bg, org, old[3].Id, nil, client.CommentCreate{Body: body}); err != nil || r.StatusCode() != http.StatusCreated {
				t.Errorf("background comment: %v %d", err, r.StatusCode())
				return
			}
			bgDone.Add(1)
		}
	})
	lines := mustExport(t, w.Owner.C, org, "")
	close(stop)
	bgWrites.Wait()
	hook.set(nil)
	for ; next < len(steps); next++ {
		steps[next]() // what the export's reads did not reach: after it
	}
	if fired.Load() < 6 {
		t.Fatalf("the export read %d pages: too few for the writes between them", fired.Load())
	}
	t.Logf("%d pages read, %d writes from the hook between them, %d comments from the other goroutine", fired.Load(), len(steps), bgDone.Load())

	// The copy: the export's tickets and comments...
	cp := map[string]*copyTicket{}
	pos, err := time.Parse(time.RFC3339Nano, lines[len(lines)-1].str("auditPosition"))
	if err != nil {
		t.Fatal(err)
	}
	var exported []string
	for _, l := range lines {
		switch l.str("type") {
		case "ticket":
			tk := &copyTicket{Title: l.str("title"), Description: l.str("description"), Status: l.str("status"), Priority: l.str("priority"),
				RequesterID: l.str("requesterId"), AssigneeID: l.str("assigneeId"), TeamID: l.str("teamId"), Comments: map[string]string{}}
			for _, tag := range l["tags"].([]any) {
				tk.Tags = append(tk.Tags, tag.(string))
			}
			cp[l.str("id")] = tk
		case "comment":
			cp[l.str("ticketId")].Comments[l.str("id")] = l.str("authorId") + ": " + l.str("body") + " @" + l.str("createdAt")
		case "auditEvent":
			exported = append(exported, l.str("id"))
		}
	}
	exportOnly := render(cp)
	// ...and the log from the position on, oldest first.
	since := allEvents(t, w.Owner.C, org, 100, &pos, nil)
	slices.Reverse(since)
	for _, ev := range since {
		applyEvent(t, cp, ev)
	}
	final := finalTickets(t, w)
	if got, want := render(cp), render(final); got != want {
		t.Errorf("export + the log since its position:\n%s\nthe org now:\n%s", got, want)
	}
	if exportOnly == render(final) {
		t.Errorf("the export alone is the org as it is now: the writes during it tested nothing")
	}
	// The export's events and the log from its position are the whole
	// log, each event once.
	all := allEvents(t, w.Owner.C, org, 100, nil, nil)
	var got, want []string
	for _, e := range since {
		got = append(got, e.Id)
	}
	got = append(got, exported...)
	for _, e := range all {
		want = append(want, e.Id)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the export's %d events and the %d since its position are not the log's %d", len(exported), len(since), len(all))
	}
}

// applyEvent applies one audit event to the copy, as openapi.yaml's
// exportOrg says a client does.
func applyEvent(t *testing.T, cp map[string]*copyTicket, ev client.AuditEvent) {
	t.Helper()
	set := func(tk *copyTicket) {
		for _, ch := range ev.Changes {
			var s string
			var list []string
			if ch.After != nil {
				if v, err := ch.After.AsAuditValue0(); err == nil {
					s = v
				} else if l, err := ch.After.AsAuditValue1(); err == nil {
					list = l
				}
			}
			switch ch.Field {
			case "title":
				tk.Title = s
			case "description":
				tk.Description = s
			case "status":
				tk.Status = s
			case "priority":
				tk.Priority = s
			case "assigneeId":
				tk.AssigneeID = s
			case "teamId":
				tk.TeamID = s
			case "tags":
				tk.Tags = list
			case "body":
			default:
				t.Errorf("%s changes %s", ev.Action, ch.Field)
			}
		}
	}
	switch ev.Action {
	case "ticket.create":
		tk := &copyTicket{RequesterID: ev.ActorId, Comments: map[string]string{}}
		set(tk)
		cp[ev.TargetId] = tk
	case "ticket.update":
		tk, ok := cp[ev.TargetId]
		if !ok {
			t.Errorf("%s of a ticket the copy lacks: %s", ev.Action, ev.TargetId)
			return
		}
		set(tk)
	case "ticket.delete":
		delete(cp, ev.TargetId)
	case "comment.create":
		ticketID, commentID, _ := strings.Cut(ev.TargetId, "/")
		tk, ok := cp[ticketID]
		if !ok {
			t.Errorf("%s on a ticket the copy lacks: %s", ev.Action, ev.TargetId)
			return
		}
		body, _ := ev.Changes[0].After.AsAuditValue0()
		tk.Comments[commentID] = ev.ActorId + ": " + body + " @" + ev.At.UTC().Format(time.RFC3339Nano)
	default:
		t.Errorf("an event the test wrote none of: %s", ev.Action)
	}
}

// finalTickets reads the org's tickets and their comments through the
// listings.
func finalTickets(t *testing.T, w *world) map[string]*copyTicket {
	t.Helper()
	out := map[string]*copyTicket{}
	c, org := w.Owner.C, w.Org.Id
	var cursor *string
	for {
		r, err := c.ListTicketsWithResponse(bg, org, &client.ListTicketsParams{Limit: ptr(100), Cursor: cursor})
		mustStatus(t, r, err, http.StatusOK)
		for _, tk := range r.JSON200.Items {
			ct := &copyTicket{Title: tk.Title, Description: tk.Description, Status: string(tk.Status), Priority: string(tk.Priority),
				RequesterID: tk.RequesterId, Tags: tk.Tags, Comments: map[string]string{}}
			if tk.AssigneeId != nil {
				ct.AssigneeID = *tk.AssigneeId
			}
			if tk.TeamId != nil {
				ct.TeamID = *tk.TeamId
			}
			var cc *string
			for {
				l, err := c.ListCommentsWithResponse(bg, org, tk.Id, &client.ListCommentsParams{Limit: ptr(100), Cursor: cc})
				mustStatus(t, l, err, http.StatusOK)
				for _, cm := range l.JSON200.Items {
					ct.Comments[cm.Id] = cm.AuthorId + ": " + cm.Body + " @" + cm.CreatedAt.UTC().Format(time.RFC3339Nano)
				}
				if cc = l.JSON200.NextCursor; cc == nil {
					break
				}
			}
			if len(ct.Comments) != tk.CommentCount {
				t.Errorf("ticket %s: commentCount %d, %d comments", tk.Id, tk.CommentCount, len(ct.Comments))
			}
			out[tk.Id] = ct
		}
		if cursor = r.JSON200.NextCursor; cursor == nil {
			return out
		}
	}
}

// render is a copy as text, sorted, for comparison.
func render(cp map[string]*copyTicket) string {
	var b strings.Builder
	for _, id := range slices.Sorted(maps.Keys(cp)) {
		tk := cp[id]
		if len(tk.Tags) == 0 {
			tk.Tags = nil
		}
		fmt.Fprintf(&b, "%s %q %q %s %s by %s to %q team %q tags %q\n", id, tk.Title, tk.Description, tk.Status, tk.Priority,
			tk.RequesterID, tk.AssigneeID, tk.TeamID, tk.Tags)
		for _, cid := range slices.Sorted(maps.Keys(tk.Comments)) {
			fmt.Fprintf(&b, "  %s %s\n", cid, tk.Comments[cid])
		}
	}
	return b.String()
}

// TestExportClientGone: the export runs on a context of its own, which
// ends when its client goes away: the read in flight then is cancelled,
// and nothing more is read. (The client has the org's line while the
// export's third page is held: the export streams what it has read.)
func TestExportClientGone(t *testing.T) {
	hook, exports := &queryHook{}, &requestQueries{}
	ts := MustServer(t, withAPIOptions(hook.middleware, exports.middleware))
	w := mustExportWorld(t, ts, "Gone")
	var queries atomic.Int64
	reached, cancelled := make(chan struct{}), make(chan error, 1)
	hook.set(func(ctx context.Context) error {
		if _, err := httpapi.Decided(ctx); err != nil || queries.Add(1) != 3 { // the team's members
			return nil
		}
		close(reached)
		select {
		case <-ctx.Done():
			cancelled <- context.Cause(ctx) // not the request deadline's: the client's
			return ctx.Err()
		case <-time.After(30 * time.Second):
			cancelled <- fmt.Errorf("the read went on 30 s after its client went away")
			return nil
		}
	})
	ctx, hangUp := context.WithCancel(bg)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, exportURL(ts, w.Org.Id, ""), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+w.Owner.Token)
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	first, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(first, `{"type":"org"`) {
		t.Fatalf("first line %q: %v", first, err)
	}
	<-reached
	hangUp()
	_ = resp.Body.Close()
	if err := <-cancelled; err != context.Canceled {
		t.Fatalf("the read in flight: %v, want it cancelled by its client", err)
	}
	n := exports.n.Load()
	// The export is over: a new one's first read is the next Query.
	hook.set(nil)
	mustExport(t, w.Owner.C, w.Org.Id, "")
	if got := exports.n.Load(); got != n+8 {
		t.Errorf("%d Queries after the hang-up, want the 8 of the next export alone", got-n)
	}
}

// TestExportRateLimit: each page an export reads spends a request of the
// org's bucket; when it is empty the export waits for it (at most the
// request deadline), then ends with an error line, and its last cursor
// resumes it once the bucket has refilled.
func TestExportRateLimit(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	pass := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	ts := MustServer(t, withRateLimit(ratelimit.Options{PerSecond: 1, Burst: 1000, Now: clock}))
	w := mustExportWorld(t, ts, "Limited")
	org := w.Org.Id
	pass(time.Hour) // a full bucket
	ts.Rec.Reset()
	full := mustExport(t, w.Owner.C, org, "")
	reads := strings.Count(ts.Rec.Names(), "Query") // one page each

	spec(t, "200/exportOrg/each page read spends the org's rate limit", func(t *testing.T) {
		pass(time.Hour)
		// Leave the bucket exactly what the export reads: one request for
		// the export and each page but the first; then nothing is left.
		for range 1000 - reads {
			r, err := w.Member.C.GetOrgWithResponse(bg, org, nil)
			mustStatus(t, r, err, http.StatusOK)
		}
		if got := keys(mustExport(t, w.Owner.C, org, "")); !slices.Equal(got, keys(full)) {
			t.Errorf("lines %q, want %q", got, keys(full))
		}
		r, err := w.Member.C.GetOrgWithResponse(bg, org, nil)
		wantProblem(t, r, err, http.StatusTooManyRequests, "rate_limited")
	})

	spec(t, "200/exportOrg/paced until the request deadline, then an error line, then resumed", func(t *testing.T) {
		pass(time.Duration(reads-2) * time.Second) // two reads short
		twin := ts.Twin(t, time.Second)            // the deadline a page waits at most
		r := doReq(t, twin.HTTP, http.MethodGet, exportURL(twin, org, ""), w.Owner.Token, nil, "")
		lines := parseExport(t, r.Body)
		last := lines[len(lines)-1]
		if r.Status != http.StatusOK || last.str("type") != "error" {
			t.Fatalf("%d, last line %v, want an error line", r.Status, last)
		}
		if p, _ := last["error"].(map[string]any); p["code"] != "rate_limited" || p["status"] != 429.0 || p["requestId"] == "" {
			t.Errorf("error line %v, want the problem of a 429 rate_limited", last)
		}
		sent := lines[:len(lines)-1]
		if !slices.Equal(keys(sent), keys(full[:len(sent)])) || len(sent) == 0 {
			t.Fatalf("before the error: %q, want the export's first lines", keys(sent))
		}
		pass(time.Hour)
		rest := mustExport(t, w.Owner.C, org, sent[len(sent)-1].str("cursor"))
		if got := append(keys(sent), keys(rest)...); !slices.Equal(got, keys(full)) {
			t.Errorf("resumed: %q, want %q", got, keys(full))
		}
	})
}

// TestExportStalled: the request deadline bounds each page an export
// reads, not the export: a page that takes longer ends it with an error
// line (503 timeout), and its last cursor resumes it.
func TestExportStalled(t *testing.T) {
	hook := &queryHook{}
	ts := MustServer(t, withAPIOptions(hook.middleware))
	w := mustExportWorld(t, ts, "Stalled")
	full := mustExport(t, w.Owner.C, w.Org.Id, "")
	var queries atomic.Int64
	hook.set(func(ctx context.Context) error {
		if queries.Add(1) == 4 { // the tickets: held past the deadline
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	})
	twin := ts.Twin(t, time.Second)
	spec(t, "200/exportOrg/a page read past the request deadline ends it", func(t *testing.T) {
		r := doReq(t, twin.HTTP, http.MethodGet, exportURL(twin, w.Org.Id, ""), w.Owner.Token, nil, "")
		lines := parseExport(t, r.Body)
		last := lines[len(lines)-1]
		if p, _ := last["error"].(map[string]any); r.Status != http.StatusOK || last.str("type") != "error" || p["code"] != "timeout" || p["status"] != 503.0 {
			t.Fatalf("%d, last line %v, want the error line of a 503 timeout", r.Status, last)
		}
		sent := lines[:len(lines)-1]
		if len(sent) == 0 || !slices.Equal(keys(sent), keys(full[:len(sent)])) {
			t.Fatalf("before the error: %q, want the export's first lines", keys(sent))
		}
		hook.set(nil)
		rest := mustExport(t, w.Owner.C, w.Org.Id, sent[len(sent)-1].str("cursor"))
		if got := append(keys(sent), keys(rest)...); !slices.Equal(got, keys(full)) {
			t.Errorf("resumed: %q, want %q", got, keys(full))
		}
	})
}

// TestExportOutlivesReadTimeout: READ_TIMEOUT bounds reading a request,
// not an export's answer: net/http's read of the idle connection, which
// would cancel the request's context at that deadline, gets none.
func TestExportOutlivesReadTimeout(t *testing.T) {
	hook := &queryHook{}
	ts := MustServer(t, withAPIOptions(hook.middleware), apitest.WithReadTimeout(time.Second))
	w := mustExportWorld(t, ts, "Slow reader")
	var queries atomic.Int64
	hook.set(func(ctx context.Context) error {
		if queries.Add(1) == 2 { // a page that ends past the read deadline
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(1500 * time.Millisecond):
			}
		}
		return nil
	})
	spec(t, "200/exportOrg/past READ_TIMEOUT", func(t *testing.T) {
		lines := mustExport(t, w.Owner.C, w.Org.Id, "")
		if got := lines[len(lines)-1]["counts"].(map[string]any)["ticket"]; got != 2.0 {
			t.Errorf("summary %v, want 2 tickets", lines[len(lines)-1])
		}
	})
}

// TestExportsPerOrg: an org runs at most two exports at once on a
// replica, each holding a connection while it is paced or read: a third
// gets 429 with Retry-After, another org's export runs, and once one ends
// the org may start another.
func TestExportsPerOrg(t *testing.T) {
	var held atomic.Pointer[string] // the org whose exports' page reads wait for release
	release := make(chan struct{})
	hold := func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("exportorg_test.hold",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if p, err := httpapi.Decided(ctx); err == nil && held.Load() != nil && p.OrgID == *held.Load() && middleware.GetOperationName(ctx) == "Query" {
					select {
					case <-release:
					case <-ctx.Done():
					}
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	}
	ts := MustServer(t, withAPIOptions(hold))
	w, other := mustExportWorld(t, ts, "Busy"), mustExportWorld(t, ts, "Not busy")
	held.Store(&w.Org.Id)
	var bodies []io.ReadCloser
	for range 2 {
		req, _ := http.NewRequest(http.MethodGet, exportURL(ts, w.Org.Id, ""), nil)
		req.Header.Set("Authorization", "Bearer "+w.Owner.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if first, err := bufio.NewReader(resp.Body).ReadString('\n'); resp.StatusCode != http.StatusOK || !strings.HasPrefix(first, `{"type":"org"`) {
			t.Fatalf("export: %d, first line %q (%v)", resp.StatusCode, first, err)
		}
		bodies = append(bodies, resp.Body)
	}
	spec(t, "429/exportOrg/a third export of the org", func(t *testing.T) {
		r, err := w.Owner.C.ExportOrgWithResponse(bg, w.Org.Id, nil)
		wantProblem(t, r, err, http.StatusTooManyRequests, "rate_limited")
		if r.HTTPResponse.Header.Get("Retry-After") == "" {
			t.Error("no Retry-After")
		}
	})
	spec(t, "200/exportOrg/another org's export meanwhile", func(t *testing.T) {
		mustExport(t, other.Owner.C, other.Org.Id, "")
	})
	spec(t, "200/exportOrg/once one has ended", func(t *testing.T) {
		close(release)
		_, _ = io.Copy(io.Discard, bodies[0])
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			r, err := w.Owner.C.ExportOrgWithResponse(bg, w.Org.Id, nil)
			if err == nil && r.StatusCode() == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a minute after an export ended, another is still refused: %v", err)
			}
		}
	})
}
