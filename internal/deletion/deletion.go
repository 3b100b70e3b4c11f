// Package deletion finishes deletions that do not fit one request: an org
// being offboarded, a team with more members or a ticket with more comments
// than one DynamoDB transaction holds. Such a deletion is first marked on
// its item (gone for every reader from then on); the request that marked it
// does the rest, and if its process dies, the Worker of any replica finishes
// the job under a lease taken with a conditional write (never a lock in
// memory, so several replicas are safe), renewed as it goes.
package deletion

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/tenantd/tenantd/internal/errs"
)

// Kind is what a deletion deletes.
type Kind string

// The kinds of deletion that can outlive a request.
const (
	Org    Kind = "org"    // an org being offboarded
	Team   Kind = "team"   // a team with too many members for one transaction
	Ticket Kind = "ticket" // a ticket with too many comments for one transaction
)

// Job is an unfinished deletion, as the table records it.
type Job struct {
	Kind       Kind
	OrgID      string
	ID         string    // the team or ticket; "" for an org
	Since      time.Time // when it started
	By         string    // who started it (an org's offboarding)
	Phase      string    // how far an offboarding got
	LeaseOwner string
	LeaseUntil time.Time
}

// Storer runs deletions.
type Storer interface {
	// ListJobs returns up to limit unfinished deletions.
	ListJobs(ctx context.Context, limit int) ([]Job, error)
	// Acquire takes j's lease for owner if it is free or expired at now.
	// ok is false when another owner holds a live lease, or j is done.
	Acquire(ctx context.Context, j Job, owner string, now time.Time) (ok bool, err error)
	// Finish runs j to its end under owner's lease, renewing it. It is
	// idempotent: what a crashed run did is skipped. Returns Conflict
	// (lease_lost) when another owner took the lease over.
	Finish(ctx context.Context, j Job, owner string) error
	// Release gives up owner's lease on j (after its run failed), so that
	// another run takes over at once rather than when the lease expires.
	Release(ctx context.Context, j Job, owner string) error
}

// NewOwner returns a fresh lease owner token: one per run of a job, so a
// replica never mistakes another run's lease for its own.
func NewOwner() string {
	b := make([]byte, 12)
	_, _ = crand.Read(b)
	return hex.EncodeToString(b)
}

// Options tune a Worker.
type Options struct {
	// Poll is how often the worker looks for unfinished deletions whose
	// lease has expired (default 15 s, jittered).
	Poll time.Duration
	Log  *slog.Logger
}

// pollBatch bounds the jobs the worker reads per poll.
const pollBatch = 25

// Worker finishes deletions: the ones this process started (Go) and the
// ones a dead process left behind (Run).
type Worker struct {
	store  Storer
	o      Options
	ctx    context.Context // parent of every job: cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewWorker returns a Worker over s.
func NewWorker(s Storer, o Options) *Worker {
	if o.Poll <= 0 {
		o.Poll = 15 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Worker{store: s, o: o, ctx: ctx, cancel: cancel}
}

// Go finishes j, whose lease owner already holds, in the background; the
// returned channel gets the result. Close cancels it (the lease then
// expires and another run takes over).
func (w *Worker) Go(j Job, owner string) <-chan error {
	done := make(chan error, 1)
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		err := w.store.Finish(w.ctx, j, owner)
		if err != nil {
			if w.ctx.Err() == nil {
				w.o.Log.Error("deletion failed; a worker takes it over",
					"kind", j.Kind, "orgId", j.OrgID, "id", j.ID, "err", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = w.store.Release(ctx, j, owner)
			cancel()
		}
		done <- err
	}()
	return done
}

// Run polls for unfinished deletions whose lease has expired and finishes
// them, one at a time, until ctx is done or Close is called.
func (w *Worker) Run(ctx context.Context) {
	for {
		w.RunOnce(ctx)
		wait := w.o.Poll/2 + time.Duration(rand.Int64N(int64(w.o.Poll)))
		select {
		case <-ctx.Done():
			return
		case <-w.ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// RunOnce takes over and finishes every listed deletion whose lease is free
// or expired. It returns how many it finished.
func (w *Worker) RunOnce(ctx context.Context) int {
	jobs, err := w.store.ListJobs(ctx, pollBatch)
	if err != nil {
		w.o.Log.Warn("deletion worker: list", "err", err)
		return 0
	}
	done := 0
	for _, j := range jobs {
		if ctx.Err() != nil || w.ctx.Err() != nil {
			break
		}
		now := time.Now() // leases are wall-clock times, like the store's
		if j.LeaseOwner != "" && now.Before(j.LeaseUntil) {
			continue
		}
		owner := NewOwner()
		ok, err := w.store.Acquire(ctx, j, owner, now)
		if err != nil || !ok {
			continue
		}
		w.o.Log.Info("deletion worker: resuming", "kind", j.Kind, "orgId", j.OrgID, "id", j.ID, "phase", j.Phase)
		select {
		case err = <-w.Go(j, owner):
		case <-ctx.Done():
			return done
		}
		if err == nil {
			done++
		} else if !errors.Is(err, context.Canceled) && errs.CodeOf(err) != "lease_lost" {
			w.o.Log.Warn("deletion worker: job failed", "kind", j.Kind, "orgId", j.OrgID, "id", j.ID, "err", err)
		}
	}
	return done
}

// Close cancels the jobs running in the background and waits for them.
func (w *Worker) Close() {
	w.cancel()
	w.wg.Wait()
}
