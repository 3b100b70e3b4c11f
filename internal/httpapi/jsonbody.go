package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/tenantd/tenantd/internal/errs"
)

// maxJSONDepth bounds how deeply a request body may nest (tenantd's
// bodies nest two levels at most).
const maxJSONDepth = 32

var (
	errTrailingData = errs.E(errs.Invalid, "invalid_json", "the request body must be exactly one JSON value: something follows it")
	errInvalidUTF8  = errs.E(errs.Invalid, "invalid_utf8", "the request body is not valid UTF-8 (or escapes a lone UTF-16 surrogate)")
	errNoValue      = errs.E(errs.Invalid, "invalid_json", "the request body holds no JSON value")
	errTooDeep      = errs.E(errs.Invalid, "invalid_json", "the request body nests too deeply")
	errBodyCut      = errs.E(errs.Invalid, "invalid_json", "the request body ended before its announced length")
	errBodyTimeout  = echo.NewHTTPError(http.StatusRequestTimeout, "the request body did not arrive in time")
)

// strictJSON reads every JSON request body before it is validated or
// decoded, and refuses with a 400 what a lenient decoder would silently
// accept: anything after the one JSON value (invalid_json), bytes that are
// not UTF-8 or escapes of lone surrogates (invalid_utf8), and an object key
// given twice (duplicate_key).
func strictJSON(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.Body == nil || r.Body == http.NoBody {
			return next(c)
		}
		mt, _, err := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType))
		if err != nil || !(mt == echo.MIMEApplicationJSON || strings.HasSuffix(mt, "+json")) {
			return next(c) // not JSON: the validator answers for it
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return bodyReadError(err)
		}
		if len(b) > 0 {
			if err := checkJSON(b); err != nil {
				return err
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		return next(c)
	}
}

// bodyReadError is the answer to a body that could not be read.
func bodyReadError(err error) error {
	var ne net.Error
	switch {
	case errors.Is(err, echo.ErrStatusRequestEntityTooLarge):
		return echo.ErrStatusRequestEntityTooLarge
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return errBodyTimeout.WithInternal(err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errBodyCut
	}
	return &errs.Error{Kind: errs.Invalid, Code: "invalid_request", Message: "the request body could not be read", Err: err}
}

// checkJSON returns nil when b is exactly one JSON value in valid UTF-8
// with no key twice in any object.
func checkJSON(b []byte) error {
	if !utf8.Valid(b) || loneSurrogate(b) {
		return errInvalidUTF8
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := walkJSON(dec, "", 0); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errTrailingData
	}
	return nil
}

// walkJSON reads one JSON value from dec, refusing duplicate keys; path is
// the value's JSON pointer.
func walkJSON(dec *json.Decoder, path string, depth int) error {
	if depth > maxJSONDepth {
		return errTooDeep
	}
	tok, err := dec.Token()
	if err == io.EOF {
		return errNoValue
	}
	if err != nil {
		return syntaxError(err)
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return syntaxError(err)
			}
			key, _ := k.(string)
			p := path + "/" + pointerToken.Replace(key)
			if seen[key] {
				return errs.InvalidField(p, "duplicate_key", "appears more than once in its object")
			}
			seen[key] = true
			if err := walkJSON(dec, p, depth+1); err != nil {
				return err
			}
		}
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if err := walkJSON(dec, path+"/"+strconv.Itoa(i), depth+1); err != nil {
				return err
			}
		}
	default:
		return nil // a scalar
	}
	if _, err := dec.Token(); err != nil { // the closing '}' or ']'
		return syntaxError(err)
	}
	return nil
}

func syntaxError(err error) error {
	msg := "the request body is not valid JSON"
	var se *json.SyntaxError
	if errors.As(err, &se) {
		msg += " (at byte " + strconv.FormatInt(se.Offset, 10) + ")"
	} else if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
		msg += " (it ends too early)"
	}
	return &errs.Error{Kind: errs.Invalid, Code: "invalid_json", Message: msg, Err: err}
}

// loneSurrogate reports whether b escapes a UTF-16 surrogate that is not
// half of a pair (\ud800 alone, or a low surrogate first). It expects
// syntactically valid JSON, where a backslash only occurs in strings.
func loneSurrogate(b []byte) bool {
	hex4 := func(i int) (rune, bool) {
		if i+4 > len(b) {
			return 0, false
		}
		n, err := strconv.ParseUint(string(b[i:i+4]), 16, 16)
		return rune(n), err == nil
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			continue
		}
		if b[i+1] != 'u' {
			i++ // an escaped character, a backslash included
			continue
		}
		r, ok := hex4(i + 2)
		if !ok {
			continue // a syntax error, found later
		}
		switch {
		case r >= 0xD800 && r <= 0xDBFF:
			if i+7 >= len(b) || b[i+6] != '\\' || b[i+7] != 'u' {
				return true
			}
			lo, ok := hex4(i + 8)
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 11
		case r >= 0xDC00 && r <= 0xDFFF:
			return true
		default:
			i += 5
		}
	}
	return false
}
