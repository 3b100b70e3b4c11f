// Package membership holds teams and their members: the many-to-many between
// an org's users and its teams, modelled as adjacency-list edges that carry
// the member's role.
package team

import (
	"context"
	"time"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/page"
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

// Member is the edge between a team and an org user; the role lives here.
type Member struct {
	OrgID     string
	TeamID    string
	UserID    string
	Role      authz.Role
	JoinedAt  time.Time
	UpdatedAt time.Time
	Version   int64
	// TeamName is filled only by listings of a user's teams.
	TeamName string
}

// Limits of text fields.
const (
	MaxNameLen        = 200
	MaxDescriptionLen = 2000
)

// Storer is what the membership service needs from persistence.
type Storer interface {
	// CreateTeam writes the team (memberCount 1) and its creator's owner
	// edge atomically. Returns Conflict (code not_org_member) if the creator
	// is not a user of the org.
	CreateTeam(ctx context.Context, t Team, owner Member) error
	// GetTeam returns NotFound if the team does not exist.
	GetTeam(ctx context.Context, orgID, teamID string) (Team, error)
	// GetTeamWithMembers reads the team and up to limit members in one
	// Query (AP4). Returns NotFound if the team does not exist.
	GetTeamWithMembers(ctx context.Context, orgID, teamID string, limit int) (Team, []Member, error)
	// ListTeams pages through an org's teams, oldest first.
	ListTeams(ctx context.Context, orgID string, p page.Request) (page.Result[Team], error)
	// UpdateTeam replaces the team's mutable fields if prev.Version is
	// current. Returns NotFound or PreconditionFailed.
	UpdateTeam(ctx context.Context, prev, next Team) error
	// DeleteTeam removes the team and all its member edges, and the team
	// from each member's team set; no edge outlives the team, even when
	// members are added or removed concurrently. Returns NotFound or
	// PreconditionFailed (version, when ifVersion > 0).
	DeleteTeam(ctx context.Context, orgID, teamID string, ifVersion int64) error

	// GetMember reads one edge with a consistent GetItem (AP3). Returns
	// NotFound if the user is not a member of the team.
	GetMember(ctx context.Context, orgID, teamID, userID string) (Member, error)
	// ListMembers pages through a team's members (AP1).
	ListMembers(ctx context.Context, orgID, teamID string, p page.Request) (page.Result[Member], error)
	// ListUserTeams pages through a user's teams in one org (AP2), without
	// team names.
	ListUserTeams(ctx context.Context, orgID, userID string, p page.Request) (page.Result[Member], error)
	// BatchGetTeams reads many teams of one org; absent ones are left out.
	BatchGetTeams(ctx context.Context, orgID string, teamIDs []string) (map[string]Team, error)
	// AddMember writes a new edge and increments the team's memberCount
	// (and ownerCount for an owner). Returns NotFound (team_not_found, also
	// for a team being deleted) or Conflict (not_org_member, already_member).
	AddMember(ctx context.Context, m Member) error
	// UpdateMember changes an edge's role if prev.Version is current, and
	// the team's ownerCount when owner is gained or lost. Returns NotFound,
	// PreconditionFailed, or Conflict (last_team_owner) when the team's
	// last owner would lose the role.
	UpdateMember(ctx context.Context, prev, next Member) error
	// RemoveMember deletes the edge m, as read (its version and role), and
	// decrements the team's counts (AP5). Returns NotFound (member_not_found,
	// team_not_found), PreconditionFailed if the edge changed, or Conflict
	// (last_team_owner) for the team's last owner.
	RemoveMember(ctx context.Context, m Member) error
}
