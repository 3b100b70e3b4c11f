package httpapi_test

// End-to-end tests of the tenant lifecycle (issue 7) through the generated
// client: invitations, the audit log and offboarding. Where a test must see
// the table itself (what is stored, what is left after offboarding) it opens
// the server's table with its own client, test-only (lcOpen); the server's
// client is never used for that, so MustServer's no-Scan guard still holds.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/guregu/dynamo/v2"

	"github.com/tenantd/tenantd/client"
	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/dynamotest"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/invitation"
	orgpkg "github.com/tenantd/tenantd/internal/org"
	"github.com/tenantd/tenantd/internal/store"
	"github.com/tenantd/tenantd/internal/ticket"
)

// ---------------------------------------------------------------------------
// Test-only access to a MustServer's table.

// lcDB is test-only access to the table of the MustServer that t created:
// raw scans, and the product's stores over their own client (for bulk
// writes, or to run an offboarding that crashes).
type lcDB struct {
	raw     *dynamodb.Client
	name    string
	Orgs    *store.Orgs
	Tickets *store.Tickets
}

// lcOpen opens the table of ts with a client of its own (extra middleware
// optional).
func lcOpen(t *testing.T, ts *testServer, apiOptions ...func(*middleware.Stack) error) *lcDB {
	t.Helper()
	if ts.Table == "" {
		t.Fatal("the harness does not name the server's table")
	}
	raw := store.NewClient(dynamotest.Config(t), store.Options{Endpoint: dynamotest.Endpoint(), APIOptions: apiOptions})
	db := store.Open(raw, ts.Table)
	return &lcDB{raw: raw, name: ts.Table, Orgs: &store.Orgs{DB: db}, Tickets: &store.Tickets{DB: db}}
}

// scan returns every item of the table (a test-only Scan), each rendered
// canonically as JSON, sorted.
func (d *lcDB) scan(t *testing.T) []string {
	t.Helper()
	var items []map[string]any
	if err := dynamo.NewFromIface(d.raw).Table(d.name).Scan().Consistent(true).All(bg, &items); err != nil {
		t.Fatalf("scan: %v", err)
	}
	out := make([]string, len(items))
	for i, it := range items {
		b, err := json.Marshal(it)
		if err != nil {
			t.Fatalf("render item: %v", err)
		}
		out[i] = string(b)
	}
	sort.Strings(out)
	return out
}

// lcSplit splits rendered items into those that mention id anywhere (key,
// index key or attribute) and the rest.
func lcSplit(items []string, id string) (with, without []string) {
	for _, it := range items {
		if strings.Contains(it, id) {
			with = append(with, it)
		} else {
			without = append(without, it)
		}
	}
	return with, without
}

// lcItem decodes a rendered item.
func lcItem(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// lcFault, once armed, makes every call of one DynamoDB operation fail
// from the nth on: the process "crashes" there (nothing after it runs).
type lcFault struct {
	op    string
	n     atomic.Int64 // 0: disarmed
	calls atomic.Int64
}

var errLcCrash = errors.New("injected crash")

// arm makes the nth call from now on (and every later one) fail.
func (f *lcFault) arm(n int64) { f.calls.Store(0); f.n.Store(n) }

func (f *lcFault) disarm() { f.n.Store(0) }

func (f *lcFault) middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("lifecycle_test.fault",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if n := f.n.Load(); n > 0 && middleware.GetOperationName(ctx) == f.op && f.calls.Add(1) >= n {
				return middleware.InitializeOutput{}, middleware.Metadata{}, errLcCrash
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
}

// lcRenew re-mints a's token at the server's current time (after the clock
// jumped past its expiry).
func lcRenew(t *testing.T, ts *testServer, a *actor) {
	t.Helper()
	a.Token = ts.Token(t, a.ID, a.Email, a.Name)
	a.C = ts.Client(t, a.Token)
	a.HTTP = ts.HTTPClient(t, a.Token)
}

// lcParallel runs fn(i) for i in [0, n) on workers goroutines.
func lcParallel(t *testing.T, n, workers int, fn func(i int) error) {
	t.Helper()
	var (
		wg    sync.WaitGroup
		next  atomic.Int64
		mu    sync.Mutex
		first error
	)
	failed := func() bool { mu.Lock(); defer mu.Unlock(); return first != nil }
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || failed() {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		t.Fatalf("bulk write: %v", first)
	}
}

// lcClone writes n copies of the template items (read raw, as the store
// wrote them): in copy i every occurrence of each templateIDs[j] in any
// string (keys, index keys, attributes) becomes fresh(i, j). BatchWriteItem,
// 25 items per request, on a few goroutines.
func (d *lcDB) clone(t *testing.T, template []map[string]types.AttributeValue, templateIDs []string, n int, fresh func(i, j int) string) {
	t.Helper()
	var replace func(v types.AttributeValue, r *strings.Replacer) types.AttributeValue
	replace = func(v types.AttributeValue, r *strings.Replacer) types.AttributeValue {
		switch x := v.(type) {
		case *types.AttributeValueMemberS:
			return &types.AttributeValueMemberS{Value: r.Replace(x.Value)}
		case *types.AttributeValueMemberSS:
			out := make([]string, len(x.Value))
			for i, s := range x.Value {
				out[i] = r.Replace(s)
			}
			return &types.AttributeValueMemberSS{Value: out}
		case *types.AttributeValueMemberL:
			out := make([]types.AttributeValue, len(x.Value))
			for i, e := range x.Value {
				out[i] = replace(e, r)
			}
			return &types.AttributeValueMemberL{Value: out}
		case *types.AttributeValueMemberM:
			out := make(map[string]types.AttributeValue, len(x.Value))
			for k, e := range x.Value {
				out[k] = replace(e, r)
			}
			return &types.AttributeValueMemberM{Value: out}
		}
		return v
	}
	var reqs []types.WriteRequest
	for i := range n {
		var pairs []string
		for j, id := range templateIDs {
			pairs = append(pairs, id, fresh(i, j))
		}
		r := strings.NewReplacer(pairs...)
		for _, it := range template {
			item := make(map[string]types.AttributeValue, len(it))
			for k, v := range it {
				item[k] = replace(v, r)
			}
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: item}})
		}
	}
	batches := (len(reqs) + 24) / 25
	lcParallel(t, batches, 1, func(b int) error {
		batch := reqs[b*25 : min(len(reqs), (b+1)*25)]
		for try := 0; len(batch) > 0; try++ {
			if try == 20 {
				return fmt.Errorf("unprocessed items keep coming back")
			}
			out, err := d.raw.BatchWriteItem(bg, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{d.name: batch}})
			if err != nil {
				return err
			}
			batch = out.UnprocessedItems[d.name]
		}
		return nil
	})
}

// query reads one partition raw.
func (d *lcDB) query(t *testing.T, pk string) []map[string]types.AttributeValue {
	t.Helper()
	out, err := d.raw.Query(bg, &dynamodb.QueryInput{TableName: &d.name, KeyConditionExpression: ptr("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: pk}}, ConsistentRead: ptr(true)})
	if err != nil {
		t.Fatalf("query %s: %v", pk, err)
	}
	if len(out.Items) == 0 || out.LastEvaluatedKey != nil {
		t.Fatalf("query %s: %d items, more: %v", pk, len(out.Items), out.LastEvaluatedKey != nil)
	}
	return out.Items
}

// lcAllEvents walks the org's audit log with page size limit.
func lcAllEvents(t *testing.T, c *client.ClientWithResponses, orgID string, limit int, since, until *time.Time) []client.AuditEvent {
	t.Helper()
	var out []client.AuditEvent
	var cursor *string
	for range 1000 {
		r, err := c.ListAuditEventsWithResponse(bg, orgID, &client.ListAuditEventsParams{Limit: &limit, Cursor: cursor, Since: since, Until: until})
		mustStatus(t, r, err, http.StatusOK)
		if len(r.JSON200.Items) > limit {
			t.Errorf("page of %d events, limit %d", len(r.JSON200.Items), limit)
		}
		out = append(out, r.JSON200.Items...)
		if cursor = r.JSON200.NextCursor; cursor == nil {
			return out
		}
	}
	t.Fatal("the audit log never ends")
	return nil
}

func lcRequestID(h http.Header) string { return h.Get("X-Request-Id") }

// ---------------------------------------------------------------------------
// Invitations.

// lcPending lists the org's pending invitations (all pages) as admin c.
func lcPending(t *testing.T, c *client.ClientWithResponses, orgID string) []client.Invitation {
	t.Helper()
	var out []client.Invitation
	var cursor *string
	for range 100 {
		r, err := c.ListInvitationsWithResponse(bg, orgID, &client.ListInvitationsParams{Limit: ptr(100), Cursor: cursor})
		mustStatus(t, r, err, http.StatusOK)
		if strings.Contains(string(r.Body), `"token"`) {
			t.Errorf("the listing shows tokens: %s", r.Body)
		}
		out = append(out, r.JSON200.Items...)
		if cursor = r.JSON200.NextCursor; cursor == nil {
			return out
		}
	}
	t.Fatal("the invitation listing never ends")
	return nil
}

func lcInvitationIDs(invs []client.Invitation) []string {
	out := make([]string, len(invs))
	for i, inv := range invs {
		out[i] = inv.Id
	}
	return out
}

// lcInvitationItems counts the org's Invitation and InvitationEmail items.
func lcInvitationItems(t *testing.T, d *lcDB, orgID string) (n int, items []string) {
	t.Helper()
	for _, s := range d.scan(t) {
		it := lcItem(t, s)
		if typ, _ := it["type"].(string); (typ == "Invitation" || typ == "InvitationEmail") && it["orgId"] == orgID {
			n++
			items = append(items, s)
		}
	}
	return n, items
}

func TestInvitationLifecycle(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Invite")
	d := lcOpen(t, ts)
	org := w.Org.Id

	t.Run("create returns the token once; admins list pending ones oldest first", func(t *testing.T) {
		before := ts.Clock.Now()
		r, err := w.Admin.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "first@example.com", Role: client.RoleMember})
		mustStatus(t, r, err, http.StatusCreated)
		inv := *r.JSON201
		if inv.Token == "" || inv.InvitedBy != w.Admin.ID || inv.Email != "first@example.com" || inv.Role != client.RoleMember || len(inv.TeamIds) != 0 {
			t.Errorf("invitation: %+v", inv)
		}
		if inv.CreatedAt.Before(before.Truncate(time.Second)) || inv.ExpiresAt.Sub(inv.CreatedAt) != 7*24*time.Hour {
			t.Errorf("createdAt %s expiresAt %s: want the default of 7 days from now (%s)", inv.CreatedAt, inv.ExpiresAt, before)
		}
		second := MustInvitation(t, w.Owner.C, org, "second@example.com", client.RoleAdmin, w.Team.Id)
		got := lcPending(t, w.Admin.C, org)
		if want := []string{inv.Id, second.Id}; !slices.Equal(lcInvitationIDs(got), want) {
			t.Fatalf("pending (oldest first): got %v, want %v", lcInvitationIDs(got), want)
		}
		if g := got[1]; g.Email != second.Email || g.Role != client.RoleAdmin || !slices.Equal(g.TeamIds, []string{w.Team.Id}) ||
			g.InvitedBy != w.Owner.ID || !g.CreatedAt.Equal(second.CreatedAt) {
			t.Errorf("listed invitation: got %+v, want %+v", g, second)
		}
		if g := got[1]; !g.ExpiresAt.Equal(second.ExpiresAt) {
			t.Errorf("expiresAt: createInvitation answered %s, listInvitations %s", second.ExpiresAt.Format(time.RFC3339Nano), g.ExpiresAt.Format(time.RFC3339Nano))
		}
		// Only a hash is stored: the token's secret is nowhere in the table.
		secret := inv.Token[strings.LastIndex(inv.Token, ".")+1:]
		for _, it := range d.scan(t) {
			if strings.Contains(it, secret) {
				t.Errorf("the table stores the token's secret: %s", it)
			}
		}
		for _, inv := range []client.InvitationCreated{inv, second} {
			rv, err := w.Owner.C.RevokeInvitationWithResponse(bg, org, inv.Id)
			mustStatus(t, rv, err, http.StatusNoContent)
		}
	})
	t.Run("member may not list, create or revoke", func(t *testing.T) {
		inv := MustInvitation(t, w.Admin.C, org, "kept@example.com", client.RoleMember)
		l, err := w.Member.C.ListInvitationsWithResponse(bg, org, nil)
		wantProblem(t, l, err, http.StatusForbidden, "")
		c, err := w.Member.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "friend@example.com", Role: client.RoleMember})
		wantProblem(t, c, err, http.StatusForbidden, "")
		rv, err := w.TeamOwner.C.RevokeInvitationWithResponse(bg, org, inv.Id)
		wantProblem(t, rv, err, http.StatusForbidden, "")
		if got := lcInvitationIDs(lcPending(t, w.Admin.C, org)); !slices.Equal(got, []string{inv.Id}) {
			t.Errorf("pending: got %v, want only %s", got, inv.Id)
		}
		rv, err = w.Admin.C.RevokeInvitationWithResponse(bg, org, inv.Id)
		mustStatus(t, rv, err, http.StatusNoContent)
	})
	t.Run("expiresInDays is 1..30", func(t *testing.T) {
		r, err := w.Owner.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "long@example.com", Role: client.RoleMember, ExpiresInDays: ptr(31)})
		wantProblem(t, r, err, http.StatusBadRequest, "")
		r, err = w.Owner.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "long@example.com", Role: client.RoleMember, ExpiresInDays: ptr(0)})
		wantProblem(t, r, err, http.StatusBadRequest, "")
		if got := lcPending(t, w.Admin.C, org); len(got) != 0 {
			t.Errorf("a refused invitation is pending: %+v", got)
		}
		r, err = w.Owner.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "long@example.com", Role: client.RoleMember, ExpiresInDays: ptr(30)})
		mustStatus(t, r, err, http.StatusCreated)
		if got := r.JSON201.ExpiresAt.Sub(r.JSON201.CreatedAt); got != 30*24*time.Hour {
			t.Errorf("expiresInDays=30: lifetime %v", got)
		}
		rv, err := w.Owner.C.RevokeInvitationWithResponse(bg, org, r.JSON201.Id)
		mustStatus(t, rv, err, http.StatusNoContent)
	})
	t.Run("a new invitation for the same email replaces the pending one", func(t *testing.T) {
		old := MustInvitation(t, w.Admin.C, org, "Replaced@Example.com", client.RoleMember)
		repl := MustInvitation(t, w.Admin.C, org, "replaced@example.com", client.RoleAdmin, w.Team.Id)
		if got := lcInvitationIDs(lcPending(t, w.Admin.C, org)); !slices.Equal(got, []string{repl.Id}) {
			t.Errorf("pending: got %v, want only the replacement %s", got, repl.Id)
		}
		joiner := ts.Invitee(t, "replaced", "replaced@example.com")
		a, err := joiner.C.AcceptInvitationWithResponse(bg, old.Token, nil)
		wantProblem(t, a, err, http.StatusNotFound, "")
		rv, err := w.Admin.C.RevokeInvitationWithResponse(bg, org, old.Id)
		wantProblem(t, rv, err, http.StatusNotFound, "")
		a, err = joiner.C.AcceptInvitationWithResponse(bg, repl.Token, nil)
		mustStatus(t, a, err, http.StatusCreated)
		if a.JSON201.User.Role != client.RoleAdmin || a.JSON201.User.Email != "replaced@example.com" {
			t.Errorf("joined as %+v, want the replacement's role and email", a.JSON201.User)
		}
	})
	t.Run("accept joins the org and the teams with the invitation's role and email, once", func(t *testing.T) {
		second := MustTeam(t, w.Owner.C, org, "Second line")
		g, err := w.Owner.C.GetTeamWithResponse(bg, org, w.Team.Id, nil)
		mustStatus(t, g, err, http.StatusOK)
		count := g.JSON200.MemberCount
		inv := MustInvitation(t, w.Admin.C, org, "newbie@example.com", client.RoleAdmin, w.Team.Id, second.Id)
		// The token's email claim differs from the invitation's in case
		// only: the user gets the invitation's email.
		newbie := ts.Invitee(t, "newbie", "NewBie@Example.COM")
		a, err := newbie.C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		mustStatus(t, a, err, http.StatusCreated)
		u := a.JSON201.User
		if a.JSON201.OrgId != org || u.UserId != newbie.ID || u.Email != "newbie@example.com" || u.Role != client.RoleAdmin || u.Name != newbie.Name {
			t.Errorf("accepted: %+v", a.JSON201)
		}
		if got, want := slices.Sorted(slices.Values(a.JSON201.TeamIds)), slices.Sorted(slices.Values([]string{w.Team.Id, second.Id})); !slices.Equal(got, want) {
			t.Errorf("teams joined: got %v, want %v", got, want)
		}
		ou, err := w.Member.C.GetOrgUserWithResponse(bg, org, newbie.ID)
		mustStatus(t, ou, err, http.StatusOK)
		if ou.JSON200.Email != "newbie@example.com" || ou.JSON200.Role != client.RoleAdmin {
			t.Errorf("org user: %+v", ou.JSON200)
		}
		g, err = w.Owner.C.GetTeamWithResponse(bg, org, w.Team.Id, nil)
		mustStatus(t, g, err, http.StatusOK)
		if got, want := g.JSON200.MemberCount, count+1; got != want {
			t.Errorf("memberCount: got %d, want %d", got, want)
		}
		for _, team := range []string{w.Team.Id, second.Id} {
			m, err := w.Member.C.GetTeamMemberWithResponse(bg, org, team, newbie.ID)
			mustStatus(t, m, err, http.StatusOK)
			if m.JSON200.Role != client.RoleMember {
				t.Errorf("team %s role: %s, want member", team, m.JSON200.Role)
			}
		}
		me, err := newbie.C.GetMeWithResponse(bg)
		mustStatus(t, me, err, http.StatusOK)
		if want := []client.MeOrg{{OrgId: org, Name: w.Org.Name, Role: client.RoleAdmin}}; !slices.Equal(me.JSON200.Orgs, want) {
			t.Errorf("me: got %+v, want %+v", me.JSON200.Orgs, want)
		}
		// Exactly once: neither the same user nor another gets in again.
		again, err := newbie.C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		wantProblem(t, again, err, http.StatusNotFound, "")
		again, err = ts.Invitee(t, "late", inv.Email).C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		wantProblem(t, again, err, http.StatusNotFound, "")
		if got := lcPending(t, w.Admin.C, org); len(got) != 0 {
			t.Errorf("pending after accept: %+v", got)
		}
	})
	t.Run("revoke: the token stops working", func(t *testing.T) {
		inv := MustInvitation(t, w.Admin.C, org, "revoked@example.com", client.RoleMember)
		rv, err := w.Admin.C.RevokeInvitationWithResponse(bg, org, inv.Id)
		mustStatus(t, rv, err, http.StatusNoContent)
		a, err := ts.Invitee(t, "revoked", inv.Email).C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		wantProblem(t, a, err, http.StatusNotFound, "")
		rv, err = w.Admin.C.RevokeInvitationWithResponse(bg, org, inv.Id)
		wantProblem(t, rv, err, http.StatusNotFound, "")
	})
	t.Run("only an owner invites an owner", func(t *testing.T) {
		r, err := w.Admin.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "boss@example.com", Role: client.RoleOwner})
		wantProblem(t, r, err, http.StatusForbidden, "")
		if got := lcPending(t, w.Admin.C, org); len(got) != 0 {
			t.Errorf("a refused invitation is pending: %+v", got)
		}
		inv := MustInvitation(t, w.Owner.C, org, "boss@example.com", client.RoleOwner)
		rv, err := w.Admin.C.RevokeInvitationWithResponse(bg, org, inv.Id)
		mustStatus(t, rv, err, http.StatusNoContent)
	})
	t.Run("an email an org user has is taken", func(t *testing.T) {
		for _, email := range []string{w.Member.Email, strings.ToUpper(w.Member.Email)} {
			r, err := w.Owner.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: email, Role: client.RoleMember})
			wantProblem(t, r, err, http.StatusConflict, "email_taken")
		}
		// Taken between invitation and accept: the accept is refused and
		// the invitation stays pending.
		inv := MustInvitation(t, w.Owner.C, org, "contested@example.com", client.RoleMember)
		grabber := ts.Actor(t, "grabber")
		grabber.Email = "contested@example.com"
		MustUser(t, w.Owner.C, org, grabber, client.RoleMember)
		a, err := ts.Invitee(t, "contester", inv.Email).C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		wantProblem(t, a, err, http.StatusConflict, "email_taken")
		if got := lcInvitationIDs(lcPending(t, w.Admin.C, org)); !slices.Equal(got, []string{inv.Id}) {
			t.Errorf("pending after a refused accept: %v, want %s", got, inv.Id)
		}
		rv, err := w.Owner.C.RevokeInvitationWithResponse(bg, org, inv.Id)
		mustStatus(t, rv, err, http.StatusNoContent)
	})
	t.Run("a user already in the org cannot accept; the invitation stays usable", func(t *testing.T) {
		// A user of the org whose org email is not the one in their token
		// holds an invitation to their token's email.
		joined := ts.Invitee(t, "joined", "already@example.com")
		inOrg := joined
		inOrg.Email = "already-in-org@example.com"
		MustUser(t, w.Owner.C, org, inOrg, client.RoleMember)
		inv := MustInvitation(t, w.Owner.C, org, "already@example.com", client.RoleAdmin, w.Team.Id)
		a, err := joined.C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		wantProblem(t, a, err, http.StatusConflict, "user_exists")
		ou, err := w.Owner.C.GetOrgUserWithResponse(bg, org, joined.ID)
		mustStatus(t, ou, err, http.StatusOK)
		if ou.JSON200.Role != client.RoleMember || ou.JSON200.Email != inOrg.Email {
			t.Errorf("the refused accept changed the user: %+v", ou.JSON200)
		}
		// Someone else with the token but another email is refused too.
		a, err = w.Member.C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		wantProblem(t, a, err, http.StatusForbidden, "invitation_email_mismatch")
		rm, err := w.Owner.C.RemoveOrgUserWithResponse(bg, org, joined.ID, nil)
		mustStatus(t, rm, err, http.StatusNoContent)
		a, err = ts.Invitee(t, "rightful", inv.Email).C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		mustStatus(t, a, err, http.StatusCreated)
	})
	t.Run("no invitation item is left once accepted, revoked or replaced", func(t *testing.T) {
		o := MustOrg(t, w.Owner.C, "Counted")
		team := MustTeam(t, w.Owner.C, o.Id, "Counted team")
		a := MustInvitation(t, w.Owner.C, o.Id, "a@example.com", client.RoleMember, team.Id)
		MustInvitation(t, w.Owner.C, o.Id, "b@example.com", client.RoleMember)
		b := MustInvitation(t, w.Owner.C, o.Id, "B@example.com", client.RoleAdmin)
		c := MustInvitation(t, w.Owner.C, o.Id, "c@example.com", client.RoleMember)
		if n, items := lcInvitationItems(t, d, o.Id); n != 6 {
			t.Errorf("3 pending invitations are stored as %d items, want 6 (invitation + email pointer each):\n%s", n, strings.Join(items, "\n"))
		}
		r, err := ts.Invitee(t, "a", a.Email).C.AcceptInvitationWithResponse(bg, a.Token, nil)
		mustStatus(t, r, err, http.StatusCreated)
		r, err = ts.Invitee(t, "b", b.Email).C.AcceptInvitationWithResponse(bg, b.Token, nil)
		mustStatus(t, r, err, http.StatusCreated)
		rv, err := w.Owner.C.RevokeInvitationWithResponse(bg, o.Id, c.Id)
		mustStatus(t, rv, err, http.StatusNoContent)
		if n, items := lcInvitationItems(t, d, o.Id); n != 0 {
			t.Errorf("%d invitation items left:\n%s", n, strings.Join(items, "\n"))
		}
		if got := lcPending(t, w.Owner.C, o.Id); len(got) != 0 {
			t.Errorf("pending: %+v", got)
		}
	})
	// Last: it moves the server's clock past every token's expiry.
	t.Run("expiry", func(t *testing.T) {
		short := MustInvitation(t, w.Admin.C, org, "short@example.com", client.RoleMember)
		r, err := w.Admin.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "oneday@example.com", Role: client.RoleMember, ExpiresInDays: ptr(1)})
		mustStatus(t, r, err, http.StatusCreated)
		oneDay := *r.JSON201
		if got := oneDay.ExpiresAt.Sub(oneDay.CreatedAt); got != 24*time.Hour {
			t.Errorf("expiresInDays=1: lifetime %v", got)
		}
		ts.Clock.Advance(24*time.Hour + time.Minute)
		admin := w.Admin
		lcRenew(t, ts, &admin)
		if got := lcInvitationIDs(lcPending(t, admin.C, org)); !slices.Equal(got, []string{short.Id}) {
			t.Errorf("pending a day later: got %v, want only the 7-day invitation %s", got, short.Id)
		}
		late := ts.Invitee(t, "late", "oneday@example.com")
		a, err := late.C.AcceptInvitationWithResponse(bg, oneDay.Token, nil)
		wantProblem(t, a, err, http.StatusNotFound, "")
		// An expired invitation does not block a new one for its email.
		again := MustInvitation(t, admin.C, org, "oneday@example.com", client.RoleMember)
		a, err = late.C.AcceptInvitationWithResponse(bg, again.Token, nil)
		mustStatus(t, a, err, http.StatusCreated)
		a, err = ts.Invitee(t, "short", short.Email).C.AcceptInvitationWithResponse(bg, short.Token, nil)
		mustStatus(t, a, err, http.StatusCreated)
	})
}

// ---------------------------------------------------------------------------
// Audit log.

// lcWant is the audit event one mutation must write.
type lcWant struct {
	op                                         string // for messages
	actor, action, targetType, targetID, reqID string
	// changes: field -> {before, after} (nil = absent); nil map = not
	// checked here (see "every event records what changed").
	changes map[string][2]any
}

// lcChangesOf renders an event's changes as field -> {before, after}.
func lcChangesOf(t *testing.T, ev client.AuditEvent) map[string][2]any {
	t.Helper()
	out := map[string][2]any{}
	for _, c := range ev.Changes {
		var pair [2]any
		if v, err := c.Before.Get(); err == nil {
			pair[0] = v
		}
		if v, err := c.After.Get(); err == nil {
			pair[1] = v
		}
		if _, dup := out[c.Field]; dup {
			t.Errorf("%s %s: field %s changed twice", ev.Action, ev.TargetId, c.Field)
		}
		out[c.Field] = pair
	}
	return out
}

func lcJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestAuditLifecycle(t *testing.T) {
	ts := MustServer(t)
	owner, admin, member, joiner := ts.Actor(t, "owner"), ts.Actor(t, "admin"), ts.Actor(t, "member"), ts.Invitee(t, "joiner", "joiner@example.com")
	var want []lcWant // oldest first
	expect := func(op string, actor actor, h http.Header, action, targetType, targetID string, changes map[string][2]any) {
		t.Helper()
		id := lcRequestID(h)
		if id == "" {
			t.Fatalf("%s: no X-Request-Id", op)
		}
		want = append(want, lcWant{op: op, actor: actor.ID, action: action, targetType: targetType, targetID: targetID, reqID: id, changes: changes})
	}
	type ch = map[string][2]any

	// Every mutating operation, each once, interleaved with refused ones.
	co, err := owner.C.CreateOrgWithResponse(bg, nil, client.OrgCreate{Name: "Audited"})
	mustStatus(t, co, err, http.StatusCreated)
	org := co.JSON201.Id
	expect("createOrg", owner, co.HTTPResponse.Header, "org.create", "org", org, ch{"name": {nil, "Audited"}})

	au, err := owner.C.AddOrgUserWithResponse(bg, org, nil, client.OrgUserCreate{UserId: admin.ID, Email: admin.Email, Name: admin.Name, Role: client.RoleAdmin})
	mustStatus(t, au, err, http.StatusCreated)
	expect("addOrgUser", owner, au.HTTPResponse.Header, "user.add", "user", admin.ID, ch{"email": {nil, admin.Email}, "name": {nil, admin.Name}, "role": {nil, "admin"}})
	au, err = admin.C.AddOrgUserWithResponse(bg, org, nil, client.OrgUserCreate{UserId: member.ID, Email: member.Email, Name: member.Name, Role: client.RoleMember})
	mustStatus(t, au, err, http.StatusCreated)
	expect("addOrgUser", admin, au.HTTPResponse.Header, "user.add", "user", member.ID, ch{"email": {nil, member.Email}, "name": {nil, member.Name}, "role": {nil, "member"}})
	refused := func(what string, r statusCoder, err error, status int) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if r.StatusCode() != status {
			t.Fatalf("%s: status %d, want %d: %s", what, r.StatusCode(), status, r.GetBody())
		}
	}
	var rr statusCoder
	dup := ts.Actor(t, "dup")
	rr, err = lcWrap(admin.C.AddOrgUserWithResponse(bg, org, nil, client.OrgUserCreate{UserId: dup.ID, Email: member.Email, Name: dup.Name, Role: client.RoleMember}))
	refused("addOrgUser with a taken email", rr, err, http.StatusConflict)

	uo, err := admin.C.UpdateOrgWithResponse(bg, org, &client.UpdateOrgParams{IfMatch: ptr(etagOf(1))}, client.OrgUpdate{Name: "Audited Inc"})
	mustStatus(t, uo, err, http.StatusOK)
	expect("updateOrg", admin, uo.HTTPResponse.Header, "org.update", "org", org, ch{"name": {"Audited", "Audited Inc"}})
	rr, err = lcWrap(admin.C.UpdateOrgWithResponse(bg, org, &client.UpdateOrgParams{IfMatch: ptr(etagOf(1))}, client.OrgUpdate{Name: "Stale"}))
	refused("updateOrg with a stale If-Match", rr, err, http.StatusPreconditionFailed)
	rr, err = lcWrap(member.C.UpdateOrgWithResponse(bg, org, nil, client.OrgUpdate{Name: "Not allowed"}))
	refused("updateOrg by a member", rr, err, http.StatusForbidden)

	uu, err := admin.C.UpdateOrgUserWithResponse(bg, org, member.ID, nil, client.OrgUserUpdate{Name: ptr("Renamed Member")})
	mustStatus(t, uu, err, http.StatusOK)
	expect("updateOrgUser", admin, uu.HTTPResponse.Header, "user.update", "user", member.ID, ch{"name": {member.Name, "Renamed Member"}})

	ct, err := owner.C.CreateTeamWithResponse(bg, org, nil, client.TeamCreate{Name: "Desk", Description: ptr("first line")})
	mustStatus(t, ct, err, http.StatusCreated)
	team := ct.JSON201.Id
	expect("createTeam", owner, ct.HTTPResponse.Header, "team.create", "team", team, ch{"name": {nil, "Desk"}, "description": {nil, "first line"}})
	ut, err := owner.C.UpdateTeamWithResponse(bg, org, team, nil, client.TeamUpdate{Description: ptr("front line")})
	mustStatus(t, ut, err, http.StatusOK)
	expect("updateTeam", owner, ut.HTTPResponse.Header, "team.update", "team", team, ch{"description": {"first line", "front line"}})
	rr, err = lcWrap(owner.C.UpdateTeamWithResponse(bg, org, team, &client.UpdateTeamParams{IfMatch: ptr(etagOf(1))}, client.TeamUpdate{Name: ptr("Stale")}))
	refused("updateTeam with a stale If-Match", rr, err, http.StatusPreconditionFailed)

	pm, err := owner.C.PutTeamMemberWithResponse(bg, org, team, member.ID, nil, client.TeamMemberPut{Role: client.RoleMember})
	mustStatus(t, pm, err, http.StatusCreated)
	expect("putTeamMember (add)", owner, pm.HTTPResponse.Header, "member.add", "member", team+"/"+member.ID, ch{"role": {nil, "member"}})
	pm, err = owner.C.PutTeamMemberWithResponse(bg, org, team, member.ID, nil, client.TeamMemberPut{Role: client.RoleAdmin})
	mustStatus(t, pm, err, http.StatusOK)
	expect("putTeamMember (role change)", owner, pm.HTTPResponse.Header, "member.update", "member", team+"/"+member.ID, ch{"role": {"member", "admin"}})
	pm, err = owner.C.PutTeamMemberWithResponse(bg, org, team, member.ID, nil, client.TeamMemberPut{Role: client.RoleAdmin})
	mustStatus(t, pm, err, http.StatusOK) // the same role again: no change, no event
	rr, err = lcWrap(owner.C.PutTeamMemberWithResponse(bg, org, team, member.ID, &client.PutTeamMemberParams{IfMatch: ptr(etagOf(1))}, client.TeamMemberPut{Role: client.RoleMember}))
	refused("putTeamMember with a stale If-Match", rr, err, http.StatusPreconditionFailed)

	key := "lc-audit-ticket-1"
	tc, err := member.C.CreateTicketWithResponse(bg, org, &client.CreateTicketParams{IdempotencyKey: &key}, client.TicketCreate{Title: "Printer", TeamId: &team})
	mustStatus(t, tc, err, http.StatusCreated)
	tk := tc.JSON201.Id
	expect("createTicket", member, tc.HTTPResponse.Header, "ticket.create", "ticket", tk, ch{"title": {nil, "Printer"}, "status": {nil, "new"}, "priority": {nil, "normal"}, "teamId": {nil, team}})
	replay, err := member.C.CreateTicketWithResponse(bg, org, &client.CreateTicketParams{IdempotencyKey: &key}, client.TicketCreate{Title: "Printer", TeamId: &team})
	mustStatus(t, replay, err, http.StatusCreated) // a replay changes nothing: no event
	if replay.JSON201.Id != tk {
		t.Fatalf("idempotent replay created ticket %s, want %s", replay.JSON201.Id, tk)
	}
	rr, err = lcWrap(member.C.CreateTicketWithResponse(bg, org, nil, client.TicketCreate{Title: "Nobody", AssigneeId: ptr("nobody.here")}))
	if err != nil || rr.StatusCode() < 400 || rr.StatusCode() >= 500 {
		t.Fatalf("createTicket for an unknown assignee: %v %d %s", err, rr.StatusCode(), rr.GetBody())
	}
	utk, err := admin.C.UpdateTicketWithResponse(bg, org, tk, &client.UpdateTicketParams{IfMatch: ptr(etagOf(1))}, client.TicketUpdate{Priority: ptr(client.TicketPriorityHigh)})
	mustStatus(t, utk, err, http.StatusOK)
	expect("updateTicket", admin, utk.HTTPResponse.Header, "ticket.update", "ticket", tk, ch{"priority": {"normal", "high"}})
	rr, err = lcWrap(admin.C.UpdateTicketWithResponse(bg, org, tk, &client.UpdateTicketParams{IfMatch: ptr(etagOf(1))}, client.TicketUpdate{Priority: ptr(client.TicketPriorityLow)}))
	refused("updateTicket with a stale If-Match", rr, err, http.StatusPreconditionFailed)
	cc, err := member.C.CreateCommentWithResponse(bg, org, tk, nil, client.CommentCreate{Body: "is it plugged in?"})
	mustStatus(t, cc, err, http.StatusCreated)
	expect("createComment", member, cc.HTTPResponse.Header, "comment.create", "comment", tk+"/"+cc.JSON201.Id, nil)

	ci, err := admin.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "joiner@example.com", Role: client.RoleMember, TeamIds: &[]string{team}})
	mustStatus(t, ci, err, http.StatusCreated)
	inv := *ci.JSON201
	expect("createInvitation", admin, ci.HTTPResponse.Header, "invitation.create", "invitation", inv.Id,
		ch{"email": {nil, "joiner@example.com"}, "role": {nil, "member"}, "teamIds": {nil, []any{team}}})
	rr, err = lcWrap(admin.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: member.Email, Role: client.RoleMember}))
	refused("createInvitation for a taken email", rr, err, http.StatusConflict)
	rr, err = lcWrap(admin.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "boss@example.com", Role: client.RoleOwner}))
	refused("createInvitation of an owner by an admin", rr, err, http.StatusForbidden)
	ai, err := member.C.AcceptInvitationWithResponse(bg, inv.Token, nil)
	refused("acceptInvitation by a user of the org, with another email", ai, err, http.StatusForbidden)
	ai, err = joiner.C.AcceptInvitationWithResponse(bg, inv.Token, nil)
	mustStatus(t, ai, err, http.StatusCreated)
	expect("acceptInvitation", joiner, ai.HTTPResponse.Header, "invitation.accept", "user", joiner.ID,
		ch{"invitationId": {nil, inv.Id}, "email": {nil, "joiner@example.com"}, "role": {nil, "member"}})
	ai, err = joiner.C.AcceptInvitationWithResponse(bg, inv.Token, nil)
	refused("acceptInvitation twice", ai, err, http.StatusNotFound)

	ci, err = owner.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "revoked@example.com", Role: client.RoleAdmin})
	mustStatus(t, ci, err, http.StatusCreated)
	revoked := *ci.JSON201
	expect("createInvitation", owner, ci.HTTPResponse.Header, "invitation.create", "invitation", revoked.Id, ch{"email": {nil, "revoked@example.com"}, "role": {nil, "admin"}})
	ri, err := admin.C.RevokeInvitationWithResponse(bg, org, revoked.Id)
	mustStatus(t, ri, err, http.StatusNoContent)
	expect("revokeInvitation", admin, ri.HTTPResponse.Header, "invitation.revoke", "invitation", revoked.Id, nil)
	rr, err = lcWrap(admin.C.RevokeInvitationWithResponse(bg, org, revoked.Id))
	refused("revokeInvitation twice", rr, err, http.StatusNotFound)

	rm, err := owner.C.RemoveTeamMemberWithResponse(bg, org, team, member.ID, nil)
	mustStatus(t, rm, err, http.StatusNoContent)
	expect("removeTeamMember", owner, rm.HTTPResponse.Header, "member.remove", "member", team+"/"+member.ID, nil)
	dt, err := member.C.DeleteTicketWithResponse(bg, org, tk, nil)
	mustStatus(t, dt, err, http.StatusNoContent)
	expect("deleteTicket", member, dt.HTTPResponse.Header, "ticket.delete", "ticket", tk, ch{"title": {"Printer", nil}})
	rr, err = lcWrap(owner.C.DeleteTeamWithResponse(bg, org, team, &client.DeleteTeamParams{IfMatch: ptr(etagOf(1))}))
	refused("deleteTeam with a stale If-Match", rr, err, http.StatusPreconditionFailed)
	dtm, err := owner.C.DeleteTeamWithResponse(bg, org, team, nil)
	mustStatus(t, dtm, err, http.StatusNoContent)
	expect("deleteTeam", owner, dtm.HTTPResponse.Header, "team.delete", "team", team, nil)
	rr, err = lcWrap(owner.C.RemoveOrgUserWithResponse(bg, org, owner.ID, nil))
	refused("removeOrgUser of the last owner", rr, err, http.StatusConflict)
	ru, err := admin.C.RemoveOrgUserWithResponse(bg, org, joiner.ID, nil)
	mustStatus(t, ru, err, http.StatusNoContent)
	expect("removeOrgUser", admin, ru.HTTPResponse.Header, "user.remove", "user", joiner.ID, ch{"email": {"joiner@example.com", nil}, "role": {"member", nil}})

	// The next month: events land in another bucket.
	ts.Clock.Advance(35 * 24 * time.Hour)
	for _, a := range []*actor{&owner, &admin, &member, &joiner} {
		lcRenew(t, ts, a)
	}
	uo, err = admin.C.UpdateOrgWithResponse(bg, org, nil, client.OrgUpdate{Name: "Audited in April"})
	mustStatus(t, uo, err, http.StatusOK)
	expect("updateOrg (next month)", admin, uo.HTTPResponse.Header, "org.update", "org", org, ch{"name": {"Audited Inc", "Audited in April"}})
	tc, err = member.C.CreateTicketWithResponse(bg, org, nil, client.TicketCreate{Title: "April fool"})
	mustStatus(t, tc, err, http.StatusCreated)
	expect("createTicket (next month)", member, tc.HTTPResponse.Header, "ticket.create", "ticket", tc.JSON201.Id, ch{"title": {nil, "April fool"}, "status": {nil, "new"}, "priority": {nil, "normal"}})
	if m1, m2 := co.JSON201.CreatedAt.Month(), tc.JSON201.CreatedAt.Month(); m1 == m2 {
		t.Fatalf("the events do not span two months: %s and %s", co.JSON201.CreatedAt, tc.JSON201.CreatedAt)
	}

	all := lcAllEvents(t, admin.C, org, 100, nil, nil)

	t.Run("exactly one event per mutation, none for refused ones", func(t *testing.T) {
		if len(all) != len(want) {
			var got []string
			for _, ev := range all {
				got = append(got, ev.Action)
			}
			t.Errorf("%d events, want %d (one per successful mutation); got newest first: %v", len(all), len(want), got)
		}
		for i := 0; i < len(want) && i < len(all); i++ {
			w, ev := want[len(want)-1-i], all[i]
			if ev.ActorId != w.actor || ev.Action != w.action || ev.TargetType != w.targetType || ev.TargetId != w.targetID || ev.RequestId != w.reqID {
				t.Errorf("%s: event {actor %s action %s target %s/%s request %s}, want {%s %s %s/%s %s}", w.op,
					ev.ActorId, ev.Action, ev.TargetType, ev.TargetId, ev.RequestId, w.actor, w.action, w.targetType, w.targetID, w.reqID)
				continue
			}
			if w.changes == nil {
				continue
			}
			if got := lcChangesOf(t, ev); lcJSON(got) != lcJSON(w.changes) {
				t.Errorf("%s (%s): changes %s, want %s", w.op, w.action, lcJSON(got), lcJSON(w.changes))
			}
		}
	})
	t.Run("every event records what changed", func(t *testing.T) {
		// A removal should say what was removed, a creation what was
		// created, as user.remove and ticket.delete do.
		var empty []string
		for _, ev := range all {
			if len(ev.Changes) == 0 {
				empty = append(empty, ev.Action)
			}
		}
		if len(empty) > 0 {
			t.Errorf("events without before/after values: %v", empty)
		}
	})
	t.Run("no secret in the log", func(t *testing.T) {
		r, err := owner.C.ListAuditEventsWithResponse(bg, org, &client.ListAuditEventsParams{Limit: ptr(100)})
		mustStatus(t, r, err, http.StatusOK)
		for _, s := range []string{inv.Token, revoked.Token, invitation.HashToken(inv.Token), "tokenHash"} {
			if strings.Contains(string(r.Body), s) {
				t.Errorf("the audit log shows %q", s)
			}
		}
	})
	t.Run("newest first", func(t *testing.T) {
		for i := 1; i < len(all); i++ {
			if all[i].Id >= all[i-1].Id || all[i].At.After(all[i-1].At) {
				t.Errorf("event %d (%s %s at %s) is not older than event %d (%s %s at %s)", i, all[i].Action, all[i].Id, all[i].At,
					i-1, all[i-1].Action, all[i-1].Id, all[i-1].At)
			}
		}
	})
	t.Run("limit=2 walks every event once, across months", func(t *testing.T) {
		paged := lcAllEvents(t, admin.C, org, 2, nil, nil)
		ids := func(evs []client.AuditEvent) []string {
			out := make([]string, len(evs))
			for i, ev := range evs {
				out[i] = ev.Id
			}
			return out
		}
		if got, want := ids(paged), ids(all); !slices.Equal(got, want) {
			t.Errorf("limit=2: got %v, want %v", got, want)
		}
	})
	t.Run("since and until select by at, inclusive", func(t *testing.T) {
		if len(all) < 10 {
			t.Fatalf("only %d events", len(all))
		}
		newest, oldest := all[3], all[len(all)-4]
		since, until := oldest.At, newest.At
		got := lcAllEvents(t, admin.C, org, 3, &since, &until)
		var gotIDs, wantIDs []string
		for _, ev := range got {
			gotIDs = append(gotIDs, ev.Action+"@"+ev.At.Format(time.RFC3339Nano))
		}
		for _, ev := range all[3 : len(all)-3] {
			wantIDs = append(wantIDs, ev.Action+"@"+ev.At.Format(time.RFC3339Nano))
		}
		if !slices.Equal(gotIDs, wantIDs) {
			t.Errorf("since=%s until=%s: got %v, want %v", since.Format(time.RFC3339Nano), until.Format(time.RFC3339Nano), gotIDs, wantIDs)
		}
		// Only the second month.
		april := time.Date(tc.JSON201.CreatedAt.Year(), tc.JSON201.CreatedAt.Month(), 1, 0, 0, 0, 0, time.UTC)
		got = lcAllEvents(t, admin.C, org, 100, &april, nil)
		if len(got) != 2 || got[0].Action != "ticket.create" || got[1].Action != "org.update" {
			t.Errorf("since %s: got %d events, want the 2 of that month", april.Format(time.DateOnly), len(got))
		}
		// Only the first.
		march := april.Add(-time.Millisecond)
		got = lcAllEvents(t, admin.C, org, 100, nil, &march)
		if len(got) != len(all)-2 {
			t.Errorf("until %s: got %d events, want %d", march.Format(time.RFC3339Nano), len(got), len(all)-2)
		}
	})
	t.Run("a member gets 403, another org's member 404", func(t *testing.T) {
		r, err := member.C.ListAuditEventsWithResponse(bg, org, nil)
		wantProblem(t, r, err, http.StatusForbidden, "")
		stranger := ts.Actor(t, "stranger")
		MustOrg(t, stranger.C, "Elsewhere")
		r, err = stranger.C.ListAuditEventsWithResponse(bg, org, nil)
		wantProblem(t, r, err, http.StatusNotFound, "")
		r, err = joiner.C.ListAuditEventsWithResponse(bg, org, nil) // removed from the org
		wantProblem(t, r, err, http.StatusNotFound, "")
		r, err = owner.C.ListAuditEventsWithResponse(bg, org, &client.ListAuditEventsParams{Limit: ptr(1)})
		mustStatus(t, r, err, http.StatusOK)
	})
}

// ---------------------------------------------------------------------------
// Offboarding.

// lcOrgRoutes asks a's client for a handful of the org's routes and returns
// the statuses, keyed by operation.
func lcOrgRoutes(t *testing.T, a actor, orgID, teamID, ticketID string) map[string]int {
	t.Helper()
	out := map[string]int{}
	add := func(op string, r statusCoder, err error) {
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		out[op] = r.StatusCode()
	}
	r1, err := a.C.GetOrgWithResponse(bg, orgID, nil)
	add("getOrg", r1, err)
	r2, err := a.C.ListOrgUsersWithResponse(bg, orgID, nil)
	add("listOrgUsers", r2, err)
	r3, err := a.C.ListTicketsWithResponse(bg, orgID, nil)
	add("listTickets", r3, err)
	r4, err := a.C.GetTicketWithResponse(bg, orgID, ticketID, nil)
	add("getTicket", r4, err)
	r5, err := a.C.GetTeamWithResponse(bg, orgID, teamID, nil)
	add("getTeam", r5, err)
	r6, err := a.C.ListAuditEventsWithResponse(bg, orgID, nil)
	add("listAuditEvents", r6, err)
	r7, err := a.C.CreateTicketWithResponse(bg, orgID, nil, client.TicketCreate{Title: "written into a deleted org"})
	add("createTicket", r7, err)
	r8, err := a.C.UpdateOrgWithResponse(bg, orgID, nil, client.OrgUpdate{Name: "renamed while deleted"})
	add("updateOrg", r8, err)
	return out
}

// lcWrap turns (*T, error) into (statusCoder, error).
func lcWrap[T statusCoder](r T, err error) (statusCoder, error) { return r, err }

// lcOnly404 fails unless every status is 404.
func lcOnly404(t *testing.T, who string, got map[string]int) {
	t.Helper()
	for op, st := range got {
		if st != http.StatusNotFound {
			t.Errorf("%s: %s answered %d, want 404", who, op, st)
		}
	}
}

// lcMyOrgs lists a's orgs by ID.
func lcMyOrgs(t *testing.T, a actor) []string {
	t.Helper()
	r, err := a.C.ListOrgsWithResponse(bg, &client.ListOrgsParams{Limit: ptr(100)})
	mustStatus(t, r, err, http.StatusOK)
	var out []string
	for _, m := range r.JSON200.Items {
		out = append(out, m.OrgId)
	}
	slices.Sort(out)
	return out
}

func TestOffboardLifecycle(t *testing.T) {
	fault := &lcFault{op: "BatchWriteItem"}
	ts := MustServer(t, hWithAPIOptions(fault.middleware))
	d := lcOpen(t, ts)
	owner, admin, member := ts.Actor(t, "owner"), ts.Actor(t, "admin"), ts.Actor(t, "member")
	shared1, shared2, bOwner := ts.Actor(t, "shared"), ts.Actor(t, "shared"), ts.Actor(t, "bowner")

	// A (doomed) and B (survives) share shared1, shared2 and A's owner.
	a := MustOrg(t, owner.C, "Doomed")
	b := MustOrg(t, bOwner.C, "Survivor")
	MustUser(t, owner.C, a.Id, admin, client.RoleAdmin)
	for _, u := range []actor{member, shared1, shared2} {
		MustUser(t, owner.C, a.Id, u, client.RoleMember)
	}
	for _, u := range []actor{shared1, shared2, owner} {
		MustUser(t, bOwner.C, b.Id, u, client.RoleMember)
	}
	// Through the API: teams with members, tickets (with idempotency
	// records) with comments, invitations, audit events.
	build := func(org string, boss actor, members []actor, tag string) (team client.Team, tk client.Ticket) {
		team = MustTeam(t, boss.C, org, tag+" desk")
		for _, m := range members {
			MustMember(t, boss.C, org, team.Id, m.ID, client.RoleMember)
		}
		for i, m := range members {
			key := fmt.Sprintf("%s-ticket-%d", tag, i)
			r, err := m.C.CreateTicketWithResponse(bg, org, &client.CreateTicketParams{IdempotencyKey: &key},
				client.TicketCreate{Title: tag + " ticket", TeamId: &team.Id, AssigneeId: &members[0].ID})
			mustStatus(t, r, err, http.StatusCreated)
			tk = *r.JSON201
			MustComment(t, boss.C, org, tk.Id, "on it")
		}
		ikey := tag + "-invitation"
		r, err := boss.C.CreateInvitationWithResponse(bg, org, &client.CreateInvitationParams{IdempotencyKey: &ikey},
			client.InvitationCreate{Email: tag + "-pending@example.com", Role: client.RoleMember, TeamIds: &[]string{team.Id}})
		mustStatus(t, r, err, http.StatusCreated)
		MustInvitation(t, boss.C, org, tag+"-expiring@example.com", client.RoleMember)
		return team, tk
	}
	aTeam, aTicket := build(a.Id, owner, []actor{admin, member, shared1, shared2}, "a")
	bTeam, _ := build(b.Id, bOwner, []actor{shared1, shared2, owner}, "b")
	// A month later (a second audit bucket, expired invitations).
	ts.Clock.Advance(33 * 24 * time.Hour)
	for _, u := range []*actor{&owner, &admin, &member, &shared1, &shared2, &bOwner} {
		lcRenew(t, ts, u)
	}
	for _, boss := range []struct {
		actor
		org string
	}{{owner, a.Id}, {bOwner, b.Id}} {
		r, err := boss.C.UpdateOrgWithResponse(bg, boss.org, nil, client.OrgUpdate{Name: "Renamed " + boss.org})
		mustStatus(t, r, err, http.StatusOK)
		MustTicket(t, boss.C, boss.org, client.TicketCreate{Title: "next month"})
	}

	// In bulk: users through the store; a ticket with 4 comments and its
	// audit event written by the store once, then cloned raw.
	gen := ids.NewGenerator(ts.Clock.Now)
	began := time.Now()
	bulk := func(org, teamID string, users, tickets int) {
		var extra []string
		for i := range users {
			extra = append(extra, fmt.Sprintf("bulk.%s.%d", org[20:], i))
		}
		lcParallel(t, users, 2, func(i int) error {
			now := ts.Clock.Now()
			ev := audit.NewEvent(bg, gen.NewAt(now), audit.Outsider(org, extra[i]), "user.add", audit.Target{Type: "user", ID: extra[i]}, now, nil)
			return d.Orgs.AddOrgUser(bg, orgpkg.User{OrgID: org, UserID: extra[i], Email: extra[i] + "@example.com", Name: extra[i],
				Role: authz.Member, JoinedAt: now, UpdatedAt: now, Version: 1}, ev)
		})
		now := ts.Clock.Now()
		tk := ticket.Ticket{OrgID: org, ID: gen.New(), Title: "bulk", Status: ticket.StatusOpen, Priority: ticket.PriorityNormal,
			RequesterID: extra[0], AssigneeID: extra[1], TeamID: teamID, Tags: []string{"bulk"}, Version: 1, CreatedAt: now, UpdatedAt: now}
		ev := audit.NewEvent(bg, gen.New(), audit.Outsider(org, tk.RequesterID), "ticket.create", audit.Target{Type: "ticket", ID: tk.ID}, now, nil)
		if err := d.Tickets.CreateTicket(bg, tk, ev); err != nil {
			t.Fatal(err)
		}
		templateIDs := []string{tk.ID, ev.ID}
		for i := range 4 {
			c := ticket.Comment{OrgID: org, TicketID: tk.ID, ID: gen.New(), AuthorID: extra[i%2], Body: fmt.Sprintf("bulk comment %d", i), CreatedAt: now}
			cev := audit.NewEvent(bg, gen.New(), audit.Outsider(org, c.AuthorID), "comment.create", audit.Target{Type: "comment", ID: tk.ID + "/" + c.ID}, now, nil)
			if err := d.Tickets.CreateComment(bg, c, cev); err != nil {
				t.Fatal(err)
			}
			templateIDs = append(templateIDs, c.ID)
		}
		template := d.query(t, "ORG#"+org+"#TICKET#"+tk.ID)
		for _, it := range d.query(t, "ORG#"+org+"#AUDIT#"+now.Format("2006-01")) {
			if sk, _ := it["sk"].(*types.AttributeValueMemberS); sk != nil && sk.Value == "EVENT#"+ev.ID {
				template = append(template, it)
			}
		}
		if len(template) != 6 {
			t.Fatalf("template: %d items, want ticket, 4 comments and event", len(template))
		}
		fresh := make([][]string, tickets)
		for i := range fresh {
			for range templateIDs {
				fresh[i] = append(fresh[i], gen.New())
			}
		}
		d.clone(t, template, templateIDs, tickets, func(i, j int) string { return fresh[i][j] })
	}
	bulk(a.Id, aTeam.Id, 40, 350)
	bulk(b.Id, bTeam.Id, 10, 40)
	t.Logf("bulk writes: %v", time.Since(began).Round(time.Millisecond))

	before := d.scan(t)
	aItems, others := lcSplit(before, a.Id)
	if len(aItems) < 2000 {
		t.Fatalf("A has only %d items; the test wants thousands", len(aItems))
	}
	t.Logf("A: %d items; everything else: %d", len(aItems), len(others))

	t.Run("only the owner may delete", func(t *testing.T) {
		for _, u := range []actor{admin, member, shared1} {
			r, err := u.C.DeleteOrgWithResponse(bg, a.Id, nil)
			wantProblem(t, r, err, http.StatusForbidden, "")
		}
		r, err := bOwner.C.DeleteOrgWithResponse(bg, a.Id, nil)
		wantProblem(t, r, err, http.StatusNotFound, "")
		lt, err := member.C.ListTicketsWithResponse(bg, a.Id, &client.ListTicketsParams{Limit: ptr(5)})
		mustStatus(t, lt, err, http.StatusOK)
	})

	// The run of the owner's DELETE dies half-way: its 12th BatchWriteItem
	// and every later one fail (after everyone else's access went, while
	// A's partitions go, in the background of a 202).
	t.Run("crash half-way, then the owner's retry finishes", func(t *testing.T) {
		fault.arm(12)
		r, err := owner.C.DeleteOrgWithResponse(bg, a.Id, nil)
		mustStatus(t, r, err, http.StatusAccepted)
		// The dead run gives up its lease: the retry below takes over at
		// once. Wait for it to have died.
		for deadline := time.Now().Add(10 * time.Second); ; {
			j, err := owner.C.GetOffboardingWithResponse(bg, a.Id)
			mustStatus(t, j, err, http.StatusOK)
			item := hGet(t, ts, "ORG#"+a.Id, "#METADATA")
			if item != nil && item.hS("leaseOwner") == "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the failing run still holds the lease: %+v", j.JSON200)
			}
			time.Sleep(20 * time.Millisecond)
		}
		fault.disarm()
		left, _ := lcSplit(d.scan(t), a.Id)
		if len(left) == 0 || len(left) >= len(aItems) {
			t.Fatalf("after the crash A has %d of %d items: not half-way", len(left), len(aItems))
		}
		t.Logf("after the crash A has %d of %d items", len(left), len(aItems))

		// The org is gone for everyone...
		for _, u := range []actor{owner, admin, member, shared1} {
			lcOnly404(t, u.ID, lcOrgRoutes(t, u, a.Id, aTeam.Id, aTicket.Id))
		}
		for _, u := range []actor{admin, member, shared1} {
			r, err := u.C.DeleteOrgWithResponse(bg, a.Id, nil)
			wantProblem(t, r, err, http.StatusNotFound, "")
		}
		for _, u := range []actor{owner, shared1, shared2} {
			if got := lcMyOrgs(t, u); !slices.Equal(got, []string{b.Id}) {
				t.Errorf("%s's orgs while A is being deleted: %v, want only B %s", u.ID, got, b.Id)
			}
		}
		// ...except that its owner's DELETE finishes the job.
		began := time.Now()
		r, err = owner.C.DeleteOrgWithResponse(bg, a.Id, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.StatusCode() == http.StatusAccepted {
			for deadline := time.Now().Add(60 * time.Second); ; {
				j, err := owner.C.GetOffboardingWithResponse(bg, a.Id)
				if err != nil {
					t.Fatal(err)
				}
				if j.StatusCode() == http.StatusNotFound {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the resumed offboarding is still running: %+v", j.JSON200)
				}
				time.Sleep(50 * time.Millisecond)
			}
		} else {
			mustStatus(t, r, err, http.StatusNoContent)
		}
		t.Logf("the retried DELETE finished in %v", time.Since(began).Round(time.Millisecond))
	})

	t.Run("nothing of A is left; everything else is unchanged", func(t *testing.T) {
		after := d.scan(t)
		left, rest := lcSplit(after, a.Id)
		for i, it := range left {
			if i == 20 {
				t.Errorf("... and %d more", len(left)-20)
				break
			}
			t.Errorf("left of A: %s", it)
		}
		if !slices.Equal(rest, others) {
			t.Errorf("the rest of the table changed: %d items before, %d after", len(others), len(rest))
			for _, it := range rest {
				if _, found := slices.BinarySearch(others, it); !found {
					t.Errorf("new or changed: %s", it)
					break
				}
			}
			for _, it := range others {
				if _, found := slices.BinarySearch(rest, it); !found {
					t.Errorf("gone or changed: %s", it)
					break
				}
			}
		}
	})
	t.Run("afterwards", func(t *testing.T) {
		for _, u := range []actor{owner, admin, member, shared1, shared2} {
			lcOnly404(t, u.ID, lcOrgRoutes(t, u, a.Id, aTeam.Id, aTicket.Id))
		}
		r, err := owner.C.DeleteOrgWithResponse(bg, a.Id, nil)
		wantProblem(t, r, err, http.StatusNotFound, "")
		for _, u := range []actor{owner, shared1, shared2} {
			if got := lcMyOrgs(t, u); !slices.Equal(got, []string{b.Id}) {
				t.Errorf("%s's orgs: %v, want only B %s", u.ID, got, b.Id)
			}
		}
		if got := lcMyOrgs(t, admin); len(got) != 0 {
			t.Errorf("admin's orgs: %v, want none", got)
		}
		g, err := shared1.C.GetOrgWithResponse(bg, b.Id, nil)
		mustStatus(t, g, err, http.StatusOK)
	})
}

// A crash before everyone else's access is gone: the org must already be
// 404 for its other members (the org is marked deleting first).
func TestOffboardResumesAfterEarlyCrash(t *testing.T) {
	fault := &lcFault{op: "BatchWriteItem"}
	ts := MustServer(t, hWithAPIOptions(fault.middleware))
	d := lcOpen(t, ts)
	w := MustWorld(t, ts, "Early crash")
	fault.arm(1)
	r, err := w.Owner.C.DeleteOrgWithResponse(bg, w.Org.Id, nil)
	fault.disarm()
	wantProblem(t, r, err, http.StatusInternalServerError, "")
	// The org is marked: from that moment every member, the deleting owner
	// included, gets 404 on everything but the DELETE that resumes the job,
	// although the crash spared their edges (the authorization read sees
	// the org's mark).
	for _, a := range []actor{w.Owner, w.Admin, w.Member, w.TeamOwner, w.Requester} {
		lcOnly404(t, a.ID, lcOrgRoutes(t, a, w.Org.Id, w.Team.Id, w.Ticket.Id))
	}
	r, err = w.Owner.C.DeleteOrgWithResponse(bg, w.Org.Id, nil)
	mustStatus(t, r, err, http.StatusNoContent)
	if left, _ := lcSplit(d.scan(t), w.Org.Id); len(left) > 0 {
		t.Errorf("%d items of the org left, e.g. %s", len(left), left[0])
	}
}

// An org created on the 31st with events the next month: every monthly
// audit bucket goes.
func TestOffboardAuditBucketsFromMonthEnd(t *testing.T) {
	ts := MustServer(t)
	d := lcOpen(t, ts)
	start := ts.Clock.Now()
	ts.Clock.Advance(time.Date(start.Year(), start.Month(), 31, 12, 0, 0, 0, time.UTC).Sub(start)) // March 31
	owner := ts.Actor(t, "owner")
	o := MustOrg(t, owner.C, "Month end")
	ts.Clock.Advance(5 * 24 * time.Hour) // April 5
	lcRenew(t, ts, &owner)
	MustTicket(t, owner.C, o.Id, client.TicketCreate{Title: "in April"})
	evs := lcAllEvents(t, owner.C, o.Id, 100, nil, nil)
	if len(evs) != 2 || evs[0].At.Month() == evs[1].At.Month() {
		t.Fatalf("want 2 events in two months, got %+v", evs)
	}
	r, err := owner.C.DeleteOrgWithResponse(bg, o.Id, nil)
	mustStatus(t, r, err, http.StatusNoContent)
	if left, _ := lcSplit(d.scan(t), o.Id); len(left) > 0 {
		t.Errorf("%d items of the org left:\n%s", len(left), strings.Join(left, "\n"))
	}
}

// TestOffboardInBackground: an offboarding that does not finish within the
// DELETE (here: its last sweep waits a second) answers 202 with its
// progress and a Location, once every member is cut off; the org then
// answers 404 to everyone but its deleting owner's DELETE and progress
// reads; the work finishes in the background and leaves nothing.
func TestOffboardInBackground(t *testing.T) {
	ts := MustServer(t, hWithOffboarding(time.Second, time.Millisecond))
	d := lcOpen(t, ts)
	w := MustWorld(t, ts, "Offboarded in the background")
	org := w.Org.Id
	r, err := w.Owner.C.DeleteOrgWithResponse(bg, org, nil)
	mustStatus(t, r, err, http.StatusAccepted)
	if got, want := r.HTTPResponse.Header.Get("Location"), "/v1/orgs/"+org+"/offboarding"; got != want {
		t.Errorf("Location: got %q, want %q", got, want)
	}
	if got := r.JSON202; got.OrgId != org || got.StartedBy != w.Owner.ID || got.State != client.OffboardingStateRunning || got.Phase == client.OffboardingPhaseCutoff {
		t.Errorf("202 body: got %+v, want a running offboarding past its cut-off", got)
	}
	// Every member is cut off: no other member's edge is left.
	for _, it := range d.scan(t) {
		if m := lcItem(t, it); m["type"] == "OrgUser" && m["orgId"] == org && m["userId"] != w.Owner.ID {
			t.Errorf("a member's edge outlived the 202: %s", it)
		}
	}
	for _, a := range []actor{w.Owner, w.Admin, w.Member, w.TeamOwner} {
		lcOnly404(t, a.ID, lcOrgRoutes(t, a, org, w.Team.Id, w.Ticket.Id))
	}
	g, err := w.Admin.C.GetOffboardingWithResponse(bg, org)
	wantProblem(t, g, err, http.StatusNotFound, "")
	again, err := w.Owner.C.DeleteOrgWithResponse(bg, org, nil)
	mustStatus(t, again, err, http.StatusAccepted)
	deadline := time.Now().Add(20 * time.Second)
	for {
		g, err := w.Owner.C.GetOffboardingWithResponse(bg, org)
		if err != nil {
			t.Fatal(err)
		}
		if g.StatusCode() == http.StatusNotFound {
			break
		}
		mustStatus(t, g, err, http.StatusOK)
		if time.Now().After(deadline) {
			t.Fatalf("the offboarding is still running: %+v", g.JSON200)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if left, _ := lcSplit(d.scan(t), org); len(left) > 0 {
		t.Errorf("%d items of the org left, e.g. %s", len(left), left[0])
	}
	ts.requireCovered(t, http.StatusAccepted)
}

// TestOffboardWorkerResumesADeadRun: when the run of an offboarding dies
// after the cut-off (here: its deletes fail), the org stays cut off, and the
// worker (any replica's) takes the job over once its lease expires and
// finishes it.
func TestOffboardWorkerResumesADeadRun(t *testing.T) {
	fault := &lcFault{op: "BatchWriteItem"}
	ts := MustServer(t, hWithAPIOptions(fault.middleware), hWithDeletionLease(time.Second))
	d := lcOpen(t, ts)
	w := MustWorld(t, ts, "Dead run")
	org := w.Org.Id
	fault.arm(2) // the cut-off's delete succeeds, the next ones fail
	r, err := w.Owner.C.DeleteOrgWithResponse(bg, org, nil)
	mustStatus(t, r, err, http.StatusAccepted)
	for _, a := range []actor{w.Owner, w.Admin, w.Member} {
		lcOnly404(t, a.ID, lcOrgRoutes(t, a, org, w.Team.Id, w.Ticket.Id))
	}
	if n := ts.Deletions.RunOnce(bg); n != 0 {
		t.Errorf("the worker took over a live lease (%d job(s) finished)", n)
	}
	fault.disarm()
	time.Sleep(1100 * time.Millisecond) // the dead run's lease expires
	if n := ts.Deletions.RunOnce(bg); n != 1 {
		t.Errorf("worker: %d job(s) finished, want 1", n)
	}
	if left, _ := lcSplit(d.scan(t), org); len(left) > 0 {
		t.Errorf("%d items of the org left, e.g. %s", len(left), left[0])
	}
	g, err := w.Owner.C.GetOffboardingWithResponse(bg, org)
	wantProblem(t, g, err, http.StatusNotFound, "")
}
