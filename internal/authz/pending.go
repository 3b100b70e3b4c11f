package authz

import (
	"context"
	"errors"
	"sync"

	"github.com/tenantd/tenantd/internal/errs"
)

// ErrNoPrincipal: a request with no principal in an org reached code that
// needs one (a wiring bug).
var ErrNoPrincipal = errs.E(errs.Internal, "no_principal", "route has no org principal")

// Pending is the caller in an org while the authorization read is in
// flight: who calls and which org the route names are known, the role is
// not yet. A read that needs no facts from its target runs beside the
// authorization read (Overlap) instead of after it, so the request costs
// one round trip to DynamoDB instead of two.
type Pending struct {
	Identity
	OrgID string
	// await returns the decision; committed says a write that proved the
	// caller's access itself has committed already (Write), so what a Gate
	// spends it spends without refusing.
	await func(committed bool) (Principal, error)
	known bool // decided already (Known): nothing to overlap
}

// NewPending returns the caller in orgID whose principal await returns:
// it blocks until the authorization read has answered and may be called any
// number of times, returning the same result.
func NewPending(id Identity, orgID string, await func() (Principal, error)) Pending {
	return Pending{Identity: id, OrgID: orgID, await: func(bool) (Principal, error) { return await() }}
}

// Known is a Pending whose principal is already decided.
func Known(p Principal) Pending {
	return Pending{Identity: p.Identity, OrgID: p.OrgID, await: func(bool) (Principal, error) { return p, nil }, known: true}
}

// Await returns the principal once the authorization read has answered, or
// the error that ends the request (the org does not exist for the caller,
// DynamoDB is unavailable, the org's rate limit is spent).
func (p Pending) Await() (Principal, error) {
	if p.await == nil {
		return Principal{}, ErrNoPrincipal
	}
	return p.await(false)
}

// Gate returns p with gate run once, when the decision has let the caller
// in and before anyone gets the principal: the org's rate limit, which
// only members spend. committed tells gate that the request's write has
// committed already, on conditions that proved the caller's access itself
// (Write): gate then spends what it spends and must not refuse, for the
// write cannot be taken back. Every caller of the gated Pending sees the
// same result.
func (p Pending) Gate(gate func(pr Principal, committed bool) error) Pending {
	if p.await == nil {
		return p
	}
	var (
		once  sync.Once
		pr    Principal
		err   error
		inner = p.await
	)
	p.await = func(committed bool) (Principal, error) {
		once.Do(func() {
			if pr, err = inner(committed); err == nil {
				err = gate(pr, committed)
			}
		})
		return pr, err
	}
	return p
}

// Overlap runs read, the request's first DynamoDB read (keyed by p.OrgID,
// which the route names), while p's authorization read is in flight; then
// decides a, which needs no facts from what read reads. It returns read's
// error only if the caller may do a: the authorization error wins, so
// nothing of the target, not even whether it exists, reaches a caller who
// may not read it; read keeps what it read in variables the caller uses
// only when Overlap returns no error. When the decision refuses the caller,
// Overlap returns at once and cancels read, which may still be running: its
// variables must not be used then.
//
// A stranger's request makes read too, and waits for it: so read must be
// small and bounded (a point read, a page of small items). A read that may
// be large (a page of tickets or comments, up to 1 MB) goes after Decide
// instead, or a stranger could make the server read megabytes of another
// tenant's partition per 404, and time the 404 to learn the target's size.
func (p Pending) Overlap(ctx context.Context, a Action, read func(ctx context.Context) error) (Principal, error) {
	if p.known { // nothing in flight to overlap: decide, then read
		pr, err := p.Decide(a)
		if err != nil {
			return Principal{}, err
		}
		return pr, read(ctx)
	}
	done, cancel := background(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, read(ctx) })
	pr, err := p.Decide(a)
	if err != nil {
		// Answered now, whatever the read still does (cancelled): how long
		// the target takes to read says nothing to a caller who may not.
		cancel()
		return Principal{}, err
	}
	defer cancel()
	return pr, (<-done).err
}

// result is what a background read returned.
type result[T any] struct {
	v   T
	err error
}

// background runs read in a goroutine of its own, on a context that cancel
// cancels, and delivers its result on done (buffered: the goroutine ends
// whether or not anyone receives).
func background[T any](ctx context.Context, read func(context.Context) (T, error)) (done <-chan result[T], cancel context.CancelFunc) {
	rctx, cancel := context.WithCancel(ctx)
	ch := make(chan result[T], 1)
	go func() {
		v, err := read(rctx)
		ch <- result[T]{v, err}
	}()
	return ch, cancel
}

// Read is Overlap for a read that returns one value: the value, or its
// zero and the refusal or the read's error.
func Read[T any](ctx context.Context, p Pending, a Action, read func(ctx context.Context) (T, error)) (T, error) {
	var v T
	if _, err := p.Overlap(ctx, a, func(ctx context.Context) (err error) {
		v, err = read(ctx)
		return err
	}); err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// Prefetch starts read (a write's first read: the target it is about to
// change, keyed by p.OrgID) beside p's authorization read and returns the
// caller once the org has let them in, with get, which returns what read
// read the first time it is called and reads again (read) after that, for
// a write's later attempts; get is for one goroutine (a write's attempts
// run one after the other). The write's own decision, which needs facts
// from the target, is the caller's to make before it writes; nothing goes
// out but read before the caller is known. A caller the org refuses is
// answered at once and read cancelled, as with Overlap; read must be small
// and bounded for the same reason. A read nobody gets (the write was
// refused on its facts) ends with ctx, the request's.
func Prefetch[T any](ctx context.Context, p Pending, read func(ctx context.Context) (T, error)) (Principal, func(context.Context) (T, error), error) {
	if p.known {
		pr, err := p.Await()
		if err != nil {
			return Principal{}, nil, err
		}
		return pr, read, nil
	}
	done, cancel := background(ctx, read)
	pr, err := p.Await()
	if err != nil {
		cancel()
		return Principal{}, nil, err
	}
	first := true
	get := func(ctx context.Context) (T, error) {
		if !first {
			return read(ctx)
		}
		first = false
		defer cancel()
		select {
		case r := <-done:
			return r.v, r.err
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err()
		}
	}
	return pr, get, nil
}

// Decide waits for p's authorization read and decides a, which needs no
// facts from the target: for a read that must not go out before the caller
// is known (one whose size a stranger could make large; see Overlap).
func (p Pending) Decide(a Action) (Principal, error) {
	pr, err := p.Await()
	if err != nil {
		return Principal{}, err
	}
	if err := Authorize(pr, a, Facts{}); err != nil {
		return Principal{}, err
	}
	return pr, nil
}

// ErrOffboarding is the decision on a caller of an org whose offboarding
// has begun: to the client the same 404 as an org they are not in.
var ErrOffboarding = errs.E(errs.NotFound, "org_not_found", "organization not found")

// Write runs write, a create, beside p's authorization read instead of
// after it, so the request costs one round trip to DynamoDB. It may,
// because the write proves the caller's membership itself, atomically: the
// grant it gets is decided from a and f alone (the lowest org role a
// allows, Permit's Floor), and the store writes it in one transaction with
// the actor fence at that floor (the caller's edge exists, outside any
// offboarding, with a role at least the floor). So a stranger's or a
// removed member's create writes nothing. The principal write gets has no
// OrgRole: write must not read it (nor may f come from the target).
//
// When write fails, the decision's refusal wins, as with Overlap: a caller
// the org refuses learns nothing from the write (not whether a ticket it
// names exists, nor that its body is invalid). When write committed, or
// may have (errs.CodeWriteOutcomeUnknown), the Gate is told it committed
// (it must not refuse what cannot be taken back) and the write's answer
// stands, with one exception: an org whose offboarding began before the
// decision read it (ErrOffboarding) exists for nobody, and the offboarding,
// which cuts its members off only after marking it, sweeps what the write
// left; the caller gets the 404.
//
// A decided p (Known, say) decides first and writes after, on a grant of
// the caller's role.
func Write[T any](ctx context.Context, p Pending, a Action, f Facts, write func(ctx context.Context, pr Principal, g Grant) (T, error)) (T, error) {
	var zero T
	if p.known {
		pr, err := p.Await()
		if err != nil {
			return zero, err
		}
		g, err := Permit(pr, a, f)
		if err != nil {
			return zero, err
		}
		return write(ctx, pr, g)
	}
	if p.await == nil {
		return zero, ErrNoPrincipal
	}
	g, err := Permit(Principal{OrgRole: Owner}, a, f)
	if err != nil {
		return zero, err // an owner may not: neither may anyone
	}
	if g.TeamID != "" {
		return zero, errs.E(errs.Internal, "team_fact_unread", "%s was decided on a team role before the authorization read", a)
	}
	v, werr := write(ctx, Principal{Identity: p.Identity, OrgID: p.OrgID}, g)
	maybeCommitted := werr == nil || errs.CodeOf(werr) == errs.CodeWriteOutcomeUnknown
	if !maybeCommitted {
		pr, err := p.Await()
		if err != nil {
			return zero, err
		}
		if err := Authorize(pr, a, f); err != nil {
			return zero, err
		}
		return zero, werr
	}
	// The fence proved the floor as the write committed: the decision only
	// settles the Gate, and tells an org being offboarded. A refusal for
	// any other reason (the caller removed since) does not say the write
	// did not commit before it.
	_, err = p.await(true)
	switch {
	case errors.Is(err, ErrOffboarding):
		return zero, err
	case werr != nil:
		return zero, werr // may have been applied: not a refusal, nor "retry later"
	}
	return v, nil
}
