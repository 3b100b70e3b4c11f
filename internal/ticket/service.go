package ticket

import (
	"cmp"
	"context"
	"slices"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/clock"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/ifmatch"
	"github.com/tenantd/tenantd/internal/optional"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/validate"
)

// Service applies ticket rules on top of a Storer. Its listings under a
// parent (a team's queue, a user's tickets, a ticket's comments) are made
// for a caller who has read the parent: the authorization read loads it
// (access.Target), a GraphQL field lists under an object it has.
type Service struct {
	store Storer
	teams TeamMembers
	users Users
	ids   *ids.Generator
	now   clock.Clock
}

// NewService returns a Service over s, reading team edges from teams and
// expanded users from users; now may be nil for the system clock.
func NewService(s Storer, teams TeamMembers, users Users, now clock.Clock) *Service {
	now = clock.Or(now)
	return &Service{store: s, teams: teams, users: users, ids: ids.NewGenerator(now), now: now}
}

// NewTicket is what a caller supplies to open a ticket.
type NewTicket struct {
	// ID, when set, is the ticket's ID (an idempotent request's; otherwise
	// one is minted): if it exists, it was created already and is returned.
	ID                 string
	Title, Description string
	Priority           Priority // "" = normal
	TeamID, AssigneeID string   // optional
	Tags               []string
}

// Patch is a partial update of a ticket. For AssigneeID and TeamID a
// pointer to "" clears the field.
type Patch struct {
	Title, Description *string
	Status             *Status
	Priority           *Priority
	AssigneeID, TeamID *string
	Tags               *[]string
}

// validateTicket checks the rules of a ticket's fields (IDs that reach a
// key are checked by the store).
func validateTicket(t Ticket) error {
	if err := validate.Text("title", t.Title, 1, MaxTitleLen, false); err != nil {
		return err
	}
	if err := validate.Text("description", t.Description, 0, MaxDescriptionLen, true); err != nil {
		return err
	}
	if !t.Status.Valid() {
		return errs.InvalidField("status", "invalid_status", "must be one of new, open, pending, solved, closed")
	}
	if !t.Priority.Valid() {
		return errs.InvalidField("priority", "invalid_priority", "must be one of low, normal, high, urgent")
	}
	if len(t.Tags) > MaxTags {
		return errs.InvalidField("tags", "too_many_tags", "at most %d tags", MaxTags)
	}
	for _, tag := range t.Tags {
		if err := validate.Name("tags", tag, MaxTagLen); err != nil {
			return err
		}
	}
	return nil
}

func checkStatus(status Status) error {
	if status != "" && !status.Valid() {
		return errs.InvalidField("status", "invalid_status", "must be one of new, open, pending, solved, closed")
	}
	return nil
}

// normalizeTags drops duplicates, keeping first occurrences in order.
func normalizeTags(tags []string) []string {
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// CreateTicket opens a ticket requested by the caller (any member). Its
// transaction proves the caller's edge (the actor fence), so a member
// removed since the authorization read writes nothing.
func (s *Service) CreateTicket(ctx context.Context, p authz.Principal, in NewTicket) (Ticket, error) {
	g, err := authz.Permit(p, authz.TicketCreate, authz.Facts{})
	if err != nil {
		return Ticket{}, err
	}
	in.Priority = cmp.Or(in.Priority, PriorityNormal)
	now := s.now()
	if in.ID == "" {
		in.ID = s.ids.New()
	}
	t := Ticket{OrgID: p.OrgID, ID: in.ID, Title: in.Title, Description: in.Description, Status: StatusNew,
		Priority: in.Priority, RequesterID: p.UserID, AssigneeID: in.AssigneeID, TeamID: in.TeamID,
		Tags: normalizeTags(in.Tags), Version: 1, CreatedAt: now, UpdatedAt: now}
	if err := validateTicket(t); err != nil {
		return Ticket{}, err
	}
	// A create's event names every field its client set: applied to
	// nothing, its changes are the new ticket (webhooks' object, an
	// export's catch-up).
	ev := audit.NewEvent(ctx, s.ids, audit.By(p, g), "ticket.create", "ticket", t.ID, now, audit.Diff(
		audit.F("title", nil, t.Title), audit.F("description", nil, t.Description), audit.F("status", nil, string(t.Status)),
		audit.F("priority", nil, string(t.Priority)), audit.F("assigneeId", nil, t.AssigneeID), audit.F("teamId", nil, t.TeamID),
		audit.F("tags", nil, t.Tags)))
	if err := s.store.CreateTicket(ctx, t, ev); err != nil {
		if errs.CodeOf(err) == "ticket_exists" {
			return s.store.GetTicket(ctx, p.OrgID, t.ID)
		}
		return Ticket{}, err
	}
	return t, nil
}

// GetTicket returns a ticket (loaded: as the authorization read loaded it;
// nil: read it), expanding its users as asked; withComments reads the ticket's
// partition instead, the ticket and its first comments in one Query.
func (s *Service) GetTicket(ctx context.Context, p authz.Principal, ticketID string, loaded *Ticket, withComments bool, x Expand) (Ticket, []Comment, error) {
	if err := authz.Authorize(p, authz.TicketRead, authz.Facts{}); err != nil {
		return Ticket{}, nil, err
	}
	var t Ticket
	var comments []Comment
	var err error
	switch {
	case withComments: // the ticket's partition: the ticket, then its comments, in one Query
		t, comments, err = s.store.GetTicketWithComments(ctx, p.OrgID, ticketID, page.MaxLimit)
	case loaded != nil:
		t = *loaded
	default:
		t, err = s.store.GetTicket(ctx, p.OrgID, ticketID)
	}
	if err != nil {
		return Ticket{}, nil, err
	}
	ts := []Ticket{t}
	if err := s.expand(ctx, p.OrgID, ts, x); err != nil {
		return Ticket{}, nil, err
	}
	return ts[0], comments, nil
}

// ListTickets pages through the org's tickets newest first, optionally one
// status, expanding their users as asked.
func (s *Service) ListTickets(ctx context.Context, p authz.Principal, f Filter, x Expand, pr page.Request) (page.Result[Ticket], error) {
	if err := authz.Authorize(p, authz.TicketRead, authz.Facts{}); err != nil {
		return page.Result[Ticket]{}, err
	}
	if err := checkStatus(f.Status); err != nil {
		return page.Result[Ticket]{}, err
	}
	if f.Priority != "" && f.AssigneeID != "" {
		return page.Result[Ticket]{}, ErrUnservedFilter
	}
	return s.expanded(ctx, p.OrgID, x)(s.store.ListTickets(ctx, p.OrgID, f, pr))
}

// ListTeamTickets pages through a team's queue.
func (s *Service) ListTeamTickets(ctx context.Context, p authz.Principal, teamID string, status Status, x Expand, pr page.Request) (page.Result[Ticket], error) {
	if err := authz.Authorize(p, authz.TicketRead, authz.Facts{}); err != nil {
		return page.Result[Ticket]{}, err
	}
	if err := checkStatus(status); err != nil {
		return page.Result[Ticket]{}, err
	}
	return s.expanded(ctx, p.OrgID, x)(s.store.ListTeamTickets(ctx, p.OrgID, teamID, status, pr))
}

// ListAssignedTickets pages through the tickets assigned to a user.
func (s *Service) ListAssignedTickets(ctx context.Context, p authz.Principal, userID string, x Expand, pr page.Request) (page.Result[Ticket], error) {
	if err := authz.Authorize(p, authz.TicketRead, authz.Facts{}); err != nil {
		return page.Result[Ticket]{}, err
	}
	return s.expanded(ctx, p.OrgID, x)(s.store.ListAssignedTickets(ctx, p.OrgID, userID, pr))
}

// ListUserTickets pages through the tickets a user requested, newest first.
func (s *Service) ListUserTickets(ctx context.Context, p authz.Principal, userID string, x Expand, pr page.Request) (page.Result[Ticket], error) {
	if err := authz.Authorize(p, authz.TicketRead, authz.Facts{}); err != nil {
		return page.Result[Ticket]{}, err
	}
	return s.expanded(ctx, p.OrgID, x)(s.store.ListUserTickets(ctx, p.OrgID, userID, pr))
}

// expanded expands a page's users, passing a listing's error through.
func (s *Service) expanded(ctx context.Context, orgID string, x Expand) func(page.Result[Ticket], error) (page.Result[Ticket], error) {
	return func(r page.Result[Ticket], err error) (page.Result[Ticket], error) {
		if err != nil {
			return page.Result[Ticket]{}, err
		}
		if err := s.expand(ctx, orgID, r.Items, x); err != nil {
			return page.Result[Ticket]{}, err
		}
		return r, nil
	}
}

// expand embeds requesters and assignees, read with one BatchGetItem per
// 100 distinct users (seed 002), never a GetItem per ticket. A user who left
// the org stays unexpanded.
func (s *Service) expand(ctx context.Context, orgID string, ts []Ticket, x Expand) error {
	if !x.Requester && !x.Assignee || len(ts) == 0 {
		return nil
	}
	var userIDs []string
	for _, t := range ts {
		if x.Requester {
			userIDs = append(userIDs, t.RequesterID)
		}
		if x.Assignee && t.AssigneeID != "" {
			userIDs = append(userIDs, t.AssigneeID)
		}
	}
	users, err := s.users.BatchGetOrgUsers(ctx, orgID, userIDs)
	if err != nil {
		return err
	}
	for i := range ts {
		if u, ok := users[ts[i].RequesterID]; ok && x.Requester {
			ts[i].Requester = &u
		}
		if u, ok := users[ts[i].AssigneeID]; ok && x.Assignee && ts[i].AssigneeID != "" {
			ts[i].Assignee = &u
		}
	}
	return nil
}

// permit decides a on ticket t with the facts the ticket rules need; the
// team edge is read only when nothing cheaper already decides.
func (s *Service) permit(ctx context.Context, p authz.Principal, a authz.Action, t Ticket) (authz.Grant, error) {
	f := authz.Facts{Requester: t.RequesterID == p.UserID, Assignee: t.AssigneeID != "" && t.AssigneeID == p.UserID}
	if a == authz.TicketUpdate && t.TeamID != "" && !f.Requester && !f.Assignee && authz.NeedsTeamRole(p, a) {
		_, err := s.teams.GetTeamMember(ctx, p.OrgID, t.TeamID, p.UserID)
		switch {
		case err == nil:
			f.TeamMember, f.TeamID = true, t.TeamID
		case !errs.Is(err, errs.NotFound):
			return authz.Grant{}, err
		}
	}
	return authz.Permit(p, a, f)
}

// UpdateTicket changes a ticket; changing status, team or assignee moves it
// between the queues (index keys) in the same write. loaded is the
// ticket as the authorization read loaded it (nil: read it).
func (s *Service) UpdateTicket(ctx context.Context, p authz.Principal, ticketID string, loaded *Ticket, patch Patch, ifMatch ifmatch.Match) (Ticket, error) {
	if patch == (Patch{}) {
		return Ticket{}, errs.E(errs.Invalid, "empty_patch", "nothing to change")
	}
	read := func(ctx context.Context) (Ticket, error) { return s.store.GetTicket(ctx, p.OrgID, ticketID) }
	return ifmatch.Retry(ctx, ifMatch, loaded, read, func(prev Ticket) (Ticket, error) {
		g, err := s.permit(ctx, p, authz.TicketUpdate, prev)
		if err != nil {
			return Ticket{}, err
		}
		if err := ifMatch.Check(prev.Version); err != nil {
			return Ticket{}, err
		}
		next := prev
		next.Tags = slices.Clone(prev.Tags)
		optional.Set(&next.Title, patch.Title)
		optional.Set(&next.Description, patch.Description)
		optional.Set(&next.Status, patch.Status)
		optional.Set(&next.Priority, patch.Priority)
		optional.Set(&next.AssigneeID, patch.AssigneeID)
		optional.Set(&next.TeamID, patch.TeamID)
		if patch.Tags != nil {
			next.Tags = normalizeTags(*patch.Tags)
		}
		if err := validateTicket(next); err != nil {
			return Ticket{}, err
		}
		next.Version, next.UpdatedAt = prev.Version+1, s.now()
		ev := audit.NewEvent(ctx, s.ids, audit.By(p, g), "ticket.update", "ticket", prev.ID, next.UpdatedAt, audit.Diff(
			audit.F("title", prev.Title, next.Title), audit.F("description", prev.Description, next.Description),
			audit.F("status", string(prev.Status), string(next.Status)), audit.F("priority", string(prev.Priority), string(next.Priority)),
			audit.F("assigneeId", prev.AssigneeID, next.AssigneeID), audit.F("teamId", prev.TeamID, next.TeamID),
			audit.F("tags", prev.Tags, next.Tags)))
		return audit.Update(ctx, s.store.UpdateTicket, prev, next, ev)
	})
}

// DeleteTicket deletes a ticket and its comments (requester or org admin+);
// loaded is the ticket as the authorization read loaded it (nil: read it).
func (s *Service) DeleteTicket(ctx context.Context, p authz.Principal, ticketID string, loaded *Ticket, ifMatch ifmatch.Match) error {
	read := func(ctx context.Context) (Ticket, error) { return s.store.GetTicket(ctx, p.OrgID, ticketID) }
	_, err := ifmatch.Retry(ctx, ifMatch, loaded, read, func(t Ticket) (struct{}, error) {
		g, err := s.permit(ctx, p, authz.TicketDelete, t)
		if err != nil {
			return struct{}{}, err
		}
		if err := ifMatch.Check(t.Version); err != nil {
			return struct{}{}, err
		}
		ev := audit.NewEvent(ctx, s.ids, audit.By(p, g), "ticket.delete", "ticket", ticketID, s.now(), audit.Diff(audit.F("title", t.Title, nil)))
		return struct{}{}, s.store.DeleteTicket(ctx, p.OrgID, ticketID, ifMatch.Pin(t.Version), ev)
	})
	return err
}

// CreateComment adds the caller's comment to a ticket (any member), fenced
// on the caller's edge as CreateTicket is. commentID, when set, is the
// comment's ID (an idempotent request's; otherwise one is minted): if the
// comment exists, it was added already and is returned as is.
func (s *Service) CreateComment(ctx context.Context, p authz.Principal, ticketID, commentID, body string) (Comment, error) {
	g, err := authz.Permit(p, authz.CommentCreate, authz.Facts{})
	if err != nil {
		return Comment{}, err
	}
	if err := validate.Text("body", body, 1, MaxBodyLen, true); err != nil {
		return Comment{}, err
	}
	if commentID == "" {
		commentID = s.ids.New()
	}
	c := Comment{OrgID: p.OrgID, TicketID: ticketID, ID: commentID, AuthorID: p.UserID, Body: body, CreatedAt: s.now()}
	ev := audit.NewEvent(ctx, s.ids, audit.By(p, g), "comment.create", "comment", ticketID+"/"+c.ID, c.CreatedAt, audit.Diff(audit.F("body", nil, c.Body)))
	if err := s.store.CreateComment(ctx, c, ev); err != nil {
		if errs.CodeOf(err) == "comment_exists" {
			return s.store.GetComment(ctx, p.OrgID, ticketID, c.ID)
		}
		return Comment{}, err
	}
	return c, nil
}

// ListComments pages through a ticket's comments, oldest first.
func (s *Service) ListComments(ctx context.Context, p authz.Principal, ticketID string, pr page.Request) (page.Result[Comment], error) {
	if err := authz.Authorize(p, authz.TicketRead, authz.Facts{}); err != nil { // a page of comments can be large
		return page.Result[Comment]{}, err
	}
	return s.store.ListComments(ctx, p.OrgID, ticketID, pr)
}
