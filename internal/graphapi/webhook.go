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

// DescriptionOrNil is description: null when none was given.
func (w Webhook) DescriptionOrNil() *string { return nilIfEmpty(w.Description) }

// FailingSinceOrNil is failingSince: null while the endpoint answers.
func (w Webhook) FailingSinceOrNil() *time.Time { return optional.Of(w.FailingSince) }

// WebhookDelivery is one entry of a webhook's delivery log.
type WebhookDelivery struct{ webhook.Delivery }

// LastStatusOrNil is lastStatus: null if the endpoint never answered.
func (d WebhookDelivery) LastStatusOrNil() *int { return optional.Of(d.LastStatus) }

// LastErrorOrNil is lastError: null after a success.
func (d WebhookDelivery) LastErrorOrNil() *string { return nilIfEmpty(d.LastError) }

// LatencyOrNil is latencyMs: null before an attempt answered or failed.
func (d WebhookDelivery) LatencyOrNil() *int {
	if d.Attempts == 0 {
		return nil
	}
	n := int(d.LatencyMs)
	return &n
}

// NextAttemptOrNil is nextAttemptAt: null once settled.
func (d WebhookDelivery) NextAttemptOrNil() *time.Time { return optional.Of(d.NextAttempt) }

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
