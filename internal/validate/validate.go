// Package validate checks free-text input shared by the domain packages:
// lengths counted in characters, no control characters, and email addresses
// that are safe to put in a key.
package validate

import (
	"net/mail"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tenantd/tenantd/internal/errs"
)

// Text checks that s is valid UTF-8 of min..max characters with no control
// characters other than newline and tab (allowed only when multiline).
func Text(field, s string, min, max int, multiline bool) error {
	if !utf8.ValidString(s) {
		return errs.InvalidField(field, "invalid_text", "must be valid UTF-8")
	}
	n := utf8.RuneCountInString(s)
	if n < min {
		if min == 1 {
			return errs.InvalidField(field, "required", "must not be empty")
		}
		return errs.InvalidField(field, "too_short", "must be at least %d characters", min)
	}
	if n > max {
		return errs.InvalidField(field, "too_long", "must be at most %d characters", max)
	}
	for _, r := range s {
		if multiline && (r == '\n' || r == '\t' || r == '\r') {
			continue
		}
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return errs.InvalidField(field, "invalid_text", "must not contain control characters")
		}
	}
	return nil
}

// Name checks a display name: trimmed, 1..max characters, one line.
func Name(field, s string, max int) error {
	if s != strings.TrimSpace(s) {
		return errs.InvalidField(field, "invalid_text", "must not start or end with whitespace")
	}
	return Text(field, s, 1, max, false)
}

// Email checks a bare address (no display name) of at most max bytes. Email
// addresses reach a key (the uniqueness claim), so '#' is refused too.
func Email(field, s string, max int) error {
	if len(s) == 0 {
		return errs.InvalidField(field, "required", "must not be empty")
	}
	if len(s) > max {
		return errs.InvalidField(field, "too_long", "must be at most %d characters", max)
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || a.Name != "" || strings.ContainsAny(s, "#\"\\ ") {
		return errs.InvalidField(field, "invalid_email", "must be a plain email address such as ada@example.com")
	}
	for _, r := range s {
		if r > unicode.MaxASCII || unicode.IsControl(r) {
			return errs.InvalidField(field, "invalid_email", "must be ASCII")
		}
	}
	return nil
}
