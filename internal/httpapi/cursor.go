package httpapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"github.com/tenantd/tenantd/internal/errs"
)

// cursors signs store start keys into opaque cursors bound to the tenant
// and the listing they came from, so a cursor cannot be forged, replayed on
// another org or listing, or kept forever.
type cursors struct {
	key []byte
	ttl time.Duration
	now func() time.Time
}

type cursorBody struct {
	Org     string `json:"o"`
	Listing string `json:"l"`
	Key     string `json:"k"`
	Expires int64  `json:"e"`
}

var errBadCursor = errs.InvalidParam("cursor", "invalid_cursor", "the cursor is malformed, expired, or belongs to another listing")

func (cs cursors) mac(payload string) string {
	m := hmac.New(sha256.New, cs.key)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// encode wraps a store key ("" stays "": no next page).
func (cs cursors) encode(org, listing, key string) string {
	if key == "" {
		return ""
	}
	b, _ := json.Marshal(cursorBody{Org: org, Listing: listing, Key: key, Expires: cs.now().Add(cs.ttl).Unix()})
	payload := base64.RawURLEncoding.EncodeToString(b)
	return payload + "." + cs.mac(payload)
}

// decode verifies a cursor and returns the store key it carries.
func (cs cursors) decode(org, listing, cursor string) (string, error) {
	if cursor == "" {
		return "", nil
	}
	payload, sig, ok := strings.Cut(cursor, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(cs.mac(payload))) {
		return "", errBadCursor
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return "", errBadCursor
	}
	var c cursorBody
	if err := json.Unmarshal(b, &c); err != nil {
		return "", errBadCursor
	}
	if c.Org != org || c.Listing != listing || cs.now().Unix() > c.Expires || c.Key == "" {
		return "", errBadCursor
	}
	return c.Key, nil
}
