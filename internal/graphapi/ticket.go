package graphapi

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/99designs/gqlgen/graphql"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/idempotency"
	"github.com/tenantd/tenantd/internal/ifmatch"
	"github.com/tenantd/tenantd/internal/optional"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/ticket"
)

// Tickets resolves Org.tickets: the org's listing (GET
// /v1/orgs/{orgId}/tickets) with its filters, a team's queue when teamId
// is set, a requester's tickets when requesterId is. Each is one Query on
// the index that serves it; a combination none serves is unserved_filter.
func (r orgResolver) Tickets(ctx context.Context, obj *Org, status *ticket.Status, priority *ticket.Priority, assigneeID *string,
	teamID *string, requesterID *string, order *SortOrder, first *int, after *string) (*TicketConnection, error) {
	if err := enumArg("status", status); err != nil {
		return nil, err
	}
	if err := enumArg("priority", priority); err != nil {
		return nil, err
	}
	asc := order != nil && *order == SortOrderAsc
	set := map[string]bool{"status": status != nil, "priority": priority != nil, "assigneeId": assigneeID != nil, "order": asc}
	given := func(names ...string) []string {
		var out []string
		for _, n := range names {
			if set[n] {
				out = append(out, n)
			}
		}
		return out
	}
	switch {
	case teamID != nil && requesterID != nil:
		return nil, unserved("teamId", "requesterId")
	case teamID != nil:
		if bad := given("priority", "assigneeId", "order"); len(bad) > 0 {
			return nil, unserved(append([]string{"teamId"}, bad...)...)
		}
		return named(ctx, after, func(ctx context.Context) error {
			_, _, err := r.s.d.Teams.GetTeam(ctx, obj.p, *teamID, nil, false)
			return err
		})(r.s.teamTickets(ctx, obj.p, *teamID, status, first, after))
	case requesterID != nil:
		if bad := given("status", "priority", "assigneeId", "order"); len(bad) > 0 {
			return nil, unserved(append([]string{"requesterId"}, bad...)...)
		}
		return named(ctx, after, func(ctx context.Context) error {
			_, err := r.s.d.Orgs.GetOrgUser(ctx, obj.p, *requesterID, nil)
			return err
		})(r.s.tickets(ctx, obj.p, "listUserTickets:"+*requesterID, first, after, func(pr page.Request) (page.Result[ticket.Ticket], error) {
			return r.s.d.Tickets.ListUserTickets(ctx, obj.p, *requesterID, ticket.Expand{}, pr)
		}))
	}
	f := ticket.Filter{Oldest: asc}
	optional.Set(&f.Status, status)
	optional.Set(&f.Priority, priority)
	optional.Set(&f.AssigneeID, assigneeID)
	listing := fmt.Sprintf("listTickets:%s:%s:%s:%t", f.Status, f.Priority, f.AssigneeID, f.Oldest) // the REST listing's
	return r.s.tickets(ctx, obj.p, listing, first, after, func(pr page.Request) (page.Result[ticket.Ticket], error) {
		return r.s.d.Tickets.ListTickets(ctx, obj.p, f, ticket.Expand{}, pr)
	})
}

// named passes a listing under a parent that the query names by ID, not
// one it loaded, through: the listing alone does not tell an empty page
// from a missing parent, so an empty first page reads the parent too
// (read), as the authorization read does for REST, and answers its error.
func named(ctx context.Context, after *string, read func(context.Context) error) func(*TicketConnection, error) (*TicketConnection, error) {
	return func(c *TicketConnection, err error) (*TicketConnection, error) {
		if err != nil || after != nil || len(c.Nodes) > 0 {
			return c, err
		}
		if _, err := do(ctx, state(ctx), func() (struct{}, error) { return struct{}{}, read(ctx) }); err != nil {
			return nil, err
		}
		return c, nil
	}
}

func unserved(names ...string) error {
	return errs.InvalidParams("unserved_filter", "no index serves these arguments together: teamId takes status only, requesterId nothing else, "+
		"and priority and assigneeId exclude each other", names...)
}

// Ticket resolves Org.ticket (GET /v1/orgs/{orgId}/tickets/{ticketId}).
func (r orgResolver) Ticket(ctx context.Context, obj *Org, id string) (*Ticket, error) {
	t, err := do(ctx, state(ctx), func() (ticket.Ticket, error) {
		t, _, err := r.s.d.Tickets.GetTicket(ctx, obj.p, id, nil, false, ticket.Expand{})
		return t, err
	})
	if err != nil {
		return nil, err
	}
	return &Ticket{Ticket: t, p: obj.p}, nil
}

// AssignedTickets resolves OrgUser.assignedTickets (GET
// /v1/orgs/{orgId}/users/{userId}/assigned-tickets).
func (r orgUserResolver) AssignedTickets(ctx context.Context, obj *OrgUser, first *int, after *string) (*TicketConnection, error) {
	return r.s.tickets(ctx, obj.p, "listAssignedTickets:"+obj.UserID, first, after, func(pr page.Request) (page.Result[ticket.Ticket], error) {
		return r.s.d.Tickets.ListAssignedTickets(ctx, obj.p, obj.UserID, ticket.Expand{}, pr)
	})
}

// teamTickets is a team's queue (GET /v1/orgs/{orgId}/teams/{teamId}/tickets).
func (s *Server) teamTickets(ctx context.Context, p authz.Principal, teamID string, status *ticket.Status, first *int, after *string) (*TicketConnection, error) {
	if err := enumArg("status", status); err != nil {
		return nil, err
	}
	var st ticket.Status
	optional.Set(&st, status)
	return s.tickets(ctx, p, "listTeamTickets:"+teamID+":"+string(st), first, after, func(pr page.Request) (page.Result[ticket.Ticket], error) {
		return s.d.Tickets.ListTeamTickets(ctx, p, teamID, st, ticket.Expand{}, pr)
	})
}

// tickets is a connection of tickets. Their users and teams are not read
// here: each such field goes through the request's loaders, so a page's
// requesters and assignees are one BatchGetItem, whatever the page.
func (s *Server) tickets(ctx context.Context, p authz.Principal, listing string, first *int, after *string,
	fetch func(page.Request) (page.Result[ticket.Ticket], error)) (*TicketConnection, error) {
	return connection(ctx, p.OrgID, listing, first, after, fetch,
		func(t ticket.Ticket) *Ticket { return &Ticket{Ticket: t, p: p} })
}

// Requester resolves Ticket.requester through the user loader.
func (r ticketResolver) Requester(ctx context.Context, obj *Ticket) (*OrgUser, error) {
	return orgUser(ctx, obj.p, obj.RequesterID)
}

// Assignee resolves Ticket.assignee through the user loader.
func (r ticketResolver) Assignee(ctx context.Context, obj *Ticket) (*OrgUser, error) {
	return orgUser(ctx, obj.p, obj.Ticket.AssigneeID)
}

// Team resolves Ticket.team through the team loader.
func (r ticketResolver) Team(ctx context.Context, obj *Ticket) (*Team, error) {
	return teamOf(ctx, obj.p, obj.Ticket.TeamID)
}

// Comments resolves Ticket.comments (GET
// /v1/orgs/{orgId}/tickets/{ticketId}/comments) through the comments
// loader: the comment pages of every ticket of a level are read in one
// round of concurrent Queries, so their authors are asked for together.
func (r ticketResolver) Comments(ctx context.Context, obj *Ticket, first *int, after *string) (*CommentConnection, error) {
	rs := state(ctx)
	listing := "listComments:" + obj.ID
	pr, err := rs.pageIn(obj.p.OrgID, listing, first, after)
	if err != nil {
		return nil, err
	}
	res, err := rs.loaders.comments.Load(ctx, commentsKey{OrgID: obj.p.OrgID, TicketID: obj.ID, Page: pr})
	if err != nil {
		return nil, err
	}
	c, err := connectionOf(rs, obj.p.OrgID, listing, res, func(c ticket.Comment) *Comment { return &Comment{Comment: c, p: obj.p} })
	if err != nil {
		return nil, err
	}
	c.TotalCount = &obj.CommentCount
	return c, nil
}

// Author resolves Comment.author through the user loader.
func (r commentResolver) Author(ctx context.Context, obj *Comment) (*OrgUser, error) {
	return orgUser(ctx, obj.p, obj.AuthorID)
}

// CreateTicket resolves Mutation.createTicket with the REST API's service
// (POST /v1/orgs/{orgId}/tickets): the same rules, role matrix and audit
// event.
func (r mutationResolver) CreateTicket(ctx context.Context, orgID string, input CreateTicketInput, idempotencyKey *string) (*Ticket, error) {
	p, err := r.ticketInput(ctx, orgID, "TicketCreate", input.Tags, enumField("priority", input.Priority))
	if err != nil {
		return nil, err
	}
	// An explicit null is refused: these fields have no null meaning on create.
	in := ticket.NewTicket{Title: input.Title}
	var bad []string
	optional.Set(&in.Description, present(input.Description, "description", &bad))
	optional.Set(&in.Priority, present(input.Priority, "priority", &bad))
	optional.Set(&in.TeamID, present(input.TeamID, "teamId", &bad))
	optional.Set(&in.AssigneeID, present(input.AssigneeID, "assigneeId", &bad))
	optional.Set(&in.Tags, presentTags(input.Tags, &bad))
	if len(bad) > 0 {
		return nil, notNull(bad)
	}
	t, err := withKey(ctx, r.s, p, "createTicket", idempotencyKey, in,
		func(id string) (ticket.Ticket, error) {
			in.ID = id
			return r.s.d.Tickets.CreateTicket(ctx, p, in)
		},
		func(id string) (ticket.Ticket, error) {
			t, _, err := r.s.d.Tickets.GetTicket(ctx, p, id, nil, false, ticket.Expand{})
			return t, err
		})
	if err != nil {
		return nil, err
	}
	return &Ticket{Ticket: t, p: p}, nil
}

// UpdateTicket resolves Mutation.updateTicket (PATCH
// /v1/orgs/{orgId}/tickets/{ticketId}); expectedVersion is If-Match.
func (r mutationResolver) UpdateTicket(ctx context.Context, orgID, id string, expectedVersion *int, input UpdateTicketInput) (*Ticket, error) {
	p, err := r.ticketInput(ctx, orgID, "TicketUpdate", input.Tags, enumField("status", input.Status), enumField("priority", input.Priority))
	if err != nil {
		return nil, err
	}
	var patch ticket.Patch
	var bad []string
	patch.Title = present(input.Title, "title", &bad)
	patch.Description = present(input.Description, "description", &bad)
	patch.Status = present(input.Status, "status", &bad)
	patch.Priority = present(input.Priority, "priority", &bad)
	patch.Tags = presentTags(input.Tags, &bad)
	patch.AssigneeID = clearable(input.AssigneeID)
	patch.TeamID = clearable(input.TeamID)
	if len(bad) > 0 {
		return nil, notNull(bad)
	}
	match := ifmatch.None
	if expectedVersion != nil {
		match = ifmatch.Versions(int64(*expectedVersion))
	}
	t, err := r.s.d.Tickets.UpdateTicket(ctx, p, id, nil, patch, match)
	if err != nil {
		return nil, err
	}
	return &Ticket{Ticket: t, p: p}, nil
}

// ticketInput checks what a ticket mutation checks before its write, in
// this order: its enum fields (enums, their errors), its tags against the
// REST body's schema (schema), then the caller's authorization in orgID,
// whose principal it returns.
func (r mutationResolver) ticketInput(ctx context.Context, orgID, schema string, tags graphql.Omittable[[]string], enums ...error) (authz.Principal, error) {
	for _, err := range enums {
		if err != nil {
			return authz.Principal{}, err
		}
	}
	if tags, ok := tags.ValueOK(); ok && tags != nil {
		if err := r.s.checkInput(schema, "tags", tags); err != nil {
			return authz.Principal{}, err
		}
	}
	return state(ctx).principal(ctx, orgID)
}

// AddComment resolves Mutation.addComment (POST
// /v1/orgs/{orgId}/tickets/{ticketId}/comments).
func (r mutationResolver) AddComment(ctx context.Context, orgID, ticketID, body string, idempotencyKey *string) (*Comment, error) {
	p, err := state(ctx).principal(ctx, orgID)
	if err != nil {
		return nil, err
	}
	create := func(id string) (ticket.Comment, error) {
		return r.s.d.Tickets.CreateComment(ctx, p, ticketID, id, body)
	}
	// A retry meets the comment the first call made (a comment is never
	// deleted alone; with its ticket gone, the create fails).
	c, err := withKey(ctx, r.s, p, "addComment", idempotencyKey, struct{ TicketID, Body string }{ticketID, body}, create, create)
	if err != nil {
		return nil, err
	}
	return &Comment{Comment: c, p: p}, nil
}

// present is an input field that may be left out (nil) but not null: an
// explicit null is added to bad (the field cannot be cleared).
func present[T any](v graphql.Omittable[*T], name string, bad *[]string) *T {
	x, ok := v.ValueOK()
	if ok && x == nil {
		*bad = append(*bad, name)
	}
	return x
}

// presentTags is present for the tags list.
func presentTags(v graphql.Omittable[[]string], bad *[]string) *[]string {
	tags, ok := v.ValueOK()
	if !ok {
		return nil
	}
	if tags == nil {
		*bad = append(*bad, "tags")
	}
	return &tags
}

// clearable is a patch of an optional reference: left out, nil; null, a
// pointer to "" (clear it); else the ID.
func clearable(v graphql.Omittable[*string]) *string {
	x, ok := v.ValueOK()
	if !ok {
		return nil
	}
	if x == nil {
		empty := ""
		return &empty
	}
	return x
}

// enumArg refuses an enum argument gqlgen could not map: a variable whose
// value matches a name of the enum only ignoring case ("SOLVED") passes
// validation, and gqlgen's mapping then yields "" (no filter, the default
// priority) without an error. Enum values are case-sensitive.
func enumArg[T ~string](name string, v *T) error {
	if v != nil && *v == "" {
		return errs.InvalidParam(name, "invalid_enum", "not a value of the enum (values are case-sensitive)")
	}
	return nil
}

// enumField is enumArg for a field of an input object.
func enumField[T ~string](name string, v graphql.Omittable[*T]) error {
	if x, ok := v.ValueOK(); ok && x != nil && *x == "" {
		return errs.InvalidField(name, "invalid_enum", "not a value of the enum (values are case-sensitive)")
	}
	return nil
}

func notNull(fields []string) error {
	e := errs.InvalidField(fields[0], "not_nullable", "must not be null: leave the field out instead")
	e.Also = fields[1:]
	return e
}

// withKey runs create under an idempotency key (nil: no key, create runs
// with a fresh ID). The first call under a key gives create the key's
// resource ID; a retry with the same arguments, once the first succeeded,
// reads what it made (read); the key with other arguments is
// idempotency_key_reused. A call that fails does not use up its key (a
// retry runs again, with the same resource ID, so it cannot double).
func withKey[T any](ctx context.Context, s *Server, p authz.Principal, mutation string, key *string, args any,
	create, read func(id string) (T, error)) (T, error) {
	var zero T
	if key == nil || s.d.Idempotency == nil {
		return create("")
	}
	k, err := idempotency.CheckKey([]string{*key})
	if err != nil {
		return zero, errs.InvalidParam("idempotencyKey", "invalid_idempotency_key", "1 to %d printable ASCII characters", idempotency.MaxKeyLen)
	}
	body, err := json.Marshal(args)
	if err != nil {
		return zero, err
	}
	rec, kept, err := s.d.Idempotency.Begin(ctx, p.OrgID, p.UserID, string(p.OrgRole), k, idempotency.Fingerprint(body, "graphql", mutation))
	if err != nil {
		return zero, err
	}
	if kept != nil {
		return read(kept.ResourceID)
	}
	v, err := create(rec.ResourceID)
	status := 200
	if err != nil {
		status = 500 // release the key: nothing was made, or a retry finds it
	}
	if ferr := s.d.Idempotency.Finish(ctx, rec, status, "application/json", "", []byte(`{}`)); ferr != nil && err == nil {
		s.d.Logger.ErrorContext(ctx, "graphql: idempotency finish", "err", ferr.Error())
	}
	return v, err
}

// Ticket is a ticket of the org.
type Ticket struct {
	ticket.Ticket
	p authz.Principal
}

// AssigneeID is assigneeId: null when unassigned.
func (t Ticket) AssigneeID() *string { return nilIfEmpty(t.Ticket.AssigneeID) }

// TeamID is teamId: null without a team.
func (t Ticket) TeamID() *string { return nilIfEmpty(t.Ticket.TeamID) }
