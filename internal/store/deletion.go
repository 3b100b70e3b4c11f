package store

import (
	"context"
	"fmt"
	"time"

	"github.com/guregu/dynamo/v2"

	"github.com/tenantd/tenantd/internal/deletion"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
)

// Deletions finds and finishes deletions that outlived their request: items
// in GSI3's DELETING partition, each under a lease one run at a time holds.
type Deletions struct{ *DB }

var _ deletion.Storer = (*Deletions)(nil)

// Default timing of deletions; SetDeletionTiming changes them.
const (
	// DefaultDeletionLease is how long a run holds a deletion before another
	// may take it over; a run renews it long before.
	DefaultDeletionLease = 30 * time.Second
	// DefaultDeletionGrace is how long an offboarding waits, after cutting
	// the org's members off, before its last sweep of GSI1, whose entry of
	// an item written just before the cut-off may lag (on AWS, not Local).
	DefaultDeletionGrace = 10 * time.Second
)

var errLeaseLost = errs.E(errs.Conflict, "lease_lost", "another run took over this deletion")

// deletionItem is what the deletions read of any item.
type deletionItem struct {
	PK         string    `dynamo:"pk"`
	SK         string    `dynamo:"sk"`
	Type       string    `dynamo:"type"`
	OrgID      string    `dynamo:"orgId"`
	TeamID     string    `dynamo:"teamId"`
	TicketID   string    `dynamo:"ticketId"`
	UserID     string    `dynamo:"userId"`
	Role       string    `dynamo:"role"`
	OwnerCount int       `dynamo:"ownerCount"`
	Version    int64     `dynamo:"version"`
	Deleting   bool      `dynamo:"deleting"`
	Since      time.Time `dynamo:"deletingSince"`
	By         string    `dynamo:"offboardBy"`
	Phase      string    `dynamo:"offboardPhase"`
	LeaseOwner string    `dynamo:"leaseOwner"`
	LeaseUntil int64     `dynamo:"leaseUntil"`
}

func (it deletionItem) key() key { return key{it.PK, it.SK} }

// job is the deletion the item records, if it is an org, team or ticket.
func (it deletionItem) job() (deletion.Job, bool) {
	j := deletion.Job{OrgID: it.OrgID, Since: it.Since, By: it.By, Phase: it.Phase, LeaseOwner: it.LeaseOwner}
	if it.LeaseUntil > 0 {
		j.LeaseUntil = time.UnixMilli(it.LeaseUntil)
	}
	switch it.Type {
	case typeOrg:
		j.Kind = deletion.Org
	case typeTeam:
		j.Kind, j.ID = deletion.Team, it.TeamID
	case typeTicket:
		j.Kind, j.ID = deletion.Ticket, it.TicketID
	default:
		return j, false
	}
	return j, true
}

// jobKey is the item that records job j.
func jobKey(j deletion.Job) (key, error) {
	switch j.Kind {
	case deletion.Org:
		return orgKey(j.OrgID), checkIDs(ids.Resource("orgId", j.OrgID))
	case deletion.Team:
		return teamKey(j.OrgID, j.ID), checkIDs(ids.Resource("orgId", j.OrgID), ids.Resource("teamId", j.ID))
	case deletion.Ticket:
		return ticketKey(j.OrgID, j.ID), checkIDs(ids.Resource("orgId", j.OrgID), ids.Resource("ticketId", j.ID))
	}
	return key{}, fmt.Errorf("unknown deletion kind %q", j.Kind)
}

// ListJobs reads the DELETING partition of GSI3.
func (s *Deletions) ListJobs(ctx context.Context, limit int) ([]deletion.Job, error) {
	var items []deletionItem
	err := s.table.Get("gsi3pk", deletionsPK).Index(gsi3).Limit(limit).All(ctx, &items)
	if err != nil {
		return nil, fmt.Errorf("list deletions: %w", translate(err))
	}
	out := make([]deletion.Job, 0, len(items))
	for _, it := range items {
		if j, ok := it.job(); ok && checkIDs(ids.Resource("orgId", j.OrgID)) == nil {
			out = append(out, j)
		}
	}
	return out, nil
}

// Acquire takes j's lease if it is free or expired.
func (s *Deletions) Acquire(ctx context.Context, j deletion.Job, owner string, now time.Time) (bool, error) {
	k, err := jobKey(j)
	if err != nil {
		return false, err
	}
	err = s.updateAt(k).Set("leaseOwner", owner).Set("leaseUntil", now.Add(s.lease).UnixMilli()).
		If("deleting = ? AND (attribute_not_exists(leaseUntil) OR leaseUntil < ?)", true, now.UnixMilli()).Run(ctx)
	if err = condErr(err, errLeaseLost, "acquire deletion"); err == errLeaseLost {
		return false, nil // another run holds it, or it is done
	}
	return err == nil, err
}

// Finish runs j to its end under owner's lease.
func (s *Deletions) Finish(ctx context.Context, j deletion.Job, owner string) error {
	if _, err := jobKey(j); err != nil {
		return err
	}
	switch j.Kind {
	case deletion.Team:
		return finishCascade(ctx, s.DB, s.teamCascade(j.OrgID, j.ID), owner)
	case deletion.Ticket:
		return finishCascade(ctx, s.DB, s.ticketCascade(j.OrgID, j.ID), owner)
	default:
		return s.finishOrg(ctx, j.OrgID, owner)
	}
}

// Release gives up owner's lease on j, if owner still holds it.
func (s *Deletions) Release(ctx context.Context, j deletion.Job, owner string) error {
	k, err := jobKey(j)
	if err != nil {
		return err
	}
	err = s.updateAt(k).Remove("leaseOwner", "leaseUntil").If("deleting = ? AND leaseOwner = ?", true, owner).Run(ctx)
	return condErr(err, nil, "release deletion") // failed: not ours any more, or done, so nothing to release
}

// underLease runs u, an update of an item whose deletion owner leases, only
// while owner holds the lease, and renews it: errLeaseLost otherwise.
func (d *DB) underLease(ctx context.Context, u *dynamo.Update, owner, op string) error {
	err := u.Set("leaseUntil", time.Now().Add(d.lease).UnixMilli()).If("deleting = ? AND leaseOwner = ?", true, owner).Run(ctx)
	return condErr(err, errLeaseLost, op)
}

// leaseKeeper renews a lease between steps, once a third of it has passed.
type leaseKeeper struct {
	d     *DB
	k     key
	owner string
	last  time.Time
}

func (l *leaseKeeper) keep(ctx context.Context) error {
	if time.Since(l.last) < l.d.lease/3 {
		return nil
	}
	u := l.d.updateAt(l.k)
	if err := l.d.underLease(ctx, u, l.owner, "renew deletion lease"); err != nil {
		return err
	}
	l.last = time.Now()
	return nil
}

// attrS reads a string attribute of an item ("" when it holds none).
func attrS(it dynamo.Item, name string) string { return (&attrs{item: it}).s(name) }
