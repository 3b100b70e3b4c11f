package apitest

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/tenantd/tenantd/client"
)

// MustOrg creates an org as c's user (who becomes its owner).
func MustOrg(tb testing.TB, c *client.ClientWithResponses, name string) client.Org {
	tb.Helper()
	r, err := c.CreateOrgWithResponse(bg, nil, client.OrgCreate{Name: name})
	MustStatus(tb, r, err, http.StatusCreated)
	return *r.JSON201
}

// MustUser adds a to the org with role, as c's user.
func MustUser(tb testing.TB, c *client.ClientWithResponses, orgID string, a Actor, role client.Role) client.OrgUser {
	tb.Helper()
	r, err := c.AddOrgUserWithResponse(bg, orgID, nil, client.OrgUserCreate{UserId: a.ID, Email: a.Email, Name: a.Name, Role: role})
	MustStatus(tb, r, err, http.StatusCreated)
	return *r.JSON201
}

// MustTeam creates a team as c's user (who becomes its owner).
func MustTeam(tb testing.TB, c *client.ClientWithResponses, orgID, name string) client.Team {
	tb.Helper()
	desc := "about " + name
	r, err := c.CreateTeamWithResponse(bg, orgID, nil, client.TeamCreate{Name: name, Description: &desc})
	MustStatus(tb, r, err, http.StatusCreated)
	return *r.JSON201
}

// MustMember puts userID into the team with role, as c's user.
func MustMember(tb testing.TB, c *client.ClientWithResponses, orgID, teamID, userID string, role client.Role) client.Membership {
	tb.Helper()
	r, err := c.PutTeamMemberWithResponse(bg, orgID, teamID, userID, nil, client.TeamMemberPut{Role: role})
	if err != nil {
		tb.Fatal(err)
	}
	switch r.StatusCode() {
	case http.StatusCreated:
		return *r.JSON201
	case http.StatusOK:
		return *r.JSON200
	}
	tb.Fatalf("put member: status %d: %s", r.StatusCode(), r.Body)
	return client.Membership{}
}

// MustTicket opens a ticket as c's user.
func MustTicket(tb testing.TB, c *client.ClientWithResponses, orgID string, in client.TicketCreate) client.Ticket {
	tb.Helper()
	r, err := c.CreateTicketWithResponse(bg, orgID, nil, in)
	MustStatus(tb, r, err, http.StatusCreated)
	return *r.JSON201
}

// MustComment comments on a ticket as c's user.
func MustComment(tb testing.TB, c *client.ClientWithResponses, orgID, ticketID, body string) client.Comment {
	tb.Helper()
	r, err := c.CreateCommentWithResponse(bg, orgID, ticketID, nil, client.CommentCreate{Body: body})
	MustStatus(tb, r, err, http.StatusCreated)
	return *r.JSON201
}

// MustInvitation invites email to the org as c's user.
func MustInvitation(tb testing.TB, c *client.ClientWithResponses, orgID, email string, role client.Role, teamIDs ...string) client.InvitationCreated {
	tb.Helper()
	in := client.InvitationCreate{Email: email, Role: role}
	if len(teamIDs) > 0 {
		in.TeamIds = &teamIDs
	}
	r, err := c.CreateInvitationWithResponse(bg, orgID, nil, in)
	MustStatus(tb, r, err, http.StatusCreated)
	return *r.JSON201
}

// World is one org with a user in every role the policy knows:
// Owner/Admin/Member by org role; TeamOwner/TeamAdmin/TeamMember are org
// members with that role on Team; Requester opened Ticket (routed to Team)
// and Assignee is assigned it (both org members, in no team).
type World struct {
	Org    client.Org
	Team   client.Team
	Ticket client.Ticket

	Owner, Admin, Member             Actor
	TeamOwner, TeamAdmin, TeamMember Actor
	Requester, Assignee              Actor
}

// MustWorld builds a world named name in ts.
func MustWorld(tb testing.TB, ts *Server, name string) *World {
	tb.Helper()
	w := &World{
		Owner: ts.Actor(tb, "owner"), Admin: ts.Actor(tb, "admin"), Member: ts.Actor(tb, "member"),
		TeamOwner: ts.Actor(tb, "towner"), TeamAdmin: ts.Actor(tb, "tadmin"), TeamMember: ts.Actor(tb, "tmember"),
		Requester: ts.Actor(tb, "req"), Assignee: ts.Actor(tb, "asg"),
	}
	oc := w.Owner.C
	w.Org = MustOrg(tb, oc, name)
	MustUser(tb, oc, w.Org.Id, w.Admin, client.RoleAdmin)
	for _, a := range []Actor{w.Member, w.TeamOwner, w.TeamAdmin, w.TeamMember, w.Requester, w.Assignee} {
		MustUser(tb, oc, w.Org.Id, a, client.RoleMember)
	}
	w.Team = MustTeam(tb, oc, w.Org.Id, name+" Support")
	MustMember(tb, oc, w.Org.Id, w.Team.Id, w.TeamOwner.ID, client.RoleOwner)
	MustMember(tb, oc, w.Org.Id, w.Team.Id, w.TeamAdmin.ID, client.RoleAdmin)
	MustMember(tb, oc, w.Org.Id, w.Team.Id, w.TeamMember.ID, client.RoleMember)
	w.Ticket = MustTicket(tb, w.Requester.C, w.Org.Id, client.TicketCreate{Title: name + " printer on fire",
		TeamId: &w.Team.Id, AssigneeId: &w.Assignee.ID, Tags: &[]string{"hardware"}})
	return w
}

// Role names a user of a world by what makes their permissions.
type Role string

// OrgOwner, OrgAdmin, OrgMember, TeamOwner, TeamAdmin, TeamMember,
// Requester and Assignee are the roles of a world's users (see World).
const (
	OrgOwner   Role = "org owner"
	OrgAdmin   Role = "org admin"
	OrgMember  Role = "org member"
	TeamOwner  Role = "team owner"  // org member, owner of the team
	TeamAdmin  Role = "team admin"  // org member, admin of the team
	TeamMember Role = "team member" // org member, member of the team
	Requester  Role = "requester"   // org member, requested the ticket
	Assignee   Role = "assignee"    // org member, assigned the ticket
)

// Roles is every Role, in the order of World's fields.
var Roles = []Role{OrgOwner, OrgAdmin, OrgMember, TeamOwner, TeamAdmin, TeamMember, Requester, Assignee}

// Actor is the world's user in role r.
func (w *World) Actor(r Role) Actor {
	return map[Role]Actor{OrgOwner: w.Owner, OrgAdmin: w.Admin, OrgMember: w.Member, TeamOwner: w.TeamOwner,
		TeamAdmin: w.TeamAdmin, TeamMember: w.TeamMember, Requester: w.Requester, Assignee: w.Assignee}[r]
}

// ActorOf is the actor of the world whose client c is.
func (w *World) ActorOf(c *client.ClientWithResponses) Actor {
	for _, r := range Roles {
		if a := w.Actor(r); a.C == c {
			return a
		}
	}
	panic("no actor of the world has this client")
}

// UserIDs are the world's users, sorted.
func (w *World) UserIDs() []string {
	ids := []string{w.Owner.ID, w.Admin.ID, w.Member.ID, w.TeamOwner.ID, w.TeamAdmin.ID, w.TeamMember.ID, w.Requester.ID, w.Assignee.ID}
	slices.Sort(ids)
	return ids
}

// AllEvents walks the org's audit log with page size limit.
func AllEvents(t *testing.T, c *client.ClientWithResponses, orgID string, limit int, since, until *time.Time) []client.AuditEvent {
	t.Helper()
	var out []client.AuditEvent
	var cursor *string
	for range 1000 {
		r, err := c.ListAuditEventsWithResponse(bg, orgID, &client.ListAuditEventsParams{Limit: &limit, Cursor: cursor, Since: since, Until: until})
		MustStatus(t, r, err, http.StatusOK)
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
