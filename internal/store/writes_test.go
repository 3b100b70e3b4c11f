package store_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/guregu/dynamo/v2"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/dynamotest"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/invitation"
	orgpkg "github.com/tenantd/tenantd/internal/org"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/team"
	"github.com/tenantd/tenantd/internal/ticket"
)

// This file holds the write rules of the store: every conditional write,
// its error kind and code, and that a refused write changes nothing.

// ---- helpers ----

// wantErr asserts that err carries kind and code.
func wantErr(tb testing.TB, err error, kind errs.Kind, code string) {
	tb.Helper()
	if err == nil {
		tb.Fatalf("got nil error, want %v %q", kind, code)
	}
	if got, want := errs.KindOf(err), kind; got != want {
		tb.Errorf("kind: got %v, want %v (err: %v)", got, want, err)
	}
	if got, want := errs.CodeOf(err), code; got != want {
		tb.Errorf("code: got %q, want %q (err: %v)", got, want, err)
	}
}

// wantNoCalls asserts that nothing reached DynamoDB since the last Reset.
func (f *fixture) wantNoCalls(tb testing.TB) {
	tb.Helper()
	if got, want := f.Rec.Count(), 0; got != want {
		tb.Errorf("DynamoDB calls: got %d (%s), want %d", got, f.Rec.Names(), want)
	}
}

// rawKey is the primary key of a stored item.
type rawKey struct {
	PK string `dynamo:"pk"`
	SK string `dynamo:"sk"`
}

// scanKeys returns every primary key in the table (test-only Scan).
func (f *fixture) scanKeys(tb testing.TB) []rawKey {
	tb.Helper()
	var keys []rawKey
	err := dynamo.NewFromIface(f.raw).Table(f.DB.TableName()).Scan().Project("pk", "sk").All(context.Background(), &keys)
	if err != nil {
		tb.Fatalf("scan: %v", err)
	}
	return keys
}

// keysWithPrefix returns the keys whose partition key starts with prefix.
func (f *fixture) keysWithPrefix(tb testing.TB, prefix string) []rawKey {
	tb.Helper()
	var out []rawKey
	for _, k := range f.scanKeys(tb) {
		if strings.HasPrefix(k.PK, prefix) {
			out = append(out, k)
		}
	}
	return out
}

// rawItem reads one item by its key, nil if absent.
func (f *fixture) rawItem(tb testing.TB, pk, sk string) map[string]any {
	tb.Helper()
	var it map[string]any
	err := dynamo.NewFromIface(f.raw).Table(f.DB.TableName()).Get("pk", pk).Range("sk", dynamo.Equal, sk).
		Consistent(true).One(context.Background(), &it)
	if err == dynamo.ErrNotFound {
		return nil
	}
	if err != nil {
		tb.Fatalf("get %s %s: %v", pk, sk, err)
	}
	return it
}

// claim reads the email claim of email (already normalized) in org.
func (f *fixture) claim(tb testing.TB, orgID, email string) map[string]any {
	tb.Helper()
	return f.rawItem(tb, "ORG#"+orgID+"#EMAIL#"+email, "#CLAIM")
}

// newOrg creates an org owned by userIDs[0] with the other IDs as members;
// each user's email is <id>@example.com.
func (f *fixture) newOrg(tb testing.TB, name string, userIDs ...string) orgpkg.Org {
	tb.Helper()
	ctx := context.Background()
	org := orgpkg.Org{ID: f.ids.New(), Name: name, Version: 1, CreatedAt: f.now, UpdatedAt: f.now}
	must(tb, f.Orgs.CreateOrg(ctx, org, f.user(org.ID, userIDs[0], userIDs[0]+"@example.com", userIDs[0], authz.Owner), ev(org)))
	for _, id := range userIDs[1:] {
		must(tb, f.Orgs.AddOrgUser(ctx, f.user(org.ID, id, id+"@example.com", id, authz.Member), evOrg(org.ID)))
	}
	return org
}

// seqIDs returns n user IDs prefix000, prefix001, ...
func seqIDs(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%03d", prefix, i)
	}
	return out
}

// allPages follows a listing to its end and returns each page's size and
// every item. It fails on more than 50 pages.
func allPages[T any](tb testing.TB, fetch func(after string) (page.Result[T], error)) ([]int, []T) {
	tb.Helper()
	var sizes []int
	var items []T
	after := ""
	for range 50 {
		r, err := fetch(after)
		if err != nil {
			tb.Fatalf("page %d: %v", len(sizes)+1, err)
		}
		sizes = append(sizes, len(r.Items))
		items = append(items, r.Items...)
		if r.Next == "" {
			return sizes, items
		}
		after = r.Next
	}
	tb.Fatalf("more than 50 pages")
	return nil, nil
}

func teamCount(tb testing.TB, f *fixture, orgID, teamID string) int {
	tb.Helper()
	tm, err := f.Teams.GetTeam(context.Background(), orgID, teamID)
	must(tb, err)
	return tm.MemberCount
}

func userTeamIDs(tb testing.TB, f *fixture, orgID, userID string) []string {
	tb.Helper()
	r, err := f.Teams.ListUserTeams(context.Background(), orgID, userID, page.Request{Limit: 100})
	if errs.Is(err, errs.NotFound) { // no such user (any more): no teams
		return []string{}
	}
	must(tb, err)
	out := make([]string, 0, len(r.Items))
	for _, m := range r.Items {
		out = append(out, m.TeamID)
	}
	slices.Sort(out)
	return out
}

func ticketIDs(ts []ticket.Ticket) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}

// txSizes returns the item counts of the TransactWriteItems recorded.
func (f *fixture) txSizes() []int {
	var out []int
	for _, op := range f.Rec.Ops() {
		if op.Name == "TransactWriteItems" {
			out = append(out, op.Items)
		}
	}
	return out
}

// seedClones copies the items at keys once per entry of news, replacing
// old by it in every string attribute, and writes the copies with
// BatchWriteItem. It makes many entities exactly like one the store wrote
// (keys, index keys, counts) without one transaction each: DynamoDB Local
// takes about 20 ms per transaction, which would dominate the suite.
// addUserTeams adds teams to a user's team set, as the store's membership
// writes do, for edges that seedClones copied in behind its back.
func (f *fixture) addUserTeams(tb testing.TB, org, user string, teams []string) {
	tb.Helper()
	_, err := f.raw.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(f.DB.TableName()),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "ORG#" + org}, "sk": &types.AttributeValueMemberS{Value: "USER#" + user}},
		UpdateExpression:          aws.String("ADD teamIds :t"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberSS{Value: teams}},
	})
	if err != nil {
		tb.Fatal(err)
	}
}

func (f *fixture) seedClones(tb testing.TB, keys []rawKey, old string, news []string) {
	tb.Helper()
	ctx := context.Background()
	table := aws.String(f.DB.TableName())
	var templates []map[string]types.AttributeValue
	for _, k := range keys {
		out, err := f.raw.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: k.PK}, "sk": &types.AttributeValueMemberS{Value: k.SK}}})
		if err != nil || out.Item == nil {
			tb.Fatalf("seed template %+v: %v (found: %v)", k, err, out != nil && out.Item != nil)
		}
		templates = append(templates, out.Item)
	}
	var reqs []types.WriteRequest
	for _, n := range news {
		for _, tmpl := range templates {
			item := make(map[string]types.AttributeValue, len(tmpl))
			for a, v := range tmpl {
				if sv, ok := v.(*types.AttributeValueMemberS); ok {
					v = &types.AttributeValueMemberS{Value: strings.ReplaceAll(sv.Value, old, n)}
				}
				item[a] = v
			}
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: item}})
		}
	}
	for len(reqs) > 0 {
		chunk := reqs[:min(25, len(reqs))]
		reqs = reqs[len(chunk):]
		for tries := 0; len(chunk) > 0; tries++ {
			if tries == 10 {
				tb.Fatalf("seed: unprocessed items after %d tries", tries)
			}
			out, err := f.raw.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
				RequestItems: map[string][]types.WriteRequest{*table: chunk}})
			if err != nil {
				tb.Fatalf("seed: %v", err)
			}
			chunk = out.UnprocessedItems[*table]
		}
	}
}

// seedUsers adds the users ids (members, email <id>@example.com) to org:
// one through AddUser, the others cloned from it.
func (f *fixture) seedUsers(tb testing.TB, orgID string, ids []string) {
	tb.Helper()
	must(tb, f.Orgs.AddOrgUser(context.Background(), f.user(orgID, ids[0], ids[0]+"@example.com", ids[0], authz.Member), evOrg(orgID)))
	f.seedClones(tb, []rawKey{{"ORG#" + orgID, "USER#" + ids[0]}, {"ORG#" + orgID + "#EMAIL#" + ids[0] + "@example.com", "#CLAIM"}},
		ids[0], ids[1:])
}

// ---- orgs and users ----

func TestCreateOrg(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	org := orgpkg.Org{ID: f.ids.New(), Name: "Acme", Version: 1, CreatedAt: f.now, UpdatedAt: f.now}
	alice := f.user(org.ID, "u_alice", "Alice@Example.com", "Alice Chen", authz.Owner)

	t.Run("OK", func(t *testing.T) {
		must(t, f.Orgs.CreateOrg(ctx, org, alice, ev(org)))
		got, err := f.Orgs.GetOrg(ctx, org.ID)
		must(t, err)
		if got, want := got, org; !reflect.DeepEqual(got, want) {
			t.Errorf("org: got %+v, want %+v", got, want)
		}
		u, err := f.Orgs.GetOrgUser(ctx, org.ID, "u_alice")
		must(t, err)
		if got, want := u, alice; !reflect.DeepEqual(got, want) {
			t.Errorf("owner: got %+v, want %+v", got, want)
		}
		c := f.claim(t, org.ID, "alice@example.com") // claimed in normalized form
		if c == nil {
			t.Fatalf("no email claim for alice@example.com")
		}
		if got, want := c["userId"], any("u_alice"); got != want {
			t.Errorf("claim userId: got %v, want %v", got, want)
		}
		r, err := f.Orgs.ListOrgs(ctx, "u_alice", page.Request{})
		must(t, err)
		if got, want := len(r.Items), 1; got != want {
			t.Fatalf("user orgs: got %d, want %d", got, want)
		}
		if got, want := r.Items[0].OrgID+" "+string(r.Items[0].Role), org.ID+" owner"; got != want {
			t.Errorf("user org: got %q, want %q", got, want)
		}
	})

	t.Run("OK ownerCount not exposed", func(t *testing.T) {
		for _, typ := range []reflect.Type{reflect.TypeOf(orgpkg.Org{}), reflect.TypeOf(orgpkg.User{})} {
			for i := range typ.NumField() {
				if name := typ.Field(i).Name; strings.Contains(strings.ToLower(name), "ownercount") {
					t.Errorf("%s exposes %s", typ, name)
				}
			}
		}
	})

	t.Run("OK last-owner rule holds for the creator", func(t *testing.T) {
		next := alice
		next.Role, next.Version = authz.Admin, 2
		err := f.mustUnchanged(t, func() error { return f.Orgs.UpdateOrgUser(ctx, alice, next, ev(next)) })
		wantErr(t, err, errs.Conflict, "last_owner")
	})

	t.Run("ErrOrgExists", func(t *testing.T) {
		other := f.user(org.ID, "u_mallory", "mallory@example.com", "Mallory", authz.Owner)
		err := f.mustUnchanged(t, func() error {
			return f.Orgs.CreateOrg(ctx, orgpkg.Org{ID: org.ID, Name: "Evil", Version: 1}, other, evOrg(org.ID))
		})
		wantErr(t, err, errs.Conflict, "org_exists")
	})

	t.Run("ErrInvalidEmail", func(t *testing.T) {
		f.Rec.Reset()
		o := orgpkg.Org{ID: f.ids.New(), Name: "X", Version: 1}
		err := f.Orgs.CreateOrg(ctx, o, f.user(o.ID, "u_x", "x#y@example.com", "X", authz.Owner), ev(o))
		wantErr(t, err, errs.Invalid, "invalid_email")
		f.wantNoCalls(t)
	})
}

func TestAddUser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	s := f.MustSample(t)

	t.Run("OK", func(t *testing.T) {
		carol := f.user(s.Org.ID, "u_carol", "carol@example.com", "Carol", authz.Admin)
		must(t, f.Orgs.AddOrgUser(ctx, carol, ev(carol)))
		got, err := f.Orgs.GetOrgUser(ctx, s.Org.ID, "u_carol")
		must(t, err)
		if got, want := got, carol; !reflect.DeepEqual(got, want) {
			t.Errorf("got %+v, want %+v", got, want)
		}
		if f.claim(t, s.Org.ID, "carol@example.com") == nil {
			t.Error("no email claim")
		}
	})

	t.Run("ErrUserExists", func(t *testing.T) {
		again := f.user(s.Org.ID, "u_bob", "bob2@example.com", "Bob Again", authz.Admin)
		err := f.mustUnchanged(t, func() error { return f.Orgs.AddOrgUser(ctx, again, ev(again)) })
		wantErr(t, err, errs.Conflict, "user_exists")
	})

	t.Run("ErrEmailTaken", func(t *testing.T) {
		for _, email := range []string{"bob@example.com", "BOB@example.com", "Bob@Example.COM"} {
			u := f.user(s.Org.ID, "u_bobby", email, "Bobby", authz.Member)
			err := f.mustUnchanged(t, func() error { return f.Orgs.AddOrgUser(ctx, u, ev(u)) })
			wantErr(t, err, errs.Conflict, "email_taken")
		}
	})

	t.Run("ErrEmailTaken by an owner does not count an owner", func(t *testing.T) {
		u := f.user(s.Org.ID, "u_bobby", "ALICE@example.com", "Bobby", authz.Owner)
		err := f.mustUnchanged(t, func() error { return f.Orgs.AddOrgUser(ctx, u, ev(u)) })
		wantErr(t, err, errs.Conflict, "email_taken")
	})

	t.Run("ErrOrgNotFound", func(t *testing.T) {
		u := f.user(f.ids.New(), "u_dave", "dave@example.com", "Dave", authz.Member)
		err := f.mustUnchanged(t, func() error { return f.Orgs.AddOrgUser(ctx, u, ev(u)) })
		wantErr(t, err, errs.NotFound, "org_not_found")
		owner := f.user(f.ids.New(), "u_dave", "dave@example.com", "Dave", authz.Owner) // the owner-count path
		err = f.mustUnchanged(t, func() error { return f.Orgs.AddOrgUser(ctx, owner, ev(owner)) })
		wantErr(t, err, errs.NotFound, "org_not_found")
	})

	t.Run("OK same email in another org", func(t *testing.T) {
		other := f.newOrg(t, "Other", "u_zed")
		must(t, f.Orgs.AddOrgUser(ctx, f.user(other.ID, "u_bob", "bob@example.com", "Bob", authz.Member), evOrg(other.ID)))
	})
}

func TestUpdateUser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	s := f.MustSample(t)
	org := s.Org.ID

	current := func(t *testing.T, id string) orgpkg.User {
		t.Helper()
		u, err := f.Orgs.GetOrgUser(ctx, org, id)
		must(t, err)
		return u
	}

	t.Run("OK change email swaps claims", func(t *testing.T) {
		next := s.Bob
		next.Email, next.Name, next.Version = "Robert@example.com", "Robert Park", 2
		must(t, f.Orgs.UpdateOrgUser(ctx, s.Bob, next, ev(next)))
		if got, want := current(t, "u_bob"), next; !reflect.DeepEqual(got, want) {
			t.Errorf("got %+v, want %+v", got, want)
		}
		if f.claim(t, org, "bob@example.com") != nil {
			t.Error("the old email is still claimed")
		}
		if c := f.claim(t, org, "robert@example.com"); c == nil || c["userId"] != "u_bob" {
			t.Errorf("new claim: got %v, want one for u_bob", c)
		}
		// The old email is free: another user can take it.
		must(t, f.Orgs.AddOrgUser(ctx, f.user(org, "u_dave", "bob@example.com", "Dave", authz.Member), evOrg(org)))
		// The new one is taken, in any case.
		err := f.mustUnchanged(t, func() error {
			return f.Orgs.AddOrgUser(ctx, f.user(org, "u_erin", "ROBERT@example.com", "Erin", authz.Member), evOrg(org))
		})
		wantErr(t, err, errs.Conflict, "email_taken")
	})

	t.Run("OK case-only email change keeps the claim", func(t *testing.T) {
		prev := current(t, "u_dave")
		next := prev
		next.Email, next.Version = "BOB@EXAMPLE.COM", prev.Version+1
		must(t, f.Orgs.UpdateOrgUser(ctx, prev, next, ev(next)))
		if c := f.claim(t, org, "bob@example.com"); c == nil || c["userId"] != "u_dave" {
			t.Errorf("claim: got %v, want one for u_dave", c)
		}
	})

	t.Run("ErrStaleVersion", func(t *testing.T) {
		stale := s.Bob // version 1; Bob is at 2 now
		next := stale
		next.Name, next.Version = "Stale Bob", 2
		err := f.mustUnchanged(t, func() error { return f.Orgs.UpdateOrgUser(ctx, stale, next, ev(next)) })
		wantErr(t, err, errs.PreconditionFailed, "version_mismatch")
		// The same with an email change and a role change in the transaction.
		next.Email, next.Role = "stale@example.com", authz.Owner
		err = f.mustUnchanged(t, func() error { return f.Orgs.UpdateOrgUser(ctx, stale, next, ev(next)) })
		wantErr(t, err, errs.PreconditionFailed, "version_mismatch")
	})

	t.Run("ErrUserNotFound", func(t *testing.T) {
		ghost := f.user(org, "u_ghost", "ghost@example.com", "Ghost", authz.Member)
		next := ghost
		next.Version = 2
		err := f.mustUnchanged(t, func() error { return f.Orgs.UpdateOrgUser(ctx, ghost, next, ev(next)) })
		wantErr(t, err, errs.NotFound, "user_not_found")
	})

	t.Run("ErrEmailTaken", func(t *testing.T) {
		prev := current(t, "u_bob")
		next := prev
		next.Email, next.Version = "ALICE@example.com", prev.Version+1
		err := f.mustUnchanged(t, func() error { return f.Orgs.UpdateOrgUser(ctx, prev, next, ev(next)) })
		wantErr(t, err, errs.Conflict, "email_taken")
	})

	t.Run("ErrLastOwner", func(t *testing.T) {
		prev := current(t, "u_alice")
		next := prev
		next.Role, next.Version = authz.Member, prev.Version+1
		err := f.mustUnchanged(t, func() error { return f.Orgs.UpdateOrgUser(ctx, prev, next, ev(next)) })
		wantErr(t, err, errs.Conflict, "last_owner")
	})

	t.Run("OK promote Bob then demote Alice", func(t *testing.T) {
		bob := current(t, "u_bob")
		next := bob
		next.Role, next.Version = authz.Owner, bob.Version+1
		must(t, f.Orgs.UpdateOrgUser(ctx, bob, next, ev(next)))
		alice := current(t, "u_alice")
		demoted := alice
		demoted.Role, demoted.Version = authz.Member, alice.Version+1
		must(t, f.Orgs.UpdateOrgUser(ctx, alice, demoted, ev(demoted)))
		if got, want := current(t, "u_alice").Role, authz.Member; got != want {
			t.Errorf("alice: got %s, want %s", got, want)
		}
		// Now Bob is the last owner.
		bob = current(t, "u_bob")
		next = bob
		next.Role, next.Version = authz.Admin, bob.Version+1
		err := f.mustUnchanged(t, func() error { return f.Orgs.UpdateOrgUser(ctx, bob, next, ev(next)) })
		wantErr(t, err, errs.Conflict, "last_owner")
	})

	t.Run("OK owner to owner keeps the count", func(t *testing.T) {
		bob := current(t, "u_bob")
		next := bob
		next.Name, next.Version = "Bob the Owner", bob.Version+1
		must(t, f.Orgs.UpdateOrgUser(ctx, bob, next, ev(next)))
		next2 := next
		next2.Role, next2.Version = authz.Member, next.Version+1
		err := f.mustUnchanged(t, func() error { return f.Orgs.UpdateOrgUser(ctx, next, next2, ev(next2)) })
		wantErr(t, err, errs.Conflict, "last_owner")
	})
}

func TestRemoveUser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	s := f.MustSample(t)
	org := s.Org.ID

	t.Run("OK", func(t *testing.T) {
		must(t, f.Teams.AddTeamMember(ctx, f.member(s.Design, "u_bob", authz.Member), ev(s.Design)))
		must(t, f.Orgs.RemoveOrgUser(ctx, s.Bob, ev(s.Bob)))
		_, err := f.Orgs.GetOrgUser(ctx, org, "u_bob")
		wantErr(t, err, errs.NotFound, "user_not_found")
		if f.claim(t, org, "bob@example.com") != nil {
			t.Error("the email claim is still there")
		}
		if got := userTeamIDs(t, f, org, "u_bob"); len(got) != 0 {
			t.Errorf("ListUserTeams: got %v, want none", got)
		}
		// Engineering keeps Alice; Design keeps Dana and Alice.
		for tm, want := range map[team.Team]int{s.Eng: 1, s.Design: 2} {
			_, err := f.Teams.GetTeamMember(ctx, org, tm.ID, "u_bob")
			wantErr(t, err, errs.NotFound, "member_not_found")
			if got := teamCount(t, f, org, tm.ID); got != want {
				t.Errorf("%s memberCount: got %d, want %d", tm.Name, got, want)
			}
		}
		r, err := f.Orgs.ListOrgs(ctx, "u_bob", page.Request{})
		must(t, err)
		if got, want := len(r.Items), 0; got != want {
			t.Errorf("ListUserOrgs: got %d, want %d", got, want)
		}
		if keys := f.keysWithPrefix(t, "ORG#"+org); slices.ContainsFunc(keys, func(k rawKey) bool {
			return strings.Contains(k.PK+k.SK, "u_bob") || strings.Contains(k.PK, "bob@")
		}) {
			t.Errorf("items of Bob left: %v", keys)
		}
		// The email is free again.
		must(t, f.Orgs.AddOrgUser(ctx, f.user(org, "u_bob2", "bob@example.com", "Bob 2", authz.Member), evOrg(org)))
	})

	t.Run("ErrLastOwner", func(t *testing.T) {
		err := f.mustUnchanged(t, func() error { return f.Orgs.RemoveOrgUser(ctx, s.Alice, ev(s.Alice)) })
		wantErr(t, err, errs.Conflict, "last_owner")
	})

	t.Run("ErrStaleVersion", func(t *testing.T) {
		stale := f.user(org, "u_bob2", "bob@example.com", "Bob 2", authz.Member)
		stale.Version = 2
		err := f.mustUnchanged(t, func() error { return f.Orgs.RemoveOrgUser(ctx, stale, ev(stale)) })
		wantErr(t, err, errs.PreconditionFailed, "version_mismatch")
	})

	t.Run("ErrUserNotFound", func(t *testing.T) {
		err := f.mustUnchanged(t, func() error { return f.Orgs.RemoveOrgUser(ctx, s.Bob, ev(s.Bob)) })
		wantErr(t, err, errs.NotFound, "user_not_found")
	})

	t.Run("ErrLastTeamOwner", func(t *testing.T) {
		second := f.user(org, "u_owner2", "owner2@example.com", "Owner 2", authz.Owner)
		must(t, f.Orgs.AddOrgUser(ctx, second, ev(second))) // counts a second owner
		// Alice is still the only owner of Engineering.
		err := f.mustUnchanged(t, func() error { return f.Orgs.RemoveOrgUser(ctx, s.Alice, ev(s.Alice)) })
		wantErr(t, err, errs.Conflict, "last_team_owner")
	})

	t.Run("OK an owner when another owner remains", func(t *testing.T) {
		second := f.user(org, "u_owner2", "owner2@example.com", "Owner 2", authz.Owner)
		// Engineering gets a second owner, so Alice may go.
		must(t, f.Teams.AddTeamMember(ctx, f.member(s.Eng, second.UserID, authz.Owner), ev(s.Eng)))
		must(t, f.Orgs.RemoveOrgUser(ctx, s.Alice, ev(s.Alice)))
		err := f.mustUnchanged(t, func() error { return f.Orgs.RemoveOrgUser(ctx, second, ev(second)) })
		wantErr(t, err, errs.Conflict, "last_owner")
		// Alice's edges went with her; the teams she was alone in are empty.
		if got := userTeamIDs(t, f, org, "u_alice"); len(got) != 0 {
			t.Errorf("ListUserTeams(alice): got %v, want none", got)
		}
		if got, want := teamCount(t, f, org, s.Design.ID), 1; got != want { // Dana
			t.Errorf("Design memberCount: got %d, want %d", got, want)
		}
		if got, want := teamCount(t, f, org, s.Eng.ID), 1; got != want {
			t.Errorf("Engineering memberCount: got %d, want %d", got, want)
		}
	})
}

// TestRemoveUserInManyTeams covers the chunked path: a user in more teams
// than one transaction can hold loses every membership and every team's
// memberCount stays exact.
func TestRemoveUserInManyTeams(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	org := f.newOrg(t, "Many", "u_alice", "u_many").ID
	const n = 60
	// One team made by the store (Alice its owner, u_many a member:
	// memberCount 2), then 59 copies of it.
	tm := f.team(org, "Team")
	must(t, f.Teams.CreateTeam(ctx, tm, f.member(tm, "u_alice", authz.Owner), ev(tm)))
	must(t, f.Teams.AddTeamMember(ctx, f.member(tm, "u_many", authz.Member), ev(tm)))
	teams := []string{tm.ID}
	for range n - 1 {
		teams = append(teams, f.ids.New())
	}
	pk := "ORG#" + org + "#TEAM#" + tm.ID
	f.seedClones(t, []rawKey{{pk, "#METADATA"}, {pk, "MEMBER#u_alice"}, {pk, "MEMBER#u_many"}}, tm.ID, teams[1:])
	f.addUserTeams(t, org, "u_many", teams[1:])
	slices.Sort(teams)
	if got, want := userTeamIDs(t, f, org, "u_many"), teams; !slices.Equal(got, want) {
		t.Fatalf("before: user teams got %d, want %d", len(got), len(want))
	}
	u, err := f.Orgs.GetOrgUser(ctx, org, "u_many")
	must(t, err)

	t.Run("OK", func(t *testing.T) {
		f.Rec.Reset()
		must(t, f.Orgs.RemoveOrgUser(ctx, u, ev(u)))
		// 60 edges: one transaction of 49 edges guarded by a check of the
		// user's version (99 items), then the user, claim, org check and the
		// remaining 11 edges, and the audit event (26 items).
		if got, want := f.txSizes(), []int{99, 26}; !slices.Equal(got, want) {
			t.Errorf("transactions: got %v, want %v", got, want)
		}
		if got := userTeamIDs(t, f, org, "u_many"); len(got) != 0 {
			t.Errorf("ListUserTeams: got %d teams, want none", len(got))
		}
		got, err := f.Teams.BatchGetTeams(ctx, org, teams)
		must(t, err)
		if len(got) != n {
			t.Fatalf("teams: got %d, want %d", len(got), n)
		}
		for id, tm := range got {
			if got, want := tm.MemberCount, 1; got != want {
				t.Errorf("team %s memberCount: got %d, want %d", id, got, want)
			}
		}
		_, err = f.Orgs.GetOrgUser(ctx, org, "u_many")
		wantErr(t, err, errs.NotFound, "user_not_found")
		for _, k := range f.scanKeys(t) {
			if strings.Contains(k.SK, "u_many") || strings.Contains(k.PK, "u_many") {
				t.Errorf("item left: %+v", k)
			}
		}
	})
}

// TestRemoveUserInManyTeamsRefused: a refused removal (the last owner, or a
// stale version) must leave the table unchanged on the chunked path too,
// as it does on the single-transaction path (TestRemoveUser).
func TestRemoveUserInManyTeamsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// soloOwner makes an org whose only owner, u_solo, owns 50 teams: 50
	// edges need 103 transaction items, more than one transaction holds.
	soloOwner := func(t *testing.T) (*fixture, orgpkg.User) {
		f := MustFixture(t)
		org := f.newOrg(t, "Solo", "u_solo", "u_other").ID
		tm := f.team(org, "Team")
		must(t, f.Teams.CreateTeam(ctx, tm, f.member(tm, "u_solo", authz.Owner), ev(tm)))
		var more []string
		for range 49 {
			more = append(more, f.ids.New())
		}
		pk := "ORG#" + org + "#TEAM#" + tm.ID
		f.seedClones(t, []rawKey{{pk, "#METADATA"}, {pk, "MEMBER#u_solo"}}, tm.ID, more)
		f.addUserTeams(t, org, "u_solo", more)
		if got, want := len(userTeamIDs(t, f, org, "u_solo")), 50; got != want {
			t.Fatalf("teams: got %d, want %d", got, want)
		}
		solo, err := f.Orgs.GetOrgUser(ctx, org, "u_solo")
		must(t, err)
		return f, solo
	}

	t.Run("ErrLastOwner", func(t *testing.T) {
		t.Parallel()
		f, solo := soloOwner(t)
		err := f.mustUnchanged(t, func() error { return f.Orgs.RemoveOrgUser(ctx, solo, ev(solo)) })
		wantErr(t, err, errs.Conflict, "last_owner")
	})
	t.Run("ErrStaleVersion", func(t *testing.T) {
		t.Parallel()
		f, solo := soloOwner(t)
		stale := solo
		stale.Version = 9
		err := f.mustUnchanged(t, func() error { return f.Orgs.RemoveOrgUser(ctx, stale, ev(stale)) })
		wantErr(t, err, errs.PreconditionFailed, "version_mismatch")
	})
}

// ---- teams and members ----

func TestCreateTeam(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	s := f.MustSample(t)
	org := s.Org.ID

	t.Run("OK", func(t *testing.T) {
		tm := f.team(org, "Support")
		tm.MemberCount, tm.OwnerCount = 7, 3 // ignored: a new team has its creator, its owner, only
		must(t, f.Teams.CreateTeam(ctx, tm, f.member(tm, "u_bob", authz.Owner), ev(tm)))
		got, err := f.Teams.GetTeam(ctx, org, tm.ID)
		must(t, err)
		want := tm
		want.MemberCount, want.OwnerCount = 1, 1
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got %+v, want %+v", got, want)
		}
		m, err := f.Teams.GetTeamMember(ctx, org, tm.ID, "u_bob")
		must(t, err)
		if got, want := m.Role, authz.Owner; got != want {
			t.Errorf("creator role: got %s, want %s", got, want)
		}
		if got, want := userTeamIDs(t, f, org, "u_bob"), []string{s.Eng.ID, tm.ID}; !slices.Equal(got, sortedCopy(want)) {
			t.Errorf("bob's teams: got %v, want %v", got, want)
		}
	})

	t.Run("ErrNotOrgMember", func(t *testing.T) {
		tm := f.team(org, "Ghosts")
		err := f.mustUnchanged(t, func() error { return f.Teams.CreateTeam(ctx, tm, f.member(tm, "u_ghost", authz.Owner), ev(tm)) })
		wantErr(t, err, errs.Conflict, "not_org_member")
	})

	t.Run("ErrNotOrgMember of another org", func(t *testing.T) {
		f.newOrg(t, "Other", "u_zed")
		tm := f.team(org, "Intruders")
		err := f.mustUnchanged(t, func() error { return f.Teams.CreateTeam(ctx, tm, f.member(tm, "u_zed", authz.Owner), ev(tm)) })
		wantErr(t, err, errs.Conflict, "not_org_member")
	})

	t.Run("ErrTeamExists", func(t *testing.T) {
		again := s.Eng
		again.Name = "Engineering 2"
		err := f.mustUnchanged(t, func() error { return f.Teams.CreateTeam(ctx, again, f.member(again, "u_bob", authz.Owner), ev(again)) })
		wantErr(t, err, errs.Conflict, "team_exists")
	})
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

func TestAddMember(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	s := f.MustSample(t)
	org := s.Org.ID

	t.Run("OK", func(t *testing.T) {
		m := f.member(s.Design, "u_bob", authz.Admin)
		must(t, f.Teams.AddTeamMember(ctx, m, ev(m)))
		if got, want := teamCount(t, f, org, s.Design.ID), 3; got != want {
			t.Errorf("memberCount: got %d, want %d", got, want)
		}
		got, err := f.Teams.GetTeamMember(ctx, org, s.Design.ID, "u_bob")
		must(t, err)
		if !reflect.DeepEqual(got, m) {
			t.Errorf("member: got %+v, want %+v", got, m)
		}
		if got, want := userTeamIDs(t, f, org, "u_bob"), sortedCopy([]string{s.Eng.ID, s.Design.ID}); !slices.Equal(got, want) {
			t.Errorf("bob's teams: got %v, want %v", got, want)
		}
	})

	t.Run("ErrAlreadyMember", func(t *testing.T) {
		err := f.mustUnchanged(t, func() error {
			return f.Teams.AddTeamMember(ctx, f.member(s.Eng, "u_bob", authz.Admin), ev(s.Eng))
		})
		wantErr(t, err, errs.Conflict, "already_member")
	})

	t.Run("ErrNotOrgMember", func(t *testing.T) {
		err := f.mustUnchanged(t, func() error {
			return f.Teams.AddTeamMember(ctx, f.member(s.Eng, "u_ghost", authz.Member), ev(s.Eng))
		})
		wantErr(t, err, errs.Conflict, "not_org_member")
	})

	t.Run("ErrTeamNotFound", func(t *testing.T) {
		missing := f.team(org, "Missing")
		err := f.mustUnchanged(t, func() error {
			return f.Teams.AddTeamMember(ctx, f.member(missing, "u_bob", authz.Member), ev(missing))
		})
		wantErr(t, err, errs.NotFound, "team_not_found")
	})

	t.Run("ErrTeamNotFound in another org", func(t *testing.T) {
		other := f.newOrg(t, "Other", "u_bob")
		m := f.member(s.Eng, "u_bob", authz.Member)
		m.OrgID = other.ID // Eng belongs to the sample org
		err := f.mustUnchanged(t, func() error { return f.Teams.AddTeamMember(ctx, m, ev(m)) })
		wantErr(t, err, errs.NotFound, "team_not_found")
	})
}

func TestUpdateMember(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	s := f.MustSample(t)
	org := s.Org.ID
	bob := f.member(s.Eng, "u_bob", authz.Member)

	t.Run("OK", func(t *testing.T) {
		next := bob
		next.Role, next.Version = authz.Admin, 2
		must(t, f.Teams.UpdateTeamMember(ctx, bob, next, ev(next)))
		got, err := f.Teams.GetTeamMember(ctx, org, s.Eng.ID, "u_bob")
		must(t, err)
		if !reflect.DeepEqual(got, next) {
			t.Errorf("got %+v, want %+v", got, next)
		}
		if got, want := teamCount(t, f, org, s.Eng.ID), 2; got != want {
			t.Errorf("memberCount: got %d, want %d", got, want)
		}
	})

	t.Run("ErrStaleVersion", func(t *testing.T) {
		next := bob // version 1; the edge is at 2
		next.Role, next.Version = authz.Owner, 2
		err := f.mustUnchanged(t, func() error { return f.Teams.UpdateTeamMember(ctx, bob, next, ev(next)) })
		wantErr(t, err, errs.PreconditionFailed, "version_mismatch")
	})

	t.Run("ErrMemberNotFound", func(t *testing.T) {
		m := f.member(s.Design, "u_bob", authz.Member)
		next := m
		next.Version = 2
		err := f.mustUnchanged(t, func() error { return f.Teams.UpdateTeamMember(ctx, m, next, ev(next)) })
		wantErr(t, err, errs.NotFound, "member_not_found")
	})
}

func TestRemoveMember(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	s := f.MustSample(t)
	org := s.Org.ID

	bob := f.member(s.Eng, "u_bob", authz.Member)

	t.Run("ErrMemberNotFound", func(t *testing.T) {
		err := f.mustUnchanged(t, func() error {
			return f.Teams.RemoveTeamMember(ctx, f.member(s.Design, "u_bob", authz.Member), ev(s.Design))
		})
		wantErr(t, err, errs.NotFound, "member_not_found")
	})

	t.Run("ErrStaleVersion", func(t *testing.T) {
		stale := bob
		stale.Version = 2
		err := f.mustUnchanged(t, func() error { return f.Teams.RemoveTeamMember(ctx, stale, ev(stale)) })
		wantErr(t, err, errs.PreconditionFailed, "version_mismatch")
	})

	t.Run("ErrLastTeamOwner", func(t *testing.T) {
		err := f.mustUnchanged(t, func() error {
			return f.Teams.RemoveTeamMember(ctx, f.member(s.Eng, "u_alice", authz.Owner), ev(s.Eng))
		})
		wantErr(t, err, errs.Conflict, "last_team_owner")
	})

	t.Run("OK", func(t *testing.T) {
		must(t, f.Teams.RemoveTeamMember(ctx, bob, ev(bob)))
		if got, want := teamCount(t, f, org, s.Eng.ID), 1; got != want {
			t.Errorf("memberCount: got %d, want %d", got, want)
		}
		if got := userTeamIDs(t, f, org, "u_bob"); len(got) != 0 {
			t.Errorf("ListUserTeams: got %v, want none", got)
		}
	})

	t.Run("ErrMemberNotFound twice", func(t *testing.T) {
		err := f.mustUnchanged(t, func() error { return f.Teams.RemoveTeamMember(ctx, bob, ev(bob)) })
		wantErr(t, err, errs.NotFound, "member_not_found")
	})
}

func TestDeleteTeam(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	s := f.MustSample(t)
	org := s.Org.ID

	t.Run("ErrStaleVersion", func(t *testing.T) {
		err := f.mustUnchanged(t, func() error { return f.Teams.DeleteTeam(ctx, org, s.Eng.ID, 2, evOrg(org)) })
		wantErr(t, err, errs.PreconditionFailed, "version_mismatch")
	})

	t.Run("ErrTeamNotFound", func(t *testing.T) {
		err := f.mustUnchanged(t, func() error { return f.Teams.DeleteTeam(ctx, org, f.ids.New(), 0, evOrg(org)) })
		wantErr(t, err, errs.NotFound, "team_not_found")
	})

	t.Run("OK", func(t *testing.T) {
		must(t, f.Teams.DeleteTeam(ctx, org, s.Eng.ID, 1, evOrg(org)))
		_, err := f.Teams.GetTeam(ctx, org, s.Eng.ID)
		wantErr(t, err, errs.NotFound, "team_not_found")
		if keys := f.keysWithPrefix(t, "ORG#"+org+"#TEAM#"+s.Eng.ID); len(keys) != 0 {
			t.Errorf("items left in the team's partition: %v", keys)
		}
		if got := userTeamIDs(t, f, org, "u_bob"); len(got) != 0 {
			t.Errorf("ListUserTeams(bob): got %v, want none", got)
		}
		if got, want := userTeamIDs(t, f, org, "u_alice"), []string{s.Design.ID}; !slices.Equal(got, want) {
			t.Errorf("ListUserTeams(alice): got %v, want %v", got, want)
		}
		r, err := f.Teams.ListTeams(ctx, org, page.Request{})
		must(t, err)
		if got, want := len(r.Items), 1; got != want || r.Items[0].ID != s.Design.ID {
			t.Errorf("ListTeams: got %d teams, want only Design", got)
		}
	})
}

// TestDeleteTeamWithManyMembers covers the chunked path: more edges than one
// transaction holds.
func TestDeleteTeamWithManyMembers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	users := seqIDs("u_", 130)
	org := f.newOrg(t, "Big", users[0]).ID
	f.seedUsers(t, org, users[1:])
	tm := f.team(org, "Everyone")
	must(t, f.Teams.CreateTeam(ctx, tm, f.member(tm, users[0], authz.Owner), ev(tm)))
	must(t, f.Teams.AddTeamMember(ctx, f.member(tm, users[1], authz.Member), ev(tm)))
	// The other 128 edges are copies of users[1]'s (memberCount is not
	// kept for them; DeleteTeam does not read it).
	f.seedClones(t, []rawKey{{"ORG#" + org + "#TEAM#" + tm.ID, "MEMBER#" + users[1]}}, users[1], users[2:])
	_, members := allPages(t, func(after string) (page.Result[team.Membership], error) {
		return f.Teams.ListTeamMembers(ctx, org, tm.ID, page.Request{Limit: 100, After: after})
	})
	if got, want := len(members), 130; got != want {
		t.Fatalf("members: got %d, want %d", got, want)
	}
	other := f.team(org, "Other")
	must(t, f.Teams.CreateTeam(ctx, other, f.member(other, users[5], authz.Owner), ev(other)))

	t.Run("OK", func(t *testing.T) {
		f.Rec.Reset()
		must(t, f.Teams.DeleteTeam(ctx, org, tm.ID, 0, evOrg(org)))
		// 130 edges are too many for one transaction: the team is marked
		// deleting, with the audit event (2 items), then the edges go, each
		// with the team's removal from its user's team set, in transactions
		// of the team's count update and 49 members (99 items), the last 32
		// (65 items), and the team item last (1).
		if got, want := f.txSizes(), []int{2, 99, 99, 65, 1}; !slices.Equal(got, want) {
			t.Errorf("transactions: got %v, want %v", got, want)
		}
		if keys := f.keysWithPrefix(t, "ORG#"+org+"#TEAM#"+tm.ID); len(keys) != 0 {
			t.Errorf("%d items left in the team's partition", len(keys))
		}
		for _, id := range users {
			want := []string{}
			if id == users[5] {
				want = []string{other.ID}
			}
			if got := userTeamIDs(t, f, org, id); !slices.Equal(got, want) {
				t.Errorf("ListUserTeams(%s): got %v, want %v", id, got, want)
			}
		}
		if got, want := teamCount(t, f, org, other.ID), 1; got != want {
			t.Errorf("other team memberCount: got %d, want %d", got, want)
		}
	})
}

// ---- tickets and comments ----

func TestCreateTicket(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	s := f.MustSample(t)
	org := s.Org.ID
	other := f.newOrg(t, "Other", "u_zed")
	otherTeam := f.team(other.ID, "Their team")
	must(t, f.Teams.CreateTeam(ctx, otherTeam, f.member(otherTeam, "u_zed", authz.Owner), ev(otherTeam)))

	t.Run("OK", func(t *testing.T) {
		tk := f.ticket(org, "u_bob", "Printer on fire", ticket.StatusNew)
		tk.AssigneeID, tk.TeamID, tk.Tags = "u_alice", s.Eng.ID, []string{"hardware", "urgent"}
		must(t, f.Tickets.CreateTicket(ctx, tk, ev(tk)))
		got, err := f.Tickets.GetTicket(ctx, org, tk.ID)
		must(t, err)
		if !reflect.DeepEqual(got, tk) {
			t.Errorf("got %+v, want %+v", got, tk)
		}
	})

	cases := []struct {
		name string
		edit func(*ticket.Ticket)
		kind errs.Kind
		code string
	}{
		{"ErrRequesterNotInOrg", func(tk *ticket.Ticket) { tk.RequesterID = "u_ghost" }, errs.NotFound, "user_not_found"},
		{"ErrRequesterOfAnotherOrg", func(tk *ticket.Ticket) { tk.RequesterID = "u_zed" }, errs.NotFound, "user_not_found"},
		{"ErrAssigneeNotOrgMember", func(tk *ticket.Ticket) { tk.AssigneeID = "u_ghost" }, errs.Conflict, "assignee_not_org_member"},
		{"ErrAssigneeOfAnotherOrg", func(tk *ticket.Ticket) { tk.AssigneeID = "u_zed" }, errs.Conflict, "assignee_not_org_member"},
		{"ErrTeamNotFound", func(tk *ticket.Ticket) { tk.TeamID = f.ids.New() }, errs.Conflict, "team_not_found"},
		{"ErrTeamOfAnotherOrg", func(tk *ticket.Ticket) { tk.TeamID = otherTeam.ID }, errs.Conflict, "team_not_found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tk := f.ticket(org, "u_alice", "Bad reference", ticket.StatusNew)
			c.edit(&tk)
			err := f.mustUnchanged(t, func() error { return f.Tickets.CreateTicket(ctx, tk, ev(tk)) })
			wantErr(t, err, c.kind, c.code)
		})
	}

	t.Run("ErrInvalidStatus", func(t *testing.T) {
		f.Rec.Reset()
		tk := f.ticket(org, "u_alice", "Bad status", "wontfix")
		wantErr(t, f.Tickets.CreateTicket(ctx, tk, ev(tk)), errs.Invalid, "invalid_status")
		f.wantNoCalls(t)
	})
}

func TestUpdateTicket(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	s := f.MustSample(t)
	org := s.Org.ID
	all := page.Request{Limit: 100}

	listed := func(t *testing.T, r page.Result[ticket.Ticket], err error, id string) bool {
		t.Helper()
		must(t, err)
		return slices.Contains(ticketIDs(r.Items), id)
	}
	current := func(t *testing.T, id string) ticket.Ticket {
		t.Helper()
		tk, err := f.Tickets.GetTicket(ctx, org, id)
		must(t, err)
		return tk
	}

	tk := f.ticket(org, "u_alice", "Login broken", ticket.StatusNew)
	tk.TeamID, tk.AssigneeID = s.Eng.ID, "u_bob"
	must(t, f.Tickets.CreateTicket(ctx, tk, ev(tk)))

	t.Run("OK status change moves GSI3 and GSI5 keys", func(t *testing.T) {
		prev := current(t, tk.ID)
		next := prev
		next.Status, next.Version = ticket.StatusOpen, prev.Version+1
		must(t, f.Tickets.UpdateTicket(ctx, prev, next, ev(next)))
		r, err := f.Tickets.ListTickets(ctx, org, ticket.StatusNew, all)
		if listed(t, r, err, tk.ID) {
			t.Error("still listed as new")
		}
		r, err = f.Tickets.ListTickets(ctx, org, ticket.StatusOpen, all)
		if !listed(t, r, err, tk.ID) {
			t.Error("not listed as open")
		}
		r, err = f.Tickets.ListTeamTickets(ctx, org, s.Eng.ID, ticket.StatusNew, all)
		if listed(t, r, err, tk.ID) {
			t.Error("still listed in the team's new tickets")
		}
		r, err = f.Tickets.ListTeamTickets(ctx, org, s.Eng.ID, ticket.StatusOpen, all)
		if !listed(t, r, err, tk.ID) {
			t.Error("not listed in the team's open tickets")
		}
		r, err = f.Tickets.ListTickets(ctx, org, "", all)
		must(t, err)
		if got, want := ticketIDs(r.Items), []string{tk.ID}; !slices.Equal(got, want) {
			t.Errorf("all tickets: got %v, want %v", got, want)
		}
		if got, want := current(t, tk.ID), next; !reflect.DeepEqual(got, want) {
			t.Errorf("got %+v, want %+v", got, want)
		}
	})

	t.Run("OK unassign", func(t *testing.T) {
		r, err := f.Tickets.ListAssignedTickets(ctx, org, "u_bob", all)
		if !listed(t, r, err, tk.ID) {
			t.Fatal("not assigned to bob before")
		}
		prev := current(t, tk.ID)
		next := prev
		next.AssigneeID, next.Version = "", prev.Version+1
		must(t, f.Tickets.UpdateTicket(ctx, prev, next, ev(next)))
		r, err = f.Tickets.ListAssignedTickets(ctx, org, "u_bob", all)
		if listed(t, r, err, tk.ID) {
			t.Error("still listed as assigned to bob")
		}
		if got, want := current(t, tk.ID).AssigneeID, ""; got != want {
			t.Errorf("assignee: got %q, want %q", got, want)
		}
	})

	t.Run("OK move to another team and out of teams", func(t *testing.T) {
		prev := current(t, tk.ID)
		next := prev
		next.TeamID, next.Version = s.Design.ID, prev.Version+1
		must(t, f.Tickets.UpdateTicket(ctx, prev, next, ev(next)))
		r, err := f.Tickets.ListTeamTickets(ctx, org, s.Eng.ID, "", all)
		if listed(t, r, err, tk.ID) {
			t.Error("still listed in Engineering")
		}
		r, err = f.Tickets.ListTeamTickets(ctx, org, s.Design.ID, ticket.StatusOpen, all)
		if !listed(t, r, err, tk.ID) {
			t.Error("not listed in Design")
		}
		prev = next
		next.TeamID, next.Version = "", prev.Version+1
		must(t, f.Tickets.UpdateTicket(ctx, prev, next, ev(next)))
		r, err = f.Tickets.ListTeamTickets(ctx, org, s.Design.ID, "", all)
		if listed(t, r, err, tk.ID) {
			t.Error("still listed in Design")
		}
	})

	t.Run("ErrStaleVersion", func(t *testing.T) {
		stale := tk // version 1
		next := stale
		next.Title, next.Version = "Stale", 2
		err := f.mustUnchanged(t, func() error { return f.Tickets.UpdateTicket(ctx, stale, next, ev(next)) })
		wantErr(t, err, errs.PreconditionFailed, "version_mismatch")
		// With a new assignee the update runs in a transaction: same answer.
		next.AssigneeID = "u_alice"
		err = f.mustUnchanged(t, func() error { return f.Tickets.UpdateTicket(ctx, stale, next, ev(next)) })
		wantErr(t, err, errs.PreconditionFailed, "version_mismatch")
	})

	t.Run("ErrAssigneeNotOrgMember", func(t *testing.T) {
		prev := current(t, tk.ID)
		next := prev
		next.AssigneeID, next.Version = "u_ghost", prev.Version+1
		err := f.mustUnchanged(t, func() error { return f.Tickets.UpdateTicket(ctx, prev, next, ev(next)) })
		wantErr(t, err, errs.Conflict, "assignee_not_org_member")
	})

	t.Run("ErrTeamNotFound", func(t *testing.T) {
		prev := current(t, tk.ID)
		next := prev
		next.TeamID, next.Version = f.ids.New(), prev.Version+1
		err := f.mustUnchanged(t, func() error { return f.Tickets.UpdateTicket(ctx, prev, next, ev(next)) })
		wantErr(t, err, errs.Conflict, "team_not_found")
	})

	t.Run("ErrTicketNotFound", func(t *testing.T) {
		missing := f.ticket(org, "u_alice", "Missing", ticket.StatusNew)
		next := missing
		next.Version = 2
		err := f.mustUnchanged(t, func() error { return f.Tickets.UpdateTicket(ctx, missing, next, ev(next)) })
		wantErr(t, err, errs.NotFound, "ticket_not_found")
	})

	t.Run("OK a concurrent comment is not overwritten", func(t *testing.T) {
		read := current(t, tk.ID) // read before the comment lands
		c := ticket.Comment{OrgID: org, TicketID: tk.ID, ID: f.ids.New(), AuthorID: "u_bob", Body: "me too", CreatedAt: f.now}
		must(t, f.Tickets.CreateComment(ctx, c, ev(c)))
		next := read
		next.Title, next.Version = "Login broken for everyone", read.Version+1
		must(t, f.Tickets.UpdateTicket(ctx, read, next, ev(next)))
		got := current(t, tk.ID)
		if got, want := got.CommentCount, read.CommentCount+1; got != want {
			t.Errorf("commentCount: got %d, want %d", got, want)
		}
		if got, want := got.Title, next.Title; got != want {
			t.Errorf("title: got %q, want %q", got, want)
		}
	})
}

func TestAddComment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	s := f.MustSample(t)
	org := s.Org.ID
	tk := f.ticket(org, "u_alice", "Busy ticket", ticket.StatusOpen)
	must(t, f.Tickets.CreateTicket(ctx, tk, ev(tk)))

	t.Run("OK concurrent", func(t *testing.T) {
		const n = 20
		var wg sync.WaitGroup
		errc := make(chan error, n)
		for i := range n {
			c := ticket.Comment{OrgID: org, TicketID: tk.ID, ID: f.ids.New(), AuthorID: "u_bob",
				Body: fmt.Sprintf("comment %d", i), CreatedAt: f.now}
			wg.Add(1)
			go func() {
				defer wg.Done()
				errc <- f.Tickets.CreateComment(ctx, c, ev(c))
			}()
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			if err != nil {
				t.Errorf("AddComment: %v", err)
			}
		}
		got, err := f.Tickets.GetTicket(ctx, org, tk.ID)
		must(t, err)
		if got, want := got.CommentCount, n; got != want {
			t.Errorf("commentCount: got %d, want %d", got, want)
		}
		r, err := f.Tickets.ListComments(ctx, org, tk.ID, page.Request{Limit: 100})
		must(t, err)
		if got, want := len(r.Items), n; got != want {
			t.Errorf("comments: got %d, want %d", got, want)
		}
	})

	t.Run("ErrTicketNotFound", func(t *testing.T) {
		c := ticket.Comment{OrgID: org, TicketID: f.ids.New(), ID: f.ids.New(), AuthorID: "u_bob", Body: "hello?", CreatedAt: f.now}
		err := f.mustUnchanged(t, func() error { return f.Tickets.CreateComment(ctx, c, ev(c)) })
		wantErr(t, err, errs.NotFound, "ticket_not_found")
	})

	t.Run("ErrTicketOfAnotherOrg", func(t *testing.T) {
		other := f.newOrg(t, "Other", "u_bob")
		c := ticket.Comment{OrgID: other.ID, TicketID: tk.ID, ID: f.ids.New(), AuthorID: "u_bob", Body: "sneaky", CreatedAt: f.now}
		err := f.mustUnchanged(t, func() error { return f.Tickets.CreateComment(ctx, c, ev(c)) })
		wantErr(t, err, errs.NotFound, "ticket_not_found")
	})
}

func TestDeleteTicket(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	s := f.MustSample(t)
	org := s.Org.ID
	tk := f.ticket(org, "u_alice", "Doomed", ticket.StatusNew)
	tk.TeamID, tk.AssigneeID = s.Eng.ID, "u_bob"
	must(t, f.Tickets.CreateTicket(ctx, tk, ev(tk)))
	for i := range 3 {
		must(t, f.Tickets.CreateComment(ctx, ticket.Comment{OrgID: org, TicketID: tk.ID, ID: f.ids.New(), AuthorID: "u_bob",
			Body: fmt.Sprint("c", i), CreatedAt: f.now}, evOrg(org)))
	}
	keeper := f.ticket(org, "u_alice", "Keeper", ticket.StatusNew)
	must(t, f.Tickets.CreateTicket(ctx, keeper, ev(keeper)))
	must(t, f.Tickets.CreateComment(ctx, ticket.Comment{OrgID: org, TicketID: keeper.ID, ID: f.ids.New(), AuthorID: "u_bob",
		Body: "stays", CreatedAt: f.now}, evOrg(org)))

	t.Run("ErrStaleVersion", func(t *testing.T) {
		err := f.mustUnchanged(t, func() error { return f.Tickets.DeleteTicket(ctx, org, tk.ID, 5, evOrg(org)) })
		wantErr(t, err, errs.PreconditionFailed, "version_mismatch")
	})

	t.Run("ErrTicketNotFound", func(t *testing.T) {
		err := f.mustUnchanged(t, func() error { return f.Tickets.DeleteTicket(ctx, org, f.ids.New(), 0, evOrg(org)) })
		wantErr(t, err, errs.NotFound, "ticket_not_found")
	})

	t.Run("OK", func(t *testing.T) {
		must(t, f.Tickets.DeleteTicket(ctx, org, tk.ID, 1, evOrg(org)))
		_, err := f.Tickets.GetTicket(ctx, org, tk.ID)
		wantErr(t, err, errs.NotFound, "ticket_not_found")
		if keys := f.keysWithPrefix(t, "ORG#"+org+"#TICKET#"+tk.ID); len(keys) != 0 {
			t.Errorf("items left in the ticket's partition: %v", keys)
		}
		r, err := f.Tickets.ListTickets(ctx, org, "", page.Request{})
		must(t, err)
		if got, want := ticketIDs(r.Items), []string{keeper.ID}; !slices.Equal(got, want) {
			t.Errorf("tickets: got %v, want %v", got, want)
		}
		for name, list := range map[string]func() (page.Result[ticket.Ticket], error){
			"team": func() (page.Result[ticket.Ticket], error) {
				return f.Tickets.ListTeamTickets(ctx, org, s.Eng.ID, "", page.Request{})
			},
			"assigned": func() (page.Result[ticket.Ticket], error) {
				return f.Tickets.ListAssignedTickets(ctx, org, "u_bob", page.Request{})
			},
		} {
			r, err := list()
			must(t, err)
			if len(r.Items) != 0 {
				t.Errorf("%s tickets: got %v, want none", name, ticketIDs(r.Items))
			}
		}
		c, err := f.Tickets.ListComments(ctx, org, keeper.ID, page.Request{})
		must(t, err)
		if got, want := len(c.Items), 1; got != want {
			t.Errorf("the other ticket's comments: got %d, want %d", got, want)
		}
	})
}

// ---- org deletion ----

// populateOrg fills org with users (u_alice owner, u_bob and extra), two
// teams with members, and tickets with comments.
func (f *fixture) populateOrg(tb testing.TB, name string, extra int) orgpkg.Org {
	tb.Helper()
	ctx := context.Background()
	org := f.newOrg(tb, name, "u_alice", "u_bob")
	if extra > 0 {
		f.seedUsers(tb, org.ID, seqIDs("u_x", extra))
	}
	eng, design := f.team(org.ID, "Engineering"), f.team(org.ID, "Design")
	must(tb, f.Teams.CreateTeam(ctx, eng, f.member(eng, "u_alice", authz.Owner), ev(eng)))
	must(tb, f.Teams.AddTeamMember(ctx, f.member(eng, "u_bob", authz.Member), ev(eng)))
	must(tb, f.Teams.CreateTeam(ctx, design, f.member(design, "u_bob", authz.Owner), ev(design)))
	for i := range 3 {
		tk := f.ticket(org.ID, "u_alice", fmt.Sprint("Ticket ", i), ticket.StatusNew)
		if i%2 == 0 {
			tk.TeamID, tk.AssigneeID = eng.ID, "u_bob"
		}
		must(tb, f.Tickets.CreateTicket(ctx, tk, ev(tk)))
		for j := range 2 {
			must(tb, f.Tickets.CreateComment(ctx, ticket.Comment{OrgID: org.ID, TicketID: tk.ID, ID: f.ids.New(),
				AuthorID: "u_bob", Body: fmt.Sprint("c", j), CreatedAt: f.now}, evOrg(org.ID)))
		}
	}
	return org
}

// splitSnapshot splits a snapshot by whether an item's pk starts with prefix.
func splitSnapshot(tb testing.TB, snap []string, prefix string) (in, out []string) {
	tb.Helper()
	for _, s := range snap {
		var it struct {
			PK string `json:"pk"`
		}
		if err := json.Unmarshal([]byte(s), &it); err != nil || it.PK == "" {
			tb.Fatalf("snapshot item without pk: %s", s)
		}
		if strings.HasPrefix(it.PK, prefix) {
			in = append(in, s)
		} else {
			out = append(out, s)
		}
	}
	return in, out
}

func TestDeleteOrg(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	doomed := f.populateOrg(t, "Doomed", 30) // 32 users + 32 claims: more than one BatchWriteItem
	kept := f.populateOrg(t, "Kept", 2)      // the same people (u_alice, u_bob) in another tenant

	before := f.snapshot(t)
	doomedItems, keptItems := splitSnapshot(t, before, "ORG#"+doomed.ID)
	if len(doomedItems) < 70 || len(keptItems) < 20 {
		t.Fatalf("sample too small: %d doomed items, %d kept", len(doomedItems), len(keptItems))
	}

	t.Run("OK", func(t *testing.T) {
		f.Rec.Reset()
		f.offboard(t, doomed.ID, "u_alice")
		for _, op := range f.Rec.Ops() {
			if op.Name == "Scan" {
				t.Errorf("DeleteOrg made a Scan")
			}
		}
		after := f.snapshot(t)
		left, others := splitSnapshot(t, after, "ORG#"+doomed.ID)
		if len(left) != 0 {
			t.Errorf("%d items of the deleted org left, e.g. %s", len(left), left[0])
		}
		if got, want := others, keptItems; !slices.Equal(got, want) {
			t.Errorf("the other tenant changed: %d items before, %d after", len(want), len(got))
		}
		_, err := f.Orgs.GetOrg(ctx, doomed.ID)
		wantErr(t, err, errs.NotFound, "org_not_found")
		r, err := f.Orgs.ListOrgs(ctx, "u_alice", page.Request{})
		must(t, err)
		if got := len(r.Items); got != 1 || r.Items[0].OrgID != kept.ID {
			t.Errorf("alice's orgs: got %+v, want only %s", r.Items, kept.ID)
		}
		if got := userTeamIDs(t, f, doomed.ID, "u_bob"); len(got) != 0 {
			t.Errorf("bob's teams in the deleted org: got %v", got)
		}
		if got := userTeamIDs(t, f, kept.ID, "u_bob"); len(got) != 2 {
			t.Errorf("bob's teams in the kept org: got %v, want 2", got)
		}
	})

	t.Run("ErrOrgNotFound", func(t *testing.T) {
		err := f.mustUnchanged(t, func() error {
			_, _, err := f.Orgs.StartOffboarding(ctx, doomed.ID, "u_alice", 0, "me", f.now)
			return err
		})
		wantErr(t, err, errs.NotFound, "org_not_found")
	})
}

// ---- invalid IDs ----

// TestInvalidIDsNeverReachDynamoDB: a malformed ID is refused with Invalid
// before any request is made.
func TestInvalidIDsNeverReachDynamoDB(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	s := f.MustSample(t)
	org, eng := s.Org.ID, s.Eng.ID
	all := page.Request{}

	badUsers := []string{"a#b", "u_bob#", "#METADATA", "%23", "u%23bob", strings.Repeat("a", 129), "a\x00b", "bob\n",
		"\tbob", "u bob", "\u0430lice" /* Cyrillic а */, "\uff42ob" /* fullwidth b */, "bob\u200b", "b\xffob", "", "USER#u_bob"}
	badResources := []string{"not-a-ulid", strings.ToLower(eng), eng[:25], eng + "0", eng[:25] + "#", "8" + eng[1:],
		"01ARZ3NDEKTSV4RRFFQ69G5FAI", "%23", "", "01ARZ3NDEKTSV4RRFFQ69G5F\u0410" /* Cyrillic А */, eng[:25] + "\x00"}

	type call struct {
		name string
		fn   func(bad string) error
	}
	userCalls := []call{
		{"GetUser", func(b string) error { _, err := f.Orgs.GetOrgUser(ctx, org, b); return err }},
		{"ListUserOrgs", func(b string) error { _, err := f.Orgs.ListOrgs(ctx, b, all); return err }},
		{"ListUserTeams", func(b string) error { _, err := f.Teams.ListUserTeams(ctx, org, b, all); return err }},
		{"GetMember", func(b string) error { _, err := f.Teams.GetTeamMember(ctx, org, eng, b); return err }},
		{"AddUser", func(b string) error {
			return f.Orgs.AddOrgUser(ctx, f.user(org, b, "new@example.com", "New", authz.Member), evOrg(org))
		}},
		{"RemoveUser", func(b string) error {
			return f.Orgs.RemoveOrgUser(ctx, f.user(org, b, "new@example.com", "New", authz.Member), evOrg(org))
		}},
		{"AddMember", func(b string) error {
			return f.Teams.AddTeamMember(ctx, f.member(s.Eng, b, authz.Member), ev(s.Eng))
		}},
		{"RemoveMember", func(b string) error {
			return f.Teams.RemoveTeamMember(ctx, f.member(s.Eng, b, authz.Member), ev(s.Eng))
		}},
		{"CreateTeam", func(b string) error {
			tm := f.team(org, "T")
			return f.Teams.CreateTeam(ctx, tm, f.member(tm, b, authz.Owner), ev(tm))
		}},
		{"BatchGetUsers", func(b string) error {
			if b == "" { // empty IDs are skipped by design
				b = "a#b"
			}
			_, err := f.Orgs.BatchGetOrgUsers(ctx, org, []string{"u_alice", b})
			return err
		}},
		{"ListAssignedTickets", func(b string) error { _, err := f.Tickets.ListAssignedTickets(ctx, org, b, all); return err }},
		{"ListRequestedTickets", func(b string) error {
			_, _, err := f.Tickets.ListUserTickets(ctx, org, b, true, all)
			return err
		}},
		{"CreateTicket requester", func(b string) error {
			return f.Tickets.CreateTicket(ctx, f.ticket(org, b, "T", ticket.StatusNew), evOrg(org))
		}},
		{"CreateTicket assignee", func(b string) error {
			if b == "" { // no assignee is fine
				b = "a#b"
			}
			tk := f.ticket(org, "u_alice", "T", ticket.StatusNew)
			tk.AssigneeID = b
			return f.Tickets.CreateTicket(ctx, tk, ev(tk))
		}},
		{"AddComment author", func(b string) error {
			return f.Tickets.CreateComment(ctx, ticket.Comment{OrgID: org, TicketID: f.ids.New(), ID: f.ids.New(), AuthorID: b, Body: "x"}, evOrg(org))
		}},
	}
	resourceCalls := []call{
		{"GetOrg", func(b string) error { _, err := f.Orgs.GetOrg(ctx, b); return err }},
		{"GetOrgWithUsers", func(b string) error { _, _, err := f.Orgs.GetOrgWithUsers(ctx, b, 10); return err }},
		{"StartOffboarding", func(b string) error {
			_, _, err := f.Orgs.StartOffboarding(ctx, b, "u_alice", 0, "me", f.now)
			return err
		}},
		{"ListUsers", func(b string) error { _, err := f.Orgs.ListOrgUsers(ctx, b, all); return err }},
		{"GetUser org", func(b string) error { _, err := f.Orgs.GetOrgUser(ctx, b, "u_alice"); return err }},
		{"BatchGetOrgs", func(b string) error { _, err := f.Orgs.BatchGetOrgs(ctx, []string{org, b}); return err }},
		{"CreateOrg", func(b string) error {
			return f.Orgs.CreateOrg(ctx, orgpkg.Org{ID: b, Name: "X", Version: 1}, f.user(b, "u_x", "x@example.com", "X", authz.Owner), evOrg(b))
		}},
		{"GetTeam", func(b string) error { _, err := f.Teams.GetTeam(ctx, org, b); return err }},
		{"GetTeam org", func(b string) error { _, err := f.Teams.GetTeam(ctx, b, eng); return err }},
		{"GetTeamWithMembers", func(b string) error { _, _, err := f.Teams.GetTeamWithMembers(ctx, org, b, 10); return err }},
		{"ListMembers", func(b string) error { _, err := f.Teams.ListTeamMembers(ctx, org, b, all); return err }},
		{"ListTeams", func(b string) error { _, err := f.Teams.ListTeams(ctx, b, all); return err }},
		{"BatchGetTeams", func(b string) error { _, err := f.Teams.BatchGetTeams(ctx, org, []string{eng, b}); return err }},
		{"DeleteTeam", func(b string) error { return f.Teams.DeleteTeam(ctx, org, b, 0, evOrg(org)) }},
		{"CreateTeam", func(b string) error {
			tm := f.team(org, "T")
			tm.ID = b
			return f.Teams.CreateTeam(ctx, tm, f.member(tm, "u_alice", authz.Owner), ev(tm))
		}},
		{"RemoveMember", func(b string) error {
			m := f.member(s.Eng, "u_bob", authz.Member)
			m.TeamID = b
			return f.Teams.RemoveTeamMember(ctx, m, ev(m))
		}},
		{"GetTicket", func(b string) error { _, err := f.Tickets.GetTicket(ctx, org, b); return err }},
		{"GetTicketWithComments", func(b string) error { _, _, err := f.Tickets.GetTicketWithComments(ctx, org, b, 10); return err }},
		{"DeleteTicket", func(b string) error { return f.Tickets.DeleteTicket(ctx, org, b, 0, evOrg(org)) }},
		{"ListComments", func(b string) error { _, err := f.Tickets.ListComments(ctx, org, b, all); return err }},
		{"ListTickets", func(b string) error { _, err := f.Tickets.ListTickets(ctx, b, "", all); return err }},
		{"ListTeamTickets", func(b string) error { _, err := f.Tickets.ListTeamTickets(ctx, org, b, "", all); return err }},
		{"CreateTicket team", func(b string) error {
			if b == "" { // no team is fine
				b = "not-a-ulid"
			}
			tk := f.ticket(org, "u_alice", "T", ticket.StatusNew)
			tk.TeamID = b
			return f.Tickets.CreateTicket(ctx, tk, ev(tk))
		}},
		{"CreateTicket id", func(b string) error {
			tk := f.ticket(org, "u_alice", "T", ticket.StatusNew)
			tk.ID = b
			return f.Tickets.CreateTicket(ctx, tk, ev(tk))
		}},
		{"AddComment id", func(b string) error {
			return f.Tickets.CreateComment(ctx, ticket.Comment{OrgID: org, TicketID: f.ids.New(), ID: b, AuthorID: "u_bob", Body: "x"}, evOrg(org))
		}},
	}
	run := func(calls []call, bads []string) {
		for _, c := range calls {
			for _, bad := range bads {
				t.Run(fmt.Sprintf("%s/%q", c.name, bad), func(t *testing.T) {
					f.Rec.Reset()
					err := c.fn(bad)
					wantErr(t, err, errs.Invalid, "invalid_id")
					f.wantNoCalls(t)
				})
			}
		}
	}
	run(userCalls, badUsers)
	run(resourceCalls, badResources)

	t.Run("emails that cannot be keys", func(t *testing.T) {
		for _, email := range []string{"a#b@example.com", "a\x00b@example.com", "bob\n@example.com", ""} {
			f.Rec.Reset()
			err := f.Orgs.AddOrgUser(ctx, f.user(org, "u_new", email, "New", authz.Member), evOrg(org))
			if got, want := errs.KindOf(err), errs.Invalid; got != want {
				t.Errorf("AddUser(email %q): got %v, want %v", email, err, want)
			}
			f.wantNoCalls(t)
		}
	})
}

// ---- pagination ----

// encodeCursor builds a start key the way a forger would.
func encodeCursor(m map[string]any) string {
	b, _ := json.Marshal(m)
	return base64.RawURLEncoding.EncodeToString(b)
}

func TestPagination(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	orgA := f.newOrg(t, "Eight", "u_000").ID
	f.seedUsers(t, orgA, seqIDs("u_", 7)[1:])
	orgB := f.newOrg(t, "Six", "u_alice").ID
	f.seedUsers(t, orgB, seqIDs("u_b", 5))
	must(t, f.Orgs.AddOrgUser(ctx, f.user(orgA, "u_alice", "alice@example.com", "Alice", authz.Member), evOrg(orgA)))
	teamA := f.team(orgA, "A")
	must(t, f.Teams.CreateTeam(ctx, teamA, f.member(teamA, "u_alice", authz.Owner), ev(teamA)))
	must(t, f.Teams.AddTeamMember(ctx, f.member(teamA, "u_000", authz.Member), ev(teamA)))
	teamA2 := f.team(orgA, "A2")
	must(t, f.Teams.CreateTeam(ctx, teamA2, f.member(teamA2, "u_alice", authz.Owner), ev(teamA2)))
	teamB := f.team(orgB, "B")
	must(t, f.Teams.CreateTeam(ctx, teamB, f.member(teamB, "u_alice", authz.Owner), ev(teamB)))
	var tickets []string // oldest first
	for i := range 5 {
		status := ticket.StatusNew
		if i >= 3 {
			status = ticket.StatusOpen
		}
		tk := f.ticket(orgA, "u_alice", fmt.Sprint("T", i), status)
		must(t, f.Tickets.CreateTicket(ctx, tk, ev(tk)))
		tickets = append(tickets, tk.ID)
	}
	newestFirst := slices.Clone(tickets)
	slices.Reverse(newestFirst)
	orgC := f.newOrg(t, "Seven", "u_c000").ID
	f.seedUsers(t, orgC, seqIDs("u_c", 7)[1:])

	t.Run("OK users 3,3,1", func(t *testing.T) {
		f.Rec.Reset()
		sizes, users := allPages(t, func(after string) (page.Result[orgpkg.User], error) {
			return f.Orgs.ListOrgUsers(ctx, orgC, page.Request{Limit: 3, After: after})
		})
		if got, want := sizes, []int{3, 3, 1}; !slices.Equal(got, want) {
			t.Errorf("page sizes: got %v, want %v", got, want)
		}
		if got, want := userIDs(users...), seqIDs("u_c", 7); !slices.Equal(got, want) {
			t.Errorf("users: got %v, want %v (each once, in order)", got, want)
		}
		if got, want := f.Rec.Names(), "Query, Query, Query"; got != want {
			t.Errorf("operations: got %q, want %q", got, want)
		}
	})

	t.Run("OK an exact multiple has no empty last page", func(t *testing.T) {
		sizes, users := allPages(t, func(after string) (page.Result[orgpkg.User], error) {
			return f.Orgs.ListOrgUsers(ctx, orgB, page.Request{Limit: 3, After: after})
		})
		if got, want := sizes, []int{3, 3}; !slices.Equal(got, want) {
			t.Errorf("page sizes: got %v, want %v", got, want)
		}
		if got, want := len(users), 6; got != want {
			t.Errorf("users: got %d, want %d", got, want)
		}
	})

	t.Run("OK tickets newest first 2,2,1", func(t *testing.T) {
		sizes, got := allPages(t, func(after string) (page.Result[ticket.Ticket], error) {
			return f.Tickets.ListTickets(ctx, orgA, "", page.Request{Limit: 2, After: after})
		})
		if want := []int{2, 2, 1}; !slices.Equal(sizes, want) {
			t.Errorf("page sizes: got %v, want %v", sizes, want)
		}
		if got, want := ticketIDs(got), newestFirst; !slices.Equal(got, want) {
			t.Errorf("tickets: got %v, want %v", got, want)
		}
	})

	t.Run("OK a status queue 2,1", func(t *testing.T) {
		sizes, got := allPages(t, func(after string) (page.Result[ticket.Ticket], error) {
			return f.Tickets.ListTickets(ctx, orgA, ticket.StatusNew, page.Request{Limit: 2, After: after})
		})
		if want := []int{2, 1}; !slices.Equal(sizes, want) {
			t.Errorf("page sizes: got %v, want %v", sizes, want)
		}
		if got, want := ticketIDs(got), newestFirst[2:]; !slices.Equal(got, want) {
			t.Errorf("tickets: got %v, want %v", got, want)
		}
	})

	t.Run("OK requested tickets with the user 2,2,1", func(t *testing.T) {
		var users []*orgpkg.User
		sizes, got := allPages(t, func(after string) (page.Result[ticket.Ticket], error) {
			r, u, err := f.Tickets.ListUserTickets(ctx, orgA, "u_alice", true, page.Request{Limit: 2, After: after})
			users = append(users, u)
			return r, err
		})
		if want := []int{2, 2, 1}; !slices.Equal(sizes, want) {
			t.Errorf("page sizes: got %v, want %v", sizes, want)
		}
		if got, want := ticketIDs(got), newestFirst; !slices.Equal(got, want) {
			t.Errorf("tickets: got %v, want %v", got, want)
		}
		if len(users) == 0 || users[0] == nil || users[0].UserID != "u_alice" {
			t.Errorf("first page: want the user u_alice, got %v", users)
		}
		for i, u := range users[1:] {
			if u != nil {
				t.Errorf("page %d: got user %v, want nil", i+2, u)
			}
		}
	})

	t.Run("OK requested tickets with the user, exact page", func(t *testing.T) {
		// u_000 requested nothing: the user item alone, no next page.
		r, u, err := f.Tickets.ListUserTickets(ctx, orgA, "u_000", true, page.Request{Limit: 2})
		must(t, err)
		if u == nil || len(r.Items) != 0 || r.Next != "" {
			t.Errorf("got user %v, %d tickets, next %q; want the user, none, \"\"", u, len(r.Items), r.Next)
		}
	})

	cursor := func(t *testing.T, r page.Result[orgpkg.User], err error) string {
		t.Helper()
		must(t, err)
		if r.Next == "" {
			t.Fatal("no next cursor")
		}
		return r.Next
	}
	usersB, err := f.Orgs.ListOrgUsers(ctx, orgB, page.Request{Limit: 1})
	otherOrgCursor := cursor(t, usersB, err)
	membersA, err := f.Teams.ListTeamMembers(ctx, orgA, teamA.ID, page.Request{Limit: 1})
	must(t, err)
	memberCursor := membersA.Next
	teamsA, err := f.Teams.ListTeams(ctx, orgA, page.Request{Limit: 1})
	must(t, err)
	teamsCursor := teamsA.Next
	ticketsA, err := f.Tickets.ListTickets(ctx, orgA, "", page.Request{Limit: 1})
	must(t, err)
	allTicketsCursor := ticketsA.Next
	newA, err := f.Tickets.ListTickets(ctx, orgA, ticket.StatusNew, page.Request{Limit: 1})
	must(t, err)
	newCursor := newA.Next
	aliceTeamsA, err := f.Teams.ListUserTeams(ctx, orgA, "u_alice", page.Request{Limit: 1})
	must(t, err)
	aliceTeamsCursor := aliceTeamsA.Next
	for name, c := range map[string]string{"member": memberCursor, "teams": teamsCursor, "tickets": allTicketsCursor,
		"new": newCursor, "alice's teams": aliceTeamsCursor} {
		if c == "" {
			t.Fatalf("no %s cursor", name)
		}
	}

	refused := []struct {
		name string
		run  func() error
	}{
		{"another org's users to ListUsers", func() error {
			_, err := f.Orgs.ListOrgUsers(ctx, orgA, page.Request{Limit: 3, After: otherOrgCursor})
			return err
		}},
		{"a team's members to ListUsers", func() error {
			_, err := f.Orgs.ListOrgUsers(ctx, orgA, page.Request{After: memberCursor})
			return err
		}},
		{"a team's members to another team", func() error {
			_, err := f.Teams.ListTeamMembers(ctx, orgA, teamA2.ID, page.Request{After: memberCursor})
			return err
		}},
		{"teams to ListTickets (same index and partition)", func() error {
			_, err := f.Tickets.ListTickets(ctx, orgA, "", page.Request{After: teamsCursor})
			return err
		}},
		{"all tickets to a status queue", func() error {
			_, err := f.Tickets.ListTickets(ctx, orgA, ticket.StatusNew, page.Request{After: allTicketsCursor})
			return err
		}},
		{"one status queue to another", func() error {
			_, err := f.Tickets.ListTickets(ctx, orgA, ticket.StatusOpen, page.Request{After: newCursor})
			return err
		}},
		{"tickets to another org's tickets", func() error {
			_, err := f.Tickets.ListTickets(ctx, orgB, "", page.Request{After: allTicketsCursor})
			return err
		}},
		{"a user's teams in one org to another org", func() error {
			_, err := f.Teams.ListUserTeams(ctx, orgB, "u_alice", page.Request{After: aliceTeamsCursor})
			return err
		}},
		{"users to ListTeams", func() error {
			_, err := f.Teams.ListTeams(ctx, orgB, page.Request{After: otherOrgCursor})
			return err
		}},
	}
	garbage := map[string]string{
		"not base64":        "garbage!!",
		"std base64":        base64.StdEncoding.EncodeToString([]byte(`{"pk":"x"}`)),
		"not JSON":          base64.RawURLEncoding.EncodeToString([]byte("hello")),
		"JSON null":         encodeCursor(nil),
		"empty object":      encodeCursor(map[string]any{}),
		"numbers":           encodeCursor(map[string]any{"pk": 1, "sk": 2}),
		"org item":          encodeCursor(map[string]any{"pk": "ORG#" + orgA, "sk": "#METADATA"}),
		"email claim":       encodeCursor(map[string]any{"pk": "ORG#" + orgA + "#EMAIL#x", "sk": "#CLAIM"}),
		"other org by hand": encodeCursor(map[string]any{"pk": "ORG#" + orgB, "sk": "USER#u_b000"}),
		"extra attribute":   encodeCursor(map[string]any{"pk": "ORG#" + orgA, "sk": "USER#u_000", "gsi1pk": "x"}),
		"missing sk":        encodeCursor(map[string]any{"pk": "ORG#" + orgA}),
		"GSI keys":          encodeCursor(map[string]any{"pk": "ORG#" + orgA, "sk": "USER#u_000", "gsi1pk": "USER#u_000", "gsi1sk": "ORG#" + orgA}),
		"very long":         strings.Repeat("A", 10000),
	}
	for name, g := range garbage {
		refused = append(refused, struct {
			name string
			run  func() error
		}{"garbage " + name, func() error {
			_, err := f.Orgs.ListOrgUsers(ctx, orgA, page.Request{After: g})
			return err
		}})
	}
	for _, c := range refused {
		t.Run("ErrCursor "+c.name, func(t *testing.T) {
			f.Rec.Reset()
			err := c.run()
			wantErr(t, err, errs.Invalid, "invalid_cursor")
			f.wantNoCalls(t)
		})
	}

	t.Run("ErrLimit", func(t *testing.T) {
		for _, limit := range []int{-1, page.MaxLimit + 1} {
			f.Rec.Reset()
			_, err := f.Orgs.ListOrgUsers(ctx, orgA, page.Request{Limit: limit})
			wantErr(t, err, errs.Invalid, "invalid_limit")
			f.wantNoCalls(t)
		}
	})

	t.Run("OK a well-formed cursor of the same listing is followed", func(t *testing.T) {
		r, err := f.Orgs.ListOrgUsers(ctx, orgC, page.Request{Limit: 10,
			After: encodeCursor(map[string]any{"pk": "ORG#" + orgC, "sk": "USER#u_c004"})})
		must(t, err)
		if got, want := userIDs(r.Items...), []string{"u_c005", "u_c006"}; !slices.Equal(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
	})
}

// ---- batch reads ----

func TestBatchGetUsers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	users := seqIDs("u_", 250)
	org := f.newOrg(t, "Crowd", users[0]).ID
	f.seedUsers(t, org, users[1:])

	t.Run("OK 250 users in 3 requests", func(t *testing.T) {
		asked := append(slices.Clone(users), users[:10]...) // duplicates are asked once
		asked = append(asked, "")                           // and empty IDs not at all
		f.Rec.Reset()
		got, err := f.Orgs.BatchGetOrgUsers(ctx, org, asked)
		must(t, err)
		var sizes []int
		for _, op := range f.Rec.Ops() {
			if op.Name != "BatchGetItem" {
				t.Errorf("unexpected operation %s", op)
			}
			sizes = append(sizes, op.Items)
		}
		slices.Sort(sizes)
		if got, want := sizes, []int{50, 100, 100}; !slices.Equal(got, want) {
			t.Errorf("BatchGetItem keys: got %v, want %v", got, want)
		}
		if got, want := len(got), 250; got != want {
			t.Errorf("found: got %d, want %d", got, want)
		}
		for _, id := range users {
			if u, ok := got[id]; !ok || u.UserID != id || u.OrgID != org {
				t.Errorf("user %s: got %+v", id, u)
			}
		}
	})

	t.Run("OK absent users are left out", func(t *testing.T) {
		got, err := f.Orgs.BatchGetOrgUsers(ctx, org, []string{"u_000", "u_nobody"})
		must(t, err)
		if got, want := len(got), 1; got != want {
			t.Errorf("found: got %d, want %d", got, want)
		}
	})

	t.Run("OK none asked, no call", func(t *testing.T) {
		f.Rec.Reset()
		got, err := f.Orgs.BatchGetOrgUsers(ctx, org, nil)
		must(t, err)
		if len(got) != 0 {
			t.Errorf("got %v", got)
		}
		f.wantNoCalls(t)
	})
}

// TestWritesRefuseZeroEvent: every write of the store takes the audit
// event of its change, and one that forgets it (the zero Event) is refused
// before it writes anything, so a change can never go unrecorded.
func TestWritesRefuseZeroEvent(t *testing.T) {
	f := MustFixture(t)
	s := f.MustSample(t)
	ctx := context.Background()
	var none audit.Event
	org := s.Org.ID
	tk := f.ticket(org, "u_alice", "Unrecorded", ticket.StatusNew)
	bob2 := s.Bob
	bob2.Name, bob2.Version = "Robert", 2
	inv := invitation.Invitation{OrgID: org, ID: f.ids.New(), Email: "erin@example.com", Role: authz.Member, InvitedBy: "u_alice",
		TokenHash: "h", CreatedAt: f.now, ExpiresAt: f.now.Add(time.Hour)}
	writes := map[string]func() error{
		"CreateOrg": func() error {
			o := orgpkg.Org{ID: f.ids.New(), Name: "Unrecorded", Version: 1, CreatedAt: f.now, UpdatedAt: f.now}
			return f.Orgs.CreateOrg(ctx, o, f.user(o.ID, "u_alice", "alice@example.com", "Alice", authz.Owner), none)
		},
		"UpdateOrg": func() error {
			next := s.Org
			next.Name, next.Version = "X", 2
			return f.Orgs.UpdateOrg(ctx, s.Org, next, none)
		},
		"AddOrgUser": func() error {
			return f.Orgs.AddOrgUser(ctx, f.user(org, "u_erin", "erin@example.com", "Erin", authz.Member), none)
		},
		"UpdateOrgUser": func() error { return f.Orgs.UpdateOrgUser(ctx, s.Bob, bob2, none) },
		"RemoveOrgUser": func() error { return f.Orgs.RemoveOrgUser(ctx, s.Bob, none) },
		"CreateTeam": func() error {
			tm := f.team(org, "Ops")
			return f.Teams.CreateTeam(ctx, tm, f.member(tm, "u_alice", authz.Owner), none)
		},
		"UpdateTeam": func() error {
			next := s.Eng
			next.Name, next.Version = "X", 2
			return f.Teams.UpdateTeam(ctx, s.Eng, next, none)
		},
		"DeleteTeam":    func() error { return f.Teams.DeleteTeam(ctx, org, s.Eng.ID, 0, none) },
		"AddTeamMember": func() error { return f.Teams.AddTeamMember(ctx, f.member(s.Design, "u_bob", authz.Member), none) },
		"UpdateTeamMember": func() error {
			prev := f.member(s.Eng, "u_bob", authz.Member)
			next := prev
			next.Role, next.Version = authz.Admin, 2
			return f.Teams.UpdateTeamMember(ctx, prev, next, none)
		},
		"RemoveTeamMember": func() error { return f.Teams.RemoveTeamMember(ctx, f.member(s.Eng, "u_bob", authz.Member), none) },
		"CreateTicket":     func() error { return f.Tickets.CreateTicket(ctx, tk, none) },
		"CreateInvitation": func() error { return f.Invitations.CreateInvitation(ctx, inv, none) },
	}
	for name, write := range writes {
		t.Run(name, func(t *testing.T) {
			f.Rec.Reset()
			err := f.mustUnchanged(t, write)
			if !strings.Contains(err.Error(), "audit") {
				t.Errorf("%s without its event: %v, want the audit event refused", name, err)
			}
			if w := writeCalls(f.Rec); len(w) != 0 {
				t.Errorf("%s without its event wrote: %v", name, w)
			}
		})
	}
	// And the writes on existing tickets and comments, once a ticket exists.
	must(t, f.Tickets.CreateTicket(ctx, tk, evOrg(org)))
	next := tk
	next.Title, next.Version = "X", 2
	c := ticket.Comment{OrgID: org, TicketID: tk.ID, ID: f.ids.New(), AuthorID: "u_bob", Body: "b", CreatedAt: f.now}
	for name, write := range map[string]func() error{
		"UpdateTicket":  func() error { return f.Tickets.UpdateTicket(ctx, tk, next, none) },
		"DeleteTicket":  func() error { return f.Tickets.DeleteTicket(ctx, org, tk.ID, 0, none) },
		"CreateComment": func() error { return f.Tickets.CreateComment(ctx, c, none) },
	} {
		t.Run(name, func(t *testing.T) {
			f.Rec.Reset()
			_ = f.mustUnchanged(t, write)
			if w := writeCalls(f.Rec); len(w) != 0 {
				t.Errorf("%s without its event wrote: %v", name, w)
			}
		})
	}
}

// writeCalls are the recorded calls that write.
func writeCalls(r *dynamotest.Recorder) []string {
	var w []string
	for _, op := range r.Ops() {
		switch op.Name {
		case "GetItem", "BatchGetItem", "Query", "Scan":
		default:
			w = append(w, op.Name)
		}
	}
	return w
}
