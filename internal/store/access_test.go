package store_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/store"
	"github.com/tenantd/tenantd/internal/ticket"
)

// TestOrgAccess: the authorization read is one consistent BatchGetItem of
// the org item, the caller's edge and the route's target; the target comes
// back as its getter returns it, or nil with its getter's not-found error
// (missing, marked for deletion, or an ID that may not reach a key, which
// is then left out of the read); a stranger's read fills nothing of it.
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
	cases := []struct {
		name   string
		caller string
		target *store.Target
		role   authz.Role
		keys   int // of the BatchGetItem
		found  func(*store.Target) bool
		code   string // the target's error, when not found
	}{
		{"no target", "u_bob", nil, authz.Member, 2, nil, ""},
		{"the org", "u_bob", store.OrgTarget(), authz.Member, 2, func(t *store.Target) bool { return t.Org != nil && t.Org.Name == "Acme" }, ""},
		{"another user", "u_bob", store.OrgUserTarget("u_dana"), authz.Member, 3, func(t *store.Target) bool { return t.User != nil && t.User.Email == "dana@example.com" }, ""},
		{"the caller themself", "u_bob", store.OrgUserTarget("u_bob"), authz.Member, 2, func(t *store.Target) bool { return t.User != nil && t.User.Role == authz.Member }, ""},
		{"a missing user", "u_bob", store.OrgUserTarget("u_nobody"), authz.Member, 3, nil, "user_not_found"},
		{"a team", "u_bob", store.TeamTarget(s.Eng.ID), authz.Member, 3, func(t *store.Target) bool { return t.Team != nil && t.Team.Name == "Engineering" }, ""},
		{"a team member", "u_bob", store.TeamMemberTarget(s.Design.ID, "u_alice"), authz.Member, 3, func(t *store.Target) bool { return t.Member != nil && t.Member.Role == authz.Admin }, ""},
		{"a missing team member", "u_bob", store.TeamMemberTarget(s.Design.ID, "u_bob"), authz.Member, 3, nil, "member_not_found"},
		{"a ticket", "u_bob", store.TicketTarget(tk.ID), authz.Member, 3, func(t *store.Target) bool { return t.Ticket != nil && t.Ticket.Title == "Printer on fire" }, ""},
		{"a ticket being deleted", "u_bob", store.TicketTarget(doomed.ID), authz.Member, 3, nil, "ticket_not_found"},
		{"an ID that may not reach a key", "u_bob", store.TicketTarget("ORG#x"), authz.Member, 2, nil, "invalid_id"},
		{"a stranger's read", "u_stranger", store.TicketTarget(tk.ID), "", 3, func(t *store.Target) bool { return t.Ticket == nil }, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f.Rec.Reset()
			a, err := f.Orgs.OrgAccess(ctx, org, c.caller, c.target)
			if err != nil {
				t.Fatal(err)
			}
			if a.Role != c.role || a.OrgDeleting || a.EdgeDeleting {
				t.Errorf("access: %+v, want role %q", a, c.role)
			}
			ops := f.Rec.Ops()
			if len(ops) != 1 || ops[0].String() != "BatchGetItem+consistent" || ops[0].Items != c.keys {
				t.Errorf("calls: %s (%d keys), want one consistent BatchGetItem of %d keys", f.Rec.Names(), ops[0].Items, c.keys)
			}
			switch {
			case c.target == nil:
			case c.found != nil:
				if !c.found(c.target) || c.target.Err != nil {
					t.Errorf("target: %+v", c.target)
				}
			default:
				if got := errs.CodeOf(c.target.Err); got != c.code || c.target.Ticket != nil || c.target.User != nil || c.target.Member != nil {
					t.Errorf("target error %q (%v), want %q and nothing found", got, c.target.Err, c.code)
				}
			}
		})
	}
}
