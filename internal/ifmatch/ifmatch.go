// Package ifmatch holds the If-Match semantics of tenantd's writes (RFC 9110,
// section 13.1.1) over the version every versioned item carries, and Retry,
// the one loop of every optimistic read-modify-write.
package ifmatch

import (
	"context"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/tenantd/tenantd/internal/errs"
)

// ErrVersion reports an If-Match or version condition that no longer holds.
var ErrVersion = errs.E(errs.PreconditionFailed, "version_mismatch", "the resource was changed since you read it; read it again and retry")

// ErrBusy ends a write without a precondition that never got its turn: a
// 503 the client may retry, never a 412 it did not ask for.
var ErrBusy = errs.E(errs.Unavailable, "busy", "the resource is being changed by many requests at once; retry")

// Match is an If-Match precondition: none, "*" (any current
// representation), or a list of entity tags of which one must name the
// current version. Weak tags (W/"...") never match, so a list of only weak
// tags, or of tags that name no version, matches nothing.
type Match struct {
	set, any bool
	versions []int64
}

// None is the absence of If-Match.
var None Match

// Any is If-Match: *.
func Any() Match { return Match{set: true, any: true} }

// Versions is If-Match with the strong tags of these versions (none:
// nothing matches).
func Versions(vs ...int64) Match { return Match{set: true, versions: vs} }

// Set reports whether the request has a precondition at all.
func (m Match) Set() bool { return m.set }

// Holds reports whether the precondition holds for an existing item at
// version current.
func (m Match) Holds(current int64) bool {
	return !m.set || m.any || slices.Contains(m.versions, current)
}

// Check returns ErrVersion unless m holds for an item at version current.
func (m Match) Check(current int64) error {
	if !m.Holds(current) {
		return ErrVersion
	}
	return nil
}

// Pin is the version a write conditions on, having checked current: current
// when the caller named versions, 0 when not.
func (m Match) Pin(current int64) int64 {
	if m.set && !m.any {
		return current
	}
	return 0
}

// Single is the one version the precondition names, if it names exactly
// one (and no "*").
func (m Match) Single() (int64, bool) {
	if m.set && !m.any && len(m.versions) == 1 {
		return m.versions[0], true
	}
	return 0, false
}

// attempts bounds the reads-and-writes of a write without a precondition
// that keeps meeting concurrent changes.
const attempts = 12

// Retry runs an optimistic read-modify-write: write tries the change on
// prev, the target as read (loaded, as the authorization read loaded it;
// when nil, read reads it), and fails with errs.PreconditionFailed when the
// target changed before its conditional write. With If-Match (m) that is
// the answer; without, the caller asked for the change whatever the
// version, so Retry reads and tries again after a short jittered pause, and
// ends with ErrBusy after attempts.
func Retry[T, R any](ctx context.Context, m Match, loaded *T, read func(context.Context) (T, error), write func(prev T) (R, error)) (R, error) {
	var zero R
	for attempt := 1; ; attempt++ {
		var prev T
		if attempt == 1 && loaded != nil {
			prev = *loaded
		} else {
			var err error
			if prev, err = read(ctx); err != nil {
				return zero, err
			}
		}
		v, err := write(prev)
		if m.set || !errs.Is(err, errs.PreconditionFailed) {
			return v, err
		}
		if attempt == attempts {
			return zero, ErrBusy
		}
		select {
		case <-time.After(time.Duration(1+rand.IntN(2*attempt)) * time.Millisecond):
		case <-ctx.Done():
			return zero, ctx.Err()
		}
	}
}
