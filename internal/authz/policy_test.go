package authz_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
)

// orgRoles are the org roles every row is decided for: the three roles, no
// role, and a role the policy does not know.
var orgRoles = []authz.Role{authz.Owner, authz.Admin, authz.Member, "", "superuser"}

// matrixRow says, for one action and one set of facts, which org roles are
// allowed (space-separated; every other role is forbidden).
type matrixRow struct {
	action  authz.Action
	facts   authz.Facts
	allowed string
}

const (
	anyRole      = "owner admin member"
	adminOrOwner = "owner admin"
	ownerOnly    = "owner"
	ownerChange  = "owner" // touching an owner role always takes an owner
)

var policyRows = []matrixRow{
	{authz.OrgRead, authz.Facts{}, anyRole},
	{authz.OrgRead, authz.Facts{TeamRole: authz.Owner}, anyRole},
	{authz.OrgUpdate, authz.Facts{}, adminOrOwner},
	{authz.OrgUpdate, authz.Facts{Self: true, TeamRole: authz.Owner, Requester: true}, adminOrOwner},
	{authz.OrgDelete, authz.Facts{}, ownerOnly},
	{authz.OrgDelete, authz.Facts{Self: true, TeamRole: authz.Owner}, ownerOnly},
	{authz.OrgExport, authz.Facts{}, ownerOnly},
	{authz.OrgExport, authz.Facts{Self: true, TeamRole: authz.Owner, Requester: true}, ownerOnly},

	{authz.UserRead, authz.Facts{}, anyRole},
	{authz.UserRead, authz.Facts{Self: true}, anyRole},
	{authz.UserAdd, authz.Facts{}, adminOrOwner},
	{authz.UserAdd, authz.Facts{Self: true}, adminOrOwner},
	{authz.UserAdd, authz.Facts{OwnerRole: true}, ownerChange},
	{authz.UserUpdate, authz.Facts{}, adminOrOwner},
	{authz.UserUpdate, authz.Facts{Self: true}, adminOrOwner},
	{authz.UserUpdate, authz.Facts{OwnerRole: true}, ownerChange},
	{authz.UserUpdate, authz.Facts{Self: true, OwnerRole: true}, ownerChange},
	{authz.UserRemove, authz.Facts{}, adminOrOwner},
	{authz.UserRemove, authz.Facts{Self: true}, anyRole}, // members may leave
	{authz.UserRemove, authz.Facts{OwnerRole: true}, ownerChange},
	{authz.UserRemove, authz.Facts{Self: true, OwnerRole: true}, ownerChange},

	{authz.TeamRead, authz.Facts{}, anyRole},
	{authz.TeamCreate, authz.Facts{}, adminOrOwner},
	{authz.TeamCreate, authz.Facts{TeamRole: authz.Owner}, adminOrOwner},
	{authz.TeamUpdate, authz.Facts{}, adminOrOwner},
	{authz.TeamUpdate, authz.Facts{TeamRole: authz.Owner}, anyRole},
	{authz.TeamUpdate, authz.Facts{TeamRole: authz.Admin}, anyRole},
	{authz.TeamUpdate, authz.Facts{TeamRole: authz.Member}, adminOrOwner},
	{authz.TeamUpdate, authz.Facts{TeamRole: "bogus"}, adminOrOwner},
	{authz.TeamUpdate, authz.Facts{TeamMember: true, Requester: true}, adminOrOwner},
	{authz.TeamDelete, authz.Facts{}, adminOrOwner},
	{authz.TeamDelete, authz.Facts{TeamRole: authz.Owner}, anyRole},
	{authz.TeamDelete, authz.Facts{TeamRole: authz.Admin}, anyRole},
	{authz.TeamDelete, authz.Facts{TeamRole: authz.Member}, adminOrOwner},
	{authz.MemberWrite, authz.Facts{}, adminOrOwner},
	{authz.MemberWrite, authz.Facts{TeamRole: authz.Owner}, anyRole},
	{authz.MemberWrite, authz.Facts{TeamRole: authz.Admin}, anyRole},
	{authz.MemberWrite, authz.Facts{TeamRole: authz.Member}, adminOrOwner},
	{authz.MemberWrite, authz.Facts{Self: true}, adminOrOwner},
	{authz.MemberWrite, authz.Facts{TeamRole: authz.Owner, OwnerRole: true}, ownerChange},

	{authz.TicketRead, authz.Facts{}, anyRole},
	{authz.TicketCreate, authz.Facts{}, anyRole},
	{authz.TicketUpdate, authz.Facts{}, adminOrOwner},
	{authz.TicketUpdate, authz.Facts{Requester: true}, anyRole},
	{authz.TicketUpdate, authz.Facts{Assignee: true}, anyRole},
	{authz.TicketUpdate, authz.Facts{TeamMember: true}, anyRole},
	{authz.TicketUpdate, authz.Facts{TeamRole: authz.Owner}, adminOrOwner}, // a team role is not team membership of the ticket
	{authz.TicketUpdate, authz.Facts{Self: true}, adminOrOwner},
	{authz.TicketDelete, authz.Facts{}, adminOrOwner},
	{authz.TicketDelete, authz.Facts{Requester: true}, anyRole},
	{authz.TicketDelete, authz.Facts{Assignee: true}, adminOrOwner},
	{authz.TicketDelete, authz.Facts{TeamMember: true}, adminOrOwner},
	{authz.TicketDelete, authz.Facts{Assignee: true, TeamMember: true, TeamRole: authz.Owner}, adminOrOwner},
	{authz.CommentCreate, authz.Facts{}, anyRole},
	{authz.InvitationManage, authz.Facts{}, adminOrOwner},
	{authz.InvitationManage, authz.Facts{Self: true, Requester: true}, adminOrOwner},
	{authz.AuditRead, authz.Facts{}, adminOrOwner},
	{authz.AuditRead, authz.Facts{Self: true, TeamRole: authz.Owner}, adminOrOwner},
	{authz.APIKeyManage, authz.Facts{}, adminOrOwner},
	{authz.APIKeyManage, authz.Facts{Self: true, TeamRole: authz.Owner}, adminOrOwner},
	{authz.WebhookManage, authz.Facts{}, adminOrOwner},
	{authz.WebhookManage, authz.Facts{Self: true, TeamRole: authz.Owner}, adminOrOwner},

	// OwnerRole is checked for every action, whatever the rule allows.
	{authz.OrgRead, authz.Facts{OwnerRole: true}, ownerChange},
	{authz.TicketUpdate, authz.Facts{Requester: true, OwnerRole: true}, ownerChange},
}

func (r matrixRow) String() string {
	var f []string
	if r.facts.Self {
		f = append(f, "self")
	}
	if r.facts.OwnerRole {
		f = append(f, "ownerRole")
	}
	if r.facts.TeamRole != "" {
		f = append(f, "team="+string(r.facts.TeamRole))
	}
	if r.facts.Requester {
		f = append(f, "requester")
	}
	if r.facts.Assignee {
		f = append(f, "assignee")
	}
	if r.facts.TeamMember {
		f = append(f, "teamMember")
	}
	if len(f) == 0 {
		f = []string{"nofacts"}
	}
	return string(r.action) + "/" + strings.Join(f, "+")
}

func TestAuthorizeMatrix(t *testing.T) {
	for _, row := range policyRows {
		allowed := map[authz.Role]bool{}
		for _, r := range strings.Fields(row.allowed) {
			allowed[authz.Role(r)] = true
		}
		for _, role := range orgRoles {
			name := fmt.Sprintf("%s/%q", row, role)
			t.Run(name, func(t *testing.T) {
				p := authz.Principal{Identity: authz.Identity{UserID: "u_caller"}, OrgID: "01ARZ3NDEKTSV4RRFFQ69G5FAV", OrgRole: role}
				err := authz.Authorize(p, row.action, row.facts)
				if got, want := err == nil, allowed[role]; got != want {
					t.Fatalf("allowed: got %v, want %v (err %v)", got, want, err)
				}
				if err == nil {
					return
				}
				e, ok := errs.As(err)
				if !ok {
					t.Fatalf("got %v, not an *errs.Error", err)
				}
				if got, want := e.Kind, errs.Forbidden; got != want {
					t.Errorf("kind: got %v, want %v", got, want)
				}
				if got, want := e.Code, "forbidden"; got != want {
					t.Errorf("code: got %q, want %q", got, want)
				}
				if got, want := e.Message, authz.Matrix[row.action].Reason; got != want {
					t.Errorf("message: got %q, want the rule's reason %q", got, want)
				}
			})
		}
	}
}

// TestMatrixCoversEveryAction keeps the table above complete: a new action
// needs its rows here.
func TestMatrixCoversEveryAction(t *testing.T) {
	covered := map[authz.Action]bool{}
	for _, row := range policyRows {
		covered[row.action] = true
	}
	for a, rule := range authz.Matrix {
		if !covered[a] {
			t.Errorf("action %s has no row in policyRows", a)
		}
		if !rule.Min.Valid() {
			t.Errorf("action %s: Min %q is not a role", a, rule.Min)
		}
		if rule.Reason == "" {
			t.Errorf("action %s has no reason", a)
		}
	}
	for a := range covered {
		if _, ok := authz.Matrix[a]; !ok {
			t.Errorf("test row for %s, which authz.Matrix lacks", a)
		}
	}
}

// TestOwnerRoleNeedsOwner: whatever an action's rule allows, a change that
// touches an owner role is refused for every role but owner.
func TestOwnerRoleNeedsOwner(t *testing.T) {
	facts := []authz.Facts{
		{OwnerRole: true},
		{OwnerRole: true, Self: true},
		{OwnerRole: true, TeamRole: authz.Owner},
		{OwnerRole: true, Requester: true, Assignee: true, TeamMember: true},
	}
	for a := range authz.Matrix {
		for i, f := range facts {
			for _, role := range orgRoles {
				err := authz.Authorize(authz.Principal{OrgRole: role}, a, f)
				if got, want := err == nil, role == authz.Owner; got != want {
					t.Errorf("%s facts#%d role %q: allowed got %v, want %v", a, i, role, got, want)
				}
				if err != nil && !errs.Is(err, errs.Forbidden) {
					t.Errorf("%s facts#%d role %q: got %v, want Forbidden", a, i, role, err)
				}
			}
		}
	}
}

func TestAuthorizeUnknownAction(t *testing.T) {
	err := authz.Authorize(authz.Principal{OrgRole: authz.Owner}, "org.explode", authz.Facts{})
	if got, want := errs.KindOf(err), errs.Internal; got != want {
		t.Errorf("kind: got %v, want %v (err %v)", got, want, err)
	}
	if got, want := errs.CodeOf(err), "unknown_action"; got != want {
		t.Errorf("code: got %q, want %q", got, want)
	}
}

func TestNeedsTeamRole(t *testing.T) {
	cases := []struct {
		action authz.Action
		role   authz.Role
		want   bool
	}{
		{authz.MemberWrite, authz.Owner, false},
		{authz.MemberWrite, authz.Admin, false},
		{authz.MemberWrite, authz.Member, true},
		{authz.MemberWrite, "", true},
		{authz.TeamUpdate, authz.Admin, false},
		{authz.TeamUpdate, authz.Member, true},
		{authz.TeamDelete, authz.Member, true},
		{authz.TeamRead, authz.Member, false},
		{authz.OrgDelete, authz.Admin, true},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%q", c.action, c.role), func(t *testing.T) {
			if got, want := authz.NeedsTeamRole(authz.Principal{OrgRole: c.role}, c.action), c.want; got != want {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func TestRoles(t *testing.T) {
	cases := []struct {
		r, min authz.Role
		want   bool
	}{
		{authz.Owner, authz.Owner, true},
		{authz.Owner, authz.Admin, true},
		{authz.Owner, authz.Member, true},
		{authz.Admin, authz.Owner, false},
		{authz.Admin, authz.Admin, true},
		{authz.Admin, authz.Member, true},
		{authz.Member, authz.Owner, false},
		{authz.Member, authz.Admin, false},
		{authz.Member, authz.Member, true},
		{"", authz.Member, false},
		{"", "", false},                // an empty role grants nothing, not even "nothing"
		{"OWNER", authz.Member, false}, // roles are case-sensitive
	}
	for _, c := range cases {
		if got := c.r.AtLeast(c.min); got != c.want {
			t.Errorf("%q.AtLeast(%q): got %v, want %v", c.r, c.min, got, c.want)
		}
	}
	for _, s := range []string{"owner", "admin", "member"} {
		if err := authz.Role(s).Check("role"); err != nil {
			t.Errorf("Role(%q).Check: %v", s, err)
		}
	}
	for _, s := range []string{"", "Owner", "root", " admin", "member\x00"} {
		if got, want := errs.CodeOf(authz.Role(s).Check("role")), "invalid_role"; got != want {
			t.Errorf("Role(%q).Check: code %q, want %s", s, got, want)
		}
	}
}

// TestAdmit is the org-level decision: a valid role on the caller's edge
// admits them, nothing else does, and an org being offboarded admits only
// its owners, only on the offboarding routes.
func TestAdmit(t *testing.T) {
	id := authz.Identity{UserID: "u_caller", Email: "caller@example.com"}
	const orgID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
	cases := []struct {
		name        string
		access      authz.Access
		offboarding bool
		admitted    bool
	}{
		{"no role", authz.Access{}, false, false},
		{"no role on an offboarding route", authz.Access{}, true, false},
		{"unknown role", authz.Access{Role: "superuser"}, false, false},
		{"role of another case", authz.Access{Role: "Owner"}, false, false},
		{"member", authz.Access{Role: authz.Member}, false, true},
		{"admin", authz.Access{Role: authz.Admin}, false, true},
		{"owner", authz.Access{Role: authz.Owner}, false, true},
		{"owner on an offboarding route of a live org", authz.Access{Role: authz.Owner}, true, true},
		{"member on an offboarding route of a live org", authz.Access{Role: authz.Member}, true, true},

		{"org deleting: member", authz.Access{Role: authz.Member, OrgDeleting: true}, false, false},
		{"org deleting: admin", authz.Access{Role: authz.Admin, OrgDeleting: true}, false, false},
		{"org deleting: owner elsewhere", authz.Access{Role: authz.Owner, OrgDeleting: true}, false, false},
		{"org deleting: owner on an offboarding route", authz.Access{Role: authz.Owner, OrgDeleting: true}, true, true},
		{"org deleting: admin on an offboarding route", authz.Access{Role: authz.Admin, OrgDeleting: true}, true, false},
		{"org deleting: member on an offboarding route", authz.Access{Role: authz.Member, OrgDeleting: true}, true, false},
		{"org deleting: no role on an offboarding route", authz.Access{OrgDeleting: true}, true, false},

		{"edge deleting: owner elsewhere", authz.Access{Role: authz.Owner, EdgeDeleting: true}, false, false},
		{"edge deleting: owner on an offboarding route", authz.Access{Role: authz.Owner, EdgeDeleting: true}, true, true},
		{"edge deleting: admin on an offboarding route", authz.Access{Role: authz.Admin, EdgeDeleting: true}, true, false},
		{"edge deleting: member", authz.Access{Role: authz.Member, EdgeDeleting: true}, false, false},
		{"both deleting: owner elsewhere", authz.Access{Role: authz.Owner, OrgDeleting: true, EdgeDeleting: true}, false, false},
		{"both deleting: owner on an offboarding route", authz.Access{Role: authz.Owner, OrgDeleting: true, EdgeDeleting: true}, true, true},
	}
	for _, c := range cases {
		outcome := "404"
		if c.admitted {
			outcome = "200"
		}
		t.Run(outcome+"/Admit/"+c.name, func(t *testing.T) {
			p, err := authz.Admit(id, orgID, c.access, c.offboarding)
			if !c.admitted {
				if got, want := errs.KindOf(err), errs.NotFound; got != want {
					t.Fatalf("kind: got %v, want %v (err %v)", got, want, err)
				}
				if got, want := errs.CodeOf(err), "org_not_found"; got != want {
					t.Errorf("code: got %q, want %q", got, want)
				}
				if p != (authz.Principal{}) {
					t.Errorf("principal: got %+v, want none", p)
				}
				return
			}
			if err != nil {
				t.Fatalf("got %v, want admitted", err)
			}
			if want := (authz.Principal{Identity: id, OrgID: orgID, OrgRole: c.access.Role}); p != want {
				t.Errorf("principal: got %+v, want %+v", p, want)
			}
		})
	}
}

// TestCallerKeysNamespace: an org's keys' caller is one no person's
// subject may be (KeyActor refuses it), so no person's token spends the
// org's keys' budget; each person is their own caller.
func TestCallerKeysNamespace(t *testing.T) {
	key := authz.Identity{UserID: "apiKey:01KJPWD6MCH66BQCJZTYJEZQ3K", Key: &authz.APIKey{OrgID: "01KJPWD6MCH66BQCJZTYJEZQ3G", ID: "01KJPWD6MCH66BQCJZTYJEZQ3K"}}
	if c := key.Caller(); !authz.KeyActor(c) {
		t.Errorf("the keys' caller %q is a subject a person's token may carry", c)
	}
	other := authz.Identity{UserID: "apiKey:01KJPWD6MCH66BQCJZTYJEZQ3M", Key: &authz.APIKey{OrgID: key.Key.OrgID, ID: "01KJPWD6MCH66BQCJZTYJEZQ3M"}}
	if key.Caller() != other.Caller() {
		t.Errorf("two keys of one org are callers %q and %q, want one", key.Caller(), other.Caller())
	}
	if p := (authz.Identity{UserID: "alice"}); p.Caller() != "alice" {
		t.Errorf("a person's caller is %q, want their subject", p.Caller())
	}
}
