package store

import (
	"context"
	"fmt"

	"github.com/guregu/dynamo/v2"
)

// DeleteOrg removes the org and everything it owns, in bounded batches:
// first its users and their email claims (so nobody is authorized in it
// any more), then each team's and ticket's partition (found on GSI1), and
// the org item last. Each step is idempotent, so a DELETE retried after a
// crash continues where the last one stopped.
func (s *Tenants) DeleteOrg(ctx context.Context, orgID string) error {
	if err := checkIDs("orgId", orgID); err != nil {
		return err
	}
	if _, err := s.GetOrg(ctx, orgID); err != nil {
		return err
	}
	var keys []dynamo.Keyed
	itr := s.table.Get(attrPK, orgPK(orgID)).Range(attrSK, dynamo.BeginsWith, prefixUser).Iter()
	var u orgUserItem
	for itr.Next(ctx, &u) {
		c := toClaimItem(fromOrgUserItem(u))
		keys = append(keys, dynamo.Keys{u.PK, u.SK}, dynamo.Keys{c.PK, c.SK})
	}
	if err := itr.Err(); err != nil {
		return fmt.Errorf("delete org: users: %w", translate(err))
	}
	if err := s.batchDelete(ctx, keys); err != nil {
		return fmt.Errorf("delete org: users: %w", err)
	}
	var owned struct {
		PK string `dynamo:"pk"`
	}
	itr = s.table.Get("gsi1pk", orgPK(orgID)).Index(gsi1).Iter()
	for itr.Next(ctx, &owned) {
		if err := s.deletePartition(ctx, owned.PK); err != nil {
			return fmt.Errorf("delete org: %w", err)
		}
	}
	if err := itr.Err(); err != nil {
		return fmt.Errorf("delete org: %w", translate(err))
	}
	return s.deletePartition(ctx, orgPK(orgID))
}

func (s *DB) batchDelete(ctx context.Context, keys []dynamo.Keyed) error {
	if len(keys) == 0 {
		return nil
	}
	if _, err := s.table.Batch(attrPK, attrSK).Write().Delete(keys...).Run(ctx); err != nil {
		return translate(err)
	}
	return nil
}
