package ticket_test

import (
	"context"
	"slices"
	"strings"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ifmatch"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/testkit"
	"github.com/tenantd/tenantd/internal/ticket"
)

// The org, team and tickets the tests work with.
const (
	orgID    = testkit.OrgID
	teamID   = "01BX5ZZKBKACTAV9WEVGEMMVS1"
	team2    = "01BX5ZZKBKACTAV9WEVGEMMVS2"
	ticketID = "01BX5ZZKBKACTAV9WEVGEMMVT1" // requested by requester, assigned to assignee, on teamID
	noTeam   = "01BX5ZZKBKACTAV9WEVGEMMVT2" // requested by requester, unassigned, on no team
	missing  = "01BX5ZZKBKACTAV9WEVGEMMVT9" // no such ticket
)

// t0 is when the seeded items were written, t1 (now) what the services'
// clock says (testkit's).
var (
	t0, t1 = testkit.T0, testkit.T1
	now    = testkit.Now
)

// The users of orgID. All but owner and admin are org members.
const (
	owner     = "u_olivia"
	admin     = "u_ada"
	requester = "u_rita" // requested both tickets
	assignee  = "u_ari"  // assigned ticketID
	teamMate  = "u_tess" // on teamID
	bystander = "u_max"  // none of these
	nobody    = "u_nemo" // not in the org
)

// as is userID acting in orgID with org role.
var as = testkit.As

// fakeStore is an in-memory ticket.Storer (and ticket.TeamMembers and
// ticket.Users) with the rules of the real one that the service relies on:
// versions, references to the org's users and teams. It keeps the audit
// event of every write that succeeds, counts the calls it serves, and can
// play a concurrent writer (BeforeWrite) or fail a method (Fail).
type fakeStore struct {
	users    map[string]tenant.User // the org's users, by user ID
	teams    map[string]bool        // the org's teams
	edges    map[string]bool        // team edges, by teamID/userID
	tickets  map[string]ticket.Ticket
	comments map[string][]ticket.Comment // by ticket ID

	testkit.Recorder
	// batched are the user IDs each BatchGetOrgUsers was asked for.
	batched [][]string
	// deleteIf is the ifVersion each DeleteTicket was given.
	deleteIf []int64
}

// seedTicket is ticketID as written at t0.
func seedTicket() ticket.Ticket {
	return ticket.Ticket{OrgID: orgID, ID: ticketID, Title: "Printer on fire", Description: "Third floor", Status: ticket.StatusOpen,
		Priority: ticket.PriorityHigh, RequesterID: requester, AssigneeID: assignee, TeamID: teamID, Tags: []string{"hardware"},
		CommentCount: 1, Version: 1, CreatedAt: t0, UpdatedAt: t0}
}

// newFake returns a store holding the org's users, teamID with teamMate
// and assignee on it, team2, and the tickets ticketID (with one comment)
// and noTeam.
func newFake() *fakeStore {
	s := &fakeStore{users: map[string]tenant.User{}, teams: map[string]bool{teamID: true, team2: true},
		edges: map[string]bool{teamID + "/" + teamMate: true, teamID + "/" + assignee: true}, tickets: map[string]ticket.Ticket{},
		comments: map[string][]ticket.Comment{}, Recorder: testkit.NewRecorder()}
	roles := map[string]authz.Role{owner: authz.Owner, admin: authz.Admin, requester: authz.Member, assignee: authz.Member,
		teamMate: authz.Member, bystander: authz.Member}
	for id, r := range roles {
		s.users[id] = tenant.User{OrgID: orgID, UserID: id, Email: id[2:] + "@example.com", Name: id[2:], Role: r, JoinedAt: t0, UpdatedAt: t0, Version: 1}
	}
	s.tickets[ticketID] = seedTicket()
	s.tickets[noTeam] = ticket.Ticket{OrgID: orgID, ID: noTeam, Title: "Password reset", Status: ticket.StatusNew, Priority: ticket.PriorityNormal,
		RequesterID: requester, Version: 1, CreatedAt: t0, UpdatedAt: t0}
	s.comments[ticketID] = []ticket.Comment{{OrgID: orgID, TicketID: ticketID, ID: "01BX5ZZKBKACTAV9WEVGEMMVC1", AuthorID: assignee, Body: "On it", CreatedAt: t0}}
	return s
}

// change applies f to a stored ticket and bumps its version, as another
// writer's change would.
func (s *fakeStore) change(id string, f func(*ticket.Ticket)) {
	t := s.tickets[id]
	f(&t)
	t.Version++
	s.tickets[id] = t
}

// once returns f, made to run only on its first call.
func once(f func()) func() {
	done := false
	return func() {
		if !done {
			done = true
			f()
		}
	}
}

var errTicketNotFound = errs.E(errs.NotFound, "ticket_not_found", "ticket not found")

// references checks t's assignee and team as the real store does.
func (s *fakeStore) references(t ticket.Ticket) error {
	if _, ok := s.users[t.AssigneeID]; t.AssigneeID != "" && !ok {
		return &errs.Error{Kind: errs.Conflict, Code: "assignee_not_org_member", Field: "assigneeId", Message: "the assignee is not a user of this organization"}
	}
	if t.TeamID != "" && !s.teams[t.TeamID] {
		return &errs.Error{Kind: errs.Conflict, Code: "team_not_found", Field: "teamId", Message: "no such team in this organization"}
	}
	return nil
}

func (s *fakeStore) CreateTicket(ctx context.Context, t ticket.Ticket, ev audit.Event) error {
	if err := s.Write("CreateTicket", ev); err != nil {
		return err
	}
	if _, ok := s.tickets[t.ID]; ok {
		return errs.E(errs.Conflict, "ticket_exists", "ticket ID already taken")
	}
	if _, ok := s.users[t.RequesterID]; !ok {
		return errs.E(errs.NotFound, "user_not_found", "the requester is not a user of this organization")
	}
	if err := s.references(t); err != nil {
		return err
	}
	s.tickets[t.ID] = t
	return s.Commit(ev)
}

func (s *fakeStore) GetTicket(ctx context.Context, orgID, ticketID string) (ticket.Ticket, error) {
	if err := s.Op("GetTicket"); err != nil {
		return ticket.Ticket{}, err
	}
	t, ok := s.tickets[ticketID]
	if !ok {
		return ticket.Ticket{}, errTicketNotFound
	}
	return t, nil
}

func (s *fakeStore) GetTicketWithComments(ctx context.Context, orgID, ticketID string, limit int) (ticket.Ticket, []ticket.Comment, error) {
	if err := s.Op("GetTicketWithComments"); err != nil {
		return ticket.Ticket{}, nil, err
	}
	t, ok := s.tickets[ticketID]
	if !ok {
		return ticket.Ticket{}, nil, errTicketNotFound
	}
	cs := s.comments[ticketID]
	return t, cs[:min(limit, len(cs))], nil
}

func (s *fakeStore) UpdateTicket(ctx context.Context, prev, next ticket.Ticket, ev audit.Event) error {
	if err := s.Write("UpdateTicket", ev); err != nil {
		return err
	}
	cur, ok := s.tickets[prev.ID]
	switch {
	case !ok:
		return errTicketNotFound
	case cur.Version != prev.Version:
		return ifmatch.ErrVersion
	}
	if err := s.references(next); err != nil {
		return err
	}
	s.tickets[prev.ID] = next
	return s.Commit(ev)
}

func (s *fakeStore) DeleteTicket(ctx context.Context, orgID, ticketID string, ifVersion int64, ev audit.Event) error {
	if err := s.Write("DeleteTicket", ev); err != nil {
		return err
	}
	s.deleteIf = append(s.deleteIf, ifVersion)
	cur, ok := s.tickets[ticketID]
	switch {
	case !ok:
		return errTicketNotFound
	case ifVersion > 0 && cur.Version != ifVersion:
		return ifmatch.ErrVersion
	}
	delete(s.tickets, ticketID)
	delete(s.comments, ticketID)
	return s.Commit(ev)
}

// list pages through the tickets keep keeps, newest first.
func (s *fakeStore) list(keep func(ticket.Ticket) bool, p page.Request) page.Result[ticket.Ticket] {
	var r page.Result[ticket.Ticket]
	for _, t := range s.tickets {
		if keep(t) {
			r.Items = append(r.Items, t)
		}
	}
	slices.SortFunc(r.Items, func(a, b ticket.Ticket) int { return strings.Compare(b.ID, a.ID) })
	r.Items = r.Items[:min(p.Limit, len(r.Items))]
	return r
}

func (s *fakeStore) ListTickets(ctx context.Context, orgID string, f ticket.Filter, p page.Request) (page.Result[ticket.Ticket], error) {
	if err := s.Op("ListTickets"); err != nil {
		return page.Result[ticket.Ticket]{}, err
	}
	return s.list(func(t ticket.Ticket) bool {
		return (f.Status == "" || t.Status == f.Status) && (f.Priority == "" || t.Priority == f.Priority) &&
			(f.AssigneeID == "" || t.AssigneeID == f.AssigneeID)
	}, p), nil
}

func (s *fakeStore) ListTeamTickets(ctx context.Context, orgID, teamID string, status ticket.Status, p page.Request) (page.Result[ticket.Ticket], error) {
	if err := s.Op("ListTeamTickets"); err != nil {
		return page.Result[ticket.Ticket]{}, err
	}
	return s.list(func(t ticket.Ticket) bool { return t.TeamID == teamID && (status == "" || t.Status == status) }, p), nil
}

func (s *fakeStore) ListAssignedTickets(ctx context.Context, orgID, userID string, p page.Request) (page.Result[ticket.Ticket], error) {
	if err := s.Op("ListAssignedTickets"); err != nil {
		return page.Result[ticket.Ticket]{}, err
	}
	return s.list(func(t ticket.Ticket) bool { return t.AssigneeID == userID }, p), nil
}

func (s *fakeStore) ListUserTickets(ctx context.Context, orgID, userID string, p page.Request) (page.Result[ticket.Ticket], error) {
	if err := s.Op("ListUserTickets"); err != nil {
		return page.Result[ticket.Ticket]{}, err
	}
	return s.list(func(t ticket.Ticket) bool { return t.RequesterID == userID }, p), nil
}

func (s *fakeStore) CreateComment(ctx context.Context, c ticket.Comment, ev audit.Event) error {
	if err := s.Write("CreateComment", ev); err != nil {
		return err
	}
	t, ok := s.tickets[c.TicketID]
	if !ok {
		return errTicketNotFound
	}
	for _, x := range s.comments[c.TicketID] {
		if x.ID == c.ID {
			return errs.E(errs.Conflict, "comment_exists", "comment ID already taken")
		}
	}
	s.comments[c.TicketID] = append(s.comments[c.TicketID], c)
	t.CommentCount++
	s.tickets[c.TicketID] = t
	return s.Commit(ev)
}

func (s *fakeStore) GetComment(ctx context.Context, orgID, ticketID, commentID string) (ticket.Comment, error) {
	if err := s.Op("GetComment"); err != nil {
		return ticket.Comment{}, err
	}
	for _, c := range s.comments[ticketID] {
		if c.ID == commentID {
			return c, nil
		}
	}
	return ticket.Comment{}, errs.E(errs.NotFound, "comment_not_found", "comment not found")
}

func (s *fakeStore) ListComments(ctx context.Context, orgID, ticketID string, p page.Request) (page.Result[ticket.Comment], error) {
	if err := s.Op("ListComments"); err != nil {
		return page.Result[ticket.Comment]{}, err
	}
	cs := s.comments[ticketID]
	return page.Result[ticket.Comment]{Items: cs[:min(p.Limit, len(cs))]}, nil
}

// GetTeamMember is the ticket.TeamMembers read.
func (s *fakeStore) GetTeamMember(ctx context.Context, orgID, teamID, userID string) (membership.Membership, error) {
	if err := s.Op("GetTeamMember"); err != nil {
		return membership.Membership{}, err
	}
	if !s.edges[teamID+"/"+userID] {
		return membership.Membership{}, errs.E(errs.NotFound, "member_not_found", "the user is not a member of this team")
	}
	return membership.Membership{OrgID: orgID, TeamID: teamID, UserID: userID, Role: authz.Member, Version: 1}, nil
}

// BatchGetOrgUsers is the ticket.Users read.
func (s *fakeStore) BatchGetOrgUsers(ctx context.Context, orgID string, userIDs []string) (map[string]tenant.User, error) {
	if err := s.Op("BatchGetOrgUsers"); err != nil {
		return nil, err
	}
	s.batched = append(s.batched, userIDs)
	out := map[string]tenant.User{}
	for _, id := range userIDs {
		if u, ok := s.users[id]; ok {
			out[id] = u
		}
	}
	return out, nil
}

// service is a ticket.Service over s, reading team edges and users from s
// too.
func service(s *fakeStore) *ticket.Service { return ticket.NewService(s, s, s, now) }

// outcome is what a call should end with (testkit.Outcome).
type outcome = testkit.Outcome

var (
	succeeds = testkit.Succeeds
	fails    = testkit.Fails
)

// grant is the authority an event records (testkit.Grant).
type grant = testkit.Grant

// byOrg is a grant of the org role, or of the caller's part in the ticket.
var byOrg = testkit.ByOrg

// byTeam is a grant of an org member's edge on the ticket's team.
var byTeam = testkit.ByTeam(teamID, authz.Member)
