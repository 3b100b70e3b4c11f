package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/guregu/dynamo/v2"

	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/webhook"
)

// Deliveries of webhook events live in their subscription's partition
// (DELIVERY#<eventId>); a pending one is also in its endpoint's GSI3
// queue (WEBHOOKQUEUE#<orgId>#<webhookId> / <queued ms>#<eventId>), in
// the order they were queued. An endpoint with pending deliveries has one
// WebhookDue item (#DUE) in a GSI3 due shard (WEBHOOKDUE#<n> / <due
// ms>#<orgId>#<webhookId>), which the workers of every replica read: a
// shard lists endpoints, not deliveries, so one endpoint's backlog delays
// no other endpoint. A failed attempt's retry holds up the deliveries
// queued after it: a failing endpoint backs off as a whole, and its
// backlog costs the workers nothing until its retry is due. A settled
// delivery leaves its queue and expires by TTL.

var errDeliveryNotFound = errs.E(errs.NotFound, "delivery_not_found", "delivery not found")

type deliveryItem struct {
	PK          string    `dynamo:"pk,hash"`
	SK          string    `dynamo:"sk,range"`
	Type        string    `dynamo:"type"`
	GSI1PK      string    `dynamo:"gsi1pk"`           // ORG#<orgId>, so offboarding finds it
	GSI1SK      string    `dynamo:"gsi1sk"`           // WHDELIVERY#<webhookId>#<eventId>
	GSI3PK      string    `dynamo:"gsi3pk,omitempty"` // WEBHOOKQUEUE#<orgId>#<webhookId> while pending
	GSI3SK      string    `dynamo:"gsi3sk,omitempty"`
	OrgID       string    `dynamo:"orgId"`
	WebhookID   string    `dynamo:"webhookId"`
	EventID     string    `dynamo:"eventId"`
	EventType   string    `dynamo:"eventType"`
	Body        []byte    `dynamo:"body"`
	State       string    `dynamo:"state"`
	Attempts    int       `dynamo:"attempts"`
	LastStatus  int       `dynamo:"lastStatus,omitempty"`
	LastError   string    `dynamo:"lastError,omitempty"`
	LatencyMs   int64     `dynamo:"latencyMs,omitempty"`
	NextAttempt int64     `dynamo:"nextAttemptAt,omitempty"` // epoch ms
	LeaseOwner  string    `dynamo:"leaseOwner,omitempty"`
	QueuedAt    int64     `dynamo:"queuedAt,omitempty"` // epoch ms: its place in the queue (gsi3sk)
	CreatedAt   time.Time `dynamo:"createdAt"`
	ExpiresAt   int64     `dynamo:"expiresAt"` // TTL, epoch seconds
}

// dueItem says an endpoint may have deliveries due from its gsi3sk's
// time on: no pending delivery of the endpoint is due earlier (a retry
// may be, by at most recheck, while a worker holds another delivery).
type dueItem struct {
	PK        string `dynamo:"pk,hash"`
	SK        string `dynamo:"sk,range"`
	Type      string `dynamo:"type"`
	GSI1PK    string `dynamo:"gsi1pk"` // ORG#<orgId>, so offboarding finds it
	GSI1SK    string `dynamo:"gsi1sk"` // WHDUE#<webhookId>
	GSI3PK    string `dynamo:"gsi3pk"` // WEBHOOKDUE#<shard>
	GSI3SK    string `dynamo:"gsi3sk"` // <due ms>#<orgId>#<webhookId>
	OrgID     string `dynamo:"orgId"`
	WebhookID string `dynamo:"webhookId"`
	MarkedAt  int64  `dynamo:"markedAt"` // epoch ms (wall clock) of the last delivery made due
	Pending   int    `dynamo:"pending"`  // the endpoint's pending deliveries (bounded)
}

// Timing of the due items: a due item marked within settleLag may have
// deliveries the index does not show yet, so it is not moved later then;
// while a worker holds an endpoint's earliest delivery, its due item is
// read again every recheck (the attempt may end in a retry due sooner).
const (
	settleLag = 10 * time.Second
	recheck   = 5 * time.Second
)

// markDue makes the endpoint due at now and counts one more pending
// delivery of it, in the transaction (or before the write) that makes
// that delivery: a process that dies between the two leaves an item that
// a worker removes, never a delivery that no worker finds. Unless force,
// its condition fails when the endpoint has its bound of pending
// deliveries already.
func (s *Webhooks) markDue(orgID, webhookID string, now time.Time, force bool) *dynamo.Update {
	k := dueKey(orgID, webhookID)
	u := s.table.Update(attrPK, k.PK).Range(attrSK, k.SK).Set("type", typeDue).
		Set("gsi1pk", orgPK(orgID)).Set("gsi1sk", dueGSI1SK(webhookID)).
		Set("gsi3pk", dueShardPK(webhook.Shard(orgID, webhookID))).Set("gsi3sk", dueSK(now, orgID, webhookID)).
		Set("orgId", orgID).Set("webhookId", webhookID).Set("markedAt", time.Now().UnixMilli()).Add("pending", 1)
	if !force {
		u = u.If("attribute_not_exists(pending) OR pending < ?", s.maxPending())
	}
	return u
}

// unmarkDue counts one pending delivery of the endpoint less: it settled,
// or it was never made. Best effort: a count left too high is reset when
// the endpoint's queue is found empty.
func (s *Webhooks) unmarkDue(ctx context.Context, orgID, webhookID string) {
	k := dueKey(orgID, webhookID)
	_ = s.table.Update(attrPK, k.PK).Range(attrSK, k.SK).Add("pending", -1).If("pending > ?", 0).Run(ctx)
}

func (s *Webhooks) maxPending() int {
	if s.MaxPending > 0 {
		return s.MaxPending
	}
	return webhook.MaxPendingPerEndpoint
}

func fromDeliveryItem(it deliveryItem) webhook.Delivery {
	d := webhook.Delivery{OrgID: it.OrgID, WebhookID: it.WebhookID, EventID: it.EventID, Type: it.EventType, Body: it.Body,
		State: webhook.State(it.State), Attempts: it.Attempts, LastStatus: it.LastStatus, LastError: it.LastError,
		LatencyMs: it.LatencyMs, LeaseOwner: it.LeaseOwner, CreatedAt: it.CreatedAt}
	if it.NextAttempt > 0 {
		d.NextAttempt = time.UnixMilli(it.NextAttempt).UTC()
	}
	return d
}

func checkDeliveryIDs(orgID, webhookID, eventID string) error {
	return checkIDs(ids.Resource("orgId", orgID), ids.Resource("webhookId", webhookID), ids.Resource("deliveryId", eventID))
}

// maxPending bounds a delivery's life in the table: retried for RetryFor
// at most, then kept as long as a settled one. A pending delivery's TTL
// is set so, in case nothing ever settles it.
const maxPending = 26*time.Hour + 7*24*time.Hour

// enqueueTries bounds the transactions of one EnqueueDeliveries: each
// retry drops the deliveries found made already (a stream record seen
// twice), or writes those past their endpoint's bound as failed.
const enqueueTries = 4

// EnqueueDeliveries writes one event's deliveries (at most
// webhook.MaxPerOrg, one per endpoint) in one transaction, with each
// endpoint's WebhookDue item, but those that exist already; a delivery
// past its endpoint's bound of pending deliveries is written failed. It
// returns how many it wrote.
func (s *Webhooks) EnqueueDeliveries(ctx context.Context, ds []webhook.Delivery) (int, error) {
	for _, d := range ds {
		if err := checkDeliveryIDs(d.OrgID, d.WebhookID, d.EventID); err != nil {
			return 0, err
		}
	}
	full, made := make([]bool, len(ds)), make([]bool, len(ds))
	var err error
	for range enqueueTries {
		tx, over, n := s.DB.newTx(), make([]bool, len(ds)), 0
		for i, d := range ds {
			if made[i] {
				continue
			}
			n++
			if !full[i] {
				tx.update(dueKey(d.OrgID, d.WebhookID), s.markDue(d.OrgID, d.WebhookID, d.CreatedAt, false),
					func(map[string]types.AttributeValue) error { over[i] = true; return nil })
			}
			k := deliveryKey(d.OrgID, d.WebhookID, d.EventID)
			tx.put(k, s.table.Put(s.deliveryItem(d, full[i])).If(notExists),
				func(map[string]types.AttributeValue) error { made[i] = true; return nil })
		}
		if n == 0 {
			return 0, nil
		}
		if err = tx.run(ctx, "enqueue deliveries"); err == nil {
			return n, nil
		}
		if !errs.Is(err, errs.Conflict) {
			return 0, err
		}
		for i := range ds {
			full[i] = full[i] || over[i]
		}
	}
	return 0, err
}

// deliveryItem is d as its queue holds it, or, when full, given up at
// once with the reason in the log.
func (s *Webhooks) deliveryItem(d webhook.Delivery, full bool) deliveryItem {
	k := deliveryKey(d.OrgID, d.WebhookID, d.EventID)
	it := deliveryItem{PK: k.PK, SK: k.SK, Type: typeDelivery, GSI1PK: orgPK(d.OrgID), GSI1SK: deliveryGSI1SK(d.WebhookID, d.EventID),
		GSI3PK: queuePK(d.OrgID, d.WebhookID), GSI3SK: queueSK(d.NextAttempt, d.EventID), QueuedAt: d.NextAttempt.UnixMilli(),
		OrgID: d.OrgID, WebhookID: d.WebhookID, EventID: d.EventID, EventType: d.Type, Body: d.Body, State: string(webhook.Pending),
		NextAttempt: d.NextAttempt.UnixMilli(), CreatedAt: d.CreatedAt, ExpiresAt: d.CreatedAt.Add(maxPending).Unix()}
	if full {
		it.GSI3PK, it.GSI3SK, it.QueuedAt, it.NextAttempt, it.State = "", "", 0, 0, string(webhook.Failed)
		it.LastError = fmt.Sprintf("not sent: the endpoint had %d undelivered events already", s.maxPending())
	}
	return it
}

// queueLookahead is how many of an endpoint's queued deliveries a worker
// reads: its due ones and those in flight (claimed by workers of every
// replica) before them.
const queueLookahead = 8

// dueScan bounds the due endpoints one look reads of a shard, those
// without room included: busy orgs' endpoints due earlier (their slots
// taken, so never read, never moved) hide another org's only past it.
const dueScan = 1000

// DueDeliveries reads up to endpoints due endpoints of one GSI3 due shard
// that room has room for (of the first dueScan due, those without room
// skipped; when more have room, a random choice of them, so that endpoints
// due earlier, say those of many orgs cut for one another, cannot keep a
// later one out of every look), and up to room(org, webhook) due deliveries of each from the
// head of its queue: a delivery whose retry is not due yet holds up those
// queued after it (those in flight do not). An endpoint with none due is
// made due again when its head is, or leaves the shard when its queue is
// empty; one without room is not read.
func (s *Webhooks) DueDeliveries(ctx context.Context, shard int, now time.Time, endpoints int, room func(orgID, webhookID string) int) ([]webhook.Delivery, error) {
	var marks []dueItem
	err := s.table.Get("gsi3pk", dueShardPK(shard)).Range("gsi3sk", dynamo.LessOrEqual, fmt.Sprintf("%013d#~", now.UnixMilli())).
		Index(gsi3).Limit(dueScan).All(ctx, &marks)
	if err != nil {
		return nil, fmt.Errorf("list due endpoints: %w", translate(err))
	}
	marks = slices.DeleteFunc(marks, func(m dueItem) bool {
		return room(m.OrgID, m.WebhookID) <= 0 || checkWebhookIDs(m.OrgID, m.WebhookID) != nil
	})
	if len(marks) > endpoints {
		rand.Shuffle(len(marks), func(i, j int) { marks[i], marks[j] = marks[j], marks[i] })
		marks = marks[:endpoints]
	}
	var out []webhook.Delivery
	for _, m := range marks {
		n := room(m.OrgID, m.WebhookID)
		due, q, err := s.queueHead(ctx, m.OrgID, m.WebhookID, now, n)
		if err != nil {
			return out, err
		}
		out = append(out, due...)
		if len(due) == 0 {
			if err := s.reschedule(ctx, m, q, now); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// EndpointDue reads up to n due deliveries from the head of one endpoint's
// queue: those a dispatcher just made, attempted without waiting for a
// worker's look at every shard.
func (s *Webhooks) EndpointDue(ctx context.Context, orgID, webhookID string, now time.Time, n int) ([]webhook.Delivery, error) {
	due, _, err := s.queueHead(ctx, orgID, webhookID, now, n)
	return due, err
}

// queueState is what the head of an endpoint's queue holds besides
// deliveries due: whether it is empty, whether workers attempt some of
// its deliveries, and the retry that holds up the rest (nil: none).
type queueState struct {
	empty, flying bool
	retry         *deliveryItem
}

// queueHead reads the head of an endpoint's queue: up to n deliveries
// due, before the first one waiting for its retry (what is queued after
// it waits too); those in flight hold up nothing.
func (s *Webhooks) queueHead(ctx context.Context, orgID, webhookID string, now time.Time, n int) ([]webhook.Delivery, queueState, error) {
	if err := checkWebhookIDs(orgID, webhookID); err != nil {
		return nil, queueState{}, err
	}
	var items []deliveryItem
	err := s.table.Get("gsi3pk", queuePK(orgID, webhookID)).Index(gsi3).Limit(queueLookahead).All(ctx, &items)
	if err != nil {
		return nil, queueState{}, fmt.Errorf("list due deliveries: %w", translate(err))
	}
	var due []webhook.Delivery
	q := queueState{empty: len(items) == 0}
	for _, it := range items {
		switch {
		case it.State != string(webhook.Pending) || checkDeliveryIDs(it.OrgID, it.WebhookID, it.EventID) != nil:
		case it.NextAttempt <= now.UnixMilli():
			if len(due) < n {
				due = append(due, fromDeliveryItem(it))
			}
		case it.LeaseOwner != "":
			q.flying = true
		default:
			q.retry = &it
			return due, q, nil
		}
	}
	return due, q, nil
}

// reschedule moves an endpoint with no delivery due to the retry that
// holds up its queue, at most recheck ahead while other workers attempt
// deliveries of it (their attempts may end in a retry due sooner); or
// deletes its due item when its queue is empty. Not when it was marked
// within settleLag, unless for the retry (a delivery queued meanwhile
// comes after it).
func (s *Webhooks) reschedule(ctx context.Context, m dueItem, q queueState, now time.Time) error {
	// markedAt and cutoff are wall-clock times, whatever clock the callers
	// keep: a caller's clock behind the worker's must not make a due item
	// look old enough to move while its delivery is being written.
	k, cutoff := dueKey(m.OrgID, m.WebhookID), time.Now().Add(-settleLag).UnixMilli()
	var err error
	switch next := now.Add(recheck); {
	case q.empty:
		err = s.table.Delete(attrPK, k.PK).Range(attrSK, k.SK).If("markedAt < ?", cutoff).Run(ctx)
	case q.retry != nil && (!q.flying || time.UnixMilli(q.retry.NextAttempt).Before(next)):
		err = s.table.Update(attrPK, k.PK).Range(attrSK, k.SK).Set("gsi3sk", dueSK(time.UnixMilli(q.retry.NextAttempt), m.OrgID, m.WebhookID)).
			If(exists).Run(ctx)
	default:
		err = s.table.Update(attrPK, k.PK).Range(attrSK, k.SK).Set("gsi3sk", dueSK(next, m.OrgID, m.WebhookID)).
			If(exists+" AND markedAt < ?", cutoff).Run(ctx)
	}
	if failed, _ := condFailed(err); failed || err == nil {
		return nil
	}
	return fmt.Errorf("reschedule endpoint: %w", translate(err))
}

// ClaimDelivery moves d's due time to until, for owner, if it is still
// due when it was listed: a worker that dies leaves it due again then.
func (s *Webhooks) ClaimDelivery(ctx context.Context, d webhook.Delivery, owner string, until time.Time) (bool, error) {
	if err := checkDeliveryIDs(d.OrgID, d.WebhookID, d.EventID); err != nil {
		return false, err
	}
	k := deliveryKey(d.OrgID, d.WebhookID, d.EventID)
	err := s.table.Update(attrPK, k.PK).Range(attrSK, k.SK).
		Set("nextAttemptAt", until.UnixMilli()).Set("leaseOwner", owner).
		If("$ = ? AND nextAttemptAt = ?", "state", string(webhook.Pending), d.NextAttempt.UnixMilli()).
		Run(ctx)
	if failed, _ := condFailed(err); failed {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("claim delivery: %w", translate(err))
	}
	return true, nil
}

// SettleAttempt records an attempt's outcome if owner still holds d: a
// pending delivery moves to its next due time, a settled one leaves the
// due shard and expires after retention.
func (s *Webhooks) SettleAttempt(ctx context.Context, d webhook.Delivery, owner string, claimedUntil, expires time.Time) error {
	if err := checkDeliveryIDs(d.OrgID, d.WebhookID, d.EventID); err != nil {
		return err
	}
	k := deliveryKey(d.OrgID, d.WebhookID, d.EventID)
	u := s.table.Update(attrPK, k.PK).Range(attrSK, k.SK).Set("state", string(d.State)).Set("attempts", d.Attempts).
		Set("lastStatus", d.LastStatus).Set("latencyMs", d.LatencyMs).Remove("leaseOwner")
	if d.LastError == "" {
		u = u.Remove("lastError")
	} else {
		u = u.Set("lastError", truncate(d.LastError, 300))
	}
	if d.State == webhook.Pending {
		u = u.Set("nextAttemptAt", d.NextAttempt.UnixMilli())
	} else {
		u = u.Remove("nextAttemptAt", "gsi3pk", "gsi3sk", "queuedAt").Set("expiresAt", expires.Unix())
	}
	err := u.If("leaseOwner = ? AND nextAttemptAt = ?", owner, claimedUntil.UnixMilli()).Run(ctx)
	if failed, _ := condFailed(err); failed {
		return errs.E(errs.Conflict, "lease_lost", "another worker took this delivery over")
	}
	if err != nil {
		return fmt.Errorf("settle delivery: %w", translate(err))
	}
	if d.State != webhook.Pending {
		s.unmarkDue(ctx, d.OrgID, d.WebhookID)
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// ListDeliveries pages through the subscription's partition, newest first.
func (s *Webhooks) ListDeliveries(ctx context.Context, orgID, webhookID string, p page.Request) (page.Result[webhook.Delivery], error) {
	if err := checkWebhookIDs(orgID, webhookID); err != nil {
		return page.Result[webhook.Delivery]{}, err
	}
	r, err := list(ctx, s.DB, listing{partition: webhookPK(orgID, webhookID), prefix: prefixDelivery, desc: true}, p, fromDeliveryItem)
	if err != nil {
		return r, fmt.Errorf("list deliveries: %w", err)
	}
	return r, nil
}

// Redeliver makes the delivery pending and due at now, whatever its state
// (a worker holding it loses its lease), past the endpoint's bound too: an
// admin asked for it. An unknown delivery is not found before anything is
// written, and one that was pending is counted once.
func (s *Webhooks) Redeliver(ctx context.Context, orgID, webhookID, eventID string, now time.Time) (webhook.Delivery, error) {
	if err := checkDeliveryIDs(orgID, webhookID, eventID); err != nil {
		return webhook.Delivery{}, err
	}
	k := deliveryKey(orgID, webhookID, eventID)
	var it deliveryItem
	err := s.table.Get(attrPK, k.PK).Range(attrSK, dynamo.Equal, k.SK).Consistent(true).One(ctx, &it)
	if errors.Is(err, dynamo.ErrNotFound) {
		return webhook.Delivery{}, errDeliveryNotFound
	}
	if err != nil {
		return webhook.Delivery{}, fmt.Errorf("redeliver: %w", translate(err))
	}
	if err := s.markDue(orgID, webhookID, now, true).Run(ctx); err != nil {
		return webhook.Delivery{}, fmt.Errorf("mark endpoint due: %w", translate(err))
	}
	if it.State == string(webhook.Pending) {
		s.unmarkDue(ctx, orgID, webhookID) // counted when it was made pending
	}
	err = s.table.Update(attrPK, k.PK).Range(attrSK, k.SK).Set("state", string(webhook.Pending)).
		Set("nextAttemptAt", now.UnixMilli()).Set("gsi3pk", queuePK(orgID, webhookID)).
		Set("gsi3sk", queueSK(now, eventID)).Set("queuedAt", now.UnixMilli()).Set("createdAt", now).
		Set("expiresAt", now.Add(maxPending).Unix()).Remove("leaseOwner").
		If(exists).Value(ctx, &it)
	if failed, _ := condFailed(err); failed {
		return webhook.Delivery{}, errDeliveryNotFound
	}
	if err != nil {
		return webhook.Delivery{}, fmt.Errorf("redeliver: %w", translate(err))
	}
	return fromDeliveryItem(it), nil
}
