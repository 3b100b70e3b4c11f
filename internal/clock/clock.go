// Package clock gives services an injectable notion of now, truncated to
// milliseconds so that what is stored and what is returned compare equal.
package clock

import "time"

// Clock returns the current time.
type Clock func() time.Time

// System is the real clock in UTC, at millisecond precision.
func System() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// Or returns c, or System if c is nil.
func Or(c Clock) Clock {
	if c == nil {
		return System
	}
	return c
}
