package store

import (
	"context"
	"fmt"
	"time"

	"github.com/guregu/dynamo/v2"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/deletion"
)

// A cascade is the delete of a parent item with the children in its
// partition (a team's edges, a ticket's comments), such that no child
// outlives it (docs/data-model.md, sections 4a, 4b): in one transaction
// conditioned on the parent's count of children, or, for a parent too large
// or that kept changing, marked deleting under a lease first, then in parts.
type cascade struct {
	what       string // "team", "ticket": names the operations
	key        key    // the parent's #METADATA item; its partition holds the children
	deletionSK string // its GSI3 sort key in the DELETING partition, while marked
	count      string // the parent's count of its children
	child      string // the children's entity type
	notFound   error
	perChild   int // how many transaction items dropping one child takes
	// drop adds to t the delete of child c and what goes with it.
	drop func(t *txn, c deletionItem)
	// counts adds to the parent's update for a part the changes of its
	// counts beyond count (a team's ownerCount); nil when there are none.
	counts func(u *dynamo.Update, part []deletionItem) *dynamo.Update
}

// read is a consistent read of c's partition: the parent (nil when it does
// not exist) and every child that committed before.
func (c cascade) read(ctx context.Context, d *DB) (*deletionItem, []deletionItem, error) {
	var items []deletionItem
	err := d.table.Get(attrPK, c.key.PK).Consistent(true).
		Project(attrPK, attrSK, "type", "userId", "role", "version", "deleting", "leaseOwner").All(ctx, &items)
	if err != nil {
		return nil, nil, translate(err)
	}
	var parent *deletionItem
	var children []deletionItem
	for i, it := range items {
		switch {
		case it.SK == c.key.SK:
			parent = &items[i]
		case it.Type == c.child:
			children = append(children, it)
		}
	}
	return parent, children, nil
}

// deleteCascade deletes c's parent (at version ifVersion when > 0) and its
// children, with the audit event ev: c.notFound when it is gone or being
// deleted, errVersion, or errBusy when it never stopped changing; checks
// as getItem's.
func deleteCascade(ctx context.Context, d *DB, c cascade, ifVersion int64, ev audit.Event, checks ...error) error {
	if err := checkIDs(checks...); err != nil {
		return err
	}
	k := c.key
	for attempt := range maxDeleteAttempts {
		parent, children, err := c.read(ctx, d)
		if err != nil {
			return fmt.Errorf("delete %s: %w", c.what, err)
		}
		switch {
		case parent == nil || parent.Deleting:
			return c.notFound // a marked one is finished by its run or the worker
		case ifVersion > 0 && parent.Version != ifVersion:
			return errVersion
		}
		const fixed = 3 // the parent, the audit event, the actor fence
		if attempt < singleTxAttempts && len(children)*c.perChild+fixed <= maxTxItems {
			t := d.newTx().delete(k, d.deleteAt(k).If(liveAtVersion+" AND $ = ?", parent.Version, c.count, len(children)), retryOn)
			for _, child := range children {
				c.drop(t, child)
			}
			err := d.audited(ev, t).run(ctx, "delete "+c.what)
			if err == errRetry {
				continue
			}
			return err
		}
		// Too large for one transaction: mark it, then delete in parts.
		owner := deletion.NewOwner()
		now := time.Now()
		t := d.newTx().update(k, d.updateAt(k).
			Set("deleting", true).Set("gsi3pk", deletionsPK).Set("gsi3sk", c.deletionSK).
			Set("deletingSince", now).Set("leaseOwner", owner).Set("leaseUntil", now.Add(d.lease).UnixMilli()).
			If(liveAtVersion, parent.Version), retryOn)
		err = d.audited(ev, t).run(ctx, "mark "+c.what+" deleting")
		if err == errRetry {
			continue
		}
		if err != nil {
			return err
		}
		return finishCascade(ctx, d, c, owner)
	}
	return errBusy
}

// finishCascade deletes c's parent, marked deleting, under owner's lease:
// its children in parts that decrement the counts, then the parent.
func finishCascade(ctx context.Context, d *DB, c cascade, owner string) error {
	k := c.key
	for attempts := 0; ; {
		parent, children, err := c.read(ctx, d)
		if err != nil {
			return fmt.Errorf("finish %s deletion: %w", c.what, err)
		}
		if parent == nil {
			return nil
		}
		if !parent.Deleting {
			return fmt.Errorf("finish %s deletion: %s %s is not being deleted", c.what, c.what, k.PK)
		}
		if parent.LeaseOwner != owner {
			return errLeaseLost
		}
		t := d.newTx()
		if len(children) == 0 { // and none can commit under a parent being deleted
			t.delete(k, d.deleteAt(k).If("deleting = ? AND leaseOwner = ?", true, owner), retryOn)
		} else {
			part := children[:min(len(children), (maxTxItems-1)/c.perChild)]
			u := d.updateAt(k).Add(c.count, -len(part))
			if c.counts != nil {
				u = c.counts(u, part)
			}
			t.update(k, u.Set("leaseUntil", time.Now().Add(d.lease).UnixMilli()).If("deleting = ? AND leaseOwner = ?", true, owner), retryOn)
			for _, child := range part {
				c.drop(t, child)
			}
		}
		err = t.run(ctx, "delete "+c.what+" children")
		switch {
		case err == errRetry:
			attempts++
			if attempts > maxDeleteAttempts*4 {
				return err
			}
		case err != nil:
			return err
		case len(children) == 0:
			return nil
		}
	}
}
