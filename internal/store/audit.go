package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/guregu/dynamo/v2"
	"github.com/oklog/ulid/v2"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/page"
)

// Audit reads the org's audit log. Events are written by the other stores,
// inside the transaction of the change they record.
type Audit struct{ *DB }

var _ audit.Storer = (*Audit)(nil)

type auditItem struct {
	PK         string `dynamo:"pk,hash"`
	SK         string `dynamo:"sk,range"`
	Type       string `dynamo:"type"`
	OrgID      string `dynamo:"orgId"`
	ID         string `dynamo:"eventId"`
	ActorID    string `dynamo:"actorId"`
	Action     string `dynamo:"action"`
	TargetType string `dynamo:"targetType"`
	TargetID   string `dynamo:"targetId"`
	RequestID  string `dynamo:"requestId"`
	// ClientRequestID is the client's X-Request-Id, when well-formed.
	ClientRequestID string    `dynamo:"clientRequestId,omitempty"`
	At              time.Time `dynamo:"at"`
	Changes         string    `dynamo:"changes"` // JSON list of {field, before, after}
}

func toAuditItem(ev audit.Event) auditItem {
	return auditItem{PK: auditPK(ev.OrgID, ev.At), SK: auditSK(ev.ID), Type: typeAudit, OrgID: ev.OrgID, ID: ev.ID,
		ActorID: ev.ActorID, Action: ev.Action, TargetType: ev.TargetType, TargetID: ev.TargetID,
		RequestID: ev.RequestID, ClientRequestID: ev.ClientRequestID, At: ev.At, Changes: audit.MarshalChanges(ev.Changes)}
}

func fromAuditItem(it auditItem) audit.Event {
	ev := audit.Event{OrgID: it.OrgID, ID: it.ID, ActorID: it.ActorID, Action: it.Action, TargetType: it.TargetType,
		TargetID: it.TargetID, RequestID: it.RequestID, ClientRequestID: it.ClientRequestID, At: it.At}
	if it.Changes != "" {
		_ = json.Unmarshal([]byte(it.Changes), &ev.Changes)
	}
	return ev
}

// OrgCreatedAt is when the org was created: the audit log's listing starts
// there at the earliest.
func (s *Audit) OrgCreatedAt(ctx context.Context, orgID string) (time.Time, error) {
	it, err := getItem[orgItem](ctx, s.DB, orgKey(orgID), false, errOrgNotFound, "get org", ids.Resource("orgId", orgID))
	return it.CreatedAt, err
}

// maxAuditRange bounds how far back one listing reaches by default.
const maxAuditRange = 366 * 24 * time.Hour

type auditCursor struct {
	Bucket string `json:"b"`
	After  string `json:"a,omitempty"` // sk of the last event returned in Bucket
}

// ListAuditEvents queries the org's monthly buckets newest first, within
// [Since, Until]: Until is required, Since defaults to a year before it.
func (s *Audit) ListAuditEvents(ctx context.Context, q audit.Query) (page.Result[audit.Event], error) {
	var none page.Result[audit.Event]
	if err := checkIDs(ids.Resource("orgId", q.OrgID)); err != nil {
		return none, err
	}
	p, err := q.Page.Check()
	if err != nil {
		return none, err
	}
	until := q.Until
	if until.IsZero() { // the service sets it from its clock: the store keeps none
		return none, fmt.Errorf("list audit events: the query has no Until")
	}
	since := q.Since
	if since.IsZero() {
		since = until.Add(-maxAuditRange)
	}
	if since.After(until) {
		return none, errs.InvalidParam("since", "invalid_range", "must not be after until")
	}
	lo := prefixEvent + ulidBound(since, '0')
	hi := prefixEvent + ulidBound(until, 'Z')
	cur := auditCursor{Bucket: auditBucket(until)}
	if p.After != "" {
		if cur, err = decodeAuditCursor(p.After, auditBucket(since), auditBucket(until)); err != nil {
			return none, err
		}
	}
	out := page.Result[audit.Event]{Items: []audit.Event{}}
	for range maxAuditQueries { // bound the work of one request
		pk := auditBucketPK(q.OrgID, cur.Bucket)
		want := p.Limit - len(out.Items)
		qq := s.table.Get(attrPK, pk).Range(attrSK, dynamo.Between, lo, hi).Order(dynamo.Descending).Limit(want + 1)
		if cur.After != "" {
			qq = qq.StartFrom(dynamo.PagingKey{
				attrPK: &types.AttributeValueMemberS{Value: pk},
				attrSK: &types.AttributeValueMemberS{Value: cur.After},
			})
		}
		var items []auditItem
		if err := qq.All(ctx, &items); err != nil {
			return none, fmt.Errorf("list audit events: %w", translate(err))
		}
		more := len(items) > want
		items = items[:min(len(items), want)]
		for _, it := range items {
			out.Items = append(out.Items, fromAuditItem(it))
			out.After = append(out.After, encodeCursor(auditCursor{Bucket: cur.Bucket, After: it.SK}))
		}
		if more {
			out.Next = encodeCursor(auditCursor{Bucket: cur.Bucket, After: items[len(items)-1].SK})
			return out, nil
		}
		prev := previousBucket(cur.Bucket)
		if prev < auditBucket(since) {
			return out, nil
		}
		cur = auditCursor{Bucket: prev}
		if len(out.Items) == p.Limit {
			break
		}
	}
	out.Next = encodeCursor(cur)
	return out, nil
}

// maxAuditQueries bounds the buckets one request reads: the default range.
const maxAuditQueries = 13

// ulidBound is the smallest ('0') or largest ('Z') ULID of t's millisecond.
func ulidBound(t time.Time, fill byte) string {
	var id ulid.ULID
	_ = id.SetTime(ulid.Timestamp(t))
	return id.String()[:10] + strings.Repeat(string(fill), 16)
}

func previousBucket(b string) string {
	t, err := time.Parse("2006-01", b)
	if err != nil {
		return ""
	}
	return t.AddDate(0, -1, 0).Format("2006-01")
}

func decodeAuditCursor(s, minBucket, maxBucket string) (auditCursor, error) {
	var c auditCursor
	if !decodeCursor(s, &c) {
		return c, errCursor
	}
	if _, err := time.Parse("2006-01", c.Bucket); err != nil || c.Bucket < minBucket || c.Bucket > maxBucket {
		return c, errCursor
	}
	if c.After != "" {
		id, ok := strings.CutPrefix(c.After, prefixEvent)
		if !ok || !ids.ValidResource(id) {
			return c, errCursor
		}
	}
	return c, nil
}
