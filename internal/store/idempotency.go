package store

import (
	"context"
	"time"

	"github.com/guregu/dynamo/v2"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/idempotency"
	"github.com/tenantd/tenantd/internal/ids"
)

// Idempotency keeps replayable responses of creating POSTs, until they expire.
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
	ResourceID  string    `dynamo:"resourceId"` // what the request creates is given this ID, on every attempt
	Released    bool      `dynamo:"released"`   // the last attempt ended in a server error: a retry may take over
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

func toIdempotencyItem(r idempotency.Record) idempotencyItem {
	k := idempotencyKey(r.OrgID, r.UserID, r.Key)
	it := idempotencyItem{PK: k.PK, SK: k.SK, Type: typeIdempotent, OrgID: r.OrgID, UserID: r.UserID,
		Fingerprint: r.Fingerprint, Owner: r.Owner, ResourceID: r.ResourceID, Released: r.Released, Done: r.Done, Status: r.Status, ContentType: r.ContentType, ETag: r.ETag,
		Body: r.Body, CreatedAt: r.CreatedAt, StartedAt: r.CreatedAt.Unix(), ExpiresAt: r.ExpiresAt.Unix()}
	if r.OrgID != "" {
		it.GSI1PK, it.GSI1SK = orgPK(r.OrgID), k.PK
	}
	return it
}

func fromIdempotencyItem(it idempotencyItem, r idempotency.Record) idempotency.Record {
	r.Fingerprint, r.Done, r.Status, r.ContentType, r.ETag, r.Body = it.Fingerprint, it.Done, it.Status, it.ContentType, it.ETag, it.Body
	r.Owner, r.ResourceID, r.Released = it.Owner, it.ResourceID, it.Released
	r.CreatedAt, r.ExpiresAt = it.CreatedAt, time.Unix(it.ExpiresAt, 0)
	return r
}

func checkRecord(r idempotency.Record) error {
	return checkIDs(ifSet(ids.Resource, "orgId", r.OrgID), ids.User("userId", r.UserID))
}

// Begin puts the record unless an unexpired one holds the key; on a clash it
// returns that record from a consistent read.
func (s *Idempotency) Begin(ctx context.Context, r idempotency.Record) (idempotency.Record, bool, error) {
	it := toIdempotencyItem(r)
	err := s.putRecord(ctx, r, s.table.Put(it).If("attribute_not_exists(pk) OR expiresAt < ?", r.CreatedAt.Unix()), "begin idempotent request")
	if err == nil {
		return r, true, nil
	}
	if err != errRecordTaken {
		return idempotency.Record{}, false, err
	}
	cur, err := getItem[idempotencyItem](ctx, s.DB, key{it.PK, it.SK}, true, nil, "read idempotent request")
	if err != nil {
		return idempotency.Record{}, false, err
	}
	if cur.PK == "" { // deleted in between (expired): the caller may retry
		return s.Begin(ctx, r)
	}
	if !cur.Done && cur.Owner == r.Owner {
		// Our own put committed but its response was lost and the SDK
		// retried it: the request is ours to run.
		return r, true, nil
	}
	return fromIdempotencyItem(cur, r), false, nil
}

// TakeOver replaces the unfinished record of prevOwner with r.
func (s *Idempotency) TakeOver(ctx context.Context, r idempotency.Record, prevOwner string) error {
	put := s.table.Put(toIdempotencyItem(r)).If("done = ? AND $ = ?", false, "owner", prevOwner)
	return s.putRecord(ctx, r, put, "take over idempotent request")
}

// The answers of a record's writes whose condition failed.
var (
	errRecordTaken = errs.E(errs.Conflict, "idempotency_taken", "the idempotency key is held by another attempt")
	errRecordGone  = errs.E(errs.Conflict, "idempotency_record_gone", "the idempotency record is gone or was taken over")
)

// putRecord checks r's IDs, then runs a conditional put of it, under an org
// fenced on the member's edge like any of their writes.
func (s *Idempotency) putRecord(ctx context.Context, r idempotency.Record, put *dynamo.Put, op string) error {
	if err := checkRecord(r); err != nil {
		return err
	}
	if r.OrgID != "" && r.Role != "" {
		t := s.newTx().put(idempotencyKey(r.OrgID, r.UserID, r.Key), put, failWith(errRecordTaken))
		s.fence(t, r.OrgID, r.UserID, string(authz.Member))
		return t.run(ctx, op)
	}
	return condErr(put.Run(ctx), errRecordTaken, op)
}

// Complete stores the response in the record Begin wrote, if it is still
// ours: it never brings back a record an offboarding deleted.
func (s *Idempotency) Complete(ctx context.Context, r idempotency.Record) error {
	if err := checkRecord(r); err != nil {
		return err
	}
	err := s.table.Put(toIdempotencyItem(r)).If("attribute_exists(pk) AND $ = ?", "owner", r.Owner).Run(ctx)
	return condErr(err, errRecordGone, "complete idempotent request")
}

// Release opens an unfinished record of ours to a retry.
func (s *Idempotency) Release(ctx context.Context, r idempotency.Record) error {
	if err := checkRecord(r); err != nil {
		return err
	}
	k := idempotencyKey(r.OrgID, r.UserID, r.Key)
	err := s.updateAt(k).Set("released", true).If("done = ? AND $ = ?", false, "owner", r.Owner).Run(ctx)
	return condErr(err, nil, "release idempotent request") // failed: finished, taken over, or deleted by an offboarding
}
