package store

import (
	"context"
	"fmt"
	"time"

	"github.com/guregu/dynamo/v2"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/webhook"
)

// Webhooks stores an org's webhook subscriptions, each in its own partition
// with its deliveries (delivery.go), at most webhook.MaxPerOrg per org.
type Webhooks struct {
	*DB
	// MaxPending bounds each endpoint's pending deliveries (0: webhook.MaxPendingPerEndpoint).
	MaxPending int
}

var (
	_ webhook.Storer         = (*Webhooks)(nil)
	_ webhook.DeliveryStorer = (*Webhooks)(nil)
)

var (
	errWebhookNotFound = errs.E(errs.NotFound, "webhook_not_found", "webhook not found")
	errWebhookLimit    = errs.E(errs.Conflict, "webhook_limit", "the organization has %d webhooks already", webhook.MaxPerOrg)
)

type webhookItem struct {
	PK             string    `dynamo:"pk,hash"`
	SK             string    `dynamo:"sk,range"`
	Type           string    `dynamo:"type"`
	GSI1PK         string    `dynamo:"gsi1pk"` // ORG#<orgId>
	GSI1SK         string    `dynamo:"gsi1sk"` // WEBHOOK#<webhookId>
	OrgID          string    `dynamo:"orgId"`
	ID             string    `dynamo:"webhookId"`
	URL            string    `dynamo:"url"`
	Events         []string  `dynamo:"events"`
	Description    string    `dynamo:"description,omitempty"`
	Active         bool      `dynamo:"active"`
	Secret         string    `dynamo:"secret"`
	OldSecret      string    `dynamo:"oldSecret,omitempty"`
	OldSecretUntil time.Time `dynamo:"oldSecretUntil,omitempty"`
	FailingSince   time.Time `dynamo:"failingSince,omitempty"`
	Version        int64     `dynamo:"version"`
	CreatedAt      time.Time `dynamo:"createdAt"`
	UpdatedAt      time.Time `dynamo:"updatedAt"`
}

func toWebhookItem(s webhook.Subscription) webhookItem {
	k := webhookKey(s.OrgID, s.ID)
	return webhookItem{PK: k.PK, SK: k.SK, Type: typeWebhook, GSI1PK: orgPK(s.OrgID), GSI1SK: webhookSK(s.ID),
		OrgID: s.OrgID, ID: s.ID, URL: s.URL, Events: s.Events, Description: s.Description, Active: s.Active,
		Secret: s.Secret, OldSecret: s.OldSecret, OldSecretUntil: s.OldSecretUntil, FailingSince: s.FailingSince,
		Version: s.Version, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
}

func fromWebhookItem(it webhookItem) webhook.Subscription {
	return webhook.Subscription{OrgID: it.OrgID, ID: it.ID, URL: it.URL, Events: it.Events, Description: it.Description,
		Active: it.Active, Secret: it.Secret, OldSecret: it.OldSecret, OldSecretUntil: it.OldSecretUntil,
		FailingSince: it.FailingSince, Version: it.Version, CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt}
}

func checkWebhookIDs(orgID, webhookID string) error {
	return checkIDs(ids.Resource("orgId", orgID), ids.Resource("webhookId", webhookID))
}

// CreateWebhook writes the subscription and counts it on the org item, in
// one transaction with its audit event.
func (s *Webhooks) CreateWebhook(ctx context.Context, sub webhook.Subscription, ev audit.Event) error {
	ok := orgKey(sub.OrgID)
	t := s.newTx(checkWebhookIDs(sub.OrgID, sub.ID)).
		put(webhookKey(sub.OrgID, sub.ID), s.table.Put(toWebhookItem(sub)).If(notExists),
			failWith(errs.E(errs.Conflict, "webhook_exists", "webhook ID already taken"))).
		update(ok, s.updateAt(ok).Add("webhookCount", 1).
			If(liveItem+" AND (attribute_not_exists(webhookCount) OR webhookCount < ?)", webhook.MaxPerOrg),
			goneOr(errOrgNotFound, errWebhookLimit))
	return s.audited(ev, t).run(ctx, "create webhook")
}

// GetWebhook reads one subscription with a consistent GetItem.
func (s *Webhooks) GetWebhook(ctx context.Context, orgID, webhookID string) (webhook.Subscription, error) {
	it, err := getItem[webhookItem](ctx, s.DB, webhookKey(orgID, webhookID), true, errWebhookNotFound, "get webhook", checkWebhookIDs(orgID, webhookID))
	return fromWebhookItem(it), err
}

// ListWebhooks pages through GSI1 ORG#<orgId>, begins_with WEBHOOK#.
func (s *Webhooks) ListWebhooks(ctx context.Context, orgID string, p page.Request) (page.Result[webhook.Subscription], error) {
	return list(ctx, s.DB, listing{op: "list webhooks", index: gsi1, partition: orgPK(orgID), prefix: prefixWebhook}, p, fromWebhookItem,
		ids.Resource("orgId", orgID))
}

// Subscribers reads every subscription of the org (at most
// webhook.MaxPerOrg: one Query page).
func (s *Webhooks) Subscribers(ctx context.Context, orgID string) ([]webhook.Subscription, error) {
	if err := checkIDs(ids.Resource("orgId", orgID)); err != nil {
		return nil, err
	}
	q := s.table.Get("gsi1pk", orgPK(orgID)).Range("gsi1sk", dynamo.BeginsWith, prefixWebhook).Index(gsi1)
	items, err := allItems(ctx, q, webhook.MaxPerOrg)
	if err != nil {
		return nil, fmt.Errorf("list subscribers: %w", translate(err))
	}
	return unmarshalAll(items, fromWebhookItem)
}

// UpdateWebhook writes next over prev at prev's version.
func (s *Webhooks) UpdateWebhook(ctx context.Context, prev, next webhook.Subscription, ev audit.Event) error {
	k := webhookKey(prev.OrgID, prev.ID)
	t := s.newTx(checkWebhookIDs(prev.OrgID, prev.ID)).
		put(k, s.table.Put(toWebhookItem(next)).If(existsAtVersion, prev.Version), missingOr(errWebhookNotFound, errVersion))
	return s.audited(ev, t).run(ctx, "update webhook")
}

// SetEndpointHealth records what the workers saw of the endpoint, unless
// an admin changed the subscription meanwhile (PreconditionFailed).
func (s *Webhooks) SetEndpointHealth(ctx context.Context, sub webhook.Subscription, ev *audit.Event) error {
	k := webhookKey(sub.OrgID, sub.ID)
	u := s.updateAt(k).Set("active", sub.Active)
	if sub.FailingSince.IsZero() {
		u = u.Remove("failingSince")
	} else {
		u = u.Set("failingSince", sub.FailingSince)
	}
	t := s.newTx(checkWebhookIDs(sub.OrgID, sub.ID)).update(k, u.If(existsAtVersion, sub.Version), missingOr(errWebhookNotFound, errVersion))
	if ev != nil {
		t = s.audited(*ev, t)
	}
	return t.run(ctx, "record webhook health")
}

// DeleteWebhook deletes the subscription at its version and uncounts it;
// its deliveries expire by TTL (a worker drops the pending ones).
func (s *Webhooks) DeleteWebhook(ctx context.Context, sub webhook.Subscription, ev audit.Event) error {
	k, ok := webhookKey(sub.OrgID, sub.ID), orgKey(sub.OrgID)
	t := s.newTx(checkWebhookIDs(sub.OrgID, sub.ID)).
		delete(k, s.deleteAt(k).If(existsAtVersion, sub.Version), missingOr(errWebhookNotFound, errVersion)).
		update(ok, s.updateAt(ok).Add("webhookCount", -1).If(liveItem), failWith(errOrgNotFound))
	return s.audited(ev, t).run(ctx, "delete webhook")
}
