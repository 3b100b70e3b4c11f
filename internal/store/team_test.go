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
