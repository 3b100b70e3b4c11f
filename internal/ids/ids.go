// Package ids generates and validates the identifiers that end up inside
// DynamoDB keys. '#' is the key delimiter, so nothing reaches a key without
// passing through Validate first: resource IDs must be ULIDs and user IDs (the
// identity provider's subject) are restricted to a small printable alphabet.
package ids

import (
	"crypto/rand"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/tenantd/tenantd/internal/errs"
)

// MaxUserIDLen bounds user IDs; identity providers' subjects fit well within.
const MaxUserIDLen = 128

// Generator makes time-ordered ULIDs. Its clock is injectable for tests.
type Generator struct {
	mu      sync.Mutex
	now     func() time.Time
	entropy io.Reader
}

// NewGenerator returns a Generator reading time from now (time.Now if nil).
// IDs made within one millisecond are monotonic, so a descending read of a
// ULID-sorted key is newest first even for bursts.
func NewGenerator(now func() time.Time) *Generator {
	if now == nil {
		now = time.Now
	}
	return &Generator{now: now, entropy: ulid.Monotonic(rand.Reader, 0)}
}

// New returns a fresh ULID string.
func (g *Generator) New() string { return g.NewAt(g.now()) }

// NewAt returns a fresh ULID whose time part is t, so an ID minted for an
// event sorts by the time the event records.
func (g *Generator) NewAt(t time.Time) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return ulid.MustNew(ulid.Timestamp(t), g.entropy).String()
}

// ValidResource reports whether s is a canonical ULID (26 Crockford base32
// characters, upper case, within the 48-bit time range).
func ValidResource(s string) bool {
	if len(s) != ulid.EncodedSize {
		return false
	}
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(crockford, s[i]) < 0 {
			return false
		}
	}
	return s[0] <= '7' // larger first characters overflow 128 bits
}

// crockford is Crockford's base32 alphabet, upper case.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// ValidUser reports whether s is an acceptable user ID: 1-128 characters of
// [A-Za-z0-9._~:@|+=-] (no '#' delimiter, '%', whitespace, control or
// look-alike non-ASCII characters), not all of them dots: "." and ".." are
// dot segments that URL clients remove (RFC 3986 5.2.4), so /users/.. could
// never name such a user.
func ValidUser(s string) bool {
	if len(s) == 0 || len(s) > MaxUserIDLen {
		return false
	}
	dots := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.':
			dots++
		case c == '_', c == '~', c == ':', c == '@', c == '|', c == '+', c == '=', c == '-':
		default:
			return false
		}
	}
	return dots < len(s)
}

// Resource returns an Invalid error naming field unless id is a ULID.
func Resource(field, id string) error {
	if !ValidResource(id) {
		return errs.InvalidField(field, "invalid_id", "must be a ULID (26 characters of Crockford base32)")
	}
	return nil
}

// User returns an Invalid error naming field unless id is a valid user ID.
func User(field, id string) error {
	if !ValidUser(id) {
		return errs.InvalidField(field, "invalid_id", "must be 1-%d characters of A-Z a-z 0-9 . _ ~ : @ | + = -, not only dots", MaxUserIDLen)
	}
	return nil
}
