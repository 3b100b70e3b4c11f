package store_test

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/testkit"
	"github.com/tenantd/tenantd/internal/ticket"
)

// BenchmarkStoreVsRaw prices the store layer against hand-written SDK
// calls for the chart's reads (the goal: store / raw >= 0.95): for each row
// the store method and the same DynamoDB call (the same request: guregu
// sends Query's KeyConditions, not a KeyConditionExpression, and so does
// the raw side) made and decoded by hand (no guregu/dynamo, no reflection) alternate in one loop, on the same
// client and table, so both see the same DynamoDB Local and the same
// noise. It reports each side's wall time and client CPU per call,
// allocations per call, raw/store (the store's throughput as a share of
// the raw calls'; 1 = as fast) and raw/store-cpu (the same of the client's
// CPU, which bounds throughput once the CPUs are busy). Both sides make exactly one call.
func BenchmarkStoreVsRaw(b *testing.B) {
	ctx := context.Background()
	f, s := MustSampled(b)
	org, eng := s.Org.ID, s.Eng
	users := make([]string, 30)
	for i := range users {
		users[i] = fmt.Sprintf("u_bench_%02d", i)
		u := f.user(org, users[i], users[i]+"@example.com", "Bench "+users[i], authz.Member)
		must(b, f.Orgs.AddOrgUser(ctx, u, ev(u)))
		m := f.member(eng, users[i], authz.Member)
		must(b, f.Teams.AddTeamMember(ctx, m, ev(m)))
	}
	for i := range 4 { // users[0] is on Engineering and 4 more teams: AP2's page is 5 edges
		t := f.team(org, fmt.Sprintf("Team %d", i))
		must(b, f.Teams.CreateTeam(ctx, t, f.member(t, "u_alice", authz.Owner), ev(t)))
		m := f.member(t, users[0], authz.Member)
		must(b, f.Teams.AddTeamMember(ctx, m, ev(m)))
	}
	tk := ticket.Ticket{OrgID: org, ID: f.ids.New(), Title: "Printer on fire", Description: "It is on fire.",
		Status: ticket.StatusOpen, Priority: ticket.PriorityHigh, RequesterID: "u_bob", Tags: []string{"hardware", "fire"},
		Version: 1, CreatedAt: f.now, UpdatedAt: f.now}
	must(b, f.Tickets.CreateTicket(ctx, tk, ev(tk)))

	table := aws.String(f.DB.TableName())
	teamPK := "ORG#" + org + "#TEAM#" + eng.ID
	rows := []struct {
		name       string
		store, raw func() (any, error) // what each side decoded
	}{
		{"AP3 GetTeamMember (GetItem)",
			func() (any, error) { return f.Teams.GetTeamMember(ctx, org, eng.ID, users[7]) },
			func() (any, error) {
				out, err := f.raw.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, ConsistentRead: aws.Bool(true),
					Key: skey(teamPK, "MEMBER#"+users[7])})
				if err != nil || out.Item == nil {
					return nil, fmt.Errorf("get: %v", err)
				}
				return rawMember(out.Item)
			}},
		{"AP1 ListTeamMembers, page of 25 (Query)",
			func() (any, error) {
				r, err := f.Teams.ListTeamMembers(ctx, org, eng.ID, page.Request{Limit: 25})
				return r.Items, err
			},
			func() (any, error) {
				out, err := f.raw.Query(ctx, &dynamodb.QueryInput{TableName: table, Limit: aws.Int32(27),
					KeyConditions: map[string]types.Condition{
						"pk": {ComparisonOperator: types.ComparisonOperatorEq, AttributeValueList: []types.AttributeValue{sattr(teamPK)}},
						"sk": {ComparisonOperator: types.ComparisonOperatorBetween, AttributeValueList: []types.AttributeValue{sattr("#METADATA"), sattr("MEMBER#\uffff")}}}})
				if err != nil || len(out.Items) < 26 {
					return nil, fmt.Errorf("query: %v", err)
				}
				ms := make([]membership.Membership, 0, 25)
				for _, it := range out.Items[1:26] {
					m, err := rawMember(it)
					if err != nil {
						return nil, err
					}
					ms = append(ms, m)
				}
				return ms, nil
			}},
		{"AP2 ListUserTeams, page of 5 (Query GSI1)",
			func() (any, error) {
				r, err := f.Teams.ListUserTeams(ctx, org, users[0], page.Request{Limit: 25})
				return r.Items, err
			},
			func() (any, error) {
				out, err := f.raw.Query(ctx, &dynamodb.QueryInput{TableName: table, IndexName: aws.String("GSI1"), Limit: aws.Int32(26),
					KeyConditions: map[string]types.Condition{
						"gsi1pk": {ComparisonOperator: types.ComparisonOperatorEq, AttributeValueList: []types.AttributeValue{sattr("USER#" + users[0])}},
						"gsi1sk": {ComparisonOperator: types.ComparisonOperatorBeginsWith, AttributeValueList: []types.AttributeValue{sattr("TEAM#" + org + "#")}}}})
				if err != nil || len(out.Items) != 5 {
					return nil, fmt.Errorf("query: %v", err)
				}
				ms := make([]membership.Membership, 0, len(out.Items))
				for _, it := range out.Items {
					m, err := rawMember(it)
					if err != nil {
						return nil, err
					}
					ms = append(ms, m)
				}
				return ms, nil
			}},
		{"GetTicket (GetItem)",
			func() (any, error) { return f.Tickets.GetTicket(ctx, org, tk.ID) },
			func() (any, error) {
				out, err := f.raw.GetItem(ctx, &dynamodb.GetItemInput{TableName: table,
					Key: skey("ORG#"+org+"#TICKET#"+tk.ID, "#METADATA")})
				if err != nil || out.Item == nil {
					return nil, fmt.Errorf("get: %v", err)
				}
				return rawTicket(out.Item)
			}},
	}
	for _, r := range rows {
		b.Run(r.name, func(b *testing.B) {
			// Warm both, and check they decode the same values.
			vs, err := r.store()
			if err != nil {
				b.Fatal(err)
			}
			vr, err := r.raw()
			if err != nil {
				b.Fatal(err)
			}
			if !reflect.DeepEqual(vs, vr) {
				b.Fatalf("the sides disagree:\nstore %+v\nraw   %+v", vs, vr)
			}
			var wall, cpu [2]time.Duration
			sides := [2]func() (any, error){r.store, r.raw}
			n := 0
			for b.Loop() {
				for k := range 2 {
					i := (n + k) % 2 // alternate which side goes first
					c0, t0 := testkit.ProcessCPU(), time.Now()
					if _, err := sides[i](); err != nil {
						b.Fatal(err)
					}
					wall[i] += time.Since(t0)
					cpu[i] += testkit.ProcessCPU() - c0
				}
				n++
			}
			per := func(d time.Duration) float64 { return float64(d) / float64(max(n, 1)) }
			b.ReportMetric(per(wall[0]), "store-ns/call")
			b.ReportMetric(per(wall[1]), "raw-ns/call")
			b.ReportMetric(per(cpu[0]), "store-cpu-ns/call")
			b.ReportMetric(per(cpu[1]), "raw-cpu-ns/call")
			b.ReportMetric(float64(wall[1])/float64(wall[0]), "raw/store")
			b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "raw/store-cpu")
			b.ReportMetric(testing.AllocsPerRun(20, func() { _, _ = r.store() }), "store-allocs/call")
			b.ReportMetric(testing.AllocsPerRun(20, func() { _, _ = r.raw() }), "raw-allocs/call")
		})
	}
}

func sattr(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func skey(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": sattr(pk), "sk": sattr(sk)}
}

// rawItem decodes the attributes a hand-written client reads.
type rawItem map[string]types.AttributeValue

func (it rawItem) s(name string) string {
	v, _ := it[name].(*types.AttributeValueMemberS)
	if v == nil {
		return ""
	}
	return v.Value
}

func (it rawItem) n(name string) (int64, error) {
	v, _ := it[name].(*types.AttributeValueMemberN)
	if v == nil {
		return 0, nil
	}
	return strconv.ParseInt(v.Value, 10, 64)
}

func (it rawItem) t(name string) (time.Time, error) { return time.Parse(time.RFC3339Nano, it.s(name)) }

func rawMember(item map[string]types.AttributeValue) (membership.Membership, error) {
	it := rawItem(item)
	v, err := it.n("version")
	if err != nil {
		return membership.Membership{}, err
	}
	joined, err := it.t("joinedAt")
	if err != nil {
		return membership.Membership{}, err
	}
	updated, err := it.t("updatedAt")
	if err != nil {
		return membership.Membership{}, err
	}
	return membership.Membership{OrgID: it.s("orgId"), TeamID: it.s("teamId"), UserID: it.s("userId"), Role: authz.Role(it.s("role")),
		Version: v, JoinedAt: joined, UpdatedAt: updated}, nil
}

func rawTicket(item map[string]types.AttributeValue) (ticket.Ticket, error) {
	it := rawItem(item)
	v, err := it.n("version")
	if err != nil {
		return ticket.Ticket{}, err
	}
	cc, err := it.n("commentCount")
	if err != nil {
		return ticket.Ticket{}, err
	}
	created, err := it.t("createdAt")
	if err != nil {
		return ticket.Ticket{}, err
	}
	updated, err := it.t("updatedAt")
	if err != nil {
		return ticket.Ticket{}, err
	}
	var tags []string
	if l, ok := item["tags"].(*types.AttributeValueMemberL); ok {
		for _, e := range l.Value {
			if s, ok := e.(*types.AttributeValueMemberS); ok {
				tags = append(tags, s.Value)
			}
		}
	}
	t := ticket.Ticket{OrgID: it.s("orgId"), ID: it.s("ticketId"), Title: it.s("title"), Description: it.s("description"),
		Status: ticket.Status(it.s("status")), Priority: ticket.Priority(it.s("priority")), RequesterID: it.s("requesterId"),
		AssigneeID: it.s("assigneeId"), TeamID: it.s("teamId"), Tags: tags, CommentCount: int(cc), Version: v,
		CreatedAt: created, UpdatedAt: updated}
	return t, nil
}
