package graphapi

import (
	"context"

	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/page"
)

// Teams resolves OrgUser.teams (GET /v1/orgs/{orgId}/users/{userId}/teams).
func (r orgUserResolver) Teams(ctx context.Context, obj *OrgUser, first *int, after *string) (*TeamMemberConnection, error) {
	return r.s.memberships(ctx, obj.p, "listUserTeams:"+obj.UserID, first, after, func(pr page.Request) (page.Result[membership.Membership], error) {
		return r.s.d.Teams.ListUserTeams(ctx, obj.p, obj.UserID, false, pr)
	})
}

// User resolves TeamMember.user through the request's user loader.
func (r teamMemberResolver) User(ctx context.Context, obj *TeamMember) (*OrgUser, error) {
	return orgUser(ctx, obj.p, obj.UserID)
}

// Team resolves TeamMember.team through the request's team loader.
func (r teamMemberResolver) Team(ctx context.Context, obj *TeamMember) (*Team, error) {
	return teamOf(ctx, obj.p, obj.TeamID)
}
