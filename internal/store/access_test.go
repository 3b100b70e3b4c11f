package store_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantd/tenantd/internal/access"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ticket"
)

// TestOrgAccess: the authorization read is one consistent BatchGetItem of
// the org item, the caller's edge, the route's target and, when asked, the
// caller's edge of the target's team; the org and the target come back as
// their getters return them, or the target's getter's not-found error
// (missing, marked for deletion, or an ID that may not reach a key, which
// is then left out of the read); a stranger's read fills nothing.
func TestOrgAccess(t *testing.T) {
	f, s := MustSampled(t)
	ctx := context.Background()
	org := s.Org.ID
	tk := f.ticket(org, "u_bob", "Printer on fire", ticket.StatusNew)
	must(t, f.Tickets.CreateTicket(ctx, tk, ev(tk)))
	doomed := f.ticket(org, "u_bob", "Being deleted", ticket.StatusNew)
	must(t, f.Tickets.CreateTicket(ctx, doomed, ev(doomed)))
	if _, err := f.raw.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(f.DB.TableName()),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "ORG#" + org + "#TICKET#" + doomed.ID},
			"sk": &types.AttributeValueMemberS{Value: "#METADATA"}},
		UpdateExpression: aws.String("SET deleting = :t"), ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberBOOL{Value: true}}}); err != nil {
		t.Fatal(err)
	}
	user := func(id string) access.Target { return access.Target{Kind: access.User, UserID: id} }
	tick := func(id string) access.Target { return access.Target{Kind: access.Ticket, TicketID: id} }
	member := func(team, id string) access.Target {
		return access.Target{Kind: access.Member, TeamID: team, UserID: id}
	}
	withTeamRole := func(t access.Target) access.Target { t.TeamRole = true; return t }
	cases := []struct {
		name   string
		caller string
		target access.Target
		role   authz.Role
		keys   int // of the BatchGetItem
		found  func(access.Found) bool
		code   string // the target's error, when not found
	}{
		{"no target", "u_bob", access.Target{}, authz.Member, 2, func(f access.Found) bool { return f.Org != nil && f.Org.Name == "Acme" }, ""},
		{"the org", "u_bob", access.Target{Kind: access.Org}, authz.Member, 2, func(f access.Found) bool { return f.Org != nil && f.Org.Name == "Acme" }, ""},
		{"another user", "u_bob", user("u_dana"), authz.Member, 3, func(f access.Found) bool { return f.User != nil && f.User.Email == "dana@example.com" }, ""},
		{"the caller themself", "u_bob", user("u_bob"), authz.Member, 2, func(f access.Found) bool { return f.User != nil && f.User.Role == authz.Member }, ""},
		{"a missing user", "u_bob", user("u_nobody"), authz.Member, 3, nil, "user_not_found"},
		{"a team", "u_bob", access.Target{Kind: access.Team, TeamID: s.Eng.ID}, authz.Member, 3, func(f access.Found) bool { return f.Team != nil && f.Team.Name == "Engineering" }, ""},
		{"a team, with the caller's team role", "u_alice", withTeamRole(access.Target{Kind: access.Team, TeamID: s.Design.ID}), authz.Owner, 4,
			func(f access.Found) bool {
				return f.Team != nil && f.Team.Name == "Design" && f.TeamRole == authz.Admin
			}, ""},
		{"a team, the caller not on it", "u_bob", withTeamRole(access.Target{Kind: access.Team, TeamID: s.Design.ID}), authz.Member, 4,
			func(f access.Found) bool { return f.Team != nil && f.TeamRole == "" }, ""},
		{"a team member", "u_bob", member(s.Design.ID, "u_alice"), authz.Member, 3, func(f access.Found) bool { return f.Member != nil && f.Member.Role == authz.Admin }, ""},
		{"the caller's own edge, with their team role", "u_alice", withTeamRole(member(s.Design.ID, "u_alice")), authz.Owner, 3,
			func(f access.Found) bool { return f.Member != nil && f.TeamRole == authz.Admin }, ""},
		{"a missing team member", "u_bob", member(s.Design.ID, "u_bob"), authz.Member, 3, nil, "member_not_found"},
		{"a ticket", "u_bob", tick(tk.ID), authz.Member, 3, func(f access.Found) bool { return f.Ticket != nil && f.Ticket.Title == "Printer on fire" }, ""},
		{"a ticket being deleted", "u_bob", tick(doomed.ID), authz.Member, 3, nil, "ticket_not_found"},
		{"an ID that may not reach a key", "u_bob", tick("ORG#x"), authz.Member, 2, nil, "invalid_id"},
		{"a stranger's read", "u_stranger", tick(tk.ID), "", 3, func(f access.Found) bool { return f.Ticket == nil && f.Org == nil }, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f.Rec.Reset()
			got, err := f.Orgs.OrgAccess(ctx, org, c.caller, c.target)
			if err != nil {
				t.Fatal(err)
			}
			if got.Role != c.role || got.OrgDeleting || got.EdgeDeleting {
				t.Errorf("access: %+v, want role %q", got.Access, c.role)
			}
			ops := f.Rec.Ops()
			if len(ops) != 1 || ops[0].String() != "BatchGetItem+consistent" || ops[0].Items != c.keys {
				t.Errorf("calls: %s (%d keys), want one consistent BatchGetItem of %d keys", f.Rec.Names(), ops[0].Items, c.keys)
			}
			if c.found != nil {
				if !c.found(got) || got.Missing != nil {
					t.Errorf("found: %+v", got)
				}
				return
			}
			if code := errs.CodeOf(got.Missing); code != c.code || got.Ticket != nil || got.User != nil || got.Member != nil {
				t.Errorf("missing %q (%v), want %q and nothing found", code, got.Missing, c.code)
			}
		})
	}
}
