// Package app wires tenantd once: the store types over one table, the
// domain services over them, and the server's dependencies. cmd/api, the
// API tests and the benchmark all build their server from Deps, so none of
// them can wire it differently (a service left without a port it needs,
// say).
package app

import (
	"log/slog"

	"github.com/tenantd/tenantd/internal/apikey"
	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/clock"
	"github.com/tenantd/tenantd/internal/deletion"
	"github.com/tenantd/tenantd/internal/export"
	"github.com/tenantd/tenantd/internal/graphapi"
	"github.com/tenantd/tenantd/internal/httpapi"
	"github.com/tenantd/tenantd/internal/invitation"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/store"
	"github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/ticket"
	"github.com/tenantd/tenantd/internal/webhook"
)

// Options are the domain settings of the wiring.
type Options struct {
	// Now is the clock of every service (nil: the system clock).
	Now clock.Clock
	// InvitationAnyEmail lets anyone holding an invitation's token accept
	// it, whatever the email of their token.
	InvitationAnyEmail bool
	// WebhookURLs decides which endpoint URLs subscriptions may name.
	WebhookURLs webhook.URLPolicy
}

// Deps returns the server's dependencies over db: every service and store
// port filled. deletions finishes the deletions that outlive a request
// (nil: they are finished by the request, or by another process's
// worker). The caller adds the HTTP settings (verifier, cursor key,
// limits, timeouts, metrics) to the result.
func Deps(db *store.DB, deletions *deletion.Worker, o Options) httpapi.Deps {
	orgs, teams, tickets := &store.Orgs{DB: db}, &store.Teams{DB: db}, &store.Tickets{DB: db}
	return httpapi.Deps{
		Services: graphapi.Services{
			Orgs:        tenant.NewService(orgs, deletions, o.Now),
			Teams:       membership.NewService(teams, orgs, o.Now),
			Tickets:     ticket.NewService(tickets, teams, orgs, o.Now),
			Invitations: invitation.NewService(&store.Invitations{DB: db}, o.InvitationAnyEmail, o.Now),
			Audit:       audit.NewService(&store.Audit{DB: db}, o.Now),
			Webhooks:    webhook.NewService(&store.Webhooks{DB: db}, o.WebhookURLs, o.Now),
			Deliveries:  webhook.NewDeliveries(&store.Webhooks{DB: db}, o.Now),
			APIKeys:     apikey.NewService(&store.APIKeys{DB: db}, o.Now),
			Access:      orgs,
		},
		Export:      export.NewService(exportStore{orgs, teams, tickets, &store.Invitations{DB: db}, &store.Webhooks{DB: db}, &store.Audit{DB: db}}, o.Now),
		Idempotency: &store.Idempotency{DB: db},
		KeyUse:      apikey.NewRecent(&store.APIKeys{DB: db}),
		Now:         o.Now,
	}
}

// exportStore is what an export reads: the listings of the stores.
type exportStore struct {
	*store.Orgs
	*store.Teams
	*store.Tickets
	*store.Invitations
	*store.Webhooks
	*store.Audit
}

// Delivery returns the webhook machinery of one process over db: the
// dispatcher the change stream feeds (it kicks the worker, so a new event
// need not wait for the next poll) and the worker that sends what is due,
// through the outbound client o.WebhookURLs allows. Both keep real time
// (leases between replicas, the receivers' tolerance of the signed
// timestamp), never o.Now.
func Delivery(db *store.DB, o Options, pol webhook.Policy, log *slog.Logger) (*webhook.Dispatcher, *webhook.Worker) {
	wh := &store.Webhooks{DB: db}
	w := webhook.NewWorker(wh, o.WebhookURLs.AllowPrivate, pol, nil, log)
	d := webhook.NewDispatcher(wh, pol, nil)
	d.Kick = w.Kick
	return d, w
}
