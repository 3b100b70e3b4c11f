package httpapi_test

// End-to-end tests of the tenant lifecycle through the generated
// client: invitations, the audit log and offboarding. Where a test must see
// the table itself (what is stored, what is left after offboarding) it opens
// the server's table with its own client, test-only (openInvitation); the server's
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
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/store"
	orgpkg "github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/ticket"
)

// ---------------------------------------------------------------------------
// Test-only access to a MustServer's table.

// tableDB is test-only access to the table of the MustServer that t created:
// raw scans, and the product's stores over their own client (for bulk
// writes, or to run an offboarding that crashes).
type tableDB struct {
	raw     *dynamodb.Client
	name    string
	Orgs    *store.Orgs
	Tickets *store.Tickets
}

// scan returns every item of the table (a test-only Scan), each rendered
// canonically as JSON, sorted.
func (d *tableDB) scan(t *testing.T) []string {
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

// splitByOrg splits rendered items into those that mention id anywhere (key,
// index key or attribute) and the rest.
func splitByOrg(items []string, id string) (with, without []string) {
	for _, it := range items {
		if strings.Contains(it, id) {
			with = append(with, it)
		} else {
			without = append(without, it)
		}
	}
	return with, without
}

// rawItem decodes a rendered item.
func rawItem(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// dbFault, once armed, makes every call of one DynamoDB operation fail
// from the nth on: the process "crashes" there (nothing after it runs).
type dbFault struct {
	op    string
	n     atomic.Int64 // 0: disarmed
	calls atomic.Int64
}

var errLcCrash = errors.New("injected crash")

// arm makes the nth call from now on (and every later one) fail.
func (f *dbFault) arm(n int64) { f.calls.Store(0); f.n.Store(n) }

func (f *dbFault) disarm() { f.n.Store(0) }

func (f *dbFault) middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("lifecycle_test.fault",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if n := f.n.Load(); n > 0 && middleware.GetOperationName(ctx) == f.op && f.calls.Add(1) >= n {
				return middleware.InitializeOutput{}, middleware.Metadata{}, errLcCrash
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
}

// renewLease re-mints a's token at the server's current time (after the clock
// jumped past its expiry).
func renewLease(t *testing.T, ts *testServer, a *actor) {
	t.Helper()
	a.Token = ts.Token(t, a.ID, a.Email, a.Name)
	a.C = ts.Client(t, a.Token)
	a.HTTP = ts.HTTPClient(t, a.Token)
}

// parallelN runs fn(i) for i in [0, n) on workers goroutines.
func parallelN(t *testing.T, n, workers int, fn func(i int) error) {
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

// cloneItems writes n copies of the template items (read raw, as the store
// wrote them): in copy i every occurrence of each templateIDs[j] in any
// string (keys, index keys, attributes) becomes fresh(i, j). BatchWriteItem,
// 25 items per request, on a few goroutines.
func (d *tableDB) clone(t *testing.T, template []map[string]types.AttributeValue, templateIDs []string, n int, fresh func(i, j int) string) {
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
	parallelN(t, batches, 1, func(b int) error {
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
func (d *tableDB) query(t *testing.T, pk string) []map[string]types.AttributeValue {
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

// ---------------------------------------------------------------------------
// Invitations.

// ---------------------------------------------------------------------------
// Audit log.

// ---------------------------------------------------------------------------
// Offboarding.

// orgRoutes asks a's client for a handful of the org's routes and returns
// the statuses, keyed by operation.
func orgRoutes(t *testing.T, a actor, orgID, teamID, ticketID string) map[string]int {
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

// wrapSame turns (*T, error) into (statusCoder, error).
func wrapSame[T statusCoder](r T, err error) (statusCoder, error) { return r, err }

// only404 fails unless every status is 404.
func only404(t *testing.T, who string, got map[string]int) {
	t.Helper()
	for op, st := range got {
		if st != http.StatusNotFound {
			t.Errorf("%s: %s answered %d, want 404", who, op, st)
		}
	}
}

// listMyOrgs lists a's orgs by ID.
func listMyOrgs(t *testing.T, a actor) []string {
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
	fault := &dbFault{op: "BatchWriteItem"}
	ts := MustServer(t, withAPIOptions(fault.middleware))
	d := openInvitation(t, ts)
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
		k, err := boss.C.CreateApiKeyWithResponse(bg, org, client.ApiKeyCreate{Name: tag + " bot", Role: client.ApiKeyCreateRoleMember})
		mustStatus(t, k, err, http.StatusCreated)
		MustTicket(t, ts.Client(t, k.JSON201.Secret), org, client.TicketCreate{Title: tag + " filed by a key"})
		return team, tk
	}
	aTeam, aTicket := build(a.Id, owner, []actor{admin, member, shared1, shared2}, "a")
	bTeam, _ := build(b.Id, bOwner, []actor{shared1, shared2, owner}, "b")
	// A month later (a second audit bucket, expired invitations).
	ts.Clock.Advance(33 * 24 * time.Hour)
	for _, u := range []*actor{&owner, &admin, &member, &shared1, &shared2, &bOwner} {
		renewLease(t, ts, u)
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
		parallelN(t, users, 2, func(i int) error {
			now := ts.Clock.Now()
			ev := audit.NewEvent(bg, gen, audit.Outsider(org, extra[i]), "user.add", "user", extra[i], now, nil)
			return d.Orgs.AddOrgUser(bg, orgpkg.User{OrgID: org, UserID: extra[i], Email: extra[i] + "@example.com", Name: extra[i],
				Role: authz.Member, JoinedAt: now, UpdatedAt: now, Version: 1}, ev)
		})
		now := ts.Clock.Now()
		tk := ticket.Ticket{OrgID: org, ID: gen.New(), Title: "bulk", Status: ticket.StatusOpen, Priority: ticket.PriorityNormal,
			RequesterID: extra[0], AssigneeID: extra[1], TeamID: teamID, Tags: []string{"bulk"}, Version: 1, CreatedAt: now, UpdatedAt: now}
		ev := audit.NewEvent(bg, gen, audit.Outsider(org, tk.RequesterID), "ticket.create", "ticket", tk.ID, now, nil)
		if err := d.Tickets.CreateTicket(bg, tk, ev); err != nil {
			t.Fatal(err)
		}
		templateIDs := []string{tk.ID, ev.ID}
		for i := range 4 {
			c := ticket.Comment{OrgID: org, TicketID: tk.ID, ID: gen.New(), AuthorID: extra[i%2], Body: fmt.Sprintf("bulk comment %d", i), CreatedAt: now}
			cev := audit.NewEvent(bg, gen, audit.Outsider(org, c.AuthorID), "comment.create", "comment", tk.ID+"/"+c.ID, now, nil)
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
	aItems, others := splitByOrg(before, a.Id)
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
			item := getRaw(t, ts, "ORG#"+a.Id, "#METADATA")
			if item != nil && item.Str("leaseOwner") == "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the failing run still holds the lease: %+v", j.JSON200)
			}
			time.Sleep(20 * time.Millisecond)
		}
		fault.disarm()
		left, _ := splitByOrg(d.scan(t), a.Id)
		if len(left) == 0 || len(left) >= len(aItems) {
			t.Fatalf("after the crash A has %d of %d items: not half-way", len(left), len(aItems))
		}
		t.Logf("after the crash A has %d of %d items", len(left), len(aItems))

		// The org is gone for everyone...
		for _, u := range []actor{owner, admin, member, shared1} {
			only404(t, u.ID, orgRoutes(t, u, a.Id, aTeam.Id, aTicket.Id))
		}
		for _, u := range []actor{admin, member, shared1} {
			r, err := u.C.DeleteOrgWithResponse(bg, a.Id, nil)
			wantProblem(t, r, err, http.StatusNotFound, "")
		}
		for _, u := range []actor{owner, shared1, shared2} {
			if got := listMyOrgs(t, u); !slices.Equal(got, []string{b.Id}) {
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
		left, rest := splitByOrg(after, a.Id)
		// The count of A's creator went down by A: the rest is as it was.
		counted := func(it string) bool { return strings.Contains(it, `"type":"OwnedOrgs"`) }
		rest, others := slices.DeleteFunc(rest, counted), slices.DeleteFunc(slices.Clone(others), counted)
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
			only404(t, u.ID, orgRoutes(t, u, a.Id, aTeam.Id, aTicket.Id))
		}
		r, err := owner.C.DeleteOrgWithResponse(bg, a.Id, nil)
		wantProblem(t, r, err, http.StatusNotFound, "")
		for _, u := range []actor{owner, shared1, shared2} {
			if got := listMyOrgs(t, u); !slices.Equal(got, []string{b.Id}) {
				t.Errorf("%s's orgs: %v, want only B %s", u.ID, got, b.Id)
			}
		}
		if got := listMyOrgs(t, admin); len(got) != 0 {
			t.Errorf("admin's orgs: %v, want none", got)
		}
		g, err := shared1.C.GetOrgWithResponse(bg, b.Id, nil)
		mustStatus(t, g, err, http.StatusOK)
	})
}

// A crash before everyone else's access is gone: the org must already be
// 404 for its other members (the org is marked deleting first).
func TestOffboardResumesAfterEarlyCrash(t *testing.T) {
	fault := &dbFault{op: "BatchWriteItem"}
	ts := MustServer(t, withAPIOptions(fault.middleware))
	d := openInvitation(t, ts)
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
		only404(t, a.ID, orgRoutes(t, a, w.Org.Id, w.Team.Id, w.Ticket.Id))
	}
	r, err = w.Owner.C.DeleteOrgWithResponse(bg, w.Org.Id, nil)
	mustStatus(t, r, err, http.StatusNoContent)
	if left, _ := splitByOrg(d.scan(t), w.Org.Id); len(left) > 0 {
		t.Errorf("%d items of the org left, e.g. %s", len(left), left[0])
	}
}

// An org created on the 31st with events the next month: every monthly
// audit bucket goes.
func TestOffboardAuditBucketsFromMonthEnd(t *testing.T) {
	ts := MustServer(t)
	d := openInvitation(t, ts)
	start := ts.Clock.Now()
	ts.Clock.Advance(time.Date(start.Year(), start.Month(), 31, 12, 0, 0, 0, time.UTC).Sub(start)) // March 31
	owner := ts.Actor(t, "owner")
	o := MustOrg(t, owner.C, "Month end")
	ts.Clock.Advance(5 * 24 * time.Hour) // April 5
	renewLease(t, ts, &owner)
	MustTicket(t, owner.C, o.Id, client.TicketCreate{Title: "in April"})
	evs := allEvents(t, owner.C, o.Id, 100, nil, nil)
	if len(evs) != 2 || evs[0].At.Month() == evs[1].At.Month() {
		t.Fatalf("want 2 events in two months, got %+v", evs)
	}
	r, err := owner.C.DeleteOrgWithResponse(bg, o.Id, nil)
	mustStatus(t, r, err, http.StatusNoContent)
	if left, _ := splitByOrg(d.scan(t), o.Id); len(left) > 0 {
		t.Errorf("%d items of the org left:\n%s", len(left), strings.Join(left, "\n"))
	}
}

// TestOffboardInBackground: an offboarding that does not finish within the
// DELETE (here: its last sweep waits a second) answers 202 with its
// progress and a Location, once every member is cut off; the org then
// answers 404 to everyone but its deleting owner's DELETE and progress
// reads; the work finishes in the background and leaves nothing.
func TestOffboardInBackground(t *testing.T) {
	ts := MustServer(t, withOffboarding(time.Second, time.Millisecond))
	d := openInvitation(t, ts)
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
	// While it runs (the worker picks it up after a second's grace), the
	// owner may repeat the DELETE; an admin may not read its progress.
	again, err := w.Owner.C.DeleteOrgWithResponse(bg, org, nil)
	mustStatus(t, again, err, http.StatusAccepted)
	g, err := w.Admin.C.GetOffboardingWithResponse(bg, org)
	wantProblem(t, g, err, http.StatusNotFound, "")
	// Every member is cut off: no other member's edge is left.
	for _, it := range d.scan(t) {
		if m := rawItem(t, it); m["type"] == "OrgUser" && m["orgId"] == org && m["userId"] != w.Owner.ID {
			t.Errorf("a member's edge outlived the 202: %s", it)
		}
	}
	for _, a := range []actor{w.Owner, w.Admin, w.Member, w.TeamOwner} {
		only404(t, a.ID, orgRoutes(t, a, org, w.Team.Id, w.Ticket.Id))
	}
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
	if left, _ := splitByOrg(d.scan(t), org); len(left) > 0 {
		t.Errorf("%d items of the org left, e.g. %s", len(left), left[0])
	}
}

// TestOffboardWorkerResumesADeadRun: when the run of an offboarding dies
// after the cut-off (here: its deletes fail), the org stays cut off, and the
// worker (any replica's) takes the job over once its lease expires and
// finishes it.
func TestOffboardWorkerResumesADeadRun(t *testing.T) {
	fault := &dbFault{op: "BatchWriteItem"}
	ts := MustServer(t, withAPIOptions(fault.middleware), withDeletionLease(time.Second))
	d := openInvitation(t, ts)
	w := MustWorld(t, ts, "Dead run")
	org := w.Org.Id
	fault.arm(2) // the cut-off's delete succeeds, the next ones fail
	r, err := w.Owner.C.DeleteOrgWithResponse(bg, org, nil)
	mustStatus(t, r, err, http.StatusAccepted)
	for _, a := range []actor{w.Owner, w.Admin, w.Member} {
		only404(t, a.ID, orgRoutes(t, a, org, w.Team.Id, w.Ticket.Id))
	}
	if n := ts.Deletions.RunOnce(bg); n != 0 {
		t.Errorf("the worker took over a live lease (%d job(s) finished)", n)
	}
	fault.disarm()
	time.Sleep(1100 * time.Millisecond) // the dead run's lease expires
	if n := ts.Deletions.RunOnce(bg); n != 1 {
		t.Errorf("worker: %d job(s) finished, want 1", n)
	}
	if left, _ := splitByOrg(d.scan(t), org); len(left) > 0 {
		t.Errorf("%d items of the org left, e.g. %s", len(left), left[0])
	}
	g, err := w.Owner.C.GetOffboardingWithResponse(bg, org)
	wantProblem(t, g, err, http.StatusNotFound, "")
}

// TestDeleteOrgRacingJoins: users added and invitations accepted while the
// org is deleted. Once the DELETE was answered, no join sent afterwards
// succeeds; when the offboarding is over nothing of the org is left (claims
// included).
func TestDeleteOrgRacingJoins(t *testing.T) {
	ts := MustServer(t)
	hc := raceClient(t, 16)
	for round := range 5 {
		w := MustWorld(t, ts, fmt.Sprintf("Joined while deleted %d", round))
		org := w.Org.Id
		var invitees []actor
		var tokens []string
		for i := range 6 {
			email := fmt.Sprintf("joiner-%d-%d@example.com", round, i)
			tokens = append(tokens, MustInvitation(t, w.Owner.C, org, email, client.RoleMember).Token)
			invitees = append(invitees, ts.Invitee(t, "joiner", email))
		}
		var answered time.Time
		var amu sync.Mutex
		parallel(13, func(i int) {
			switch {
			case i == 12:
				time.Sleep(time.Duration(round) * 2 * time.Millisecond)
				r := doReqE(hc, http.MethodDelete, ts.URL+"/v1/orgs/"+org, w.Owner.Token, nil, "")
				amu.Lock()
				answered = time.Now()
				amu.Unlock()
				if r.Err != nil || (r.Status != http.StatusNoContent && r.Status != http.StatusAccepted) {
					t.Errorf("delete org: %v %d %s", r.Err, r.Status, r.Body)
				}
			default:
				for j := range 3 {
					sent := time.Now()
					var r apiRespE
					if i < 6 && j == 0 {
						r = doReqE(hc, http.MethodPost, ts.URL+"/v1/invitations/"+tokens[i]+"/accept", invitees[i].Token, nil, "")
					} else {
						uid := fmt.Sprintf("added.%d.%d.%d", round, i, j)
						r = doReqE(hc, http.MethodPost, ts.URL+"/v1/orgs/"+org+"/users", w.Admin.Token, nil,
							jsonOf(map[string]any{"userId": uid, "email": uid + "@example.com", "name": uid, "role": "member"}))
					}
					if r.Err != nil {
						t.Errorf("join: %v", r.Err)
						continue
					}
					amu.Lock()
					after := !answered.IsZero() && sent.After(answered)
					amu.Unlock()
					if after && r.Status < 300 {
						t.Errorf("a join sent after the DELETE was answered succeeded: %d %s", r.Status, r.Body)
					}
				}
			}
		})
		mustOffboarded(t, ts, w.Owner.C, org)
	}
	mustHealthy(t, ts)
}

// mustOffboarded waits (up to 20 s) for the offboarding of org, started by
// owner, to be over, then fails t for every item of the org left in the
// table.
func mustOffboarded(t *testing.T, ts *testServer, owner *client.ClientWithResponses, org string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		g, err := owner.GetOffboardingWithResponse(bg, org)
		if err != nil {
			t.Fatal(err)
		}
		if g.StatusCode() == http.StatusNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("offboarding of %s still running", org)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, it := range scanAll(t, ts) {
		if strings.Contains(it.Str("pk"), org) || it.Str("orgId") == org {
			t.Errorf("item of the offboarded org left: %s", dump([]dbItem{it}))
		}
	}
}
