// Package team holds an org's teams and their memberships: the many-to-many
// between an org's users and its teams, modelled as adjacency-list edges
// that carry the member's team role (seed 000), and the Service the HTTP
// layer calls.
package membership

import (
	"context"
	"time"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/tenant"
)

// Team is a group of an org's users.
type Team struct {
	OrgID       string
	ID          string
	Name        string
	Description string
	MemberCount int
	OwnerCount  int // members with role owner: never 0 while the team exists
	Version     int64
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Membership is the edge between a team and an org user; the team role
// lives here (the API's Membership).
type Membership struct {
	OrgID     string
	TeamID    string
	UserID    string
	Role      authz.Role
	JoinedAt  time.Time
	UpdatedAt time.Time
	Version   int64
	// TeamName is filled only by listings of a user's teams with names.
	TeamName string
	// User is filled only by listings of a team's members with users.
	User *tenant.User
}

// Limits of text fields.
const (
	MaxNameLen        = 200
	MaxDescriptionLen = 2000
)

// Storer is what the team service needs from persistence. Every write takes
// the audit event of the change, written in the same transaction.
type Storer interface {
	// CreateTeam writes the team (memberCount and ownerCount 1) and its
	// creator's owner edge atomically. Returns Conflict (code
	// not_org_member) if the creator is not a user of the org.
	CreateTeam(ctx context.Context, t Team, owner Membership, ev audit.Event) error
	// GetTeam returns NotFound if the team does not exist (or is being
	// deleted).
	GetTeam(ctx context.Context, orgID, teamID string) (Team, error)
	// GetTeamWithMembers reads the team and up to limit members in one
	// Query (AP4). Returns NotFound if the team does not exist.
	GetTeamWithMembers(ctx context.Context, orgID, teamID string, limit int) (Team, []Membership, error)
	// ListTeams pages through an org's teams, oldest first.
	ListTeams(ctx context.Context, orgID string, p page.Request) (page.Result[Team], error)
	// UpdateTeam replaces the team's mutable fields if prev.Version is
	// current. Returns NotFound or PreconditionFailed.
	UpdateTeam(ctx context.Context, prev, next Team, ev audit.Event) error
	// DeleteTeam removes the team and all its member edges, and the team
	// from each member's team set; no edge outlives the team, even when
	// members are added or removed concurrently. Returns NotFound or
	// PreconditionFailed (version, when ifVersion > 0).
	DeleteTeam(ctx context.Context, orgID, teamID string, ifVersion int64, ev audit.Event) error

	// GetTeamMember reads one edge with a consistent GetItem (AP3). Returns
	// NotFound if the user is not a member of the team.
	GetTeamMember(ctx context.Context, orgID, teamID, userID string) (Membership, error)
	// ListTeamMembers pages through a team's members (AP1). Returns
	// NotFound for a team that does not exist.
	ListTeamMembers(ctx context.Context, orgID, teamID string, p page.Request) (page.Result[Membership], error)
	// ListUserTeams pages through a user's teams in one org (AP2), without
	// team names. Returns NotFound for a user who is not in the org.
	ListUserTeams(ctx context.Context, orgID, userID string, p page.Request) (page.Result[Membership], error)
	// BatchGetTeams reads many teams of one org; absent ones are left out.
	BatchGetTeams(ctx context.Context, orgID string, teamIDs []string) (map[string]Team, error)
	// AddTeamMember writes a new edge and increments the team's
	// memberCount (and ownerCount for an owner). Returns NotFound
	// (team_not_found, also for a team being deleted) or Conflict
	// (not_org_member, already_member).
	AddTeamMember(ctx context.Context, m Membership, ev audit.Event) error
	// UpdateTeamMember changes an edge's role if prev.Version is current,
	// and the team's ownerCount when owner is gained or lost. Returns
	// NotFound, PreconditionFailed, or Conflict (last_team_owner) when the
	// team's last owner would lose the role.
	UpdateTeamMember(ctx context.Context, prev, next Membership, ev audit.Event) error
	// RemoveTeamMember deletes the edge m, as read (its version and role),
	// and decrements the team's counts (AP5). Returns NotFound
	// (member_not_found, team_not_found), PreconditionFailed if the edge
	// changed, or Conflict (last_team_owner) for the team's last owner.
	RemoveTeamMember(ctx context.Context, m Membership, ev audit.Event) error
}

// Users reads an org's users for listings that embed them.
type Users interface {
	// BatchGetOrgUsers reads many users of one org; absent ones are left out.
	BatchGetOrgUsers(ctx context.Context, orgID string, userIDs []string) (map[string]tenant.User, error)
}
