package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/guregu/dynamo/v2"

	"github.com/tenantd/tenantd/internal/access"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/ids"
)

// targetKey is the key of what t names in orgID, or the error of an ID
// that may not reach one (then the target is not read).
func targetKey(orgID string, t access.Target) (key, error) {
	switch t.Kind {
	case access.Org:
		return orgKey(orgID), nil
	case access.User:
		return orgUserKey(orgID, t.UserID), ids.User("userId", t.UserID)
	case access.Team:
		return teamKey(orgID, t.TeamID), ids.Resource("teamId", t.TeamID)
	case access.Member:
		return memberKey(orgID, t.TeamID, t.UserID), checkIDs(ids.Resource("teamId", t.TeamID), ids.User("userId", t.UserID))
	case access.Ticket:
		return ticketKey(orgID, t.TicketID), ids.Resource("ticketId", t.TicketID)
	case access.APIKey:
		return apiKeyKey(orgID, t.KeyID), ids.Resource("keyId", t.KeyID)
	}
	return key{}, fmt.Errorf("store: unknown target kind %d", t.Kind)
}

// decodeTarget puts the target's item (nil: there is none) in the field of
// f of its kind, with the liveness rule of its getter (an org, a team or a
// ticket being deleted is gone), or its not-found error in f.Missing.
func decodeTarget(f *access.Found, k access.Kind, it dynamo.Item) (err error) {
	switch k {
	case access.Org: // f.Org is decoded already
	case access.User:
		f.User, f.Missing, err = decodeItem(it, errUserNotFound, fromOrgUserItem)
	case access.Team:
		f.Team, f.Missing, err = decodeItem(it, errTeamNotFound, fromTeamItem)
	case access.Member:
		f.Member, f.Missing, err = decodeItem(it, errMemberNotFound, fromMemberItem)
	case access.Ticket:
		f.Ticket, f.Missing, err = decodeItem(it, errTicketNotFound, fromTicketItem)
	case access.APIKey:
		f.APIKey, f.Missing, err = decodeItem(it, errAPIKeyNotFound, fromAPIKeyItem)
	}
	return err
}

// decodeItem decodes it as an I and converts it: the value, or nil and
// notFound when there is no item or it is marked for deletion; err is a
// decoding failure.
func decodeItem[I any, T any](it dynamo.Item, notFound error, conv func(I) T) (*T, error, error) {
	if it == nil {
		return nil, notFound, nil
	}
	var x I
	if err := dynamo.UnmarshalItem(it, &x); err != nil {
		return nil, nil, fmt.Errorf("decode %T: %w", x, err)
	}
	if m, ok := any(x).(markedForDeletion); ok && m.beingDeleted() {
		return nil, notFound, nil
	}
	v := conv(x)
	return &v, nil, nil
}

// OrgAccess is the authorization read (access.Reader): the org item, the
// caller's OrgUser edge (for an API key's actor, the key: actorKey), the
// item t names and, for t.TeamRole, the caller's edge of t's team, in ONE
// consistent BatchGetItem. The role is on
// the edge; the org item says whether the org is being offboarded, so that
// from the moment its offboarding starts no member reads or writes it,
// even if the offboarding crashes before it deleted their edges. Nothing
// is decoded for a caller with no edge, or in an org with no item: their
// Found has no role.
func (s *Orgs) OrgAccess(ctx context.Context, orgID, userID string, t access.Target) (access.Found, error) {
	var f access.Found
	if err := checkIDs(ids.Resource("orgId", orgID), ids.User("userId", userID)); err != nil {
		return f, err
	}
	keyID, isKey := strings.CutPrefix(userID, authz.KeyActorPrefix)
	if isKey {
		if err := ids.Resource("keyId", keyID); err != nil {
			return f, err
		}
	}
	ok, uk := orgKey(orgID), actorKey(orgID, userID)
	keys := []key{ok, uk}
	var tk, teamEdge key
	if t.Kind != access.None {
		var err error
		if tk, err = targetKey(orgID, t); err != nil {
			f.Missing, t = err, access.Target{}
		} else {
			keys = append(keys, tk)
		}
	}
	if t.TeamRole {
		teamEdge = memberKey(orgID, t.TeamID, userID)
		keys = append(keys, teamEdge)
	}
	var items []dynamo.Item
	if err := s.batchGet(ctx, distinct(keys), true, &items); err != nil {
		return f, fmt.Errorf("authorization read: %w", err)
	}
	byKey := make(map[key]dynamo.Item, len(items))
	for _, it := range items {
		byKey[key{attrS(it, attrPK), attrS(it, attrSK)}] = it
	}
	orgItem, edge := byKey[ok], byKey[uk]
	if orgItem == nil || edge == nil {
		return access.Found{}, nil
	}
	f.Role, f.EdgeDeleting = authz.Role(attrS(edge, "role")), edge["deleting"] != nil
	f.OrgDeleting = orgItem["deleting"] != nil
	var err error
	if f.Org, _, err = decodeItem(orgItem, errOrgNotFound, fromOrgItem); err != nil {
		return access.Found{}, err
	}
	if isKey {
		if f.CallerKey, _, err = decodeItem(edge, errAPIKeyNotFound, fromAPIKeyItem); err != nil {
			return access.Found{}, err
		}
	}
	if t.Kind != access.None {
		if err := decodeTarget(&f, t.Kind, byKey[tk]); err != nil {
			return access.Found{}, err
		}
	}
	if m := byKey[teamEdge]; t.TeamRole && m != nil {
		f.TeamRole = authz.Role(attrS(m, "role"))
	}
	return f, nil
}

// distinct is keys without repeats, in order.
func distinct(keys []key) []dynamo.Keyed {
	out := make([]dynamo.Keyed, 0, len(keys))
	seen := make(map[key]bool, len(keys))
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, dynamo.Keys{k.PK, k.SK})
		}
	}
	return out
}
