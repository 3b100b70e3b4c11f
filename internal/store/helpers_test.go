package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/guregu/dynamo/v2"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/page"
	orgpkg "github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/ticket"
)

// Helpers of the store tests.

// wantErr asserts that err carries kind and code.
// errOf is the error of a call that returns a value beside it.
func errOf[T any](_ T, err error) error { return err }

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
