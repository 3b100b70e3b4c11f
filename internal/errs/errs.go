// Package errs defines the few kinds of failure tenantd distinguishes and the
// error value that carries them from the store to the one handler that makes
// them problem+json: a kind decides the HTTP status; a code is the stable
// reason clients switch on ("email_taken"); the message is for humans and
// never holds key strings or internals.
package errs

import (
	"errors"
	"fmt"
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
