package store_test

import (
	"context"
	"encoding/json"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
	"github.com/guregu/dynamo/v2"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/dynamotest"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/store"
	"github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/ticket"
)

func TestMain(m *testing.M) { dynamotest.Main(m) }

// fixture is one test's own table and the stores over it.
type fixture struct {
	DB          *store.DB
	Orgs        *store.Orgs
	Teams       *store.Teams
	Tickets     *store.Tickets
	Invitations *store.Invitations
	APIKeys     *store.APIKeys
	Rec         *dynamotest.Recorder
	raw         *dynamodb.Client
	ids         *ids.Generator
	now         time.Time
}

// MustFixture creates a fresh table in DynamoDB Local for tb.
func MustFixture(tb testing.TB) *fixture {
	tb.Helper()
	rec := &dynamotest.Recorder{}
	client := store.NewClient(dynamotest.Config(tb), store.Options{
		Endpoint:   dynamotest.Endpoint(),
		APIOptions: []func(*middleware.Stack) error{rec.Middleware},
	})
	name := dynamotest.TableName(tb)
	ctx := context.Background()
	if err := store.Migrate(ctx, client, name); err != nil {
		tb.Fatalf("migrate: %v", err)
	}
	dynamotest.StreamOff(tb, client, name) // TestStreamReader turns it on again
	tb.Cleanup(func() {
		_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	db := store.Open(client, name)
	// DynamoDB Local's indexes never lag: an offboarding needs no grace.
	db.SetDeletionTiming(store.DefaultDeletionLease, 0)
	rec.Reset()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	return &fixture{DB: db, Orgs: &store.Orgs{DB: db}, Teams: &store.Teams{DB: db}, Tickets: &store.Tickets{DB: db}, Invitations: &store.Invitations{DB: db}, APIKeys: &store.APIKeys{DB: db},
		Rec: rec, raw: client, ids: ids.NewGenerator(func() time.Time { return now }), now: now}
}

// evOrg is the audit event of a test's direct write to the store under
// orgID: made by a user acting from outside the org (no role fence), so a
// test exercises the store's own conditions only. Every store write takes
// its event; tests of the fence build theirs with audit.By.
func evOrg(orgID string) audit.Event {
	now := time.Now()
	return audit.NewEvent(context.Background(), eventIDs, audit.Outsider(orgID, "u_test_writer"), "test.write", "test", "test", now, nil)
}

var eventIDs = ids.NewGenerator(time.Now)

// ev is evOrg for the org of entity (an org.Org, or anything with an
// OrgID field: a user, team, membership, ticket, comment, invitation).
func ev(entity any) audit.Event {
	v := reflect.Indirect(reflect.ValueOf(entity))
	if o, ok := entity.(tenant.Org); ok {
		return evOrg(o.ID)
	}
	return evOrg(v.FieldByName("OrgID").String())
}

// snapshot returns every item of the table, rendered canonically (a
// test-only Scan: the product never scans).
func (f *fixture) snapshot(tb testing.TB) []string {
	tb.Helper()
	var items []map[string]any
	err := dynamo.NewFromIface(f.raw).Table(f.DB.TableName()).Scan().All(context.Background(), &items)
	if err != nil {
		tb.Fatalf("scan: %v", err)
	}
	out := make([]string, len(items))
	for i, it := range items {
		b, _ := json.Marshal(it)
		out[i] = string(b)
	}
	sort.Strings(out)
	return out
}

// mustUnchanged runs fn, which must fail, and asserts the table is as before.
func (f *fixture) mustUnchanged(tb testing.TB, fn func() error) error {
	tb.Helper()
	before := f.snapshot(tb)
	err := fn()
	if err == nil {
		tb.Fatalf("want an error, got nil")
	}
	after := f.snapshot(tb)
	if len(before) != len(after) {
		tb.Fatalf("table changed: %d items before, %d after", len(before), len(after))
	}
	for i := range before {
		if before[i] != after[i] {
			tb.Fatalf("table changed:\nbefore %s\nafter  %s", before[i], after[i])
		}
	}
	return err
}

// sample is seed 000's data inside one org: Alice owns Engineering and is
// an admin of Design; Bob is a member of Engineering. One departure: a team
// keeps an owner in tenantd, so Design is owned by Dana (a member of the
// org in no other team).
type sample struct {
	Org              tenant.Org
	Alice, Bob, Dana tenant.User
	Eng, Design      membership.Team
}

func (f *fixture) user(orgID, id, email, name string, role authz.Role) tenant.User {
	return tenant.User{OrgID: orgID, UserID: id, Email: email, Name: name, Role: role, JoinedAt: f.now, UpdatedAt: f.now, Version: 1}
}

func (f *fixture) team(orgID, name string) membership.Team {
	return membership.Team{OrgID: orgID, ID: f.ids.New(), Name: name, MemberCount: 1, Version: 1, CreatedAt: f.now, UpdatedAt: f.now}
}

func (f *fixture) member(t membership.Team, userID string, role authz.Role) membership.Membership {
	return membership.Membership{OrgID: t.OrgID, TeamID: t.ID, UserID: userID, Role: role, JoinedAt: f.now, UpdatedAt: f.now, Version: 1}
}

// MustSampled is MustFixture with MustSample's org in it: the start of
// most store tests.
func MustSampled(tb testing.TB) (*fixture, sample) {
	tb.Helper()
	f := MustFixture(tb)
	return f, f.MustSample(tb)
}

// MustSample writes seed 000's sample and returns it.
func (f *fixture) MustSample(tb testing.TB) sample {
	tb.Helper()
	ctx := context.Background()
	org := tenant.Org{ID: f.ids.New(), Name: "Acme", Version: 1, CreatedAt: f.now, UpdatedAt: f.now}
	s := sample{Org: org,
		Alice: f.user(org.ID, "u_alice", "alice@example.com", "Alice Chen", authz.Owner),
		Bob:   f.user(org.ID, "u_bob", "bob@example.com", "Bob Park", authz.Member),
		Dana:  f.user(org.ID, "u_dana", "dana@example.com", "Dana Reyes", authz.Member)}
	must(tb, f.Orgs.CreateOrg(ctx, org, s.Alice, ev(org)))
	must(tb, f.Orgs.AddOrgUser(ctx, s.Bob, ev(s.Bob)))
	must(tb, f.Orgs.AddOrgUser(ctx, s.Dana, ev(s.Dana)))
	s.Eng, s.Design = f.team(org.ID, "Engineering"), f.team(org.ID, "Design")
	must(tb, f.Teams.CreateTeam(ctx, s.Eng, f.member(s.Eng, "u_alice", authz.Owner), ev(s.Eng)))
	must(tb, f.Teams.AddTeamMember(ctx, f.member(s.Eng, "u_bob", authz.Member), ev(s.Eng)))
	s.Eng.MemberCount, s.Eng.OwnerCount = 2, 1
	must(tb, f.Teams.CreateTeam(ctx, s.Design, f.member(s.Design, "u_dana", authz.Owner), ev(s.Design)))
	must(tb, f.Teams.AddTeamMember(ctx, f.member(s.Design, "u_alice", authz.Admin), ev(s.Design)))
	s.Design.MemberCount, s.Design.OwnerCount = 2, 1
	f.Rec.Reset()
	return s
}

// ticket returns a new ticket of org requested by requester.
func (f *fixture) ticket(orgID, requester, title string, status ticket.Status) ticket.Ticket {
	return ticket.Ticket{OrgID: orgID, ID: f.ids.New(), Title: title, Status: status, Priority: ticket.PriorityNormal,
		RequesterID: requester, Tags: []string{}, Version: 1, CreatedAt: f.now, UpdatedAt: f.now}
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// offboard runs an org's whole offboarding as the API does: start (the
// mark), cut-off, and the rest (Deletions.Finish), as actor.
func (f *fixture) offboard(tb testing.TB, orgID, actor string) {
	tb.Helper()
	ctx := context.Background()
	owner := "test-" + orgID
	j, started, err := f.Orgs.StartOffboarding(ctx, orgID, actor, 0, owner, time.Now())
	if err != nil {
		tb.Fatalf("start offboarding: %v", err)
	}
	if !started {
		tb.Fatalf("start offboarding: not started (%+v)", j)
	}
	must(tb, f.Orgs.CutOff(ctx, orgID, owner))
	must(tb, (&store.Deletions{DB: f.DB}).Finish(ctx, j, owner))
}
