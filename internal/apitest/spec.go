package apitest

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/tenantd/tenantd"
)

func init() {
	// Register the email format (what openapi3.DefineStringFormat("email",
	// openapi3.FormatOfStringForEmail) does, without the deprecated name)
	// before any goroutine validates anything: the registry is a plain
	// package-level map in kin-openapi, and a package's init runs before
	// its importer's TestMain.
	openapi3.DefineStringFormatValidator("email", openapi3.NewRegexpFormatValidator(openapi3.FormatOfStringForEmail))
	// GET /openapi.yaml answers YAML text as the OpenAPI media type: the
	// response validator checks it is a string, as the spec says.
	// GraphiQL, a browser's GET /v1/graphql, is HTML text.
	text := func(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
		b, err := io.ReadAll(body)
		return string(b), err
	}
	openapi3filter.RegisterBodyDecoder("application/vnd.oai.openapi", text)
	openapi3filter.RegisterBodyDecoder("text/html", text)
	// An NDJSON answer (an export) is a sequence of the schema's values,
	// one a line: every line is checked here; the first is the value the
	// validator checks again.
	openapi3filter.RegisterBodyDecoder("application/x-ndjson",
		func(body io.Reader, _ http.Header, schema *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
			var first any
			sc := bufio.NewScanner(body)
			sc.Buffer(nil, 1<<20)
			for n := 1; sc.Scan(); n++ {
				var v any
				if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
					return nil, fmt.Errorf("line %d is not JSON: %w", n, err)
				}
				if err := schema.Value.VisitJSON(v); err != nil {
					return nil, fmt.Errorf("line %d: %w", n, err)
				}
				if n == 1 {
					first = v
				}
			}
			if first == nil && sc.Err() == nil {
				return nil, fmt.Errorf("no line")
			}
			return first, sc.Err()
		})
}

var (
	specOnce   sync.Once
	specDoc    *openapi3.T
	specRouter routers.Router
	specErr    error
)

// LoadSpec parses openapi.yaml (tenantd.OpenAPISpec) once for the test
// binary.
func LoadSpec(tb testing.TB) (*openapi3.T, routers.Router) {
	tb.Helper()
	specOnce.Do(func() {
		doc, err := openapi3.NewLoader().LoadFromData(tenantd.OpenAPISpec)
		if err != nil {
			specErr = fmt.Errorf("load openapi.yaml: %w", err)
			return
		}
		if err := doc.Validate(context.Background()); err != nil {
			specErr = fmt.Errorf("openapi.yaml is invalid: %w", err)
			return
		}
		doc.Servers = nil
		r, err := gorillamux.NewRouter(doc)
		if err != nil {
			specErr = fmt.Errorf("router: %w", err)
			return
		}
		specDoc, specRouter = doc, r
	})
	if specErr != nil {
		tb.Fatal(specErr)
	}
	return specDoc, specRouter
}

// SpecOp is one operation of openapi.yaml.
type SpecOp struct {
	ID, Method, Path string
}

// SpecOperations lists the spec's operations, sorted by path and method.
func SpecOperations(doc *openapi3.T) []SpecOp {
	var ops []SpecOp
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			ops = append(ops, SpecOp{ID: op.OperationID, Method: method, Path: path})
		}
	}
	sort.Slice(ops, func(i, j int) bool {
		if ops[i].Path != ops[j].Path {
			return ops[i].Path < ops[j].Path
		}
		return ops[i].Method < ops[j].Method
	})
	return ops
}

// WholeSuite reports whether every test of the test binary ran (no -run
// or -skip filter): only then may its TestMain check what all of them
// together covered.
func WholeSuite() bool {
	for _, name := range []string{"test.run", "test.skip"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return false
		}
	}
	return true
}

// covered is every (operation, status) any test server of the test binary
// answered through a validating client.
var covered = struct {
	sync.Mutex
	seen map[string]map[int]bool
}{seen: map[string]map[int]bool{}}

// record notes that a test server answered op with status (see
// CheckCovered).
func record(op string, status int) {
	covered.Lock()
	defer covered.Unlock()
	if covered.seen[op] == nil {
		covered.seen[op] = map[int]bool{}
	}
	covered.seen[op][status] = true
}

// CheckCovered returns 1, after saying which on stderr, unless every
// operation of the spec that documents one of statuses was answered with
// it by some test server of the test binary.
func CheckCovered(statuses ...int) int {
	doc, err := openapi3.NewLoader().LoadFromData(tenantd.OpenAPISpec)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	covered.Lock()
	defer covered.Unlock()
	code := 0
	for _, op := range SpecOperations(doc) {
		o := doc.Paths.Value(op.Path).GetOperation(op.Method)
		for _, status := range statuses {
			if o != nil && o.Responses.Status(status) != nil && !covered.seen[op.ID][status] {
				fmt.Fprintf(os.Stderr, "FAIL: %s (%s %s) documents %d but no test got it\n", op.ID, op.Method, op.Path, status)
				code = 1
			}
		}
	}
	return code
}

// exercised holds "<status>/<operationId>" -> the first subtest that got it.
var exercised sync.Map

// Exercised reports whether a subtest started with Spec that names pair
// ("<status>/<operationId>") has passed in this test binary.
func Exercised(pair string) bool {
	_, ok := exercised.Load(pair)
	return ok
}

// Spec is t.Run for a subtest that specifies documented responses: its
// full name must hold "<status>/<operationId>" pairs, each documented by
// openapi.yaml, and once it has passed (not skipped) they are exercised
// (see Exercised).
func Spec(t *testing.T, name string, f func(t *testing.T)) bool {
	t.Helper()
	return t.Run(name, func(t *testing.T) {
		pairs := NamedPairs(t.Name())
		if len(pairs) == 0 {
			t.Errorf("subtest %s names no <status>/<operationId>", t.Name())
		}
		documented := DocumentedPairs(t)
		for _, p := range pairs {
			if !documented[p] {
				t.Errorf("subtest %s names %s, which openapi.yaml does not document", t.Name(), p)
			}
		}
		t.Cleanup(func() {
			if t.Failed() || t.Skipped() {
				return
			}
			for _, p := range pairs {
				exercised.LoadOrStore(p, t.Name())
			}
		})
		f(t)
	})
}

var (
	statusSegment = regexp.MustCompile(`^[1-5][0-9][0-9]$`)
	dedupSuffix   = regexp.MustCompile(`#[0-9]+$`)
)

// NamedPairs returns the "<status>/<operationId>" pairs of a test's full
// name: each segment that is a status with the segment after it (without
// the #NN testing adds to a repeated name).
func NamedPairs(name string) []string {
	segs := strings.Split(name, "/")
	var out []string
	for i := 0; i+1 < len(segs); i++ {
		if statusSegment.MatchString(segs[i]) {
			out = append(out, segs[i]+"/"+dedupSuffix.ReplaceAllString(segs[i+1], ""))
		}
	}
	return out
}

// DocumentedPairs are the "<status>/<operationId>" of every response of
// every operation of openapi.yaml.
func DocumentedPairs(tb testing.TB) map[string]bool {
	tb.Helper()
	doc, _ := LoadSpec(tb)
	return ResponsePairs(doc)
}

// ResponsePairs are the "<status>/<operationId>" of every response of
// every operation of doc.
func ResponsePairs(doc *openapi3.T) map[string]bool {
	out := map[string]bool{}
	for _, op := range SpecOperations(doc) {
		o := doc.Paths.Value(op.Path).GetOperation(op.Method)
		for status := range o.Responses.Map() {
			out[status+"/"+op.ID] = true
		}
	}
	return out
}
