package store_test

// docs/data-model.md is the map of the table; these tests keep it equal to
// the code, like the README's authorization matrix test: the entity list
// and the access-pattern chart cannot drift.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tenantd/tenantd/internal/store"
	"github.com/tenantd/tenantd/internal/store/storetest"
)

func dataModel(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../docs/data-model.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDataModelEntities: every item type the store writes (the invariant
// checker's list, storetest.EntityTypes) is in the discriminator row of
// section 1 and has its entity chart in section 2, and nothing else is.
func TestDataModelEntities(t *testing.T) {
	doc := dataModel(t)
	want := storetest.EntityTypes()
	row := regexp.MustCompile(`(?m)^\| entity discriminator \| .*$`).FindString(doc)
	var listed []string
	for _, m := range regexp.MustCompile("`([A-Za-z]+)`").FindAllStringSubmatch(row, -1) {
		if m[1] != "type" {
			listed = append(listed, m[1])
		}
	}
	slices.Sort(listed)
	if !slices.Equal(listed, want) {
		t.Errorf("section 1 lists the types %v, the store writes %v", listed, want)
	}
	section2 := doc[strings.Index(doc, "## 2. Entity chart"):strings.Index(doc, "## 3. Access-pattern chart")]
	var charted []string
	for _, m := range regexp.MustCompile(`(?m)^\*\*([A-Za-z]+)\*\*`).FindAllStringSubmatch(section2, -1) {
		charted = append(charted, m[1])
	}
	slices.Sort(charted)
	if !slices.Equal(charted, want) {
		t.Errorf("section 2 charts %v, the store writes %v", charted, want)
	}
}

// checkChart holds the read chart of section 3 to TestAccessPatterns' rows
// (pattern -> operations): the same patterns, the same operations, and a
// store method that exists for each.
func checkChart(t *testing.T, rows map[string]string) {
	t.Helper()
	doc := dataModel(t)
	start := strings.Index(doc, "| pattern (test row) |")
	if start < 0 {
		t.Fatal("docs/data-model.md has no access-pattern chart")
	}
	chart := doc[start:]
	chart = chart[:strings.Index(chart, "\n\n")]
	types := map[string]reflect.Type{}
	for _, v := range []any{&store.Orgs{}, &store.Teams{}, &store.Tickets{}, &store.Invitations{}, &store.Audit{}, &store.Deletions{}, &store.Webhooks{}, &store.APIKeys{}} {
		types[reflect.TypeOf(v).Elem().Name()] = reflect.TypeOf(v)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(chart, "\n")[2:] {
		cells := strings.Split(line, " | ")
		if len(cells) < 5 {
			t.Errorf("chart row %q: want 5 cells", line)
			continue
		}
		pattern, op, method := strings.TrimPrefix(cells[0], "| "), strings.Trim(cells[1], "`"), strings.Trim(cells[3], "`")
		seen[pattern] = true
		want, ok := rows[pattern]
		switch {
		case !ok:
			t.Errorf("chart row %q is not a row of TestAccessPatterns", pattern)
		case want != op:
			t.Errorf("chart row %q says %s, the test measures %s", pattern, op, want)
		}
		typ, name, _ := strings.Cut(method, ".")
		name, _, _ = strings.Cut(name, "(")
		if rt, ok := types[typ]; !ok {
			t.Errorf("chart row %q: %s is not a store type", pattern, typ)
		} else if _, ok := rt.MethodByName(name); !ok {
			t.Errorf("chart row %q: store.%s has no method %s", pattern, typ, name)
		}
	}
	for p := range rows {
		if !seen[p] && !strings.HasPrefix(p, "AP5") { // AP5, a write, is in the write chart
			t.Errorf("TestAccessPatterns row %q is not in the chart", p)
		}
	}
}

// TestKeysBuiltInKeysGo: docs/data-model.md says keys are built in one
// place, keys.go: no other file of the store spells a key part (a string
// literal with an upper-case name and a #).
func TestKeysBuiltInKeysGo(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	keyPart := regexp.MustCompile(`"[A-Z]*#[A-Z]*`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "keys.go" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if code, _, _ := strings.Cut(line, "//"); keyPart.MatchString(code) {
				t.Errorf("%s:%d builds a key outside keys.go: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}

// updateOnly lists, per entity type, the attributes the store writes on its
// items with update expressions only, never through the item struct: the
// marks of an unfinished deletion (the DELETING index keys, its start and
// lease: offboard.go, cascade.go; the Ticket struct has gsi3pk/gsi3sk
// already, for its status queue) and the mark of a user removal that met
// concurrent membership changes (RemoveOrgUser), and the org's counts of
// webhooks (webhook.go) and API keys (apikey.go). Each must be documented
// with its entity, and each must still be written somewhere.
var updateOnly = map[string][]string{
	"Org":     {"gsi3pk", "gsi3sk", "webhookCount", "apiKeyCount"},
	"OrgUser": {"leaving"},
	"Team":    {"gsi3pk", "gsi3sk", "deletingSince", "leaseUntil"},
	"Ticket":  {"deletingSince", "leaseUntil"},
}

// TestDataModelAttributes holds each entity chart of section 2 to the item
// struct it names: every attribute the struct stores (its dynamo tags) is
// documented, and every documented attribute is in the struct or in
// updateOnly. It also holds updateOnly to the code: every attribute name
// an update expression of the store spells (Set, Add, Remove...) is an
// item struct's or in updateOnly, and every updateOnly name is written.
func TestDataModelAttributes(t *testing.T) {
	doc := dataModel(t)
	structs, written := storeSource(t)
	section2 := doc[strings.Index(doc, "## 2. Entity chart"):strings.Index(doc, "### Sample item collection")]
	header := regexp.MustCompile(`(?m)^\*\*([A-Za-z]+)\*\*`)
	starts := header.FindAllStringSubmatchIndex(section2, -1)
	charted := map[string]bool{}
	for i, m := range starts {
		end := len(section2)
		if i+1 < len(starts) {
			end = starts[i+1][0]
		}
		entity, block := section2[m[2]:m[3]], section2[m[0]:end]
		charted[entity] = true
		intro, table := splitChart(block)
		names := regexp.MustCompile("`([a-z][A-Za-z]*Item)`").FindAllStringSubmatch(intro, -1)
		if len(names) != 1 {
			t.Errorf("%s: its chart's heading names %d item structs, want one (as `xxxItem`)", entity, len(names))
			continue
		}
		structName := names[0][1]
		tags, ok := structs[structName]
		if !ok {
			t.Errorf("%s: the chart names %s, which is not a struct of the store", entity, structName)
			continue
		}
		// pk and sk are every chart's first columns, and the intro of the
		// section says every item has type.
		documented := map[string]bool{"pk": true, "sk": true, "type": true}
		for _, g := range regexp.MustCompile(`\bgsi[0-9]+(?:pk|sk)\b`).FindAllString(table, -1) {
			documented[g] = true
		}
		cell, ok := attributesCell(table)
		if !ok {
			t.Errorf("%s: the chart has no attributes column or row", entity)
			continue
		}
		for _, a := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(withoutParens(cell), -1) {
			if regexp.MustCompile(`^[a-z][A-Za-z0-9]*$`).MatchString(a[1]) {
				documented[a[1]] = true
			}
		}
		stored := map[string]bool{}
		for _, a := range tags {
			stored[a] = true
			if !documented[a] {
				t.Errorf("%s: %s stores %q, which docs/data-model.md's chart does not list", entity, structName, a)
			}
		}
		for _, a := range updateOnly[entity] {
			if stored[a] {
				t.Errorf("%s: %q is in %s: take it out of updateOnly", entity, a, structName)
			}
			if !documented[a] {
				t.Errorf("%s: an update writes %q (updateOnly), which docs/data-model.md's chart does not list", entity, a)
			}
			stored[a] = true
		}
		for a := range documented {
			if !stored[a] {
				t.Errorf("%s: docs/data-model.md lists %q, which %s does not store (nor any update, says updateOnly)", entity, a, structName)
			}
		}
	}
	for entity := range updateOnly {
		if !charted[entity] {
			t.Errorf("updateOnly names %s, which section 2 does not chart", entity)
		}
	}
	known := map[string]bool{}
	for _, tags := range structs {
		for _, a := range tags {
			known[a] = true
		}
	}
	for _, attrs := range updateOnly {
		for _, a := range attrs {
			if written[a] == "" {
				t.Errorf("updateOnly lists %q, which no update expression of the store writes any more", a)
			}
			known[a] = true
		}
	}
	for a, where := range written {
		if !known[a] {
			t.Errorf("%s writes %q, which no item struct has: add it to the struct, or to updateOnly and the chart", where, a)
		}
	}
}

// splitChart splits an entity's block of section 2 into its heading (the
// text before the table) and its table.
func splitChart(block string) (intro, table string) {
	var head, rows []string
	for _, line := range strings.Split(block, "\n") {
		switch {
		case strings.HasPrefix(line, "|"):
			rows = append(rows, line)
		case len(rows) == 0:
			head = append(head, line)
		}
	}
	return strings.Join(head, "\n"), strings.Join(rows, "\n")
}

// attributesCell is the chart's attributes: the column of that name, or
// (in a key | value chart) the row.
func attributesCell(table string) (string, bool) {
	rows := strings.Split(table, "\n")
	cells := func(row string) []string {
		cs := strings.Split(strings.Trim(row, "|"), " | ")
		for i := range cs {
			cs[i] = strings.TrimSpace(cs[i])
		}
		return cs
	}
	if len(rows) < 3 {
		return "", false
	}
	col := slices.Index(cells(rows[0]), "attributes")
	var out []string
	for _, row := range rows[2:] {
		cs := cells(row)
		switch {
		case col >= 0 && col < len(cs):
			out = append(out, cs[col])
		case col < 0 && len(cs) == 2 && cs[0] == "attributes":
			out = append(out, cs[1])
		}
	}
	return strings.Join(out, " "), len(out) > 0
}

// withoutParens drops the parenthesized remarks of s (values and notes,
// such as a role's "(`owner`, `admin` or `member`)"), nested ones too.
func withoutParens(s string) string {
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// storeSource parses the store's non-test Go files. It returns the
// attribute names (dynamo tags) of each struct that has some, and every
// attribute name an update expression spells as a string literal (the
// first argument of Set, Add..., each argument of Remove and Project),
// with where.
func storeSource(t *testing.T) (structs map[string][]string, written map[string]string) {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	structs, written = map[string][]string{}, map[string]string{}
	first := map[string]bool{"Set": true, "SetIfNotExists": true, "SetSet": true, "SetNullable": true, "Add": true,
		"AddStringsToSet": true, "AddIntsToSet": true, "AddFloatsToSet": true, "DeleteStringsFromSet": true,
		"DeleteIntsFromSet": true, "DeleteFloatsFromSet": true, "Append": true, "Prepend": true}
	every := map[string]bool{"Remove": true, "Project": true}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.TypeSpec:
				st, ok := n.Type.(*ast.StructType)
				if !ok {
					return true
				}
				for _, fld := range st.Fields.List {
					if fld.Tag == nil {
						continue
					}
					tag, _ := strconv.Unquote(fld.Tag.Value)
					attr, _, _ := strings.Cut(reflect.StructTag(tag).Get("dynamo"), ",")
					if attr != "" && attr != "-" {
						structs[n.Name.Name] = append(structs[n.Name.Name], attr)
					}
				}
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok || (!first[sel.Sel.Name] && !every[sel.Sel.Name]) {
					return true
				}
				args := n.Args
				if first[sel.Sel.Name] && len(args) > 0 {
					args = args[:1]
				}
				for _, a := range args {
					if lit, ok := a.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						if v, err := strconv.Unquote(lit.Value); err == nil {
							written[v] = fset.Position(lit.Pos()).String()
						}
					}
				}
			}
			return true
		})
	}
	return structs, written
}
