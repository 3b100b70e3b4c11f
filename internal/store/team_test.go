package store_test

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/page"
)

// The write rules of teams and their memberships: every conditional
// write, its error kind and code, and that a refused write changes nothing.

func TestCreateTeam(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, s := MustSampled(t)
	org := s.Org.ID

	t.Run("OK", func(t *testing.T) {
		tm := f.team(org, "Support")
		tm.MemberCount, tm.OwnerCount = 7, 3 // ignored: a new team has its creator, its owner, only
		must(t, f.Teams.CreateTeam(ctx, tm, f.member(tm, "u_bob", authz.Owner), ev(tm)))
		got, err := f.Teams.GetTeam(ctx, org, tm.ID)
		must(t, err)
		want := tm
		want.MemberCount, want.OwnerCount = 1, 1
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got %+v, want %+v", got, want)
		}
		m, err := f.Teams.GetTeamMember(ctx, org, tm.ID, "u_bob")
		must(t, err)
		if got, want := m.Role, authz.Owner; got != want {
			t.Errorf("creator role: got %s, want %s", got, want)
		}
		if got, want := userTeamIDs(t, f, org, "u_bob"), []string{s.Eng.ID, tm.ID}; !slices.Equal(got, sortedCopy(want)) {
			t.Errorf("bob's teams: got %v, want %v", got, want)
		}
	})

	t.Run("ErrNotOrgMember", func(t *testing.T) {
		tm := f.team(org, "Ghosts")
		err := f.mustUnchanged(t, func() error { return f.Teams.CreateTeam(ctx, tm, f.member(tm, "u_ghost", authz.Owner), ev(tm)) })
		wantErr(t, err, errs.Conflict, "not_org_member")
	})

	t.Run("ErrNotOrgMember of another org", func(t *testing.T) {
		f.newOrg(t, "Other", "u_zed")
		tm := f.team(org, "Intruders")
		err := f.mustUnchanged(t, func() error { return f.Teams.CreateTeam(ctx, tm, f.member(tm, "u_zed", authz.Owner), ev(tm)) })
		wantErr(t, err, errs.Conflict, "not_org_member")
	})

	t.Run("ErrTeamExists", func(t *testing.T) {
		again := s.Eng
		again.Name = "Engineering 2"
		err := f.mustUnchanged(t, func() error { return f.Teams.CreateTeam(ctx, again, f.member(again, "u_bob", authz.Owner), ev(again)) })
		wantErr(t, err, errs.Conflict, "team_exists")
	})
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

func TestAddTeamMember(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, s := MustSampled(t)
	org := s.Org.ID

	t.Run("OK", func(t *testing.T) {
		m := f.member(s.Design, "u_bob", authz.Admin)
		must(t, f.Teams.AddTeamMember(ctx, m, ev(m)))
		if got, want := teamCount(t, f, org, s.Design.ID), 3; got != want {
			t.Errorf("memberCount: got %d, want %d", got, want)
		}
		got, err := f.Teams.GetTeamMember(ctx, org, s.Design.ID, "u_bob")
		must(t, err)
		if !reflect.DeepEqual(got, m) {
			t.Errorf("member: got %+v, want %+v", got, m)
		}
		if got, want := userTeamIDs(t, f, org, "u_bob"), sortedCopy([]string{s.Eng.ID, s.Design.ID}); !slices.Equal(got, want) {
			t.Errorf("bob's teams: got %v, want %v", got, want)
		}
	})

	t.Run("ErrAlreadyMember", func(t *testing.T) {
		err := f.mustUnchanged(t, func() error {
			return f.Teams.AddTeamMember(ctx, f.member(s.Eng, "u_bob", authz.Admin), ev(s.Eng))
		})
		wantErr(t, err, errs.Conflict, "already_member")
	})

	t.Run("ErrNotOrgMember", func(t *testing.T) {
		err := f.mustUnchanged(t, func() error {
			return f.Teams.AddTeamMember(ctx, f.member(s.Eng, "u_ghost", authz.Member), ev(s.Eng))
		})
		wantErr(t, err, errs.Conflict, "not_org_member")
	})

	t.Run("ErrTeamNotFound", func(t *testing.T) {
		missing := f.team(org, "Missing")
		err := f.mustUnchanged(t, func() error {
			return f.Teams.AddTeamMember(ctx, f.member(missing, "u_bob", authz.Member), ev(missing))
		})
		wantErr(t, err, errs.NotFound, "team_not_found")
	})

	t.Run("ErrTeamNotFound in another org", func(t *testing.T) {
		other := f.newOrg(t, "Other", "u_bob")
		m := f.member(s.Eng, "u_bob", authz.Member)
		m.OrgID = other.ID // Eng belongs to the sample org
		err := f.mustUnchanged(t, func() error { return f.Teams.AddTeamMember(ctx, m, ev(m)) })
		wantErr(t, err, errs.NotFound, "team_not_found")
	})
}

func TestUpdateTeamMember(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, s := MustSampled(t)
	org := s.Org.ID
	bob := f.member(s.Eng, "u_bob", authz.Member)

	t.Run("OK", func(t *testing.T) {
		next := bob
		next.Role, next.Version = authz.Admin, 2
		must(t, f.Teams.UpdateTeamMember(ctx, bob, next, ev(next)))
		got, err := f.Teams.GetTeamMember(ctx, org, s.Eng.ID, "u_bob")
		must(t, err)
		if !reflect.DeepEqual(got, next) {
			t.Errorf("got %+v, want %+v", got, next)
		}
		if got, want := teamCount(t, f, org, s.Eng.ID), 2; got != want {
			t.Errorf("memberCount: got %d, want %d", got, want)
		}
	})

	t.Run("ErrStaleVersion", func(t *testing.T) {
		next := bob // version 1; the edge is at 2
		next.Role, next.Version = authz.Owner, 2
		err := f.mustUnchanged(t, func() error { return f.Teams.UpdateTeamMember(ctx, bob, next, ev(next)) })
		wantErr(t, err, errs.PreconditionFailed, "version_mismatch")
	})

	t.Run("ErrMemberNotFound", func(t *testing.T) {
		m := f.member(s.Design, "u_bob", authz.Member)
		next := m
		next.Version = 2
		err := f.mustUnchanged(t, func() error { return f.Teams.UpdateTeamMember(ctx, m, next, ev(next)) })
		wantErr(t, err, errs.NotFound, "member_not_found")
	})
}

func TestRemoveTeamMember(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, s := MustSampled(t)
	org := s.Org.ID

	bob := f.member(s.Eng, "u_bob", authz.Member)

	t.Run("ErrMemberNotFound", func(t *testing.T) {
		err := f.mustUnchanged(t, func() error {
			return f.Teams.RemoveTeamMember(ctx, f.member(s.Design, "u_bob", authz.Member), ev(s.Design))
		})
		wantErr(t, err, errs.NotFound, "member_not_found")
	})

	t.Run("ErrStaleVersion", func(t *testing.T) {
		stale := bob
		stale.Version = 2
		err := f.mustUnchanged(t, func() error { return f.Teams.RemoveTeamMember(ctx, stale, ev(stale)) })
		wantErr(t, err, errs.PreconditionFailed, "version_mismatch")
	})

	t.Run("ErrLastTeamOwner", func(t *testing.T) {
		err := f.mustUnchanged(t, func() error {
			return f.Teams.RemoveTeamMember(ctx, f.member(s.Eng, "u_alice", authz.Owner), ev(s.Eng))
		})
		wantErr(t, err, errs.Conflict, "last_team_owner")
	})

	t.Run("OK", func(t *testing.T) {
		must(t, f.Teams.RemoveTeamMember(ctx, bob, ev(bob)))
		if got, want := teamCount(t, f, org, s.Eng.ID), 1; got != want {
			t.Errorf("memberCount: got %d, want %d", got, want)
		}
		if got := userTeamIDs(t, f, org, "u_bob"); len(got) != 0 {
			t.Errorf("ListUserTeams: got %v, want none", got)
		}
	})

	t.Run("ErrMemberNotFound twice", func(t *testing.T) {
		err := f.mustUnchanged(t, func() error { return f.Teams.RemoveTeamMember(ctx, bob, ev(bob)) })
		wantErr(t, err, errs.NotFound, "member_not_found")
	})
}

func TestDeleteTeam(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, s := MustSampled(t)
	org := s.Org.ID

	t.Run("ErrStaleVersion", func(t *testing.T) {
		err := f.mustUnchanged(t, func() error { return f.Teams.DeleteTeam(ctx, org, s.Eng.ID, 2, evOrg(org)) })
		wantErr(t, err, errs.PreconditionFailed, "version_mismatch")
	})

	t.Run("ErrTeamNotFound", func(t *testing.T) {
		err := f.mustUnchanged(t, func() error { return f.Teams.DeleteTeam(ctx, org, f.ids.New(), 0, evOrg(org)) })
		wantErr(t, err, errs.NotFound, "team_not_found")
	})

	t.Run("OK", func(t *testing.T) {
		must(t, f.Teams.DeleteTeam(ctx, org, s.Eng.ID, 1, evOrg(org)))
		_, err := f.Teams.GetTeam(ctx, org, s.Eng.ID)
		wantErr(t, err, errs.NotFound, "team_not_found")
		if keys := f.keysWithPrefix(t, "ORG#"+org+"#TEAM#"+s.Eng.ID); len(keys) != 0 {
			t.Errorf("items left in the team's partition: %v", keys)
		}
		if got := userTeamIDs(t, f, org, "u_bob"); len(got) != 0 {
			t.Errorf("ListUserTeams(bob): got %v, want none", got)
		}
		if got, want := userTeamIDs(t, f, org, "u_alice"), []string{s.Design.ID}; !slices.Equal(got, want) {
			t.Errorf("ListUserTeams(alice): got %v, want %v", got, want)
		}
		r, err := f.Teams.ListTeams(ctx, org, page.Request{})
		must(t, err)
		if got, want := len(r.Items), 1; got != want || r.Items[0].ID != s.Design.ID {
			t.Errorf("ListTeams: got %d teams, want only Design", got)
		}
	})
}

// TestDeleteTeamWithManyMembers covers the chunked path: more edges than one
// transaction holds.
func TestDeleteTeamWithManyMembers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	users := seqIDs("u_", 130)
	org := f.newOrg(t, "Big", users[0]).ID
	f.seedUsers(t, org, users[1:])
	tm := f.team(org, "Everyone")
	must(t, f.Teams.CreateTeam(ctx, tm, f.member(tm, users[0], authz.Owner), ev(tm)))
	must(t, f.Teams.AddTeamMember(ctx, f.member(tm, users[1], authz.Member), ev(tm)))
	// The other 128 edges are copies of users[1]'s (memberCount is not
	// kept for them; DeleteTeam does not read it).
	f.seedClones(t, []rawKey{{"ORG#" + org + "#TEAM#" + tm.ID, "MEMBER#" + users[1]}}, users[1], users[2:])
	_, members := allPages(t, func(after string) (page.Result[membership.Membership], error) {
		return f.Teams.ListTeamMembers(ctx, org, tm.ID, page.Request{Limit: 100, After: after})
	})
	if got, want := len(members), 130; got != want {
		t.Fatalf("members: got %d, want %d", got, want)
	}
	other := f.team(org, "Other")
	must(t, f.Teams.CreateTeam(ctx, other, f.member(other, users[5], authz.Owner), ev(other)))

	t.Run("OK", func(t *testing.T) {
		f.Rec.Reset()
		must(t, f.Teams.DeleteTeam(ctx, org, tm.ID, 0, evOrg(org)))
		// 130 edges are too many for one transaction: the team is marked
		// deleting, with the audit event (2 items), then the edges go, each
		// with the team's removal from its user's team set, in transactions
		// of the team's count update and 49 members (99 items), the last 32
		// (65 items), and the team item last (1).
		if got, want := f.txSizes(), []int{2, 99, 99, 65, 1}; !slices.Equal(got, want) {
			t.Errorf("transactions: got %v, want %v", got, want)
		}
		if keys := f.keysWithPrefix(t, "ORG#"+org+"#TEAM#"+tm.ID); len(keys) != 0 {
			t.Errorf("%d items left in the team's partition", len(keys))
		}
		for _, id := range users {
			want := []string{}
			if id == users[5] {
				want = []string{other.ID}
			}
			if got := userTeamIDs(t, f, org, id); !slices.Equal(got, want) {
				t.Errorf("ListUserTeams(%s): got %v, want %v", id, got, want)
			}
		}
		if got, want := teamCount(t, f, org, other.ID), 1; got != want {
			t.Errorf("other team memberCount: got %d, want %d", got, want)
		}
	})
}

// TestTeamsPerUser: a user's team set is bounded (membership.MaxTeamsPerUser),
// so their OrgUser item never outgrows DynamoDB's 400 KB (a write of it
// would fail with a ValidationException, a 500): a join past the bound is
// refused with 409 user_team_limit, and nothing changes.
func TestTeamsPerUser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, s := MustSampled(t)
	org := s.Org.ID
	full := make([]string, membership.MaxTeamsPerUser)
	for i := range full {
		full[i] = f.ids.New()
	}
	_, err := f.raw.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(f.DB.TableName()),
		Key:              map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "ORG#" + org}, "sk": &types.AttributeValueMemberS{Value: "USER#u_dana"}},
		UpdateExpression: aws.String("SET teamIds = :full"), ExpressionAttributeValues: map[string]types.AttributeValue{":full": &types.AttributeValueMemberSS{Value: full}}})
	must(t, err)
	t.Run("Conflict/addTeamMember/user_team_limit", func(t *testing.T) {
		err := f.mustUnchanged(t, func() error { return f.Teams.AddTeamMember(ctx, f.member(s.Eng, "u_dana", authz.Member), ev(s.Eng)) })
		wantErr(t, err, errs.Conflict, "user_team_limit")
	})
	t.Run("Conflict/createTeam/user_team_limit", func(t *testing.T) {
		tm := f.team(org, "One too many")
		err := f.mustUnchanged(t, func() error { return f.Teams.CreateTeam(ctx, tm, f.member(tm, "u_dana", authz.Owner), ev(tm)) })
		wantErr(t, err, errs.Conflict, "user_team_limit")
	})
	t.Run("OK/a user with room joins", func(t *testing.T) {
		must(t, f.Teams.AddTeamMember(ctx, f.member(s.Design, "u_bob", authz.Member), ev(s.Design)))
	})
}

// Every field's round trip through the store: the guard described in
// fields_test.go.

func TestTeamFields(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	org := f.newOrg(t, "Fields", "u_owner", "u_member")
	team := membership.Team{OrgID: org.ID, ID: f.ids.New(), Name: "Fields Team", Description: "Keeps every field",
		MemberCount: 9, OwnerCount: 8, // CreateTeam sets both to 1: the team is born with its owner edge alone
		Version: 7, CreatedAt: f.at(1), UpdatedAt: f.at(2)}
	mustFull(t, team)
	must(t, f.Teams.CreateTeam(ctx, team, f.member(team, "u_owner", authz.Owner), ev(team)))
	must(t, f.Teams.AddTeamMember(ctx, f.member(team, "u_member", authz.Member), ev(team)))
	team.MemberCount, team.OwnerCount = 2, 1 // two edges, one of them an owner's: distinct counts

	read := func(t *testing.T, want membership.Team) {
		t.Helper()
		got, err := f.Teams.GetTeam(ctx, org.ID, team.ID)
		must(t, err)
		wantSame(t, "GetTeam", got, want)
		got, members, err := f.Teams.GetTeamWithMembers(ctx, org.ID, team.ID, 10)
		must(t, err)
		wantSame(t, "GetTeamWithMembers", got, want)
		if len(members) != 2 {
			t.Errorf("GetTeamWithMembers: %d members, want 2", len(members))
		}
		r, err := f.Teams.ListTeams(ctx, org.ID, fieldsPage)
		wantOne(t, "ListTeams", r.Items, err, want)
		m, err := f.Teams.BatchGetTeams(ctx, org.ID, []string{team.ID})
		wantOneOf(t, "BatchGetTeams", m, err, team.ID, want)
	}

	t.Run("create", func(t *testing.T) { read(t, team) })

	t.Run("update", func(t *testing.T) {
		prev := team
		next := membership.Team{OrgID: team.OrgID, ID: team.ID, Name: "Fields Team Renamed", Description: "Another description",
			Version: 8, UpdatedAt: f.at(12),
			MemberCount: 5, OwnerCount: 4, CreatedAt: f.at(13)} // an update must leave them: see kept
		mustFull(t, next)
		mustChangeAll(t, prev, next, "OrgID", "ID") // the team's key
		must(t, f.Teams.UpdateTeam(ctx, prev, next, ev(next)))
		// Kept: the counts belong to the membership transactions (an
		// update that wrote them would undo a concurrent AddTeamMember);
		// CreatedAt is when the team was made.
		want := copied(t, next, prev, "MemberCount", "OwnerCount", "CreatedAt")
		read(t, want)

		// An empty description is removed, not stored empty.
		prev, next = want, want
		next.Description, next.Version, next.UpdatedAt = "", 9, f.at(14)
		must(t, f.Teams.UpdateTeam(ctx, prev, next, ev(next)))
		read(t, next)
	})
}

func TestTeamMemberFields(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	org := f.newOrg(t, "Fields", "u_owner", "u_member")
	team := f.team(org.ID, "Fields Team")
	owner := f.member(team, "u_owner", authz.Owner)
	must(t, f.Teams.CreateTeam(ctx, team, owner, ev(team)))
	someone := f.user(org.ID, "u_member", "u_member@example.com", "u_member", authz.Member)
	m := membership.Membership{OrgID: org.ID, TeamID: team.ID, UserID: "u_member", Role: authz.Admin,
		JoinedAt: f.at(1), UpdatedAt: f.at(2), Version: 3,
		TeamName: "Fields Team", User: &someone} // derived: see read
	mustFull(t, m)
	must(t, f.Teams.AddTeamMember(ctx, m, ev(m)))

	read := func(t *testing.T, want membership.Membership) {
		t.Helper()
		// Derived, not stored: TeamName and User are filled by the
		// service's listings that join them (BatchGetTeams,
		// BatchGetOrgUsers).
		want = zeroed(t, want, "TeamName", "User")
		got, err := f.Teams.GetTeamMember(ctx, org.ID, team.ID, m.UserID)
		must(t, err)
		wantSame(t, "GetTeamMember", got, want)
		r, err := f.Teams.ListTeamMembers(ctx, org.ID, team.ID, fieldsPage)
		must(t, err)
		wantOne(t, "ListTeamMembers", slices.DeleteFunc(r.Items, func(x membership.Membership) bool { return x.UserID != m.UserID }), nil, want)
		r, err = f.Teams.ListUserTeams(ctx, org.ID, m.UserID, fieldsPage)
		wantOne(t, "ListUserTeams", r.Items, err, want)
		_, members, err := f.Teams.GetTeamWithMembers(ctx, org.ID, team.ID, 10)
		must(t, err)
		wantOne(t, "GetTeamWithMembers", slices.DeleteFunc(members, func(x membership.Membership) bool { return x.UserID != m.UserID }), nil, want)
	}

	t.Run("create", func(t *testing.T) { read(t, m) })

	t.Run("create the owner's edge", func(t *testing.T) {
		got, err := f.Teams.GetTeamMember(ctx, org.ID, team.ID, owner.UserID)
		must(t, err)
		wantSame(t, "GetTeamMember", got, owner)
	})

	t.Run("update", func(t *testing.T) {
		prev := zeroed(t, m, "TeamName", "User") // as read
		other := f.user(org.ID, "u_owner", "u_owner@example.com", "u_owner", authz.Owner)
		next := membership.Membership{OrgID: m.OrgID, TeamID: m.TeamID, UserID: m.UserID, Role: authz.Member,
			UpdatedAt: f.at(12), Version: 4,
			JoinedAt: f.at(13), TeamName: "Another name", User: &other} // an update must leave them: see kept
		mustFull(t, next)
		mustChangeAll(t, prev, next, "OrgID", "TeamID", "UserID") // the edge's key
		must(t, f.Teams.UpdateTeamMember(ctx, prev, next, ev(next)))
		// Kept: JoinedAt is when the user joined the team; the derived
		// fields are never stored.
		read(t, copied(t, next, prev, "JoinedAt"))
	})
}
