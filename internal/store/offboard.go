package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/guregu/dynamo/v2"
	"golang.org/x/sync/errgroup"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/deletion"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
)

// The phases of an org's offboarding (docs/data-model.md, section 4b),
// recorded on the org item (offboardPhase): any run, after any crash,
// continues where the last one stopped.
const (
	phaseCutoff  = "cutoff"
	phaseContent = "content"
	phaseAudit   = "audit"
	phaseSweep   = "sweep"
	phaseFinal   = "final"
)

var errNoOffboarding = errs.E(errs.NotFound, "offboarding_not_found", "this organization is not being offboarded")

// StartOffboarding marks the org as being offboarded by actorID, an owner
// (at ifVersion when > 0), under owner's lease. An offboarding under way is
// returned unchanged, started false, unless its lease expired: then owner
// takes it over (started true).
func (s *Orgs) StartOffboarding(ctx context.Context, orgID, actorID string, ifVersion int64, owner string, now time.Time) (deletion.Job, bool, error) {
	ok, ak := orgKey(orgID), orgUserKey(orgID, actorID)
	org, err := getItem[orgItem](ctx, s.DB, ok, true, errOrgNotFound, "start offboarding", ids.Resource("orgId", orgID), ids.User("userId", actorID))
	if err != nil {
		return deletion.Job{}, false, err
	}
	if org.Deleting {
		j := orgJob(org)
		if j.LeaseOwner != "" && now.Before(j.LeaseUntil) {
			return j, false, nil
		}
		got, err := (&Deletions{s.DB}).Acquire(ctx, j, owner, now)
		if err != nil || !got {
			return j, false, err
		}
		j.LeaseOwner, j.LeaseUntil = owner, now.Add(s.lease)
		return j, true, nil
	}
	if ifVersion > 0 && org.Version != ifVersion {
		return deletion.Job{}, false, errVersion
	}
	t := s.newTx().
		update(ok, s.updateAt(ok).
			Set("deleting", true).Set("deletingSince", now).Set("offboardBy", actorID).Set("offboardPhase", phaseCutoff).
			Set("gsi3pk", deletionsPK).Set("gsi3sk", orgDeletionSK(orgID)).
			Set("leaseOwner", owner).Set("leaseUntil", now.Add(s.lease).UnixMilli()).
			If(liveAtVersion, org.Version), goneOr(errOrgNotFound, errVersion)).
		update(ak, s.updateAt(ak).Set("deleting", true).If(exists), nil)
	s.fence(t, orgID, actorID, string(authz.Owner))
	if err := t.run(ctx, "start offboarding"); err != nil {
		if err == errVersion && ifVersion == 0 {
			err = errs.E(errs.Conflict, "concurrent_update", "the organization changed while its offboarding started; retry")
		}
		return deletion.Job{}, false, err
	}
	org.Deleting, org.Since, org.OffboardBy, org.Phase, org.LeaseOwner, org.LeaseUntilMs = true, now, actorID, phaseCutoff, owner, now.Add(s.lease).UnixMilli()
	return orgJob(org), true, nil
}

func orgJob(o orgItem) deletion.Job {
	j, _ := deletionItem{Type: typeOrg, OrgID: o.ID, Since: o.Since, By: o.OffboardBy, Phase: o.Phase,
		LeaseOwner: o.LeaseOwner, LeaseUntil: o.LeaseUntilMs}.job()
	return j
}

// offboarding reads the org consistently (once its ID is checked):
// errNoOffboarding unless it is being offboarded (it is gone once its
// offboarding finished).
func (d *DB) offboarding(ctx context.Context, orgID, op string) (orgItem, error) {
	org, err := getItem[orgItem](ctx, d, orgKey(orgID), true, errNoOffboarding, op, ids.Resource("orgId", orgID))
	if err == nil && !org.Deleting {
		err = errNoOffboarding
	}
	return org, err
}

// GetOffboarding reads the offboarding of an org (consistently): NotFound
// (offboarding_not_found) when there is none, or it finished.
func (s *Orgs) GetOffboarding(ctx context.Context, orgID string) (deletion.Job, error) {
	org, err := s.offboarding(ctx, orgID, "get offboarding")
	return orgJob(org), err
}

// ReleaseOffboarding gives up owner's lease on the org's offboarding after
// its run failed, so another run takes over at once.
func (s *Orgs) ReleaseOffboarding(ctx context.Context, orgID, owner string) error {
	return (&Deletions{s.DB}).Release(ctx, deletion.Job{Kind: deletion.Org, OrgID: orgID}, owner)
}

// CutOff runs the cutoff phase of an offboarding owner holds, if it has not
// run yet: on nil, no member but the offboarding owner has an edge.
func (s *Orgs) CutOff(ctx context.Context, orgID, owner string) error {
	org, err := s.offboarding(ctx, orgID, "cut off org")
	switch {
	case err != nil:
		return err
	case org.LeaseOwner != owner:
		return errLeaseLost
	case org.Phase != phaseCutoff:
		return nil
	}
	return s.cutoff(ctx, orgID, &leaseKeeper{d: s.DB, k: orgKey(orgID), owner: owner, last: time.Now()})
}

func (d *DB) cutoff(ctx context.Context, orgID string, lk *leaseKeeper) error {
	var keys []dynamo.Keyed
	itr := d.table.Get(attrPK, orgPK(orgID)).Range(attrSK, dynamo.BeginsWith, prefixUser).Consistent(true).Iter()
	var u orgUserItem
	for itr.Next(ctx, &u) {
		if !u.Deleting { // the owner offboarding it: removed last
			c := toClaimItem(fromOrgUserItem(u))
			keys = append(keys, dynamo.Keys{u.PK, u.SK}, dynamo.Keys{c.PK, c.SK})
		}
		u = orgUserItem{}
	}
	if err := itr.Err(); err != nil {
		return fmt.Errorf("offboard cutoff: %w", translate(err))
	}
	// In parts, renewing the lease between them.
	for part := range slices.Chunk(keys, 250) {
		if err := lk.keep(ctx); err != nil {
			return err
		}
		if err := d.batchDelete(ctx, part); err != nil {
			return fmt.Errorf("offboard cutoff: %w", err)
		}
	}
	return d.setPhase(ctx, orgID, lk.owner, phaseContent, true)
}

// setPhase records that an offboarding reached phase (and renews owner's
// lease); cutoff also records when the members were cut off.
func (d *DB) setPhase(ctx context.Context, orgID, owner, phase string, cutoff bool) error {
	k := orgKey(orgID)
	u := d.updateAt(k).Set("offboardPhase", phase)
	if cutoff {
		u = u.Set("cutoffAt", time.Now())
	}
	return d.underLease(ctx, u, owner, "offboard "+phase)
}

// finishOrg runs the offboarding's remaining phases under owner's lease.
func (d *DB) finishOrg(ctx context.Context, orgID, owner string) error {
	ok := orgKey(orgID)
	org, err := getItem[orgItem](ctx, d, ok, true, nil, "offboard")
	switch {
	case err != nil:
		return err
	case org.ID == "":
		return nil // gone: finished
	case !org.Deleting:
		return fmt.Errorf("offboard: org %s is not being offboarded", orgID)
	case org.LeaseOwner != owner:
		return errLeaseLost
	}
	lk := &leaseKeeper{d: d, k: ok, owner: owner, last: time.Now()}
	phase := org.Phase
	if phase == phaseCutoff {
		if err := d.cutoff(ctx, orgID, lk); err != nil {
			return err
		}
		phase, org.CutoffAt = phaseContent, time.Now()
	}
	if phase == phaseContent {
		if err := d.deleteOrgPartitions(ctx, orgID, lk); err != nil {
			return err
		}
		if err := d.setPhase(ctx, orgID, owner, phaseAudit, false); err != nil {
			return err
		}
		phase = phaseAudit
	}
	if phase == phaseAudit {
		// Every month from the org's creation to a month past now: a bucket is
		// keyed by its events' times, from other clocks, so err late.
		c, now := org.CreatedAt.UTC(), time.Now().UTC()
		for m := time.Date(c.Year(), c.Month(), 1, 0, 0, 0, 0, time.UTC); !m.After(now.AddDate(0, 1, 0)); m = m.AddDate(0, 1, 0) {
			if err := lk.keep(ctx); err != nil {
				return err
			}
			if err := d.deletePartition(ctx, auditPK(orgID, m)); err != nil {
				return fmt.Errorf("offboard audit: %w", err)
			}
		}
		if err := d.setPhase(ctx, orgID, owner, phaseSweep, false); err != nil {
			return err
		}
		phase = phaseSweep
	}
	if phase == phaseSweep {
		for wait := time.Until(org.CutoffAt.Add(d.grace)); wait > 0; wait = time.Until(org.CutoffAt.Add(d.grace)) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(min(wait, d.lease/3)):
			}
			if err := lk.keep(ctx); err != nil {
				return err
			}
		}
		if err := d.deleteOrgPartitions(ctx, orgID, lk); err != nil {
			return err
		}
		if err := d.setPhase(ctx, orgID, owner, phaseFinal, false); err != nil {
			return err
		}
	}
	// final: everything left in the org partition; then one transaction of
	// the org item, the offboarding owners' edges and claims, and the refund
	// to its creator's quota (none for an org older than createdBy).
	var keys []dynamo.Keyed
	t := d.newTx().delete(ok, d.deleteAt(ok).If("deleting = ? AND leaseOwner = ?", true, owner), failWith(errLeaseLost))
	if org.CreatedBy != "" {
		d.ownedOrgs(t, org.CreatedBy, -1, 0)
	}
	itr := d.table.Get(attrPK, orgPK(orgID)).Consistent(true).Iter()
	var it dynamo.Item
	for itr.Next(ctx, &it) {
		switch entityType(it) {
		case typeOrg:
		case typeOrgUser:
			var u orgUserItem
			if err := dynamo.UnmarshalItem(it, &u); err != nil {
				return err
			}
			c := toClaimItem(fromOrgUserItem(u))
			if u.Deleting && u.Role == string(authz.Owner) && len(t.ops) < maxTxItems-2 {
				uk := key{u.PK, u.SK}
				t.delete(uk, d.deleteAt(uk), nil)
				t.delete(c.key(), d.deleteAt(c.key()), nil)
				continue
			}
			keys = append(keys, dynamo.Keys{u.PK, u.SK}, dynamo.Keys{c.PK, c.SK})
		default:
			keys = append(keys, dynamo.Keys{attrS(it, attrPK), attrS(it, attrSK)})
		}
		it = nil
	}
	if err := itr.Err(); err != nil {
		return fmt.Errorf("offboard final: %w", translate(err))
	}
	if err := d.batchDelete(ctx, keys); err != nil {
		return fmt.Errorf("offboard final: %w", err)
	}
	return t.run(ctx, "offboard final")
}

// deleteOrgPartitions deletes every partition GSI1 lists under the org, a
// few at a time, renewing the lease between them.
func (d *DB) deleteOrgPartitions(ctx context.Context, orgID string, lk *leaseKeeper) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(1 + offboardWorkers) // the listing and the partitions it hands out
	g.Go(func() error {
		var owned deletionItem
		seen := map[string]bool{}
		itr := d.table.Get("gsi1pk", orgPK(orgID)).Index(gsi1).Project(attrPK).Iter()
		for itr.Next(gctx, &owned) {
			if seen[owned.PK] {
				continue
			}
			seen[owned.PK] = true
			if err := lk.keep(gctx); err != nil {
				return err
			}
			// A few partitions at a time: the work is bound by round trips.
			pk := owned.PK
			g.Go(func() error {
				if err := d.deletePartition(gctx, pk); err != nil {
					return fmt.Errorf("offboard: %w", err)
				}
				return nil
			})
		}
		return dbErr("offboard: list partitions", itr.Err())
	})
	return g.Wait()
}

// offboardWorkers is how many partitions an offboarding empties at once.
const offboardWorkers = 8

// batchDelete deletes keys with BatchWriteItem: 25 keys per request,
// unprocessed ones retried by guregu/dynamo.
func (d *DB) batchDelete(ctx context.Context, keys []dynamo.Keyed) error {
	if len(keys) == 0 {
		return nil
	}
	_, err := d.table.Batch(attrPK, attrSK).Write().Delete(keys...).Run(ctx)
	return translate(err)
}
