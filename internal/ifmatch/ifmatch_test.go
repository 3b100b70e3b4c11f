package ifmatch

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/tenantd/tenantd/internal/errs"
)

// TestMatch checks what each form of If-Match holds for, and the version a
// write made under it is pinned to.
func TestMatch(t *testing.T) {
	cases := []struct {
		name     string
		m        Match
		current  int64
		set      bool
		holds    bool
		pin      int64
		single   int64
		isSingle bool
	}{
		{name: "None/any version holds", m: None, current: 7, holds: true, pin: 0},
		{name: "None/version 0 holds", m: None, current: 0, holds: true, pin: 0},
		{name: "Any/holds", m: Any(), current: 7, set: true, holds: true, pin: 0},
		{name: "Versions/the named version", m: Versions(7), current: 7, set: true, holds: true, pin: 7, single: 7, isSingle: true},
		{name: "Versions/another version", m: Versions(6), current: 7, set: true, holds: false, pin: 7, single: 6, isSingle: true},
		{name: "Versions/one of several", m: Versions(5, 7, 9), current: 7, set: true, holds: true, pin: 7},
		{name: "Versions/none of several", m: Versions(5, 6), current: 7, set: true, holds: false, pin: 7},
		{name: "Versions/no tags match nothing", m: Versions(), current: 7, set: true, holds: false, pin: 7},
		{name: "Versions/no tags match nothing, not even version 0", m: Versions(), current: 0, set: true, holds: false, pin: 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.m.Set(); got != c.set {
				t.Errorf("Set: got %v, want %v", got, c.set)
			}
			if got := c.m.Holds(c.current); got != c.holds {
				t.Errorf("Holds(%d): got %v, want %v", c.current, got, c.holds)
			}
			err := c.m.Check(c.current)
			switch {
			case c.holds && err != nil:
				t.Errorf("Check(%d): got %v, want nil", c.current, err)
			case !c.holds && (errs.KindOf(err) != errs.PreconditionFailed || errs.CodeOf(err) != "version_mismatch"):
				t.Errorf("Check(%d): got %v, want precondition_failed/version_mismatch", c.current, err)
			}
			if got := c.m.Pin(c.current); got != c.pin {
				t.Errorf("Pin(%d): got %d, want %d", c.current, got, c.pin)
			}
			v, ok := c.m.Single()
			if v != c.single || ok != c.isSingle {
				t.Errorf("Single: got %d, %v; want %d, %v", v, ok, c.single, c.isSingle)
			}
		})
	}
}

// TestErrors pins the kinds and codes Retry's callers and the HTTP layer
// switch on.
func TestErrors(t *testing.T) {
	if got, want := errs.KindOf(ErrVersion), errs.PreconditionFailed; got != want {
		t.Errorf("ErrVersion kind: got %v, want %v", got, want)
	}
	if got, want := errs.KindOf(ErrBusy), errs.Unavailable; got != want {
		t.Errorf("ErrBusy kind: got %v, want %v", got, want)
	}
	if got, want := errs.CodeOf(ErrBusy), "busy"; got != want {
		t.Errorf("ErrBusy code: got %q, want %q", got, want)
	}
}

// retryRun records what Retry did with its read and write.
type retryRun struct {
	reads  int
	writes int
	prevs  []int // what each write was given
}

// TestRetry checks Retry's loop: when it reads, when it writes again, and
// how it ends. The target is an int; read returns 100 + the number of
// reads so far, so each write's prev tells where it came from.
func TestRetry(t *testing.T) {
	conflict := errs.E(errs.Conflict, "email_taken", "taken")
	notFound := errs.E(errs.NotFound, "user_not_found", "gone")
	stale := ErrVersion
	first := 1
	cases := []struct {
		name  string
		m     Match
		first *int
		// readErr fails every read; failures are write's answers in
		// turn (the last one repeats), nil meaning success.
		readErr  error
		failures []error
		// cancelOnWrite cancels the context during the first write.
		cancelOnWrite bool

		wantKind   errs.Kind
		wantCode   string
		wantErr    error // compared with errors.Is when set
		wantOK     bool
		wantReads  int
		wantWrites int
		wantPrevs  []int
	}{
		{name: "OK/first is used without a read", first: &first, failures: []error{nil},
			wantOK: true, wantReads: 0, wantWrites: 1, wantPrevs: []int{1}},
		{name: "OK/nil first is read", failures: []error{nil},
			wantOK: true, wantReads: 1, wantWrites: 1, wantPrevs: []int{101}},
		{name: "OK/no If-Match: a concurrent change reads again and retries", first: &first, failures: []error{stale, nil},
			wantOK: true, wantReads: 1, wantWrites: 2, wantPrevs: []int{1, 101}},
		{name: "OK/no If-Match: several concurrent changes, each read again", failures: []error{stale, stale, stale, nil},
			wantOK: true, wantReads: 4, wantWrites: 4, wantPrevs: []int{101, 102, 103, 104}},
		{name: "Error/a non-precondition error is not retried", first: &first, failures: []error{conflict},
			wantKind: errs.Conflict, wantCode: "email_taken", wantReads: 0, wantWrites: 1, wantPrevs: []int{1}},
		{name: "Error/a read error ends it", readErr: notFound, failures: []error{nil},
			wantKind: errs.NotFound, wantCode: "user_not_found", wantReads: 1, wantWrites: 0},
		{name: "Error/a read error on a retry ends it", first: &first, readErr: notFound, failures: []error{stale, nil},
			wantKind: errs.NotFound, wantCode: "user_not_found", wantReads: 1, wantWrites: 1, wantPrevs: []int{1}},
		{name: "Error/If-Match: a precondition failure is the answer", m: Versions(1), first: &first, failures: []error{stale, nil},
			wantKind: errs.PreconditionFailed, wantCode: "version_mismatch", wantReads: 0, wantWrites: 1, wantPrevs: []int{1}},
		{name: "Error/If-Match *: a precondition failure is the answer", m: Any(), failures: []error{stale, nil},
			wantKind: errs.PreconditionFailed, wantCode: "version_mismatch", wantReads: 1, wantWrites: 1, wantPrevs: []int{101}},
		{name: "Error/no If-Match: ErrBusy after the bound", first: &first, failures: []error{stale},
			wantKind: errs.Unavailable, wantCode: "busy", wantReads: attempts - 1, wantWrites: attempts},
		{name: "Error/a cancelled context ends the retries", first: &first, failures: []error{stale}, cancelOnWrite: true,
			wantErr: context.Canceled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var r retryRun
			read := func(context.Context) (int, error) {
				r.reads++
				if c.readErr != nil {
					return 0, c.readErr
				}
				return 100 + r.reads, nil
			}
			write := func(prev int) (string, error) {
				r.writes++
				r.prevs = append(r.prevs, prev)
				if c.cancelOnWrite {
					cancel()
				}
				err := c.failures[min(r.writes, len(c.failures))-1]
				if err != nil {
					return "", err
				}
				return "done", nil
			}
			got, err := Retry(ctx, c.m, c.first, read, write)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("got %v, want %v", err, c.wantErr)
				}
				// The pause before a retry gives way to the context; a
				// retry that began just before it was cancelled is the
				// most that may happen.
				if r.writes >= attempts {
					t.Errorf("writes: got %d, want fewer than %d", r.writes, attempts)
				}
				return
			}
			if c.wantOK {
				if err != nil || got != "done" {
					t.Fatalf("got %q, %v; want done", got, err)
				}
			} else {
				if errs.KindOf(err) != c.wantKind || errs.CodeOf(err) != c.wantCode {
					t.Fatalf("got %v, want %v/%s", err, c.wantKind, c.wantCode)
				}
			}
			if r.reads != c.wantReads || r.writes != c.wantWrites {
				t.Errorf("reads, writes: got %d, %d; want %d, %d", r.reads, r.writes, c.wantReads, c.wantWrites)
			}
			if c.wantPrevs != nil && !slices.Equal(r.prevs, c.wantPrevs) {
				t.Errorf("prevs: got %v, want %v", r.prevs, c.wantPrevs)
			}
		})
	}
}
