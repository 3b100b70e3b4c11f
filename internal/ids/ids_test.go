package ids_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
)

const goodULID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"

func TestValidResource(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want bool
	}{
		{"ULID", goodULID, true},
		{"all zero", "00000000000000000000000000", true},
		{"max", "7ZZZZZZZZZZZZZZZZZZZZZZZZZ", true},
		{"overflow first char", "8ZZZZZZZZZZZZZZZZZZZZZZZZZ", false},
		{"empty", "", false},
		{"not a ulid", "not-a-ulid", false},
		{"lower case", strings.ToLower(goodULID), false},
		{"one lower case char", "01ARZ3NDEKTSV4RRFFQ69G5FAv", false},
		{"25 chars", goodULID[:25], false},
		{"27 chars", goodULID + "0", false},
		{"letter I", "01ARZ3NDEKTSV4RRFFQ69G5FAI", false},
		{"letter L", "01ARZ3NDEKTSV4RRFFQ69G5FAL", false},
		{"letter O", "01ARZ3NDEKTSV4RRFFQ69G5FAO", false},
		{"letter U", "01ARZ3NDEKTSV4RRFFQ69G5FAU", false},
		{"hash", "01ARZ3NDEKTSV4RRFFQ69G5FA#", false},
		{"percent-encoded hash", "01ARZ3NDEKTSV4RRFFQ69G5%23", false},
		{"control char", "01ARZ3NDEKTSV4RRFFQ69G5FA\x00", false},
		{"space", "01ARZ3NDEKTSV4RRFFQ69G5FA ", false},
		{"fullwidth digit", "０1ARZ3NDEKTSV4RRFFQ69G5F", false},  // 26 bytes, not 26 chars
		{"cyrillic A", "01\u0410RZ3NDEKTSV4RRFFQ69G5FA", false}, // 26 bytes
		{"uuid", "123e4567-e89b-12d3-a456-426614174000", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got, want := ids.ValidResource(c.in), c.want; got != want {
				t.Errorf("ValidResource(%q): got %v, want %v", c.in, got, want)
			}
			err := ids.Resource("teamId", c.in)
			if got, want := err == nil, c.want; got != want {
				t.Fatalf("Resource(%q): got err %v, want ok=%v", c.in, err, want)
			}
			if err != nil {
				e, _ := errs.As(err)
				if got, want := errs.KindOf(err), errs.Invalid; got != want {
					t.Errorf("kind: got %v, want %v", got, want)
				}
				if got, want := e.Code, "invalid_id"; got != want {
					t.Errorf("code: got %q, want %q", got, want)
				}
				if got, want := e.Field, "teamId"; got != want {
					t.Errorf("field: got %q, want %q", got, want)
				}
			}
		})
	}
}

func TestValidUser(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want bool
	}{
		{"simple", "u_alice", true},
		{"auth0 subject", "auth0|5f7c8ec7c33c6c004bbafe82", true},
		{"google subject", "google-oauth2|110169484474386276334", true},
		{"email-like", "ada.lovelace+test@example.com", true},
		{"urn-like", "urn:user:~x=1", true},
		{"one char", "a", true},
		{"128 chars", strings.Repeat("a", 128), true},
		{"129 chars", strings.Repeat("a", 129), false},
		{"empty", "", false},
		{"hash", "a#b", false},
		{"leading hash", "#METADATA", false},
		{"percent-encoded hash", "%23", false},
		{"percent", "a%b", false},
		{"slash", "a/b", false},
		{"space", "a b", false},
		{"leading space", " alice", false},
		{"NUL", "a\x00b", false},
		{"newline", "alice\n", false},
		{"tab", "a\tb", false},
		{"DEL", "a\x7fb", false},
		{"cyrillic a look-alike", "\u0430lice", false},
		{"fullwidth a", "\uff41lice", false},
		{"zero-width space", "alice\u200b", false},
		{"latin-1 byte", "al\xe9ce", false},
		{"quote", `a"b`, false},
		{"backslash", `a\b`, false},
		{"128 chars then a hash", strings.Repeat("a", 127) + "#", false},
		// Dot segments: a URL client that removes them (RFC 3986 5.2.4, curl,
		// the WHATWG URL parser) turns .../users/.. into another path, so an
		// ID made only of dots could never be addressed.
		{"dot", ".", false},
		{"dot dot", "..", false},
		{"three dots", "...", false},
		{"128 dots", strings.Repeat(".", 128), false},
		{"dot dot and a letter", "..a", true},
		{"letter between dots", ".a.", true},
		{"dot and a dash", ".-", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got, want := ids.ValidUser(c.in), c.want; got != want {
				t.Errorf("ValidUser(%q): got %v, want %v", c.in, got, want)
			}
			err := ids.User("userId", c.in)
			if got, want := err == nil, c.want; got != want {
				t.Fatalf("User(%q): got err %v, want ok=%v", c.in, err, want)
			}
			if err != nil {
				if got, want := errs.KindOf(err), errs.Invalid; got != want {
					t.Errorf("kind: got %v, want %v", got, want)
				}
				if got, want := errs.CodeOf(err), "invalid_id"; got != want {
					t.Errorf("code: got %q, want %q", got, want)
				}
			}
		})
	}
}

func TestGeneratorMakesValidMonotonicIDs(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	g := ids.NewGenerator(func() time.Time { return now })
	prev := ""
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ { // all in the same millisecond
		id := g.New()
		if !ids.ValidResource(id) {
			t.Fatalf("New() = %q is not a valid resource ID", id)
		}
		if seen[id] {
			t.Fatalf("New() repeated %q", id)
		}
		seen[id] = true
		if id <= prev {
			t.Fatalf("New() not monotonic: %q after %q", id, prev)
		}
		prev = id
	}
	if got := ids.NewGenerator(nil).New(); !ids.ValidResource(got) {
		t.Errorf("NewGenerator(nil).New() = %q is not valid", got)
	}
}

// safeForKey reports whether s could sit inside a key: no '#' delimiter
// and nothing outside printable ASCII.
func safeForKey(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '#' || c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

func FuzzValidUser(f *testing.F) {
	for _, s := range []string{"u_alice", "a#b", "%23", "", " ", strings.Repeat("a", 129), "\u0430lice",
		"auth0|abc", "a\x00b", "alice\u200b", "\xff", "google-oauth2|1", "~:@|+=-._"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !ids.ValidUser(s) {
			if ids.User("userId", s) == nil {
				t.Fatalf("ValidUser(%q) is false but User accepts it", s)
			}
			return
		}
		if ids.User("userId", s) != nil {
			t.Fatalf("ValidUser(%q) is true but User refuses it", s)
		}
		if !safeForKey(s) {
			t.Fatalf("ValidUser accepted %q, which is not safe inside a key", s)
		}
		if len(s) == 0 || len(s) > ids.MaxUserIDLen {
			t.Fatalf("ValidUser accepted %q of length %d", s, len(s))
		}
	})
}

func FuzzValidResource(f *testing.F) {
	for _, s := range []string{goodULID, strings.ToLower(goodULID), "not-a-ulid", "", "8ZZZZZZZZZZZZZZZZZZZZZZZZZ",
		"01ARZ3NDEKTSV4RRFFQ69G5FA#", "01ARZ3NDEKTSV4RRFFQ69G5\x00AV", "０1ARZ3NDEKTSV4RRFFQ69G5F"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !ids.ValidResource(s) {
			if ids.Resource("teamId", s) == nil {
				t.Fatalf("ValidResource(%q) is false but Resource accepts it", s)
			}
			return
		}
		if ids.Resource("teamId", s) != nil {
			t.Fatalf("ValidResource(%q) is true but Resource refuses it", s)
		}
		if !safeForKey(s) {
			t.Fatalf("ValidResource accepted %q, which is not safe inside a key", s)
		}
		if len(s) != 26 || s != strings.ToUpper(s) {
			t.Fatalf("ValidResource accepted %q, not a canonical ULID", s)
		}
	})
}
