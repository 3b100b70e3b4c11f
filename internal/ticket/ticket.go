// Package ticket holds support tickets and their comments: types, the
// rules of their fields and the Service the HTTP layer calls.
package ticket

import (
	"context"
	"slices"
	"time"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/tenant"
)

// Status is where a ticket is in its life.
type Status string

// Ticket statuses, as Zendesk names them.
const (
	StatusNew     Status = "new"
	StatusOpen    Status = "open"
	StatusPending Status = "pending"
	StatusSolved  Status = "solved"
	StatusClosed  Status = "closed"
)

// Statuses lists every status in workflow order.
var Statuses = []Status{StatusNew, StatusOpen, StatusPending, StatusSolved, StatusClosed}

// Valid reports whether s is a known status.
func (s Status) Valid() bool { return slices.Contains(Statuses, s) }

// Priority orders tickets by urgency.
type Priority string

// Ticket priorities.
const (
	PriorityLow    Priority = "low"
	PriorityNormal Priority = "normal"
	PriorityHigh   Priority = "high"
	PriorityUrgent Priority = "urgent"
)

// Valid reports whether p is a known priority.
func (p Priority) Valid() bool {
	switch p {
	case PriorityLow, PriorityNormal, PriorityHigh, PriorityUrgent:
		return true
	}
	return false
}

// Ticket is a support request raised by an org user.
type Ticket struct {
	OrgID        string
	ID           string
	Title        string
	Description  string
	Status       Status
	Priority     Priority
	RequesterID  string
	AssigneeID   string // "" when unassigned
	TeamID       string // "" when no team
	Tags         []string
	CommentCount int
	Version      int64
	CreatedAt    time.Time
	UpdatedAt    time.Time
	// Requester and Assignee are filled only by reads that expand them
	// (read with one BatchGetItem per page, never one read per ticket).
	Requester, Assignee *tenant.User
}

// Expand says which users a read of tickets embeds.
type Expand struct{ Requester, Assignee bool }

// Comment is a reply on a ticket.
type Comment struct {
	OrgID     string
	TicketID  string
	ID        string
	AuthorID  string
	Body      string
	CreatedAt time.Time
}

// Limits of ticket fields. Tags are a bounded complex attribute (seed 001,
// strategy 1): never queried by value, capped so the item stays small.
const (
	MaxTitleLen       = 200
	MaxDescriptionLen = 20000
	MaxBodyLen        = 20000
	MaxTags           = 20
	MaxTagLen         = 50
)

// Filter narrows and orders a listing of an org's tickets. An index serves
// each combination of Status, Priority and AssigneeID (docs/data-model.md)
// but Priority with AssigneeID, which is refused (ErrUnservedFilter), never
// filtered in memory.
type Filter struct {
	Status     Status
	Priority   Priority
	AssigneeID string
	Oldest     bool // oldest first, instead of newest first
}

// ErrUnservedFilter refuses a combination of filters no index serves.
var ErrUnservedFilter = errs.InvalidParams("unserved_filter",
	"no index serves priority and assigneeId together: filter by one of them (with status, if you like)", "priority", "assigneeId")

// Storer is what the ticket service needs from persistence. Every write
// takes the audit event of the change, written in the same transaction. A
// ticket being deleted is NotFound. A listing under a parent does not tell a
// missing parent from an empty one: the caller has read it (see Service).
type Storer interface {
	// CreateTicket writes the ticket if its requester (and assignee and
	// team, when set) exist in the org. Returns NotFound (user_not_found)
	// for a requester who left, Conflict (assignee_not_org_member,
	// team_not_found) for bad references.
	CreateTicket(ctx context.Context, t Ticket, ev audit.Event) error
	// GetTicket returns NotFound if the ticket does not exist.
	GetTicket(ctx context.Context, orgID, ticketID string) (Ticket, error)
	// GetTicketWithComments reads the ticket and up to limit comments,
	// oldest first, in one Query. Returns NotFound.
	GetTicketWithComments(ctx context.Context, orgID, ticketID string, limit int) (Ticket, []Comment, error)
	// UpdateTicket replaces prev by next if prev.Version is current,
	// moving its index keys. Returns NotFound, PreconditionFailed, or
	// Conflict (assignee_not_org_member, team_not_found) for new references.
	UpdateTicket(ctx context.Context, prev, next Ticket, ev audit.Event) error
	// DeleteTicket removes the ticket and its comments; no comment outlives
	// it, even one posted concurrently. Returns NotFound or
	// PreconditionFailed (when ifVersion > 0).
	DeleteTicket(ctx context.Context, orgID, ticketID string, ifVersion int64, ev audit.Event) error
	// ListTickets pages through an org's tickets as f selects and orders
	// them. Returns Invalid for a filter no index serves.
	ListTickets(ctx context.Context, orgID string, f Filter, p page.Request) (page.Result[Ticket], error)
	// ListTeamTickets pages through a team's tickets newest first within
	// each status, or only those with status.
	ListTeamTickets(ctx context.Context, orgID, teamID string, status Status, p page.Request) (page.Result[Ticket], error)
	// ListAssignedTickets pages through a user's assigned tickets, newest first.
	ListAssignedTickets(ctx context.Context, orgID, userID string, p page.Request) (page.Result[Ticket], error)
	// ListUserTickets pages through a user's requested tickets, newest first.
	ListUserTickets(ctx context.Context, orgID, userID string, p page.Request) (page.Result[Ticket], error)
	// CreateComment writes the comment and increments commentCount
	// atomically. Returns NotFound if the ticket does not exist.
	CreateComment(ctx context.Context, c Comment, ev audit.Event) error
	// GetComment returns NotFound (comment_not_found) if there is none.
	GetComment(ctx context.Context, orgID, ticketID, commentID string) (Comment, error)
	// ListComments pages through a ticket's comments, oldest first.
	ListComments(ctx context.Context, orgID, ticketID string, p page.Request) (page.Result[Comment], error)
}

// TeamMembers answers "is this user on that team" with one GetItem (AP3).
type TeamMembers interface {
	// GetTeamMember returns NotFound if the user is not a member of the team.
	GetTeamMember(ctx context.Context, orgID, teamID, userID string) (membership.Membership, error)
}

// Users reads an org's users for the reads that expand them.
type Users interface {
	// BatchGetOrgUsers reads many users of one org; absent ones are left out.
	BatchGetOrgUsers(ctx context.Context, orgID string, userIDs []string) (map[string]tenant.User, error)
}
