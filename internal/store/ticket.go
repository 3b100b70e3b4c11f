package store

import (
	"context"
	"time"

	"github.com/guregu/dynamo/v2"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/ticket"
)

// Tickets stores tickets, each in its own partition with its comments; each
// index places a ticket in one hierarchy (docs/data-model.md).
type Tickets struct{ *DB }

var _ ticket.Storer = (*Tickets)(nil)

var (
	errTicketNotFound   = errs.E(errs.NotFound, "ticket_not_found", "ticket not found")
	errAssigneeNotFound = &errs.Error{Kind: errs.Conflict, Code: "assignee_not_org_member", Field: "assigneeId", Message: "the assignee is not a user of this organization"}
	errTicketTeam       = &errs.Error{Kind: errs.Conflict, Code: "team_not_found", Field: "teamId", Message: "no such team in this organization"}
	errRequesterGone    = errs.E(errs.NotFound, "user_not_found", "the requester is not a user of this organization")
)

type ticketItem struct {
	PK           string    `dynamo:"pk,hash"`
	SK           string    `dynamo:"sk,range"`
	Type         string    `dynamo:"type"`
	GSI1PK       string    `dynamo:"gsi1pk"` // ORG#<orgId>
	GSI1SK       string    `dynamo:"gsi1sk"` // TICKET#<ticketId>
	GSI2PK       string    `dynamo:"gsi2pk"` // ORG#<orgId>#USER#<requesterId>
	GSI2SK       string    `dynamo:"gsi2sk"` // TICKET#<ticketId>
	GSI3PK       string    `dynamo:"gsi3pk"` // ORG#<orgId>
	GSI3SK       string    `dynamo:"gsi3sk"` // STATUS#<status>#<ticketId>
	GSI4PK       string    `dynamo:"gsi4pk"` // ORG#<orgId>#ASSIGNEE#<userId>, absent when unassigned
	GSI4SK       string    `dynamo:"gsi4sk"` // TICKET#<ticketId>
	GSI5PK       string    `dynamo:"gsi5pk"` // ORG#<orgId>#TEAM#<teamId>, absent without a team
	GSI5SK       string    `dynamo:"gsi5sk"` // STATUS#<status>#<ticketId>
	GSI6PK       string    `dynamo:"gsi6pk"` // ORG#<orgId>#PRIORITY#<priority>
	GSI6SK       string    `dynamo:"gsi6sk"` // STATUS#<status>#<ticketId>
	GSI7PK       string    `dynamo:"gsi7pk"` // ORG#<orgId>#ASSIGNEE#<userId>, absent when unassigned
	GSI7SK       string    `dynamo:"gsi7sk"` // STATUS#<status>#<ticketId>
	OrgID        string    `dynamo:"orgId"`
	ID           string    `dynamo:"ticketId"`
	Title        string    `dynamo:"title"`
	Description  string    `dynamo:"description"`
	Status       string    `dynamo:"status"`
	Priority     string    `dynamo:"priority"`
	RequesterID  string    `dynamo:"requesterId"`
	AssigneeID   string    `dynamo:"assigneeId"`
	TeamID       string    `dynamo:"teamId"`
	Tags         []string  `dynamo:"tags"` // bounded list (<= 20): a complex attribute, never a key
	CommentCount int       `dynamo:"commentCount"`
	Version      int64     `dynamo:"version"`
	CreatedAt    time.Time `dynamo:"createdAt"`
	UpdatedAt    time.Time `dynamo:"updatedAt"`
	// Deleting marks a ticket whose deletion in parts is under way: gone for readers.
	Deleting   bool   `dynamo:"deleting,omitempty"`
	LeaseOwner string `dynamo:"leaseOwner,omitempty"`
}

func (it ticketItem) beingDeleted() bool { return it.Deleting }

func toTicketItem(t ticket.Ticket) ticketItem {
	k := ticketKey(t.OrgID, t.ID)
	it := ticketItem{PK: k.PK, SK: k.SK, Type: typeTicket,
		GSI1PK: orgPK(t.OrgID), GSI1SK: ticketSK(t.ID),
		GSI2PK: orgUserPK(t.OrgID, t.RequesterID), GSI2SK: ticketSK(t.ID),
		GSI3PK: orgPK(t.OrgID), GSI3SK: statusSK(string(t.Status), t.ID),
		GSI6PK: priorityPK(t.OrgID, string(t.Priority)), GSI6SK: statusSK(string(t.Status), t.ID),
		OrgID: t.OrgID, ID: t.ID, Title: t.Title, Description: t.Description, Status: string(t.Status),
		Priority: string(t.Priority), RequesterID: t.RequesterID, AssigneeID: t.AssigneeID, TeamID: t.TeamID,
		Tags: t.Tags, CommentCount: t.CommentCount, Version: t.Version, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
	if t.AssigneeID != "" {
		it.GSI4PK, it.GSI4SK = assigneePK(t.OrgID, t.AssigneeID), ticketSK(t.ID)
		it.GSI7PK, it.GSI7SK = assigneePK(t.OrgID, t.AssigneeID), statusSK(string(t.Status), t.ID)
	}
	if t.TeamID != "" {
		it.GSI5PK, it.GSI5SK = teamTicketsPK(t.OrgID, t.TeamID), statusSK(string(t.Status), t.ID)
	}
	return it
}

func fromTicketItem(it ticketItem) ticket.Ticket {
	tags := it.Tags
	if tags == nil {
		tags = []string{}
	}
	return ticket.Ticket{OrgID: it.OrgID, ID: it.ID, Title: it.Title, Description: it.Description,
		Status: ticket.Status(it.Status), Priority: ticket.Priority(it.Priority), RequesterID: it.RequesterID,
		AssigneeID: it.AssigneeID, TeamID: it.TeamID, Tags: tags, CommentCount: it.CommentCount,
		Version: it.Version, CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt}
}

type commentItem struct {
	PK        string    `dynamo:"pk,hash"`
	SK        string    `dynamo:"sk,range"`
	Type      string    `dynamo:"type"`
	OrgID     string    `dynamo:"orgId"`
	TicketID  string    `dynamo:"ticketId"`
	ID        string    `dynamo:"commentId"`
	AuthorID  string    `dynamo:"authorId"`
	Body      string    `dynamo:"body"`
	CreatedAt time.Time `dynamo:"createdAt"`
	UpdatedAt time.Time `dynamo:"updatedAt"`
}

func toCommentItem(c ticket.Comment) commentItem {
	k := commentKey(c.OrgID, c.TicketID, c.ID)
	return commentItem{PK: k.PK, SK: k.SK, Type: typeComment, OrgID: c.OrgID, TicketID: c.TicketID, ID: c.ID,
		AuthorID: c.AuthorID, Body: c.Body, CreatedAt: c.CreatedAt, UpdatedAt: c.CreatedAt}
}

func fromCommentItem(it commentItem) ticket.Comment {
	return ticket.Comment{OrgID: it.OrgID, TicketID: it.TicketID, ID: it.ID, AuthorID: it.AuthorID, Body: it.Body, CreatedAt: it.CreatedAt}
}

func checkTicket(t ticket.Ticket) error {
	if err := checkIDs(ids.Resource("orgId", t.OrgID), ids.Resource("ticketId", t.ID), ids.User("requesterId", t.RequesterID),
		ifSet(ids.User, "assigneeId", t.AssigneeID), ifSet(ids.Resource, "teamId", t.TeamID)); err != nil {
		return err
	}
	if !t.Status.Valid() {
		return errs.InvalidParam("status", "invalid_status", "unknown status")
	}
	return nil
}

// referenceChecks adds to tx the checks that the ticket's assignee and live
// team exist in its org (the assignee's merges with a fence on them).
func (s *Tickets) referenceChecks(tx *txn, t ticket.Ticket, assignee, team bool) {
	if k := orgUserKey(t.OrgID, t.AssigneeID); assignee && t.AssigneeID != "" && tx.op(k) == nil {
		tx.check(k, s.checkAt(k).If(exists), failWith(errAssigneeNotFound))
	}
	if team && t.TeamID != "" {
		s.teamCheck(tx, t.OrgID, t.TeamID, errTicketTeam)
	}
}

// CreateTicket writes the ticket in one transaction with checks that its
// requester, assignee and team exist in the org.
func (s *Tickets) CreateTicket(ctx context.Context, t ticket.Ticket, ev audit.Event) error {
	it := toTicketItem(t)
	tx := s.newTx(checkTicket(t)).
		put(key{it.PK, it.SK}, s.table.Put(it).If(notExists), failWith(errs.E(errs.Conflict, "ticket_exists", "ticket ID already taken")))
	k := actorKey(t.OrgID, t.RequesterID) // a person's edge, or the API key that files it
	tx.check(k, s.checkAt(k).If(exists), failWith(actorGone(t.RequesterID, errRequesterGone)))
	// A self-assigned ticket's assignee is already checked as requester (and
	// one transaction may not touch an item twice).
	s.referenceChecks(tx, t, true, true)
	return s.audited(ev, tx).run(ctx, "create ticket")
}

// GetTicket reads the ticket's #METADATA item.
func (s *Tickets) GetTicket(ctx context.Context, orgID, ticketID string) (ticket.Ticket, error) {
	it, err := getLive[ticketItem](ctx, s.DB, ticketKey(orgID, ticketID), errTicketNotFound, "get ticket",
		ids.Resource("orgId", orgID), ids.Resource("ticketId", ticketID))
	return fromTicketItem(it), err
}

// GetTicketWithComments queries the ticket's partition: #METADATA sorts
// before COMMENT#, so the ticket comes first, then comments oldest first.
func (s *Tickets) GetTicketWithComments(ctx context.Context, orgID, ticketID string, limit int) (ticket.Ticket, []ticket.Comment, error) {
	return withChildren(ctx, s.DB, ticketPK(orgID, ticketID), typeTicket, limit, errTicketNotFound, "get ticket with comments",
		fromTicketItem, fromCommentItem, ids.Resource("orgId", orgID), ids.Resource("ticketId", ticketID))
}

// UpdateTicket rewrites the ticket's mutable fields and index keys with an
// update conditional on the version (commentCount is left alone: a comment
// may land concurrently), in one transaction with the checks of new
// assignee or team references and the audit event.
func (s *Tickets) UpdateTicket(ctx context.Context, prev, next ticket.Ticket, ev audit.Event) error {
	if err := checkTicket(next); err != nil {
		return err
	}
	it := toTicketItem(next)
	k := ticketKey(next.OrgID, next.ID)
	u := s.updateAt(k).Set("title", it.Title).Set("status", it.Status).Set("priority", it.Priority).
		Set("gsi3sk", it.GSI3SK).Set("gsi6pk", it.GSI6PK).Set("gsi6sk", it.GSI6SK).
		Set("updatedAt", it.UpdatedAt).Set("version", it.Version).
		If(liveAtVersion, prev.Version)
	u = setOrRemove(u, "description", it.Description)
	u = setOrRemove(u, "assigneeId", it.AssigneeID)
	u = setOrRemove(u, "teamId", it.TeamID)
	u = setOrRemove(u, "gsi4pk", it.GSI4PK)
	u = setOrRemove(u, "gsi4sk", it.GSI4SK)
	u = setOrRemove(u, "gsi5pk", it.GSI5PK)
	u = setOrRemove(u, "gsi5sk", it.GSI5SK)
	u = setOrRemove(u, "gsi7pk", it.GSI7PK)
	u = setOrRemove(u, "gsi7sk", it.GSI7SK)
	if len(it.Tags) == 0 {
		u = u.Remove("tags")
	} else {
		u = u.Set("tags", it.Tags)
	}
	newAssignee := next.AssigneeID != prev.AssigneeID
	newTeam := next.TeamID != prev.TeamID
	tx := s.newTx().update(k, u, goneOr(errTicketNotFound, errVersion))
	s.referenceChecks(tx, next, newAssignee, newTeam)
	return s.audited(ev, tx).run(ctx, "update ticket")
}

// DeleteTicket deletes the ticket and its comments, as a cascade
// (cascade.go) on commentCount.
func (s *Tickets) DeleteTicket(ctx context.Context, orgID, ticketID string, ifVersion int64, ev audit.Event) error {
	return deleteCascade(ctx, s.DB, s.ticketCascade(orgID, ticketID), ifVersion, ev, ids.Resource("orgId", orgID), ids.Resource("ticketId", ticketID))
}

// ticketCascade is the deletion of a ticket with its comments (cascade.go).
func (s *DB) ticketCascade(orgID, ticketID string) cascade {
	return cascade{what: "ticket", key: ticketKey(orgID, ticketID), deletionSK: ticketDeletionSK(orgID, ticketID),
		count: "commentCount", child: typeComment, notFound: errTicketNotFound, perChild: 1,
		drop: func(t *txn, c deletionItem) {
			t.delete(c.key(), s.deleteAt(c.key()).If(exists), retryOn)
		},
	}
}

// ListTickets pages through an org's tickets, newest or oldest first, on the
// index that serves the filter; priority and assignee together are refused.
func (s *Tickets) ListTickets(ctx context.Context, orgID string, f ticket.Filter, p page.Request) (page.Result[ticket.Ticket], error) {
	if err := checkIDs(ids.Resource("orgId", orgID), ifSet(ids.User, "assigneeId", f.AssigneeID)); err != nil {
		return page.Result[ticket.Ticket]{}, err
	}
	if f.Priority != "" && !f.Priority.Valid() {
		return page.Result[ticket.Ticket]{}, errs.InvalidParam("priority", "invalid_priority", "unknown priority")
	}
	var l listing
	switch status := string(f.Status); {
	case f.Priority != "" && f.AssigneeID != "":
		return page.Result[ticket.Ticket]{}, ticket.ErrUnservedFilter
	case f.Priority != "":
		l = listing{index: gsi6, partition: priorityPK(orgID, string(f.Priority)), prefix: statusPrefix(status)}
	case f.AssigneeID != "" && status != "":
		l = listing{index: gsi7, partition: assigneePK(orgID, f.AssigneeID), prefix: statusPrefix(status)}
	case f.AssigneeID != "":
		l = listing{index: gsi4, partition: assigneePK(orgID, f.AssigneeID), prefix: prefixTicket}
	case status != "":
		l = listing{index: gsi3, partition: orgPK(orgID), prefix: statusPrefix(status)}
	default:
		l = listing{index: gsi1, partition: orgPK(orgID), prefix: prefixTicket}
	}
	l.op, l.desc = "list tickets", !f.Oldest
	return list(ctx, s.DB, l, p, fromTicketItem)
}

// ListTeamTickets pages through GSI5 ORG#<orgId>#TEAM#<teamId>: descending,
// so grouped by status and newest first within each; or one status.
func (s *Tickets) ListTeamTickets(ctx context.Context, orgID, teamID string, status ticket.Status, p page.Request) (page.Result[ticket.Ticket], error) {
	l := listing{op: "list team tickets", index: gsi5, partition: teamTicketsPK(orgID, teamID), prefix: statusPrefix(string(status)), desc: true}
	return list(ctx, s.DB, l, p, fromTicketItem, ids.Resource("orgId", orgID), ids.Resource("teamId", teamID))
}

// ListAssignedTickets pages through GSI4 (sparse) newest first.
func (s *Tickets) ListAssignedTickets(ctx context.Context, orgID, userID string, p page.Request) (page.Result[ticket.Ticket], error) {
	l := listing{op: "list assigned tickets", index: gsi4, partition: assigneePK(orgID, userID), prefix: prefixTicket, desc: true}
	return list(ctx, s.DB, l, p, fromTicketItem, ids.Resource("orgId", orgID), ids.User("userId", userID))
}

// ListUserTickets pages through GSI2 ORG#<orgId>#USER#<userId> descending,
// from TICKET# on.
func (s *Tickets) ListUserTickets(ctx context.Context, orgID, userID string, p page.Request) (page.Result[ticket.Ticket], error) {
	l := listing{op: "list requested tickets", index: gsi2, partition: orgUserPK(orgID, userID), prefix: prefixTicket, desc: true}
	return list(ctx, s.DB, l, p, fromTicketItem, ids.Resource("orgId", orgID), ids.User("userId", userID))
}

// CreateComment writes the comment into its ticket's partition and bumps the
// ticket's commentCount in one transaction (seed 002: counts kept on write).
func (s *Tickets) CreateComment(ctx context.Context, c ticket.Comment, ev audit.Event) error {
	k, ci := ticketKey(c.OrgID, c.TicketID), toCommentItem(c)
	tx := s.newTx(ids.Resource("orgId", c.OrgID), ids.Resource("ticketId", c.TicketID), ids.Resource("commentId", c.ID), ids.User("authorId", c.AuthorID)).
		put(key{ci.PK, ci.SK}, s.table.Put(ci).If(notExists), failWith(errs.E(errs.Conflict, "comment_exists", "comment ID already taken"))).
		update(k, s.updateAt(k).Add("commentCount", 1).Set("updatedAt", c.CreatedAt).If(liveItem), failWith(errTicketNotFound))
	return s.audited(ev, tx).run(ctx, "add comment")
}

// GetComment reads one comment of a ticket.
func (s *Tickets) GetComment(ctx context.Context, orgID, ticketID, commentID string) (ticket.Comment, error) {
	it, err := getItem[commentItem](ctx, s.DB, commentKey(orgID, ticketID, commentID), false,
		errs.E(errs.NotFound, "comment_not_found", "comment not found"), "get comment",
		ids.Resource("orgId", orgID), ids.Resource("ticketId", ticketID), ids.Resource("commentId", commentID))
	return fromCommentItem(it), err
}

// ListComments pages through a ticket's comments, oldest first.
func (s *Tickets) ListComments(ctx context.Context, orgID, ticketID string, p page.Request) (page.Result[ticket.Comment], error) {
	return list(ctx, s.DB, listing{op: "list comments", partition: ticketPK(orgID, ticketID), prefix: prefixComment}, p, fromCommentItem,
		ids.Resource("orgId", orgID), ids.Resource("ticketId", ticketID))
}

// UnmarshalDynamoItem decodes a ticket's #METADATA item.
func (it *ticketItem) UnmarshalDynamoItem(item dynamo.Item) error {
	d := attrs{item: item}
	t := ticketItem{PK: d.s("pk"), SK: d.s("sk"), Type: d.s("type"),
		GSI1PK: d.s("gsi1pk"), GSI1SK: d.s("gsi1sk"), GSI2PK: d.s("gsi2pk"), GSI2SK: d.s("gsi2sk"),
		GSI3PK: d.s("gsi3pk"), GSI3SK: d.s("gsi3sk"), GSI4PK: d.s("gsi4pk"), GSI4SK: d.s("gsi4sk"),
		GSI5PK: d.s("gsi5pk"), GSI5SK: d.s("gsi5sk"), GSI6PK: d.s("gsi6pk"), GSI6SK: d.s("gsi6sk"),
		GSI7PK: d.s("gsi7pk"), GSI7SK: d.s("gsi7sk"),
		OrgID: d.s("orgId"), ID: d.s("ticketId"), Title: d.s("title"), Description: d.s("description"),
		Status: d.s("status"), Priority: d.s("priority"), RequesterID: d.s("requesterId"), AssigneeID: d.s("assigneeId"),
		TeamID: d.s("teamId"), Tags: d.list("tags"), CommentCount: int(d.n("commentCount")), Version: d.n("version"),
		CreatedAt: d.t("createdAt"), UpdatedAt: d.t("updatedAt"), Deleting: d.b("deleting"), LeaseOwner: d.s("leaseOwner")}
	if d.odd {
		return dynamo.UnmarshalItem(item, (*ticketItemByReflection)(it))
	}
	*it = t
	return nil
}
