package store

import (
	"context"
	"fmt"
	"time"

	"github.com/guregu/dynamo/v2"
	"golang.org/x/sync/errgroup"
)

// DeleteOrg offboards a tenant: it deletes every item the org owns, in
// bounded batches, resumably.
//
//  1. One transaction marks the org and the acting owner's edge as deleting.
//     From then on the actor's edge authorizes only this DELETE (every other
//     request of theirs gets 404), so a crash can be resumed by retrying it.
//  2. Every other user's edge and email claim goes (BatchWriteItem, 25 at a
//     time), cutting everyone else off.
//  3. Each partition GSI1 lists under ORG#<orgId> goes: teams with their
//     memberships, tickets with their comments, invitations and their email
//     pointers, idempotency records.
//  4. The audit log's monthly buckets go, from the org's creation to now.
//  5. Last, the actor's edge and claim and the org item.
//
// Every step deletes what is there and skips what is gone, so running it
// again after any crash finishes the job.
func (s *Tenants) DeleteOrg(ctx context.Context, orgID, actorID string, now time.Time) error {
	if err := checkIDs("orgId", orgID, "userId", actorID); err != nil {
		return err
	}
	ok, ak := orgKey(orgID), orgUserKey(orgID, actorID)
	org, err := getItem[orgItem](ctx, s.DB, ok, true, errOrgNotFound, "delete org")
	if err != nil {
		return err
	}
	actor, err := getItem[orgUserItem](ctx, s.DB, ak, true, errUserNotFound, "delete org")
	if err != nil {
		return err
	}
	if !org.Deleting || !actor.Deleting {
		t := s.newTx().
			update(s.table.Update(attrPK, ok.PK).Range(attrSK, ok.SK).Set("deleting", true).If(exists), failWith(errOrgNotFound)).
			update(s.table.Update(attrPK, ak.PK).Range(attrSK, ak.SK).Set("deleting", true).If(exists), failWith(errUserNotFound))
		if err := t.run(ctx, "mark org deleting"); err != nil {
			return err
		}
	}

	// 2. Everyone else's access.
	var keys []dynamo.Keyed
	itr := s.table.Get(attrPK, orgPK(orgID)).Range(attrSK, dynamo.BeginsWith, prefixUser).Iter()
	var u orgUserItem
	for itr.Next(ctx, &u) {
		if u.UserID == actorID {
			continue
		}
		c := toClaimItem(fromOrgUserItem(u))
		keys = append(keys, dynamo.Keys{u.PK, u.SK}, dynamo.Keys{c.PK, c.SK})
	}
	if err := itr.Err(); err != nil {
		return fmt.Errorf("delete org: users: %w", translate(err))
	}
	if err := s.batchDelete(ctx, keys); err != nil {
		return fmt.Errorf("delete org: users: %w", err)
	}

	// 3 and 4. Everything GSI1 lists under the org, and the audit log's
	// monthly buckets (from the first of the creation month to now).
	parts := make(chan string)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(parts)
		var owned struct {
			PK string `dynamo:"pk"`
		}
		itr := s.table.Get("gsi1pk", orgPK(orgID)).Index(gsi1).Project(attrPK).Iter()
		for itr.Next(gctx, &owned) {
			select {
			case parts <- owned.PK:
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		if err := itr.Err(); err != nil {
			return fmt.Errorf("delete org: %w", translate(err))
		}
		c := org.CreatedAt.UTC()
		for m := time.Date(c.Year(), c.Month(), 1, 0, 0, 0, 0, time.UTC); !m.After(now.UTC()); m = m.AddDate(0, 1, 0) {
			select {
			case parts <- auditPK(orgID, m):
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		return nil
	})
	// A few partitions at a time: each is a Query for its keys and then
	// BatchWriteItem deletes, so the work is bound by round trips, not CPU.
	for range offboardWorkers {
		g.Go(func() error {
			for pk := range parts {
				if err := s.deletePartition(gctx, pk); err != nil {
					return fmt.Errorf("delete org: %w", err)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}

	// 5. The actor and the org itself.
	c := toClaimItem(fromOrgUserItem(actor))
	if err := s.batchDelete(ctx, []dynamo.Keyed{dynamo.Keys{c.PK, c.SK}, dynamo.Keys{ak.PK, ak.SK}}); err != nil {
		return fmt.Errorf("delete org: %w", err)
	}
	if err := s.deletePartition(ctx, orgPK(orgID)); err != nil {
		return fmt.Errorf("delete org: %w", err)
	}
	return nil
}

// offboardWorkers is how many partitions DeleteOrg empties at once.
const offboardWorkers = 8

// batchDelete deletes keys with BatchWriteItem: 25 keys per request,
// unprocessed ones retried by guregu/dynamo.
func (d *DB) batchDelete(ctx context.Context, keys []dynamo.Keyed) error {
	if len(keys) == 0 {
		return nil
	}
	if _, err := d.table.Batch(attrPK, attrSK).Write().Delete(keys...).Run(ctx); err != nil {
		return translate(err)
	}
	return nil
}
