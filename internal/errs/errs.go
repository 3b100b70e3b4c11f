// Package errs defines the few kinds of failure tenantd distinguishes and the
// error value that carries them from the store, through the domain services,
// to the single HTTP error handler that turns them into problem+json.
//
// A kind decides the HTTP status; a code is the stable, machine-readable
// reason clients switch on ("email_taken", "version_mismatch"); the message
// is for humans and never contains key strings or internals.
package errs

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Kind classifies an error by what the caller can do about it.
type Kind int

// The kinds of failure. Internal is the zero value so that an unclassified
// error is never mistaken for a client error.
const (
	Internal           Kind = iota // a bug or an unexpected dependency failure
	Invalid                        // the input is malformed or breaks a rule
	Unauthenticated                // no or bad credentials
	Forbidden                      // authenticated but lacking the role
	NotFound                       // no such resource (or not visible to the caller)
	Conflict                       // the write clashes with existing state
	PreconditionFailed             // If-Match / version did not match
	Unavailable                    // a dependency is overloaded or down; retry later
	Unprocessable                  // well-formed but cannot be applied (a reused idempotency key)
	TooManyRequests                // the tenant exceeded its rate limit
)

var kindNames = [...]string{"internal", "invalid", "unauthenticated", "forbidden", "not_found", "conflict",
	"precondition_failed", "unavailable", "unprocessable", "too_many_requests"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Error is a classified error. Field is set for validation errors that
// concern one input field (a JSON property or a path parameter).
type Error struct {
	Kind    Kind
	Code    string
	Message string
	Field   string
	// In is where Field is: "body" (the default), "query", "path" or
	// "header".
	In string
	// Also names more fields of In that the same problem concerns (a
	// range whose two ends disagree).
	Also []string
	Err  error // optional cause, logged but never shown to clients
}

func (e *Error) Error() string {
	msg := e.Message
	if e.Field != "" {
		msg = e.Field + ": " + msg
	}
	if e.Err != nil {
		return fmt.Sprintf("%s (%s): %s: %v", e.Code, e.Kind, msg, e.Err)
	}
	return fmt.Sprintf("%s (%s): %s", e.Code, e.Kind, msg)
}

func (e *Error) Unwrap() error { return e.Err }

// E builds an error of kind k with a stable code and a human message.
func E(k Kind, code, format string, args ...any) *Error {
	return &Error{Kind: k, Code: code, Message: fmt.Sprintf(format, args...)}
}

// InvalidField reports that one input field breaks a rule.
func InvalidField(field, code, format string, args ...any) *Error {
	e := E(Invalid, code, format, args...)
	e.Field = field
	return e
}

// InvalidParam reports that one query parameter breaks a rule.
func InvalidParam(name, code, format string, args ...any) *Error {
	e := InvalidField(name, code, format, args...)
	e.In = "query"
	return e
}

// InvalidParams reports a problem that several query parameters make
// together (each is listed).
func InvalidParams(code, message string, names ...string) *Error {
	e := InvalidParam(names[0], code, "%s", message)
	e.Also = names[1:]
	return e
}

// InvalidHeader reports that one request header breaks a rule.
func InvalidHeader(name, code, format string, args ...any) *Error {
	e := InvalidField(name, code, format, args...)
	e.In = "header"
	return e
}

// As returns the *Error in err's chain, if any.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// KindOf returns the kind of err, Internal if it carries none.
func KindOf(err error) Kind {
	if e, ok := As(err); ok {
		return e.Kind
	}
	return Internal
}

// CodeOf returns the stable code of err, "" if it carries none.
func CodeOf(err error) string {
	if e, ok := As(err); ok {
		return e.Code
	}
	return ""
}

// Is reports whether err carries kind k.
func Is(err error, k Kind) bool { return err != nil && KindOf(err) == k }

// CodeWriteOutcomeUnknown is the code of a write the request stopped
// waiting for after it was sent: it may have been applied, and may still be.
const CodeWriteOutcomeUnknown = "write_outcome_unknown"

// ErrVersion reports an If-Match or version condition that no longer holds.
var ErrVersion = E(PreconditionFailed, "version_mismatch", "the resource was changed since you read it; read it again and retry")

// Match is an If-Match precondition (RFC 9110, section 13.1.1): none,
// "*" (any current representation), or a list of entity tags of which one
// must name the current version. Weak tags (W/"...") never match, so a
// list of only weak tags, or of tags that name no version, matches
// nothing.
type Match struct {
	set, any bool
	versions []int64
}

// NoMatch is the absence of If-Match.
var NoMatch Match

// MatchAny is If-Match: *.
func MatchAny() Match { return Match{set: true, any: true} }

// MatchVersions is If-Match with the strong tags of these versions (none:
// nothing matches).
func MatchVersions(vs ...int64) Match { return Match{set: true, versions: vs} }

// Set reports whether the request has a precondition at all.
func (m Match) Set() bool { return m.set }

// Holds reports whether the precondition holds for an existing item at
// version current.
func (m Match) Holds(current int64) bool {
	if !m.set || m.any {
		return true
	}
	return slices.Contains(m.versions, current)
}

// Pin is the version a write should condition on, having checked Holds
// on current: current when the caller asked for one, 0 when not.
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

// CheckVersion returns ErrVersion unless the If-Match precondition holds
// for an item at version current.
func CheckVersion(ifMatch Match, current int64) error {
	if !ifMatch.Holds(current) {
		return ErrVersion
	}
	return nil
}

// unconditionalAttempts bounds the reads-and-writes of a write without a
// precondition that keeps meeting concurrent changes.
const unconditionalAttempts = 12

// ErrBusy ends a write without a precondition that never got its turn: a
// 503 the client may retry, never a 412 it did not ask for.
var ErrBusy = E(Unavailable, "busy", "the resource is being changed by many requests at once; retry")

// Unconditional runs a read-modify-write (fn) for a caller who set no
// If-Match: such a write is the last writer's, so when fn
// fails only because the item changed between its read and its write
// (PreconditionFailed), it waits a moment (jittered, growing) and tries
// again instead of answering 412; after unconditionalAttempts it answers
// 503 busy. With an If-Match, fn's answer stands.
func Unconditional[T any](ifMatch Match, fn func() (T, error)) (T, error) {
	for attempt := 1; ; attempt++ {
		v, err := fn()
		if ifMatch.set || !Is(err, PreconditionFailed) {
			return v, err
		}
		if attempt == unconditionalAttempts {
			return v, ErrBusy
		}
		time.Sleep(time.Duration(1+rand.IntN(2*attempt)) * time.Millisecond)
	}
}

// UnconditionalErr is Unconditional for a write that returns only an error.
func UnconditionalErr(ifMatch Match, fn func() error) error {
	_, err := Unconditional(ifMatch, func() (struct{}, error) { return struct{}{}, fn() })
	return err
}
