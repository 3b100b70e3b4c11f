package graphapi

import (
	"context"
	"time"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/optional"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/webhook"
)

// Webhook is a subscription of the org, never with its secrets: the
// schema has no field for them.
type Webhook struct {
	webhook.Subscription
	p authz.Principal
}

// Description is description: null when none was given.
func (w Webhook) Description() *string { return nilIfEmpty(w.Subscription.Description) }

// FailingSince is failingSince: null while the endpoint answers.
func (w Webhook) FailingSince() *time.Time { return optional.Of(w.Subscription.FailingSince) }

// WebhookDelivery is one entry of a webhook's delivery log.
type WebhookDelivery struct{ webhook.Delivery }

// ID is id: the event's ID.
func (d WebhookDelivery) ID() string { return d.EventID }

// LastStatus is lastStatus: null if the endpoint never answered.
func (d WebhookDelivery) LastStatus() *int { return optional.Of(d.Delivery.LastStatus) }

// LastError is lastError: null after a success.
func (d WebhookDelivery) LastError() *string { return nilIfEmpty(d.Delivery.LastError) }

// LatencyMs is latencyMs: null before an attempt answered or failed.
func (d WebhookDelivery) LatencyMs() *int {
	if d.Attempts == 0 {
		return nil
	}
	n := int(d.Delivery.LatencyMs)
	return &n
}

// NextAttemptAt is nextAttemptAt: null once settled.
func (d WebhookDelivery) NextAttemptAt() *time.Time { return optional.Of(d.NextAttempt) }

// Webhooks resolves Org.webhooks (GET /v1/orgs/{orgId}/webhooks).
func (r orgResolver) Webhooks(ctx context.Context, obj *Org, first *int, after *string) (*WebhookConnection, error) {
	return connection(ctx, obj.p.OrgID, "listWebhooks", first, after,
		func(pr page.Request) (page.Result[webhook.Subscription], error) {
			return r.s.d.Webhooks.ListWebhooks(ctx, obj.p, pr)
		},
		func(s webhook.Subscription) *Webhook { return &Webhook{Subscription: s, p: obj.p} })
}

// Deliveries resolves Webhook.deliveries
// (GET /v1/orgs/{orgId}/webhooks/{webhookId}/deliveries).
func (r webhookResolver) Deliveries(ctx context.Context, obj *Webhook, first *int, after *string) (*WebhookDeliveryConnection, error) {
	return connection(ctx, obj.p.OrgID, "listWebhookDeliveries/"+obj.ID, first, after,
		func(pr page.Request) (page.Result[webhook.Delivery], error) {
			return r.s.d.Deliveries.ListWebhookDeliveries(ctx, obj.p, obj.ID, pr)
		},
		func(d webhook.Delivery) *WebhookDelivery { return &WebhookDelivery{Delivery: d} })
}
