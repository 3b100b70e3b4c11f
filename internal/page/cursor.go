package page

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"github.com/tenantd/tenantd/internal/errs"
)

// Cursors signs store start keys into opaque cursors bound to the tenant
// and the listing they came from, so a cursor cannot be forged, replayed on
// another org or listing, or kept forever. The REST and GraphQL APIs share
// one: a listing's cursor is the same in both.
type Cursors struct {
	Key []byte           // the HMAC key, at least 32 bytes
	TTL time.Duration    // how long a cursor stays valid
	Now func() time.Time // the clock
}

type cursorBody struct {
	Org     string `json:"o"`
	Listing string `json:"l"`
	Key     string `json:"k"`
	Expires int64  `json:"e"`
}

// ErrBadCursor is the error of a cursor Decode refuses.
var ErrBadCursor = errs.InvalidParam("cursor", "invalid_cursor", "the cursor is malformed, expired, or belongs to another listing")

func (cs Cursors) mac(payload string) string {
	m := hmac.New(sha256.New, cs.Key)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Encode wraps a store key ("" stays "": no next page).
func (cs Cursors) Encode(org, listing, key string) string {
	if key == "" {
		return ""
	}
	b, _ := json.Marshal(cursorBody{Org: org, Listing: listing, Key: key, Expires: cs.Now().Add(cs.TTL).Unix()})
	payload := base64.RawURLEncoding.EncodeToString(b)
	return payload + "." + cs.mac(payload)
}

// Decode verifies a cursor and returns the store key it carries ("" for
// no cursor). Returns Invalid (ErrBadCursor) for anything else.
func (cs Cursors) Decode(org, listing, cursor string) (string, error) {
	if cursor == "" {
		return "", nil
	}
	payload, sig, ok := strings.Cut(cursor, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(cs.mac(payload))) {
		return "", ErrBadCursor
	}
	var c cursorBody
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || json.Unmarshal(b, &c) != nil {
		return "", ErrBadCursor
	}
	if c.Org != org || c.Listing != listing || cs.Now().Unix() > c.Expires || c.Key == "" {
		return "", ErrBadCursor
	}
	return c.Key, nil
}
