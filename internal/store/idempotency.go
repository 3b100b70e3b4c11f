package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/guregu/dynamo/v2"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/idempotency"
)

// Idempotency keeps replayable responses of creating POSTs, expiring with
// the table's TTL attribute (and ignored once expired, since TTL deletion
// lags).
type Idempotency struct{ *DB }

var _ idempotency.Storer = (*Idempotency)(nil)

type idempotencyItem struct {
	PK          string    `dynamo:"pk,hash"`
	SK          string    `dynamo:"sk,range"`
	Type        string    `dynamo:"type"`
	OrgID       string    `dynamo:"orgId"`
	UserID      string    `dynamo:"userId"`
	Fingerprint string    `dynamo:"fingerprint"`
	Owner       string    `dynamo:"owner"`
	Done        bool      `dynamo:"done"`
	Status      int       `dynamo:"status"`
	ContentType string    `dynamo:"contentType"`
	ETag        string    `dynamo:"etag"`
	Body        []byte    `dynamo:"body"`
	GSI1PK      string    `dynamo:"gsi1pk"` // ORG#<orgId> for org-scoped records, so offboarding finds them
	GSI1SK      string    `dynamo:"gsi1sk"`
	CreatedAt   time.Time `dynamo:"createdAt"`
	StartedAt   int64     `dynamo:"startedAt"` // epoch seconds, for taking over a crashed attempt
	ExpiresAt   int64     `dynamo:"expiresAt"` // epoch seconds: the TTL attribute
}

// staleAfter is how long an unfinished record blocks its key: a request
// that crashed mid-way must not block retries for 24 hours.
const staleAfter = time.Minute

func toIdempotencyItem(r idempotency.Record) idempotencyItem {
	k := idempotencyKey(r.OrgID, r.UserID, r.Key)
	it := idempotencyItem{PK: k.PK, SK: k.SK, Type: typeIdempotent, OrgID: r.OrgID, UserID: r.UserID,
		Fingerprint: r.Fingerprint, Owner: r.Owner, Done: r.Done, Status: r.Status, ContentType: r.ContentType, ETag: r.ETag,
		Body: r.Body, CreatedAt: r.CreatedAt, StartedAt: r.CreatedAt.Unix(), ExpiresAt: r.ExpiresAt.Unix()}
	if r.OrgID != "" {
		it.GSI1PK, it.GSI1SK = orgPK(r.OrgID), k.PK
	}
	return it
}

func fromIdempotencyItem(it idempotencyItem, r idempotency.Record) idempotency.Record {
	r.Fingerprint, r.Done, r.Status, r.ContentType, r.ETag, r.Body = it.Fingerprint, it.Done, it.Status, it.ContentType, it.ETag, it.Body
	r.CreatedAt, r.ExpiresAt = it.CreatedAt, time.Unix(it.ExpiresAt, 0)
	return r
}

func checkRecord(r idempotency.Record) error {
	if r.OrgID != "" {
		if err := checkIDs("orgId", r.OrgID); err != nil {
			return err
		}
	}
	return checkIDs("userId", r.UserID)
}

// Begin puts the record unless a live one holds the key (a conditional
// PutItem); on a clash it returns the live record from a consistent read.
func (s *Idempotency) Begin(ctx context.Context, r idempotency.Record) (idempotency.Record, bool, error) {
	if err := checkRecord(r); err != nil {
		return idempotency.Record{}, false, err
	}
	it := toIdempotencyItem(r)
	put := s.table.Put(it).If("attribute_not_exists(pk) OR expiresAt < ? OR (done = ? AND startedAt < ?)",
		r.CreatedAt.Unix(), false, r.CreatedAt.Add(-staleAfter).Unix())
	var err error
	if r.OrgID != "" && r.Role != "" {
		// Under an org, the record is a write of a member like any other:
		// fenced on their edge, so none lands once the org's offboarding
		// has cut its members off.
		errTaken := errs.E(errs.Conflict, "idempotency_taken", "taken")
		t := s.newTx().put(key{it.PK, it.SK}, put, failWith(errTaken))
		s.fence(t, r.OrgID, r.UserID, string(authz.Member))
		err = t.run(ctx, "begin idempotent request")
		if err == nil {
			return r, true, nil
		}
		if err != errTaken {
			return idempotency.Record{}, false, err
		}
	} else {
		err = put.Run(ctx)
		if err == nil {
			return r, true, nil
		}
		if failed, _ := condFailed(err); !failed && !dynamo.IsCondCheckFailed(err) {
			return idempotency.Record{}, false, fmt.Errorf("begin idempotent request: %w", translate(err))
		}
	}
	var cur idempotencyItem
	err = s.table.Get(attrPK, it.PK).Range(attrSK, dynamo.Equal, it.SK).Consistent(true).One(ctx, &cur)
	if errors.Is(err, dynamo.ErrNotFound) { // abandoned in between: the caller may retry
		return s.Begin(ctx, r)
	}
	if err != nil {
		return idempotency.Record{}, false, fmt.Errorf("read idempotent request: %w", translate(err))
	}
	if !cur.Done && cur.Owner == r.Owner {
		// Our own put committed but its response was lost and the SDK
		// retried it: the request is ours to run.
		return r, true, nil
	}
	return fromIdempotencyItem(cur, r), false, nil
}

// Complete stores the response in the record Begin wrote, if it is still
// ours: it never brings back a record an offboarding deleted.
func (s *Idempotency) Complete(ctx context.Context, r idempotency.Record) error {
	if err := checkRecord(r); err != nil {
		return err
	}
	err := s.table.Put(toIdempotencyItem(r)).If("attribute_exists(pk) AND $ = ?", "owner", r.Owner).Run(ctx)
	if failed, _ := condFailed(err); failed {
		return errs.E(errs.Conflict, "idempotency_record_gone", "the idempotency record is gone or was taken over")
	}
	if err != nil {
		return fmt.Errorf("complete idempotent request: %w", translate(err))
	}
	return nil
}

// Abandon deletes a record that did not complete.
func (s *Idempotency) Abandon(ctx context.Context, r idempotency.Record) error {
	if err := checkRecord(r); err != nil {
		return err
	}
	k := idempotencyKey(r.OrgID, r.UserID, r.Key)
	if err := s.table.Delete(attrPK, k.PK).Range(attrSK, k.SK).If("done = ? AND $ = ?", false, "owner", r.Owner).Run(ctx); err != nil {
		if failed, _ := condFailed(err); failed {
			return nil
		}
		return fmt.Errorf("abandon idempotent request: %w", translate(err))
	}
	return nil
}
