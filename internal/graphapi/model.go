package graphapi

import (
	"fmt"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/invitation"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/optional"
	"github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/ticket"
)

// The GraphQL objects are the domain's values, with the principal they were
// read as: a child field is resolved as the same caller in the same org,
// never re-authorized against a path the client chose.

// Me is the caller.
type Me struct{ id authz.Identity }

// UserID is the token's subject.
func (m Me) UserID() string { return m.id.UserID }

// MeOrg is one of the caller's org memberships.
type MeOrg struct{ tenant.OrgMembership }

// Org is an org, read by a member (p).
type Org struct {
	tenant.Org
	p authz.Principal
}

// OrgUser is an org's user.
type OrgUser struct {
	tenant.User
	p authz.Principal
}

// Team is a team of the org.
type Team struct {
	membership.Team
	p authz.Principal
}

// TeamMember is a membership edge.
type TeamMember struct {
	membership.Membership
	p authz.Principal
}

// Comment is a ticket's comment.
type Comment struct {
	ticket.Comment
	p authz.Principal
}

// Invitation is a pending invitation.
type Invitation struct{ invitation.Invitation }

// AuditEvent is an entry of the audit log.
type AuditEvent struct{ audit.Event }

// ClientRequestID is clientRequestId: null when the client sent none.
func (e AuditEvent) ClientRequestID() *string { return nilIfEmpty(e.Event.ClientRequestID) }

// Changes is changes, with values as AuditValue renders them.
func (e AuditEvent) Changes() []AuditChange {
	out := make([]AuditChange, len(e.Event.Changes))
	for i, c := range e.Event.Changes {
		out[i] = AuditChange{Field: c.Field, Before: AuditValue(c.Before), After: AuditValue(c.After)}
	}
	return out
}

// AuditChange is one field's change: a string, a list of strings, or null
// (the field was unset), as in GET /v1/orgs/{orgId}/audit-log.
type AuditChange struct {
	Field         string
	Before, After any
}

// nilIfEmpty is s, or null when it is "".
var nilIfEmpty = optional.Of[string]

// AuditValue renders a changed value as both APIs show it: a string, a
// list of strings, or nil (the field was unset).
func AuditValue(v any) any {
	switch v := v.(type) {
	case nil, string, []string:
		return v
	case []any:
		ss := make([]string, len(v))
		for i, x := range v {
			ss[i] = fmt.Sprint(x)
		}
		return ss
	default:
		return fmt.Sprint(v)
	}
}

// Connection is a page of a listing as a Relay connection: its items as
// edges (each with its cursor) and as nodes, where the page sits, and the
// listing's size where the store keeps it.
type Connection[N any] struct {
	Edges      []*Edge[N]
	Nodes      []*N
	PageInfo   *PageInfo
	TotalCount *int
}

// Edge is an item of a connection and the cursor just after it.
type Edge[N any] struct {
	Cursor string
	Node   *N
}

// PageInfo is where a page sits. The connections page forward only, so
// HasPreviousPage is always false (the Relay specification allows it).
type PageInfo struct {
	HasNextPage     bool
	HasPreviousPage bool
	StartCursor     *string
	EndCursor       *string
}

// The connections of the schema.
type (
	MeOrgConnection           = Connection[MeOrg]
	OrgUserConnection         = Connection[OrgUser]
	TeamConnection            = Connection[Team]
	TeamMemberConnection      = Connection[TeamMember]
	TicketConnection          = Connection[Ticket]
	CommentConnection         = Connection[Comment]
	InvitationConnection      = Connection[Invitation]
	AuditEventConnection      = Connection[AuditEvent]
	ApiKeyConnection          = Connection[ApiKey]
	WebhookConnection         = Connection[Webhook]
	WebhookDeliveryConnection = Connection[WebhookDelivery]
	MeOrgEdge                 = Edge[MeOrg]
	OrgUserEdge               = Edge[OrgUser]
	TeamEdge                  = Edge[Team]
	TeamMemberEdge            = Edge[TeamMember]
	TicketEdge                = Edge[Ticket]
	CommentEdge               = Edge[Comment]
	InvitationEdge            = Edge[Invitation]
	AuditEventEdge            = Edge[AuditEvent]
	ApiKeyEdge                = Edge[ApiKey]
	WebhookEdge               = Edge[Webhook]
	WebhookDeliveryEdge       = Edge[WebhookDelivery]
)
