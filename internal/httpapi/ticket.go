package httpapi

import (
	"context"
	"fmt"

	"github.com/tenantd/tenantd/internal/httpapi/oapi"
	"github.com/tenantd/tenantd/internal/optional"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/ticket"
)

// ListTickets serves GET /v1/orgs/{orgId}/tickets.
func (h *handlers) ListTickets(ctx context.Context, req oapi.ListTicketsRequestObject) (oapi.ListTicketsResponseObject, error) {
	p, _ := decided(ctx)
	var f ticket.Filter
	optional.Set(&f.Status, enum[ticket.Status](req.Params.Status))
	optional.Set(&f.Priority, enum[ticket.Priority](req.Params.Priority))
	optional.Set(&f.AssigneeID, req.Params.AssigneeId)
	f.Oldest = req.Params.Order != nil && *req.Params.Order == oapi.ListTicketsParamsOrderAsc
	// The cursor is bound to the whole filter and the order: a cursor of
	// one listing never continues another.
	listing := fmt.Sprintf("listTickets:%s:%s:%s:%t", f.Status, f.Priority, f.AssigneeID, f.Oldest)
	r, next, err := fetchPage(h, p.OrgID, listing, req.Params.Limit, req.Params.Cursor, func(pr page.Request) (page.Result[ticket.Ticket], error) {
		return h.Tickets.ListTickets(ctx, p, f, expandOf(req.Params.Expand), pr)
	})
	if err != nil {
		return nil, err
	}
	return oapi.ListTickets200JSONResponse{Body: ticketList(r, next), Headers: oapi.ListTickets200ResponseHeaders{Link: link(ctx, next)}}, nil
}

// CreateTicket serves POST /v1/orgs/{orgId}/tickets.
func (h *handlers) CreateTicket(ctx context.Context, req oapi.CreateTicketRequestObject) (oapi.CreateTicketResponseObject, error) {
	p, _ := decided(ctx)
	b := req.Body
	in := ticket.NewTicket{ID: newResourceID(ctx), Title: b.Title}
	optional.Set(&in.Description, b.Description)
	optional.Set(&in.TeamID, b.TeamId)
	optional.Set(&in.AssigneeID, b.AssigneeId)
	optional.Set(&in.Priority, enum[ticket.Priority](b.Priority))
	optional.Set(&in.Tags, b.Tags)
	t, err := h.Tickets.CreateTicket(ctx, p, in)
	if err != nil {
		return nil, err
	}
	return oapi.CreateTicket201JSONResponse{Body: toTicket(t), Headers: oapi.CreateTicket201ResponseHeaders{ETag: etag(t.Version)}}, nil
}

// GetTicket serves GET /v1/orgs/{orgId}/tickets/{ticketId}.
func (h *handlers) GetTicket(ctx context.Context, req oapi.GetTicketRequestObject) (oapi.GetTicketResponseObject, error) {
	p, loaded := decided(ctx)
	withComments := req.Params.Include != nil && *req.Params.Include == oapi.GetTicketParamsIncludeComments
	t, comments, err := h.Tickets.GetTicket(ctx, p, req.TicketId, loaded.Ticket, withComments, expandOf(req.Params.Expand))
	if err != nil {
		return nil, err
	}
	out := toTicket(t)
	if withComments {
		out.Comments = ptrTo(mapAll(comments, toComment))
	}
	return oapi.GetTicket200JSONResponse{Body: out, Headers: oapi.GetTicket200ResponseHeaders{ETag: etag(t.Version)}}, nil
}

// UpdateTicket serves PATCH /v1/orgs/{orgId}/tickets/{ticketId}.
func (h *handlers) UpdateTicket(ctx context.Context, req oapi.UpdateTicketRequestObject) (oapi.UpdateTicketResponseObject, error) {
	p, loaded := decided(ctx)
	b := req.Body
	patch := ticket.Patch{Title: b.Title, Description: b.Description, Tags: b.Tags, Status: enum[ticket.Status](b.Status),
		Priority: enum[ticket.Priority](b.Priority), AssigneeID: cleared(b.AssigneeId), TeamID: cleared(b.TeamId)}
	t, err := h.Tickets.UpdateTicket(ctx, p, req.TicketId, loaded.Ticket, patch, ifMatch(req.Params.IfMatch))
	if err != nil {
		return nil, err
	}
	return oapi.UpdateTicket200JSONResponse{Body: toTicket(t), Headers: oapi.UpdateTicket200ResponseHeaders{ETag: etag(t.Version)}}, nil
}

// DeleteTicket serves DELETE /v1/orgs/{orgId}/tickets/{ticketId}.
func (h *handlers) DeleteTicket(ctx context.Context, req oapi.DeleteTicketRequestObject) (oapi.DeleteTicketResponseObject, error) {
	p, loaded := decided(ctx)
	if err := h.Tickets.DeleteTicket(ctx, p, req.TicketId, loaded.Ticket, ifMatch(req.Params.IfMatch)); err != nil {
		return nil, err
	}
	return oapi.DeleteTicket204Response{}, nil
}

// ListTeamTickets serves GET /v1/orgs/{orgId}/teams/{teamId}/tickets.
func (h *handlers) ListTeamTickets(ctx context.Context, req oapi.ListTeamTicketsRequestObject) (oapi.ListTeamTicketsResponseObject, error) {
	p, _ := decided(ctx)
	var status ticket.Status
	optional.Set(&status, enum[ticket.Status](req.Params.Status))
	listing := "listTeamTickets:" + req.TeamId + ":" + string(status)
	r, next, err := fetchPage(h, p.OrgID, listing, req.Params.Limit, req.Params.Cursor, func(pr page.Request) (page.Result[ticket.Ticket], error) {
		return h.Tickets.ListTeamTickets(ctx, p, req.TeamId, status, expandOf(req.Params.Expand), pr)
	})
	if err != nil {
		return nil, err
	}
	return oapi.ListTeamTickets200JSONResponse{Body: ticketList(r, next), Headers: oapi.ListTeamTickets200ResponseHeaders{Link: link(ctx, next)}}, nil
}

// ListUserTickets serves GET /v1/orgs/{orgId}/users/{userId}/tickets;
// include=user adds, to the first page, the user the authorization read
// loaded.
func (h *handlers) ListUserTickets(ctx context.Context, req oapi.ListUserTicketsRequestObject) (oapi.ListUserTicketsResponseObject, error) {
	p, loaded := decided(ctx)
	r, next, err := fetchPage(h, p.OrgID, "listUserTickets:"+req.UserId, req.Params.Limit, req.Params.Cursor, func(pr page.Request) (page.Result[ticket.Ticket], error) {
		return h.Tickets.ListUserTickets(ctx, p, req.UserId, expandOf(req.Params.Expand), pr)
	})
	if err != nil {
		return nil, err
	}
	body := ticketList(r, next)
	if req.Params.Include != nil && *req.Params.Include == oapi.ListUserTicketsParamsIncludeUser && req.Params.Cursor == nil {
		body.User = orgUserPtr(loaded.User)
	}
	return oapi.ListUserTickets200JSONResponse{Body: body, Headers: oapi.ListUserTickets200ResponseHeaders{Link: link(ctx, next)}}, nil
}

// ListAssignedTickets serves GET /v1/orgs/{orgId}/users/{userId}/assigned-tickets.
func (h *handlers) ListAssignedTickets(ctx context.Context, req oapi.ListAssignedTicketsRequestObject) (oapi.ListAssignedTicketsResponseObject, error) {
	p, _ := decided(ctx)
	r, next, err := fetchPage(h, p.OrgID, "listAssignedTickets:"+req.UserId, req.Params.Limit, req.Params.Cursor, func(pr page.Request) (page.Result[ticket.Ticket], error) {
		return h.Tickets.ListAssignedTickets(ctx, p, req.UserId, expandOf(req.Params.Expand), pr)
	})
	if err != nil {
		return nil, err
	}
	return oapi.ListAssignedTickets200JSONResponse{Body: ticketList(r, next), Headers: oapi.ListAssignedTickets200ResponseHeaders{Link: link(ctx, next)}}, nil
}

// ListComments serves GET /v1/orgs/{orgId}/tickets/{ticketId}/comments.
func (h *handlers) ListComments(ctx context.Context, req oapi.ListCommentsRequestObject) (oapi.ListCommentsResponseObject, error) {
	p, _ := decided(ctx)
	r, next, err := fetchPage(h, p.OrgID, "listComments:"+req.TicketId, req.Params.Limit, req.Params.Cursor, func(pr page.Request) (page.Result[ticket.Comment], error) {
		return h.Tickets.ListComments(ctx, p, req.TicketId, pr)
	})
	if err != nil {
		return nil, err
	}
	return oapi.ListComments200JSONResponse{Body: oapi.CommentList{Items: mapAll(r.Items, toComment), NextCursor: strPtr(next)},
		Headers: oapi.ListComments200ResponseHeaders{Link: link(ctx, next)}}, nil
}

// CreateComment serves POST /v1/orgs/{orgId}/tickets/{ticketId}/comments.
func (h *handlers) CreateComment(ctx context.Context, req oapi.CreateCommentRequestObject) (oapi.CreateCommentResponseObject, error) {
	p, _ := decided(ctx)
	c, err := h.Tickets.CreateComment(ctx, p, req.TicketId, newResourceID(ctx), req.Body.Body)
	if err != nil {
		return nil, err
	}
	return oapi.CreateComment201JSONResponse(toComment(c)), nil
}

// ticketList encodes a page of tickets.
func ticketList(r page.Result[ticket.Ticket], next string) oapi.TicketList {
	return oapi.TicketList{Items: mapAll(r.Items, toTicket), NextCursor: strPtr(next)}
}

// expandOf reads ?expand=requester,assignee.
func expandOf(expand *oapi.TicketExpand) ticket.Expand {
	var x ticket.Expand
	if expand != nil {
		for _, e := range *expand {
			x.Requester = x.Requester || e == oapi.TicketExpansionRequester
			x.Assignee = x.Assignee || e == oapi.TicketExpansionAssignee
		}
	}
	return x
}

func toTicket(t ticket.Ticket) oapi.Ticket {
	tags := t.Tags
	if tags == nil {
		tags = []string{}
	}
	return oapi.Ticket{Id: t.ID, Title: t.Title, Description: t.Description, Status: oapi.TicketStatus(t.Status),
		Priority: oapi.TicketPriority(t.Priority), RequesterId: t.RequesterID, AssigneeId: strPtr(t.AssigneeID),
		TeamId: strPtr(t.TeamID), Tags: tags, CommentCount: t.CommentCount, Version: t.Version,
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt, Requester: orgUserPtr(t.Requester), Assignee: orgUserPtr(t.Assignee)}
}

func orgUserPtr(u *tenant.User) *oapi.OrgUser {
	if u == nil {
		return nil
	}
	out := toOrgUser(*u)
	return &out
}

func toComment(c ticket.Comment) oapi.Comment {
	return oapi.Comment{Id: c.ID, TicketId: c.TicketID, AuthorId: c.AuthorID, Body: c.Body, CreatedAt: c.CreatedAt}
}
