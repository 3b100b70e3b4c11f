// Package webhook delivers an org's changes to its integrations: the
// subscriptions an org's admins manage (this file), the deliveries the
// table's change stream turns its audit events into, signed as the
// Standard Webhooks spec says and retried with backoff (delivery.go), and
// the outbound client that refuses to reach private networks
// (outbound.go). It knows no web framework and no AWS library: the store
// implements its ports, cmd/api and the Lambda function feed it the
// stream.
package webhook

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/clock"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/ifmatch"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/validate"
)

// Subscription is an endpoint of an org that gets the org's events of the
// types it names.
type Subscription struct {
	OrgID       string
	ID          string
	URL         string
	Events      []string // audit actions, or ["*"] for every one
	Description string
	Active      bool
	// Secret signs deliveries (whsec_<base64>); OldSecret, until
	// OldSecretUntil, signs them too, after a rotation.
	Secret         string
	OldSecret      string
	OldSecretUntil time.Time
	// FailingSince is when the endpoint's current run of failures began
	// (zero while it answers): three days of it disable the endpoint.
	FailingSince time.Time
	Version      int64
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Limits of subscriptions.
const (
	MaxPerOrg      = 20
	MaxEvents      = 50
	MaxURLLen      = 2000
	MaxDescription = 500
	// MaxPendingPerEndpoint bounds an endpoint's undelivered events, and
	// so an org's at MaxPerOrg times as many: an event past it is given
	// up at once (failed, the log says why; redeliver it later).
	MaxPendingPerEndpoint = 10000
	// RotationOverlap is how long a rotated-out secret keeps signing.
	RotationOverlap = 24 * time.Hour
	secretPrefix    = "whsec_"
)

// Storer is what subscriptions need from persistence. Every write takes
// the audit event of the change, written in the same transaction.
type Storer interface {
	// CreateWebhook writes s. Returns Conflict (webhook_limit) when the
	// org has MaxPerOrg already, NotFound (org_not_found).
	CreateWebhook(ctx context.Context, s Subscription, ev audit.Event) error
	// GetWebhook reads one subscription consistently. Returns NotFound.
	GetWebhook(ctx context.Context, orgID, webhookID string) (Subscription, error)
	// ListWebhooks pages through the org's subscriptions, oldest first.
	ListWebhooks(ctx context.Context, orgID string, p page.Request) (page.Result[Subscription], error)
	// UpdateWebhook writes next over prev if prev's version is current.
	// Returns NotFound, PreconditionFailed.
	UpdateWebhook(ctx context.Context, prev, next Subscription, ev audit.Event) error
	// DeleteWebhook deletes s at its version. Returns NotFound,
	// PreconditionFailed.
	DeleteWebhook(ctx context.Context, s Subscription, ev audit.Event) error
}

// New is what an admin supplies.
type New struct {
	// ID is the subscription's ID when an idempotent request gave it one
	// ("" mints one).
	ID          string
	URL         string
	Events      []string
	Description string
}

// Patch is a PATCH of a subscription: nil fields stay.
type Patch struct {
	URL         *string
	Events      *[]string
	Description *string
	Active      *bool
}

// Service applies the rules of subscriptions on top of a Storer.
type Service struct {
	store Storer
	ids   *ids.Generator
	now   clock.Clock
	// urls checks an endpoint's URL (https only, unless private networks
	// are allowed for development).
	urls URLPolicy
}

// NewService returns a Service; now may be nil for the system clock.
func NewService(s Storer, urls URLPolicy, now clock.Clock) *Service {
	now = clock.Or(now)
	return &Service{store: s, ids: ids.NewGenerator(now), now: now, urls: urls}
}

// NewSecret returns a fresh signing secret in the Standard Webhooks form.
func NewSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return secretPrefix + base64.StdEncoding.EncodeToString(b), nil
}

// checkEvents validates and de-duplicates an event list: audit actions
// ("ticket.create") or the one wildcard "*".
func checkEvents(in []string) ([]string, error) {
	if len(in) == 0 || len(in) > MaxEvents {
		return nil, errs.InvalidField("events", "invalid_events", "between 1 and %d event types", MaxEvents)
	}
	var out []string
	for _, e := range in {
		if !validEventName(e) {
			return nil, errs.InvalidField("events", "invalid_event", "%q is neither an audit action (like ticket.create) nor *", e)
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	if slices.Contains(out, "*") && len(out) > 1 {
		return nil, errs.InvalidField("events", "invalid_events", "* already names every event")
	}
	return out, nil
}

func validEventName(e string) bool {
	if e == "*" {
		return true
	}
	resource, action, ok := strings.Cut(e, ".")
	return ok && len(e) <= 64 && lowerWord(resource) && lowerWord(action)
}

func lowerWord(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && c != '_' {
			return false
		}
	}
	return true
}

// Wants reports whether s subscribes to events of type action.
func (s Subscription) Wants(action string) bool {
	return s.Active && (slices.Contains(s.Events, "*") || slices.Contains(s.Events, action))
}

// URLPolicy decides which endpoint URLs are accepted.
type URLPolicy struct {
	// AllowPrivate lets http and private, loopback and link-local
	// addresses through (development and tests only).
	AllowPrivate bool
}

// Check refuses a URL that is not absolute https (http too with
// AllowPrivate), carries credentials or a fragment, or names an address
// the outbound client would refuse anyway.
func (p URLPolicy) Check(raw string) error {
	bad := func(format string, args ...any) error {
		return errs.InvalidField("url", "invalid_url", format, args...)
	}
	if len(raw) > MaxURLLen {
		return bad("at most %d characters", MaxURLLen)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return bad("must be an absolute URL")
	}
	if u.Scheme != "https" && !(p.AllowPrivate && u.Scheme == "http") {
		return bad("must be https")
	}
	if u.User != nil || u.Fragment != "" {
		return bad("must carry no credentials and no fragment")
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return bad("the port must be between 1 and 65535")
		}
	}
	if err := refusedHost(u.Hostname(), p.AllowPrivate); err != nil {
		return bad("%s", err.Error())
	}
	return nil
}

// CreateWebhook subscribes an endpoint (admin+) and returns it with its
// secret: the only time the secret is shown.
func (s *Service) CreateWebhook(ctx context.Context, p authz.Principal, in New) (Subscription, error) {
	g, err := authz.Permit(p, authz.WebhookManage, authz.Facts{})
	if err != nil {
		return Subscription{}, err
	}
	sub := Subscription{OrgID: p.OrgID, URL: in.URL, Description: in.Description, Active: true, Version: 1}
	if sub.Events, err = checkEvents(in.Events); err != nil {
		return Subscription{}, err
	}
	if err := s.validate(sub); err != nil {
		return Subscription{}, err
	}
	if sub.Secret, err = NewSecret(); err != nil {
		return Subscription{}, err
	}
	now := s.now()
	sub.ID, sub.CreatedAt, sub.UpdatedAt = in.ID, now, now
	if sub.ID == "" {
		sub.ID = s.ids.New()
	}
	// The audit event names the URL and events, never the secret.
	ev := audit.NewEvent(ctx, s.ids, audit.By(p, g), "webhook.create", "webhook", sub.ID, now, audit.Diff(
		audit.F("url", nil, sub.URL), audit.F("events", nil, sub.Events), audit.F("description", nil, sub.Description)))
	if err := s.store.CreateWebhook(ctx, sub, ev); err != nil {
		return Subscription{}, err
	}
	return sub, nil
}

func (s *Service) validate(sub Subscription) error {
	if err := s.urls.Check(sub.URL); err != nil {
		return err
	}
	if sub.Description != "" {
		return validate.Text("description", sub.Description, 1, MaxDescription, false)
	}
	return nil
}

// GetWebhook reads one subscription (admin+).
func (s *Service) GetWebhook(ctx context.Context, p authz.Principal, webhookID string) (Subscription, error) {
	if err := authz.Authorize(p, authz.WebhookManage, authz.Facts{}); err != nil {
		return Subscription{}, err
	}
	return s.store.GetWebhook(ctx, p.OrgID, webhookID)
}

// ListWebhooks pages through the org's subscriptions (admin+).
func (s *Service) ListWebhooks(ctx context.Context, p authz.Principal, pr page.Request) (page.Result[Subscription], error) {
	if err := authz.Authorize(p, authz.WebhookManage, authz.Facts{}); err != nil {
		return page.Result[Subscription]{}, err
	}
	return s.store.ListWebhooks(ctx, p.OrgID, pr)
}

// UpdateWebhook changes a subscription (admin+) at the version ifMatch
// names. Re-activating an endpoint forgets its failures.
func (s *Service) UpdateWebhook(ctx context.Context, p authz.Principal, webhookID string, patch Patch, ifMatch ifmatch.Match) (Subscription, error) {
	if patch == (Patch{}) {
		return Subscription{}, errs.E(errs.Invalid, "empty_patch", "nothing to change")
	}
	g, err := authz.Permit(p, authz.WebhookManage, authz.Facts{})
	if err != nil {
		return Subscription{}, err
	}
	read := func(ctx context.Context) (Subscription, error) { return s.store.GetWebhook(ctx, p.OrgID, webhookID) }
	return ifmatch.Retry(ctx, ifMatch, nil, read, func(prev Subscription) (Subscription, error) {
		if err := ifMatch.Check(prev.Version); err != nil {
			return Subscription{}, err
		}
		next := prev
		if patch.URL != nil {
			next.URL = *patch.URL
		}
		if patch.Description != nil {
			next.Description = *patch.Description
		}
		if patch.Active != nil {
			next.Active = *patch.Active
		}
		if patch.Events != nil {
			if next.Events, err = checkEvents(*patch.Events); err != nil {
				return Subscription{}, err
			}
		}
		if err := s.validate(next); err != nil {
			return Subscription{}, err
		}
		if next.Active && !prev.Active {
			next.FailingSince = time.Time{}
		}
		next.Version, next.UpdatedAt = prev.Version+1, s.now()
		ev := audit.NewEvent(ctx, s.ids, audit.By(p, g), "webhook.update", "webhook", webhookID, next.UpdatedAt, audit.Diff(
			audit.F("url", prev.URL, next.URL), audit.F("events", prev.Events, next.Events),
			audit.F("description", prev.Description, next.Description), audit.F("active", prev.Active, next.Active)))
		return audit.Update(ctx, s.store.UpdateWebhook, prev, next, ev)
	})
}

// RotateWebhookSecret gives a subscription a new secret (admin+), returned once;
// the old one keeps signing for RotationOverlap, so a receiver has a day
// to switch.
func (s *Service) RotateWebhookSecret(ctx context.Context, p authz.Principal, webhookID string) (Subscription, error) {
	g, err := authz.Permit(p, authz.WebhookManage, authz.Facts{})
	if err != nil {
		return Subscription{}, err
	}
	read := func(ctx context.Context) (Subscription, error) { return s.store.GetWebhook(ctx, p.OrgID, webhookID) }
	return ifmatch.Retry(ctx, ifmatch.Match{}, nil, read, func(prev Subscription) (Subscription, error) {
		next := prev
		secret, err := NewSecret()
		if err != nil {
			return Subscription{}, err
		}
		now := s.now()
		// The overlap is judged by the delivery workers, which keep real
		// time (leases, the receivers' tolerance of the signed
		// timestamp): it ends a real day from now, whatever s.now says.
		next.Secret, next.OldSecret, next.OldSecretUntil = secret, prev.Secret, clock.System().Add(RotationOverlap)
		next.Version, next.UpdatedAt = prev.Version+1, now
		// The change names no secret: only that one was rotated.
		ev := audit.NewEvent(ctx, s.ids, audit.By(p, g), "webhook.rotate_secret", "webhook", webhookID, now,
			[]audit.Change{{Field: "secret", After: "rotated"}})
		if err := s.store.UpdateWebhook(ctx, prev, next, ev); err != nil {
			return Subscription{}, err
		}
		return next, nil
	})
}

// DeleteWebhook unsubscribes an endpoint (admin+); its pending deliveries
// are dropped.
func (s *Service) DeleteWebhook(ctx context.Context, p authz.Principal, webhookID string, ifMatch ifmatch.Match) error {
	g, err := authz.Permit(p, authz.WebhookManage, authz.Facts{})
	if err != nil {
		return err
	}
	read := func(ctx context.Context) (Subscription, error) { return s.store.GetWebhook(ctx, p.OrgID, webhookID) }
	_, err = ifmatch.Retry(ctx, ifMatch, nil, read, func(prev Subscription) (struct{}, error) {
		if err := ifMatch.Check(prev.Version); err != nil {
			return struct{}{}, err
		}
		ev := audit.NewEvent(ctx, s.ids, audit.By(p, g), "webhook.delete", "webhook", webhookID, s.now(), audit.Diff(
			audit.F("url", prev.URL, nil), audit.F("events", prev.Events, nil)))
		return struct{}{}, s.store.DeleteWebhook(ctx, prev, ev)
	})
	return err
}
