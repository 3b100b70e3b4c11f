package validate_test

import (
	"strings"
	"testing"

	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/validate"
)

// checkErr asserts err is nil when code is "", else an Invalid error with
// that code naming field.
func checkErr(t *testing.T, err error, field, code string) {
	t.Helper()
	if code == "" {
		if err != nil {
			t.Fatalf("got %v, want nil", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("got nil, want %s", code)
	}
	e, ok := errs.As(err)
	if !ok {
		t.Fatalf("got %v, not an *errs.Error", err)
	}
	if got, want := e.Kind, errs.Invalid; got != want {
		t.Errorf("kind: got %v, want %v", got, want)
	}
	if got, want := e.Code, code; got != want {
		t.Errorf("code: got %q, want %q", got, want)
	}
	if got, want := e.Field, field; got != want {
		t.Errorf("field: got %q, want %q", got, want)
	}
}

func TestEmail(t *testing.T) {
	cases := []struct {
		name, in, code string
	}{
		{"plain", "ada@example.com", ""},
		{"plus and dots", "ada.lovelace+tag@sub.example.co", ""},
		{"upper case", "ADA@Example.COM", ""},
		{"254 bytes", strings.Repeat("a", 242) + "@example.com", ""},
		{"255 bytes", strings.Repeat("a", 243) + "@example.com", "too_long"},
		{"empty", "", "required"},
		{"hash in local part", "a#b@example.com", "invalid_email"},
		{"hash in domain", "ada@ex#ample.com", "invalid_email"},
		{"display name", "Ada <ada@example.com>", "invalid_email"},
		{"angle brackets", "<ada@example.com>", "invalid_email"},
		{"comment", "ada@example.com (Ada)", "invalid_email"},
		{"quoted local part", `"ada"@example.com`, "invalid_email"},
		{"quoted local part with space", `"a da"@example.com`, "invalid_email"},
		{"backslash", `a\b@example.com`, "invalid_email"},
		{"no at", "ada.example.com", "invalid_email"},
		{"two ats", "ada@@example.com", "invalid_email"},
		{"two addresses", "ada@example.com, bob@example.com", "invalid_email"},
		{"leading space", " ada@example.com", "invalid_email"},
		{"trailing newline", "ada@example.com\n", "invalid_email"},
		{"NUL", "ada\x00@example.com", "invalid_email"},
		{"DEL", "a\x7fb@example.com", "invalid_email"},
		{"non-ASCII local part", "ädä@example.com", "invalid_email"},
		{"non-ASCII domain", "ada@exämple.com", "invalid_email"},
		{"cyrillic look-alike", "\u0430da@example.com", "invalid_email"},
		{"invalid UTF-8", "ad\xffa@example.com", "invalid_email"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkErr(t, validate.Email("email", c.in, 254), "email", c.code)
		})
	}
}

func TestName(t *testing.T) {
	cases := []struct {
		name, in, code string
	}{
		{"plain", "Alice Chen", ""},
		{"non-ASCII", "Zoë 山田 Ñandú", ""},
		{"emoji", "Team 🚀", ""},
		{"one char", "A", ""},
		{"200 ASCII chars", strings.Repeat("a", 200), ""},
		{"200 multi-byte chars", strings.Repeat("é", 200), ""}, // 400 bytes: limits count characters
		{"201 chars", strings.Repeat("a", 201), "too_long"},
		{"201 multi-byte chars", strings.Repeat("山", 201), "too_long"},
		{"empty", "", "required"},
		{"only spaces", "   ", "invalid_text"},
		{"leading space", " Alice", "invalid_text"},
		{"trailing space", "Alice ", "invalid_text"},
		{"leading tab", "\tAlice", "invalid_text"},
		{"trailing newline", "Alice\n", "invalid_text"},
		{"inner newline", "Ali\nce", "invalid_text"},
		{"inner tab", "Ali\tce", "invalid_text"},
		{"NUL", "Ali\x00ce", "invalid_text"},
		{"escape", "Ali\x1bce", "invalid_text"},
		{"DEL", "Ali\x7fce", "invalid_text"},
		{"C1 control", "Ali\u0085ce", "invalid_text"},
		{"line separator", "Ali\u2028ce", "invalid_text"},
		{"paragraph separator", "Ali\u2029ce", "invalid_text"},
		{"invalid UTF-8", "Ali\xffce", "invalid_text"},
		{"hash is fine in a name", "Team #1", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkErr(t, validate.Name("name", c.in, 200), "name", c.code)
		})
	}
}

func TestText(t *testing.T) {
	cases := []struct {
		name      string
		in        string
		min, max  int
		multiline bool
		code      string
	}{
		{"empty allowed", "", 0, 10, false, ""},
		{"empty required", "", 1, 10, false, "required"},
		{"too short", "a", 2, 10, false, "too_short"},
		{"exactly min", "ab", 2, 10, false, ""},
		{"exactly max", "abcdefghij", 0, 10, false, ""},
		{"too long", "abcdefghijk", 0, 10, false, "too_long"},
		{"max counts characters", "éééééééééé", 0, 10, false, ""},
		{"newline single line", "a\nb", 0, 10, false, "invalid_text"},
		{"newline multiline", "a\nb", 0, 10, true, ""},
		{"tab multiline", "a\tb", 0, 10, true, ""},
		{"CRLF multiline", "a\r\nb", 0, 10, true, ""},
		{"NUL multiline", "a\x00b", 0, 10, true, "invalid_text"},
		{"vertical tab multiline", "a\vb", 0, 10, true, "invalid_text"},
		{"line separator multiline", "a\u2028b", 0, 10, true, "invalid_text"},
		{"invalid UTF-8", "\xc3", 0, 10, true, "invalid_text"},
		{"leading space is fine in text", " a ", 0, 10, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkErr(t, validate.Text("description", c.in, c.min, c.max, c.multiline), "description", c.code)
		})
	}
}
