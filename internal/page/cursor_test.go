package page

import (
	"strings"
	"testing"
	"time"
)

func fuzzCursors() Cursors {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	return Cursors{Key: []byte(strings.Repeat("k", 32)), TTL: time.Hour, Now: func() time.Time { return now }}
}

// FuzzCursorDecode feeds arbitrary cursors to the decoder: it must never
// panic, and whatever it accepts must be a cursor it signed for exactly this
// org and listing.
func FuzzCursorDecode(f *testing.F) {
	cs := fuzzCursors()
	f.Add(cs.Encode("01ARZ3NDEKTSV4RRFFQ69G5FAV", "listTickets:", "eyJwayI6IngifQ"))
	f.Add("")
	f.Add(".")
	f.Add("eyJvIjoiYSJ9.AAAA")
	f.Add(strings.Repeat("A", 5000))
	f.Fuzz(func(t *testing.T, cursor string) {
		key, err := cs.Decode("01ARZ3NDEKTSV4RRFFQ69G5FAV", "listTickets:", cursor)
		if err != nil || cursor == "" {
			return
		}
		if again := cs.Encode("01ARZ3NDEKTSV4RRFFQ69G5FAV", "listTickets:", key); again != cursor {
			t.Errorf("accepted a cursor the server would not have issued: %q", cursor)
		}
		if _, err := cs.Decode("01BX5ZZKBKACTAV9WEVGEMMVRZ", "listTickets:", cursor); err == nil {
			t.Errorf("a cursor of one org was accepted for another: %q", cursor)
		}
	})
}

func TestCursor(t *testing.T) {
	cs := fuzzCursors()
	const org, listing, key = "01ARZ3NDEKTSV4RRFFQ69G5FAV", "listTeamMembers:01BX5ZZKBKACTAV9WEVGEMMVRZ", "eyJwayI6IngifQ"
	c := cs.Encode(org, listing, key)
	t.Run("OK", func(t *testing.T) {
		got, err := cs.Decode(org, listing, c)
		if err != nil || got != key {
			t.Fatalf("decode: got %q, %v; want %q", got, err, key)
		}
	})
	for name, tc := range map[string]struct{ org, listing, cursor string }{
		"ErrOtherOrg":     {"01BX5ZZKBKACTAV9WEVGEMMVRZ", listing, c},
		"ErrOtherListing": {org, "listTeamMembers:01ARZ3NDEKTSV4RRFFQ69G5FAV", c},
		"ErrFlippedBit":   {org, listing, flip(c, 3)},
		"ErrFlippedSig":   {org, listing, flip(c, len(c)-2)},
		"ErrNoSignature":  {org, listing, strings.Split(c, ".")[0]},
		"ErrGarbage":      {org, listing, "not a cursor"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := cs.Decode(tc.org, tc.listing, tc.cursor); err == nil {
				t.Errorf("decode accepted %q", tc.cursor)
			}
		})
	}
	t.Run("ErrExpired", func(t *testing.T) {
		later := cs
		later.Now = func() time.Time { return cs.Now().Add(2 * time.Hour) }
		if _, err := later.Decode(org, listing, c); err == nil {
			t.Error("an expired cursor was accepted")
		}
	})
}

func flip(s string, i int) string {
	b := []byte(s)
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}
